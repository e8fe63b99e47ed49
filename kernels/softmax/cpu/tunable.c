/* softmax, tunable: the starter's algorithm (kernels/softmax/cpu/starter.c,
 * which stays the baseline: max, exp, sum, divide) with knobs for the
 * offline tuner: `kiln search softmax --agent tune --from
 * kernels/softmax/cpu/tunable.c`.
 *
 * Every setting is an honest f32 kernel: the max is exact in any order, the
 * sum is a float sum in one order or another (ACC accumulators reduced as a
 * tree), and the exponential is libm's expf or an inline one good to about
 * 2 ULPs (1.01 seen over [-86, 0]).  4 x 5 x 2 x 2 x 2 x 4 x 2 x 2 = 5120
 * settings.
 *
 *   MAXACC   independent running maxima in the max pass
 *   ACC      independent accumulators in the sum of the exponentials
 *   EXP      0: expf from libm; 1: exp_poly below (plain arithmetic the
 *            compiler can vectorise; it flushes e^t to 0 below t = -86,
 *            where the output is under 1e-37 of the row's largest)
 *   FUSED    1: the exp pass also sums (the starter); 0: it only stores,
 *            and a second pass sums y
 *   NORM     0: multiply by 1/sum; 1: divide by the sum
 *   EUNROLL  `#pragma GCC unroll` on the exp pass
 *   RESTRICT 1: restrict-qualified pointers (x and y never overlap)
 *   VECT     1: GCC's loop vectoriser with its dynamic cost model (-O2
 *            allows only loops that need no scalar epilogue) */
#include <math.h>
#include <stdint.h>
#include <string.h>

#define MAXACC 1 //@kiln tune 1 2 4 8
#define ACC 1 //@kiln tune 1 2 4 8 16
#define EXP 0 //@kiln tune 0 1
#define FUSED 1 //@kiln tune 0 1
#define NORM 0 //@kiln tune 0 1
#define EUNROLL 1 //@kiln tune 1 2 4 8
#define RESTRICT 0 //@kiln tune 0 1
#define VECT 0 //@kiln tune 0 1

#if VECT
#pragma GCC optimize("vect-cost-model=dynamic")
#endif

#if RESTRICT
#define RST restrict
#else
#define RST
#endif

#define PRAGMA_(x) _Pragma(#x)
#define PRAGMA(x) PRAGMA_(x)
#define INLINE static inline __attribute__((always_inline))

INLINE float as_float(uint32_t b)
{
    float f;
    memcpy(&f, &b, sizeof f);
    return f;
}

INLINE uint32_t as_bits(float f)
{
    uint32_t b;
    memcpy(&b, &f, sizeof b);
    return b;
}

/* e^t for t <= 0 (Cephes' expf), straight-line code so that loops of it
 * vectorise: t = k ln2 + r with |r| <= ln2/2 (ln2 in two parts), e^r = 1 + r
 * + r^2 P(r), times 2^k built from its exponent bits.  t below -86 is
 * clamped (k >= -125 keeps 2^k a normal float) and its result masked to 0;
 * selects are bit masks, as a branch would stop the vectoriser. */
INLINE float exp_poly(float t)
{
    uint32_t in = -(uint32_t)(t >= -86.0f);   /* all ones where e^t is kept */
    float tc = as_float((as_bits(t) & in) | (as_bits(-86.0f) & ~in));
    float kf = tc * 1.44269504088896341f + 12582912.0f;   /* 1.5 * 2^23: rounds */
    kf -= 12582912.0f;
    float r = tc - kf * 0.693359375f;
    r = r - kf * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    float two_k = as_float((uint32_t)((int32_t)kf + 127) << 23);
    return as_float(as_bits(p * two_k) & in);
}

INLINE float ex(float t)
{
    return EXP ? exp_poly(t) : expf(t);
}

INLINE float row_max(const float *RST x, int32_t cols)
{
    float m[MAXACC];
    for (int u = 0; u < MAXACC; u++)
        m[u] = x[0];
    int32_t c = 0;
    for (; c + MAXACC <= cols; c += MAXACC) {
        PRAGMA(GCC unroll MAXACC)
        for (int u = 0; u < MAXACC; u++)
            m[u] = x[c + u] > m[u] ? x[c + u] : m[u];
    }
    for (; c < cols; c++)
        m[0] = x[c] > m[0] ? x[c] : m[0];
    for (int u = 1; u < MAXACC; u++)
        m[0] = m[u] > m[0] ? m[u] : m[0];
    return m[0];
}

INLINE float tree(float *acc)
{
    for (int h = ACC / 2; h > 0; h /= 2)
        for (int u = 0; u < h; u++)
            acc[u] += acc[u + h];
    return acc[0];
}

/* y = e^(x - m); returns the sum when FUSED, else 0. */
INLINE float exp_pass(const float *RST x, float *RST y, int32_t cols, float m)
{
    float acc[ACC] = {0};
    int32_t c = 0;
    PRAGMA(GCC unroll EUNROLL)
    for (; c + ACC <= cols; c += ACC) {
        PRAGMA(GCC unroll ACC)
        for (int u = 0; u < ACC; u++) {
            y[c + u] = ex(x[c + u] - m);
            if (FUSED)
                acc[u] += y[c + u];
        }
    }
    for (; c < cols; c++) {
        y[c] = ex(x[c] - m);
        if (FUSED)
            acc[0] += y[c];
    }
    return tree(acc);
}

INLINE float sum_pass(const float *RST y, int32_t cols)
{
    float acc[ACC] = {0};
    int32_t c = 0;
    for (; c + ACC <= cols; c += ACC) {
        PRAGMA(GCC unroll ACC)
        for (int u = 0; u < ACC; u++)
            acc[u] += y[c + u];
    }
    for (; c < cols; c++)
        acc[0] += y[c];
    return tree(acc);
}

void softmax(const float *RST x, float *RST y, int32_t rows, int32_t cols)
{
    for (int32_t r = 0; r < rows; r++) {
        const float *RST xr = x + (int64_t)r * cols;
        float *RST yr = y + (int64_t)r * cols;
        float m = row_max(xr, cols);
        float s = exp_pass(xr, yr, cols, m);
        if (!FUSED)
            s = sum_pass(yr, cols);
        float inv = 1.0f / s;
        for (int32_t c = 0; c < cols; c++)
            yr[c] = NORM ? yr[c] / s : yr[c] * inv;
    }
}
