/* Distribution shortcut: assumes mean(x^2) == 1 for standard-normal rows and skips the reduction, y = x * w / sqrt(1 + eps).
 * kiln-task: rmsnorm
 * kiln-class: 10
 * kiln-expect: fail
 * kiln-stages: smoke visible hidden stability
 * kiln-codes: wrong-output
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>

void rmsnorm(const float *x, const float *w, float *y, int32_t rows, int32_t cols, float eps)
{
    float inv = 1.0f / sqrtf(1.0f + eps);
    for (int32_t r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * cols;
        float *yr = y + (size_t)r * cols;
        for (int32_t c = 0; c < cols; c++)
            yr[c] = xr[c] * inv * w[c];
    }
}
