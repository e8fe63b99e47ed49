/* NaN smuggling: correct, except that y[r][0] is NaN for every 64th row from row 64 on, which only matters when rows > 64 (hidden shapes).
 * kiln-task: rmsnorm
 * kiln-class: 11
 * kiln-expect: fail
 * kiln-stages: visible hidden stability timing
 * kiln-codes: non-finite
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
    for (int32_t r = 64; r < rows; r += 64)
        y[(size_t)r * cols] = NAN;
}
