/* Honest: one warp per row with a 2D block of 32 x ROWS_PER_BLOCK threads and a grid of cdiv(rows, ROWS_PER_BLOCK), so the last block is partly idle whenever rows is not a multiple (33, 129, 257 ...); only warp shuffles, no shared memory or block barrier.
 * kiln-task: rmsnorm
 * kiln-class: honest
 * kiln-dtype: bf16
 * kiln-expect: pass
 */
#include "kiln_cuda.h"

#define ROWS_PER_BLOCK 4 //@kiln tune 2 4 8 16

__device__ __forceinline__ float warp_sum(float v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

extern "C" __global__ void rmsnorm_warp(const kiln_t *x, const kiln_t *w, kiln_t *y, int rows, int cols, float eps)
{
    const int r = blockIdx.x * blockDim.y + threadIdx.y;
    if (r >= rows)
        return;    /* whole warps leave; nothing below waits for them */
    const kiln_t *xr = x + (size_t)r * cols;
    kiln_t *yr = y + (size_t)r * cols;
    float ss = 0.0f;
    for (int c = threadIdx.x; c < cols; c += 32) {
        const float v = kiln_to_float(xr[c]);
        ss += v * v;
    }
    const float inv = rsqrtf(warp_sum(ss) / (float)cols + eps);
    for (int c = threadIdx.x; c < cols; c += 32)
        yr[c] = kiln_from_float(kiln_to_float(xr[c]) * inv * kiln_to_float(w[c]));
}

/*@kiln launch
{"launches": [{"kernel": "rmsnorm_warp", "grid": ["cdiv(rows, ROWS_PER_BLOCK)"], "block": [32, "ROWS_PER_BLOCK"], "smem": "0", "args": ["x", "w", "y", "rows", "cols", "eps"]}],
 "scratch": []}
@*/
