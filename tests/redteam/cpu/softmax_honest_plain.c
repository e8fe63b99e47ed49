/* Honest softmax: row max, expf(x - max) written to y while summing in float, then multiply by 1/sum; robust to offsets and large magnitudes.
 * kiln-task: softmax
 * kiln-expect: pass
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>

void softmax(const float *x, float *y, int32_t rows, int32_t cols)
{
    for (int32_t r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * cols;
        float *yr = y + (size_t)r * cols;
        float m = xr[0];
        for (int32_t c = 1; c < cols; c++)
            m = xr[c] > m ? xr[c] : m;
        float s = 0.0f;
        for (int32_t c = 0; c < cols; c++) {
            float e = expf(xr[c] - m);
            yr[c] = e;
            s += e;
        }
        for (int32_t c = 0; c < cols; c++)
            yr[c] = yr[c] / s;
    }
}
