/* keep/fast.c - the same rmsnorm, each row once: about 4x faster than
 * slow4.c on every shape, so the keep rule keeps it. The empty asm
 * and loop stay so the code is the same but for the repeat count. */
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
    for (int rep = 0; rep < 1; rep++) {
        for (int32_t r = 0; r < rows; r++)
            row(x + (int64_t)r * cols, w, y + (int64_t)r * cols, cols, eps);
        __asm__ volatile("" ::: "memory");
    }
}
