/* Honest add_rmsnorm: the sum of squares of the stored r in double, the scale in float.
 * kiln-task: add_rmsnorm
 * kiln-expect: pass
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>

void add_rmsnorm(const float *x, const float *residual, const float *w, float *r, float *y,
                 int32_t rows, int32_t cols, float eps)
{
    for (int32_t i = 0; i < rows; i++) {
        const float *xi = x + (size_t)i * cols, *ri = residual + (size_t)i * cols;
        float *rr = r + (size_t)i * cols, *yi = y + (size_t)i * cols;
        double ss = 0.0;
        for (int32_t c = 0; c < cols; c++) {
            rr[c] = xi[c] + ri[c];
            ss += (double)rr[c] * rr[c];
        }
        float inv = (float)(1.0 / sqrt(ss / cols + eps));
        for (int32_t c = 0; c < cols; c++)
            yi[c] = rr[c] * inv * w[c];
    }
}
