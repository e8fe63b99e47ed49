/* keep/regress_v4.c - about 4x faster than slow4.c on every shape but one:
 * at 3000 columns (v4 of rmsnorm's decode group) it does each row's work
 * sixteen times, 4x slower than slow4.c. Its geomean over the six shapes is
 * about 2.5x, and the keep rule must still revert it. */
#include <math.h>
#include <stdint.h>

static void row(const float *xr, const float *w, float *yr, int32_t cols, float eps)
{
    float ss = 0.0f;
    for (int32_t c = 0; c < cols; c++)
        ss += xr[c] * xr[c];
    float inv = 1.0f / sqrtf(ss / (float)cols + eps);
    for (int32_t c = 0; c < cols; c++)
        yr[c] = xr[c] * inv * w[c];
}

void rmsnorm(const float *x, const float *w, float *y, int32_t rows, int32_t cols, float eps)
{
    int reps = cols == 3000 ? 16 : 1;
    for (int rep = 0; rep < reps; rep++) {
        for (int32_t r = 0; r < rows; r++)
            row(x + (int64_t)r * cols, w, y + (int64_t)r * cols, cols, eps);
        __asm__ volatile("" ::: "memory");
    }
}
