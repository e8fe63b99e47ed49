/* layernorm, tunable: the starter's algorithm (kernels/layernorm/cpu/
 * starter.c, which stays the baseline: a sum for the mean, then a centred
 * pass for the variance) with knobs for the offline tuner: `kiln search
 * layernorm --agent tune --from kernels/layernorm/cpu/tunable.c`.
 *
 * Every setting is an honest two-pass f32 kernel: both sums are float sums
 * in one order or another (accumulators reduced as a tree), the mean is
 * corrected by the centred pass or not, and the output is always computed
 * from x - mean.  (The scale-and-shift form x*s + (b - mean*s) is left out:
 * on a row of one column, or any row of near-constant x, x*s and mean*s are
 * large, rounded apart, and kiln verify rejects it.)
 * 5 x 4 x 2 x 2 x 2 x 4 x 2 x 2 = 2560 settings.
 *
 *   ACC      independent accumulators in the sum for the mean
 *   ACC2     independent accumulators in the centred pass
 *   CORRECT  1: mean += mean of (x - mean), var = E(x-mean)^2 - that^2 (the
 *            starter); 0: var = E(x - mean)^2, the mean as summed
 *   FORM     0: (x-mean)*inv*w + b   1: (x-mean)*(inv*w) + b
 *   NORM     0: inv = 1/sd, multiplied; 1: divide by sd instead
 *   OUNROLL  `#pragma GCC unroll` on the output loop
 *   RESTRICT 1: restrict-qualified pointers (x, w, b and y never overlap)
 *   VECT     1: GCC's loop vectoriser with its dynamic cost model (-O2
 *            allows only loops that need no scalar epilogue) */
#include <math.h>
#include <stdint.h>

#define ACC 1 //@kiln tune 1 2 4 8 16
#define ACC2 1 //@kiln tune 1 2 4 8
#define CORRECT 1 //@kiln tune 0 1
#define FORM 0 //@kiln tune 0 1
#define NORM 0 //@kiln tune 0 1
#define OUNROLL 1 //@kiln tune 1 2 4 8
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

/* acc[0..n) summed as a tree; n a power of two. */
INLINE float tree(float *acc, int n)
{
    for (int h = n / 2; h > 0; h /= 2)
        for (int u = 0; u < h; u++)
            acc[u] += acc[u + h];
    return acc[0];
}

INLINE float row_sum(const float *RST x, int32_t cols)
{
    float acc[ACC] = {0};
    int32_t c = 0;
    for (; c + ACC <= cols; c += ACC) {
        PRAGMA(GCC unroll ACC)
        for (int u = 0; u < ACC; u++)
            acc[u] += x[c + u];
    }
    for (; c < cols; c++)
        acc[0] += x[c];
    return tree(acc, ACC);
}

/* Sums of (x - mean) (when CORRECT) and (x - mean)^2. */
INLINE void centred(const float *RST x, int32_t cols, float mean, float *d, float *ss)
{
    float ad[ACC2] = {0}, as[ACC2] = {0};
    int32_t c = 0;
    for (; c + ACC2 <= cols; c += ACC2) {
        PRAGMA(GCC unroll ACC2)
        for (int u = 0; u < ACC2; u++) {
            float t = x[c + u] - mean;
            if (CORRECT)
                ad[u] += t;
            as[u] += t * t;
        }
    }
    for (; c < cols; c++) {
        float t = x[c] - mean;
        if (CORRECT)
            ad[0] += t;
        as[0] += t * t;
    }
    *d = tree(ad, ACC2);
    *ss = tree(as, ACC2);
}

INLINE float out1(float x, float w, float b, float mean, float inv, float sd)
{
    if (FORM == 0)
        return NORM ? (x - mean) / sd * w + b : (x - mean) * inv * w + b;
    return (x - mean) * (NORM ? w / sd : inv * w) + b;
}

void layernorm(const float *RST x, const float *RST w, const float *RST b, float *RST y,
               int32_t rows, int32_t cols, float eps)
{
    for (int32_t r = 0; r < rows; r++) {
        const float *RST xr = x + (int64_t)r * cols;
        float *RST yr = y + (int64_t)r * cols;
        float mean = row_sum(xr, cols) / (float)cols, d, ss;
        centred(xr, cols, mean, &d, &ss);
        float dm = CORRECT ? d / (float)cols : 0.0f;
        float var = ss / (float)cols - dm * dm;
        mean += dm;
        float sd = sqrtf((var > 0.0f ? var : 0.0f) + eps), inv = 1.0f / sd;
        PRAGMA(GCC unroll OUNROLL)
        for (int32_t c = 0; c < cols; c++)
            yr[c] = out1(xr[c], w[c], b[c], mean, inv, sd);
    }
}
