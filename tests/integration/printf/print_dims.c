/* Correct rmsnorm that prints its dims on every call, and the dims of the
 * call before (kept in a static, as a kernel could keep them in device
 * memory): the verdict shows what it printed on a visible shape, and never
 * anything printed after a hidden shape ran. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>

static int32_t prev_rows = -1, prev_cols = -1;

void rmsnorm(const float *x, const float *w, float *y, int32_t rows, int32_t cols, float eps)
{
    printf("KILNOUT rows=%d cols=%d prev_rows=%d prev_cols=%d\n", rows, cols, prev_rows, prev_cols);
    prev_rows = rows;
    prev_cols = cols;
    for (int32_t r = 0; r < rows; r++) {
        const float *xr = x + (int64_t)r * cols;
        float *yr = y + (int64_t)r * cols;
        float ss = 0.0f;
        for (int32_t c = 0; c < cols; c++)
            ss += xr[c] * xr[c];
        float inv = 1.0f / sqrtf(ss / (float)cols + eps);
        for (int32_t c = 0; c < cols; c++)
            yr[c] = xr[c] * inv * w[c];
    }
}
