/* Honest rmsnorm: accumulates the sum of squares in double (more precise than required), scales in float.
 * kiln-task: rmsnorm
 * kiln-expect: pass
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>

void rmsnorm(const float *x, const float *w, float *y, int32_t rows, int32_t cols, float eps)
{
    for (int32_t r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * cols;
        float *yr = y + (size_t)r * cols;
        double ss = 0.0;
        for (int32_t c = 0; c < cols; c++)
            ss += (double)xr[c] * (double)xr[c];
        float inv = (float)(1.0 / sqrt(ss / (double)cols + (double)eps));
        for (int32_t c = 0; c < cols; c++)
            yr[c] = xr[c] * inv * w[c];
    }
}
