/* Stale output: r = x + residual is formed and rounded in registers and y computed from it correctly, but r is never stored, hoping the caller only reads y (or that r's device buffer still holds an earlier answer).
 * kiln-task: add_rmsnorm
 * kiln-class: 1
 * kiln-dtype: bf16
 * kiln-expect: fail
 * kiln-stages: smoke
 * kiln-codes: unwritten-output
 */
#include "kiln_cuda.h"

#define BLOCK 256 //@kiln tune 128 256 512 1024

__device__ float block_sum(float v)
{
    __shared__ float part[BLOCK / 32];
    for (int off = 16; off > 0; off >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, off);
    if ((threadIdx.x & 31) == 0)
        part[threadIdx.x >> 5] = v;
    __syncthreads();
    v = (threadIdx.x & 31) < BLOCK / 32 ? part[threadIdx.x & 31] : 0.0f;
    for (int off = 16; off > 0; off >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, off);
    return v;
}

extern "C" __global__ void __launch_bounds__(BLOCK)
add_rmsnorm_fwd(const kiln_t *x, const kiln_t *residual, const kiln_t *w, kiln_t *r, kiln_t *y,
                int cols, float eps)
{
    (void)r;
    size_t row = (size_t)blockIdx.x * cols;
    float ss = 0.0f;
    for (int c = threadIdx.x; c < cols; c += BLOCK) {
        float v = kiln_to_float(kiln_from_float(kiln_to_float(x[row + c]) + kiln_to_float(residual[row + c])));
        ss += v * v;
    }
    float inv = rsqrtf(block_sum(ss) / (float)cols + eps);
    for (int c = threadIdx.x; c < cols; c += BLOCK) {
        float v = kiln_to_float(kiln_from_float(kiln_to_float(x[row + c]) + kiln_to_float(residual[row + c])));
        y[row + c] = kiln_from_float(v * inv * kiln_to_float(w[c]));
    }
}

/*@kiln launch
{"launches": [{"kernel": "add_rmsnorm_fwd", "grid": ["rows"], "block": ["BLOCK"], "smem": "0",
               "args": ["x", "residual", "w", "r", "y", "cols", "eps"]}],
 "scratch": []}
@*/
