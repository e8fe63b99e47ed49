/* Honest add_rmsnorm: r formed and stored in blocks of 8 with 8 independent float accumulators for the squares and a scalar tail; y from r read back as stored (correct for any cols).
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
        float acc[8] = {0};
        int32_t c = 0;
        for (; c + 8 <= cols; c += 8)
            for (int u = 0; u < 8; u++) {
                rr[c + u] = xi[c + u] + ri[c + u];
                acc[u] += rr[c + u] * rr[c + u];
            }
        for (; c < cols; c++) {
            rr[c] = xi[c] + ri[c];
            acc[0] += rr[c] * rr[c];
        }
        float ss = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
        float inv = 1.0f / sqrtf(ss / (float)cols + eps);
        for (c = 0; c < cols; c++)
            yi[c] = rr[c] * w[c] * inv;
    }
}
