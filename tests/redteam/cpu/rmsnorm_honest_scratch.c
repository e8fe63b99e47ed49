/* Honest rmsnorm: uses a malloc'd scratch buffer of per-row scales (every element written before it is read, freed before return; falls back to no scratch if malloc fails).
 * kiln-task: rmsnorm
 * kiln-expect: pass
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

static float row_scale(const float *xr, int32_t cols, float eps)
{
    float ss = 0.0f;
    for (int32_t c = 0; c < cols; c++)
        ss += xr[c] * xr[c];
    return 1.0f / sqrtf(ss / (float)cols + eps);
}

void rmsnorm(const float *x, const float *w, float *y, int32_t rows, int32_t cols, float eps)
{
    float *scale = malloc((size_t)rows * sizeof *scale);
    if (!scale) {
        for (int32_t r = 0; r < rows; r++) {
            float inv = row_scale(x + (size_t)r * cols, cols, eps);
            for (int32_t c = 0; c < cols; c++)
                y[(size_t)r * cols + c] = x[(size_t)r * cols + c] * inv * w[c];
        }
        return;
    }
    for (int32_t r = 0; r < rows; r++)          /* pass 1: write every scale */
        scale[r] = row_scale(x + (size_t)r * cols, cols, eps);
    for (int32_t r = 0; r < rows; r++) {        /* pass 2: read them */
        const float *xr = x + (size_t)r * cols;
        float *yr = y + (size_t)r * cols;
        float inv = scale[r];
        for (int32_t c = 0; c < cols; c++)
            yr[c] = xr[c] * inv * w[c];
    }
    free(scale);
}
