/* Out-of-bounds write: computes y correctly, then stores one extra float at y[rows*cols], just past the end of the output.
 * kiln-task: rmsnorm
 * kiln-class: 7
 * kiln-expect: fail
 * kiln-stages: smoke visible hidden stability determinism timing
 * kiln-codes: guard-corrupted
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>

void rmsnorm(const float *x, const float *w, float *y, int32_t rows, int32_t cols, float eps)
{
    for (int32_t r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * cols;
        float *yr = y + (size_t)r * cols;
        float ss = 0.0f;                 /* blocked: a float partial per 256 columns */
        for (int32_t b = 0; b < cols; b += 256) {
            float part = 0.0f;
            for (int32_t c = b; c < cols && c < b + 256; c++)
                part += xr[c] * xr[c];
            ss += part;
        }
        float inv = 1.0f / sqrtf(ss / (float)cols + eps);
        for (int32_t c = 0; c < cols; c++)
            yr[c] = xr[c] * inv * w[c];
    }
    y[(size_t)rows * cols] = y[(size_t)rows * cols - 1];
}
