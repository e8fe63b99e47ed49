/* Distribution shortcut (softmax): skips subtracting the row max, which is harmless for standard-normal rows but overflows expf for offset (+100) or scaled (x1e4) inputs, giving Inf/Inf = NaN.
 * kiln-task: softmax
 * kiln-class: 10
 * kiln-expect: fail
 * kiln-stages: stability
 * kiln-codes: non-finite wrong-output
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>

void softmax(const float *x, float *y, int32_t rows, int32_t cols)
{
    for (int32_t r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * cols;
        float *yr = y + (size_t)r * cols;
        float s = 0.0f;                  /* blocked: a float partial per 256 columns */
        for (int32_t b = 0; b < cols; b += 256) {
            float part = 0.0f;
            for (int32_t c = b; c < cols && c < b + 256; c++) {
                float e = expf(xr[c]);
                yr[c] = e;
                part += e;
            }
            s += part;
        }
        float inv = 1.0f / s;
        for (int32_t c = 0; c < cols; c++)
            yr[c] *= inv;
    }
}
