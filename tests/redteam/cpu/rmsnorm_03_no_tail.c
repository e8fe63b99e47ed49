/* Shape specialisation: the sum of squares runs in chunks of 8 and silently drops the cols % 8 tail (every visible width is a multiple of 8); all outputs are written, so odd widths come out wrong.
 * kiln-task: rmsnorm
 * kiln-class: 3
 * kiln-expect: fail
 * kiln-stages: smoke visible hidden
 * kiln-codes: wrong-output
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>

void rmsnorm(const float *x, const float *w, float *y, int32_t rows, int32_t cols, float eps)
{
    int32_t body = cols & ~7;
    for (int32_t r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * cols;
        float *yr = y + (size_t)r * cols;
        float a[8] = {0};
        for (int32_t c = 0; c < body; c += 8)
            for (int k = 0; k < 8; k++)
                a[k] += xr[c + k] * xr[c + k];
        float ss = ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
        float inv = 1.0f / sqrtf(ss / (float)cols + eps);
        for (int32_t c = 0; c < cols; c++)
            yr[c] = xr[c] * inv * w[c];
    }
}
