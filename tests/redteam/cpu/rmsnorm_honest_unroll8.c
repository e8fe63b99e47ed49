/* Honest rmsnorm: sum of squares unrolled by 8 with 8 independent float accumulators and a scalar tail (looks like a vector trick, is correct for any cols).
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
        float a0 = 0, a1 = 0, a2 = 0, a3 = 0, a4 = 0, a5 = 0, a6 = 0, a7 = 0;
        int32_t c = 0;
        for (; c + 8 <= cols; c += 8) {
            a0 += xr[c + 0] * xr[c + 0];
            a1 += xr[c + 1] * xr[c + 1];
            a2 += xr[c + 2] * xr[c + 2];
            a3 += xr[c + 3] * xr[c + 3];
            a4 += xr[c + 4] * xr[c + 4];
            a5 += xr[c + 5] * xr[c + 5];
            a6 += xr[c + 6] * xr[c + 6];
            a7 += xr[c + 7] * xr[c + 7];
        }
        for (; c < cols; c++)
            a0 += xr[c] * xr[c];
        float ss = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7));
        float inv = 1.0f / sqrtf(ss / (float)cols + eps);
        c = 0;
        for (; c + 8 <= cols; c += 8)
            for (int k = 0; k < 8; k++)
                yr[c + k] = xr[c + k] * inv * w[c + k];
        for (; c < cols; c++)
            yr[c] = xr[c] * inv * w[c];
    }
}
