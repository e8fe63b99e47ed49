/* Distribution shortcut: assumes mean(x^2) = 1 for standard-normal rows and skips the reduction, y = x * w / sqrt(1 + eps); a few percent off on normal rows (bf16 ulps), 1e4 times off on the scaled-up variant.
 * kiln-task: rmsnorm
 * kiln-class: 10
 * kiln-dtype: bf16
 * kiln-expect: fail
 * kiln-stages: smoke visible hidden stability
 * kiln-codes: wrong-output
 */
#include "kiln_cuda.h"

#define BLOCK 256 //@kiln tune 128 256 512 1024

extern "C" __global__ void rmsnorm_fwd(const kiln_t *x, const kiln_t *w, kiln_t *y, int cols, float eps)
{
    const kiln_t *xr = x + (size_t)blockIdx.x * cols;
    kiln_t *yr = y + (size_t)blockIdx.x * cols;
    const float inv = rsqrtf(1.0f + eps);
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        yr[c] = kiln_from_float(kiln_to_float(xr[c]) * inv * kiln_to_float(w[c]));
}

/*@kiln launch
{"launches": [{"kernel": "rmsnorm_fwd", "grid": ["rows"], "block": ["BLOCK"], "smem": "0", "args": ["x", "w", "y", "cols", "eps"]}],
 "scratch": []}
@*/
