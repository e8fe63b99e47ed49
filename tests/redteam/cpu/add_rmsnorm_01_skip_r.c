/* Stale output: computes r = x + residual in registers and y from it correctly, but never stores r, hoping the caller only looks at y (or that r's buffer still holds an earlier answer).
 * kiln-task: add_rmsnorm
 * kiln-class: 1
 * kiln-expect: fail
 * kiln-stages: smoke
 * kiln-codes: unwritten-output
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>

void add_rmsnorm(const float *x, const float *residual, const float *w, float *r, float *y,
                 int32_t rows, int32_t cols, float eps)
{
    (void)r;
    for (int32_t i = 0; i < rows; i++) {
        const float *xi = x + (size_t)i * cols, *ri = residual + (size_t)i * cols;
        float *yi = y + (size_t)i * cols;
        float ss = 0.0f;
        for (int32_t c = 0; c < cols; c++) {
            float v = xi[c] + ri[c];
            ss += v * v;
        }
        float inv = 1.0f / sqrtf(ss / (float)cols + eps);
        for (int32_t c = 0; c < cols; c++)
            yi[c] = (xi[c] + ri[c]) * inv * w[c];
    }
}
