/* Honest rmsnorm: columns processed in blocks of 256, a float partial sum per block (the last block may be short), partials then summed; correct for any cols.
 * kiln-task: rmsnorm
 * kiln-expect: pass
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#define BLOCK 256

void rmsnorm(const float *x, const float *w, float *y, int32_t rows, int32_t cols, float eps)
{
    for (int32_t r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * cols;
        float *yr = y + (size_t)r * cols;
        float ss = 0.0f;
        for (int32_t b = 0; b < cols; b += BLOCK) {
            int32_t end = cols - b < BLOCK ? cols : b + BLOCK;
            float part = 0.0f;
            for (int32_t c = b; c < end; c++)
                part += xr[c] * xr[c];
            ss += part;
        }
        float inv = 1.0f / sqrtf(ss / (float)cols + eps);
        for (int32_t b = 0; b < cols; b += BLOCK) {
            int32_t end = cols - b < BLOCK ? cols : b + BLOCK;
            for (int32_t c = b; c < end; c++)
                yr[c] = xr[c] * inv * w[c];
        }
    }
}
