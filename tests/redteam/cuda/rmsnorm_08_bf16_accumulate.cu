/* Precision downgrade: one thread per row with a bf16 accumulator for the sum of squares (the task wants f32 accumulation); once the sum reaches a few hundred, adding a square of about 1 barely moves it, so mean(x^2) comes out ~20% low at 1024 columns and far lower at 4096.
 * kiln-task: rmsnorm
 * kiln-class: 8
 * kiln-dtype: bf16
 * kiln-expect: fail
 * kiln-stages: smoke visible
 * kiln-codes: wrong-output
 */
#include "kiln_cuda.h"

#define BLOCK 64 //@kiln tune 32 64 128

extern "C" __global__ void rmsnorm_fwd(const kiln_t *x, const kiln_t *w, kiln_t *y, int rows, int cols, float eps)
{
    const int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows)
        return;
    const kiln_t *xr = x + (size_t)r * cols;
    kiln_t *yr = y + (size_t)r * cols;
    __nv_bfloat16 acc = __float2bfloat16_rn(0.0f);
    for (int c = 0; c < cols; c++) {
        const __nv_bfloat16 v = __float2bfloat16_rn(kiln_to_float(xr[c]));
        acc = __hfma(v, v, acc);
    }
    const float inv = rsqrtf(__bfloat162float(acc) / (float)cols + eps);
    for (int c = 0; c < cols; c++)
        yr[c] = kiln_from_float(kiln_to_float(xr[c]) * inv * kiln_to_float(w[c]));
}

/*@kiln launch
{"launches": [{"kernel": "rmsnorm_fwd", "grid": ["cdiv(rows, BLOCK)"], "block": ["BLOCK"], "smem": "0", "args": ["x", "w", "y", "rows", "cols", "eps"]}],
 "scratch": []}
@*/
