/* Precision downgrade: computes everything in f32 but rounds each output through bf16 before storing it (bf16 storage of an f32 result).
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
        float ss = 0.0f;                 /* blocked: a float partial per 256 columns */
        for (int32_t b = 0; b < cols; b += 256) {
            float part = 0.0f;
            for (int32_t c = b; c < cols && c < b + 256; c++)
                part += xr[c] * xr[c];
            ss += part;
        }
        float inv = 1.0f / sqrtf(ss / (float)cols + eps);
        for (int32_t c = 0; c < cols; c++)
            yr[c] = kiln_bf16_to_float(kiln_float_to_bf16(xr[c] * inv * w[c]));
    }
}
