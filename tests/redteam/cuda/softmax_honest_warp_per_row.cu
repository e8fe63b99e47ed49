/* Honest (f16): one warp per row, 2D blocks of 32 x 8, grid cdiv(rows, 8) with a partly idle last block; max and sum by xor shuffles only.
 * kiln-task: softmax
 * kiln-class: honest
 * kiln-dtype: f16
 * kiln-expect: pass
 */
#include "kiln_cuda.h"

#define NEG_INF __int_as_float(0xff800000)

__device__ __forceinline__ float warp_sum(float v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ float warp_max(float v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

#define ROWS_PER_BLOCK 8 //@kiln tune 4 8 16

extern "C" __global__ void softmax_warp(const kiln_t *x, kiln_t *y, int rows, int cols)
{
    const int r = blockIdx.x * blockDim.y + threadIdx.y;
    if (r >= rows)
        return;
    const kiln_t *xr = x + (size_t)r * cols;
    kiln_t *yr = y + (size_t)r * cols;
    float m = NEG_INF;
    for (int c = threadIdx.x; c < cols; c += 32)
        m = fmaxf(m, kiln_to_float(xr[c]));
    m = warp_max(m);
    float s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += 32)
        s += expf(kiln_to_float(xr[c]) - m);
    s = warp_sum(s);
    for (int c = threadIdx.x; c < cols; c += 32)
        yr[c] = kiln_from_float(expf(kiln_to_float(xr[c]) - m) / s);
}

/*@kiln launch
{"launches": [{"kernel": "softmax_warp", "grid": ["cdiv(rows, ROWS_PER_BLOCK)"], "block": [32, "ROWS_PER_BLOCK"], "smem": "0", "args": ["x", "y", "rows", "cols"]}],
 "scratch": []}
@*/
