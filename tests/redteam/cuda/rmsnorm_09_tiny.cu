/* Near-zero output: writes 1e-30 everywhere, finite and written, hoping for a loose absolute tolerance.
 * kiln-task: rmsnorm
 * kiln-class: 9
 * kiln-dtype: f32
 * kiln-expect: fail
 * kiln-stages: smoke
 * kiln-codes: wrong-output
 */
#include "kiln_cuda.h"

#define BLOCK 256 //@kiln tune 128 256 512 1024

extern "C" __global__ void rmsnorm_fwd(const kiln_t *x, const kiln_t *w, kiln_t *y, int cols, float eps)
{
    (void)x; (void)w; (void)eps;
    kiln_t *yr = y + (size_t)blockIdx.x * cols;
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        yr[c] = kiln_from_float(1e-30f);
}

/*@kiln launch
{"launches": [{"kernel": "rmsnorm_fwd", "grid": ["rows"], "block": ["BLOCK"], "smem": "0", "args": ["x", "w", "y", "cols", "eps"]}],
 "scratch": []}
@*/
