/* rmsnorm, tunable: the starter's algorithm (kernels/rmsnorm/cpu/starter.c,
 * which stays the baseline) with knobs for the offline tuner:
 * `kiln search rmsnorm --agent tune --from kernels/rmsnorm/cpu/tunable.c`.
 *
 * Every setting is an honest f32 kernel: the sum of squares is a float sum
 * in one order or another (ACC accumulators reduced as a tree, in blocks of
 * CHUNK columns), and the scale is applied in one of three exact-to-a-few-
 * ULPs forms.  5 x 3 x 3 x 3 x 4 x 2 x 2 x 2 = 4320 settings.
 *
 *   ACC      independent accumulators per row in the sum of squares
 *   ROWS     rows handled together: their sums interleave (more independent
 *            chains) and the scaling pass loads each w[c] once for all
 *   CHUNK    0: one sum over the row; else sums of CHUNK columns, added up
 *   SCALE    0: x*inv*w   1: (x*w)*inv   2: x/rms*w (a division per element)
 *   SUNROLL  `#pragma GCC unroll` on the scaling loop
 *   IVDEP    1: `#pragma GCC ivdep` on the scaling loop
 *   RESTRICT 1: restrict-qualified pointers (x, w and y never overlap)
 *   VECT     1: GCC's loop vectoriser with its dynamic cost model (-O2
 *            allows only loops that need no scalar epilogue) */
#include <math.h>
#include <stdint.h>

#define ACC 1 //@kiln tune 1 2 4 8 16
#define ROWS 1 //@kiln tune 1 2 4
#define CHUNK 0 //@kiln tune 0 256 1024
#define SCALE 0 //@kiln tune 0 1 2
#define SUNROLL 1 //@kiln tune 1 2 4 8
#define IVDEP 0 //@kiln tune 0 1
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
#if IVDEP
#define IVDEP_HINT PRAGMA(GCC ivdep)
#else
#define IVDEP_HINT
#endif

#define INLINE static inline __attribute__((always_inline))

/* Sums of squares of nr rows (stride cols) over columns [from, to). */
INLINE void sumsq(const float *RST x, int nr, int32_t cols, int32_t from, int32_t to, float *out)
{
    float acc[ROWS][ACC] = {{0}};
    int32_t c = from;
    for (; c + ACC <= to; c += ACC) {
        PRAGMA(GCC unroll ROWS)
        for (int q = 0; q < nr; q++) {
            PRAGMA(GCC unroll ACC)
            for (int u = 0; u < ACC; u++) {
                float v = x[(int64_t)q * cols + c + u];
                acc[q][u] += v * v;
            }
        }
    }
    for (; c < to; c++)
        for (int q = 0; q < nr; q++) {
            float v = x[(int64_t)q * cols + c];
            acc[q][0] += v * v;
        }
    for (int q = 0; q < nr; q++) {
        for (int h = ACC / 2; h > 0; h /= 2)   /* a tree: pairwise */
            for (int u = 0; u < h; u++)
                acc[q][u] += acc[q][u + h];
        out[q] = acc[q][0];
    }
}

INLINE void row_sums(const float *RST x, int nr, int32_t cols, float *ss)
{
    int32_t step = CHUNK > 0 ? CHUNK : cols;
    for (int q = 0; q < nr; q++)
        ss[q] = 0.0f;
    for (int32_t c = 0; c < cols; c += step) {
        float part[ROWS];
        sumsq(x, nr, cols, c, cols - c < step ? cols : c + step, part);
        for (int q = 0; q < nr; q++)
            ss[q] += part[q];
    }
}

INLINE float scale1(float x, float w, float inv, float rms)
{
    return SCALE == 0 ? x * inv * w : SCALE == 1 ? x * w * inv : x / rms * w;
}

/* nr rows starting at x and y. */
INLINE void block(const float *RST x, const float *RST w, float *RST y, int nr, int32_t cols,
                  float eps)
{
    float ss[ROWS], rms[ROWS], inv[ROWS];
    row_sums(x, nr, cols, ss);
    for (int q = 0; q < nr; q++) {
        rms[q] = sqrtf(ss[q] / (float)cols + eps);
        inv[q] = 1.0f / rms[q];
    }
    IVDEP_HINT
    PRAGMA(GCC unroll SUNROLL)
    for (int32_t c = 0; c < cols; c++) {
        float wc = w[c];
        PRAGMA(GCC unroll ROWS)
        for (int q = 0; q < nr; q++) {
            int64_t at = (int64_t)q * cols + c;
            y[at] = scale1(x[at], wc, inv[q], rms[q]);
        }
    }
}

void rmsnorm(const float *RST x, const float *RST w, float *RST y, int32_t rows, int32_t cols,
             float eps)
{
    int32_t r = 0;
    for (; r + ROWS <= rows; r += ROWS)
        block(x + (int64_t)r * cols, w, y + (int64_t)r * cols, ROWS, cols, eps);
    for (; r < rows; r++)
        block(x + (int64_t)r * cols, w, y + (int64_t)r * cols, 1, cols, eps);
}
