/* Out-of-bounds write: correct r and y, plus one float stored just past the end of r, the first of the two outputs (into the guard between r and y).
 * kiln-task: add_rmsnorm
 * kiln-class: 7
 * kiln-expect: fail
 * kiln-stages: smoke
 * kiln-codes: guard-corrupted
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
        float ss = 0.0f;
        for (int32_t c = 0; c < cols; c++) {
            rr[c] = xi[c] + ri[c];
            ss += rr[c] * rr[c];
        }
        float inv = 1.0f / sqrtf(ss / (float)cols + eps);
        for (int32_t c = 0; c < cols; c++)
            yi[c] = rr[c] * inv * w[c];
    }
    r[(size_t)rows * cols] = 1.0f;
}
