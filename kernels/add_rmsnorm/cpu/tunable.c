/* add_rmsnorm, tunable: the starter's algorithm (kernels/add_rmsnorm/cpu/
 * starter.c, which stays the baseline) with knobs for the offline tuner:
 * `kiln search add_rmsnorm --agent tune --from kernels/add_rmsnorm/cpu/tunable.c`.
 *
 * Every setting is an honest f32 kernel: r = x + residual stored, its
 * squares summed in float (ACC accumulators reduced as a tree), y computed
 * from r as stored. 4 x 2 x 2 x 2 = 32 settings.
 *
 *   ACC      independent accumulators per row in the sum of squares
 *   SCALE    0: r*inv*w   1: (r*w)*inv
 *   RESTRICT 1: restrict-qualified pointers (no buffer overlaps another)
 *   VECT     1: GCC's loop vectoriser with its dynamic cost model */
#include <math.h>
#include <stdint.h>

#define ACC 4 //@kiln tune 1 2 4 8
#define SCALE 0 //@kiln tune 0 1
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

/* r's row formed and stored; the sum of its squares. */
static float add_row(const float *RST x, const float *RST res, float *RST r, int32_t cols)
{
    float acc[ACC] = {0};
    int32_t c = 0;
    for (; c + ACC <= cols; c += ACC)
        for (int u = 0; u < ACC; u++) {
            r[c + u] = x[c + u] + res[c + u];
            acc[u] += r[c + u] * r[c + u];
        }
    for (; c < cols; c++) {
        r[c] = x[c] + res[c];
        acc[0] += r[c] * r[c];
    }
    for (int w = ACC / 2; w > 0; w /= 2)   /* a tree over the accumulators */
        for (int u = 0; u < w; u++)
            acc[u] += acc[u + w];
    return acc[0];
}

void add_rmsnorm(const float *RST x, const float *RST residual, const float *RST w, float *RST r,
                 float *RST y, int32_t rows, int32_t cols, float eps)
{
    for (int32_t i = 0; i < rows; i++) {
        const size_t off = (size_t)i * cols;
        float inv = 1.0f / sqrtf(add_row(x + off, residual + off, r + off, cols) / (float)cols + eps);
        const float *RST ri = r + off;
        float *RST yi = y + off;
        for (int32_t c = 0; c < cols; c++)
            yi[c] = SCALE ? ri[c] * w[c] * inv : ri[c] * inv * w[c];
    }
}
