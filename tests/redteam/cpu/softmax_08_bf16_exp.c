/* Precision downgrade (softmax): the exponentials are stored and summed as bf16 values (kiln_bf16 helpers), an 8-bit mantissa in an f32 task.
 * kiln-task: softmax
 * kiln-class: 8
 * kiln-expect: fail
 * kiln-stages: smoke visible hidden stability
 * kiln-codes: wrong-output
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include "kiln_cpu.h"

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
            float e = kiln_bf16_to_float(kiln_float_to_bf16(expf(xr[c] - m)));
            yr[c] = e;
            s += e;
        }
        float inv = 1.0f / s;
        for (int32_t c = 0; c < cols; c++)
            yr[c] *= inv;
    }
}
