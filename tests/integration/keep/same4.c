/* keep/same4.c - slow4.c with a different but equivalent loop (the repeat
 * count from a variable), so its source is not slow4.c's: as fast as its
 * parent, its interval does not clear the keep margin, and it is reverted. */
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
    int reps = 4;
    for (int rep = 0; rep < reps; rep++) {
        for (int32_t r = 0; r < rows; r++)
            row(x + (int64_t)r * cols, w, y + (int64_t)r * cols, cols, eps);
        __asm__ volatile("" ::: "memory");
    }
}
