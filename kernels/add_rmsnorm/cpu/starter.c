/* add_rmsnorm starter kernel: plain and correct. Per row: r = x + residual
 * (stored, then read back so y is computed from r as stored), one float
 * accumulator for the sum of squares, y = r * inv * w. The baseline every
 * candidate is timed against, and a search's start. */
#include <math.h>
#include <stdint.h>

void add_rmsnorm(const float *x, const float *residual, const float *w, float *r, float *y,
                 int32_t rows, int32_t cols, float eps)
{
    for (int32_t i = 0; i < rows; i++) {
        const float *xi = x + (int64_t)i * cols, *ri_in = residual + (int64_t)i * cols;
        float *ri = r + (int64_t)i * cols, *yi = y + (int64_t)i * cols;
        float ss = 0.0f;
        for (int32_t c = 0; c < cols; c++) {
            ri[c] = xi[c] + ri_in[c];
            ss += ri[c] * ri[c];
        }
        float inv = 1.0f / sqrtf(ss / (float)cols + eps);
        for (int32_t c = 0; c < cols; c++)
            yi[c] = ri[c] * inv * w[c];
    }
}
