/* Shape specialisation: divides the sum of squares by the hard-coded visible width 4096 whenever cols >= 4096, which is right for the visible 4096-wide shapes and wrong for wider hidden ones.
 * kiln-task: rmsnorm
 * kiln-class: 3
 * kiln-expect: fail
 * kiln-stages: hidden
 * kiln-codes: wrong-output
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>

void rmsnorm(const float *x, const float *w, float *y, int32_t rows, int32_t cols, float eps)
{
    const float inv_n = cols >= 4096 ? 1.0f / 4096.0f : 1.0f / (float)cols;
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
        float inv = 1.0f / sqrtf(ss * inv_n + eps);
        for (int32_t c = 0; c < cols; c++)
            yr[c] = xr[c] * inv * w[c];
    }
}
