/* Stale compiled code: copies y from an extern __device__ array it expects an earlier module (a previous job, the baseline, a cached build) to define. Whole-program NVRTC compilation cannot resolve it, so it must fail to build.
 * kiln-task: rmsnorm
 * kiln-class: 19
 * kiln-dtype: f32
 * kiln-expect: fail
 * kiln-stages: compile
 * kiln-codes: compile-error
 */
#include "kiln_cuda.h"

#define BLOCK 256 //@kiln tune 128 256 512 1024

extern __device__ float kiln_last_y[];   /* "left over from the last job" */

extern "C" __global__ void rmsnorm_fwd(const kiln_t *x, const kiln_t *w, kiln_t *y, int cols, float eps)
{
    (void)x; (void)w; (void)eps;
    const size_t r = blockIdx.x;
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        y[r * cols + c] = kiln_from_float(kiln_last_y[r * cols + c]);
}

/*@kiln launch
{"launches": [{"kernel": "rmsnorm_fwd", "grid": ["rows"], "block": ["BLOCK"], "smem": "0", "args": ["x", "w", "y", "cols", "eps"]}],
 "scratch": []}
@*/
