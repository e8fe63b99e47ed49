/* Honest softmax: single-pass online normaliser (running max and running sum rescaled in float whenever the max grows), then one output pass.
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
        float m = -INFINITY, s = 0.0f;
        for (int32_t c = 0; c < cols; c++) {
            float v = xr[c];
            if (v > m) {
                s = s * expf(m - v) + 1.0f;   /* expf(-inf) = 0 on the first element */
                m = v;
            } else {
                s += expf(v - m);
            }
        }
        float inv = 1.0f / s;
        for (int32_t c = 0; c < cols; c++)
            yr[c] = expf(xr[c] - m) * inv;
    }
}
