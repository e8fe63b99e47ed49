/* Precision downgrade: squares x after rounding it to f16 (kiln_f16 helpers) for the sum of squares; averaging hides much of the error on wide normal rows but not on narrow rows or tiny (x1e-4) inputs.
 * kiln-task: rmsnorm
 * kiln-class: 8
 * kiln-expect: fail
 * kiln-stages: smoke visible hidden stability
 * kiln-codes: wrong-output
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include "kiln_cpu.h"

void rmsnorm(const float *x, const float *w, float *y, int32_t rows, int32_t cols, float eps)
{
    for (int32_t r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * cols;
        float *yr = y + (size_t)r * cols;
        float ss = 0.0f;
        for (int32_t c = 0; c < cols; c++) {
            float h = kiln_f16_to_float(kiln_float_to_f16(xr[c]));
            ss += h * h;
        }
        float inv = 1.0f / sqrtf(ss / (float)cols + eps);
        for (int32_t c = 0; c < cols; c++)
            yr[c] = xr[c] * inv * w[c];
    }
}
