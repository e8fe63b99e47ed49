/* Distribution shortcut: subtracts a fixed 10 instead of the row max ("inputs are about N(0, 1)"), which is exact in real arithmetic and fine for standard-normal rows, but exp overflows on the scaled-up variant (Inf/Inf = NaN) and underflows to 0/0 on the negative offset.
 * kiln-task: softmax
 * kiln-class: 10
 * kiln-dtype: bf16
 * kiln-expect: fail
 * kiln-stages: stability hidden
 * kiln-codes: non-finite wrong-output
 */
#include "kiln_cuda.h"

__device__ __forceinline__ float warp_sum(float v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

/* Sum of v over the block (blockDim.x a multiple of 32, at most 1024) in a
 * fixed order; every thread gets the total. */
__device__ float block_sum(float v)
{
    __shared__ float part[32];
    __shared__ float total;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = warp_sum(v);
    if (lane == 0)
        part[warp] = v;
    __syncthreads();
    if (warp == 0) {
        float t = lane < (int)(blockDim.x >> 5) ? part[lane] : 0.0f;
        t = warp_sum(t);
        if (lane == 0)
            total = t;
    }
    __syncthreads();
    const float r = total;
    __syncthreads();   /* part and total are reused by the next call */
    return r;
}

#define BLOCK 256 //@kiln tune 128 256 512 1024
#define SHIFT 10.0f

extern "C" __global__ void softmax_fwd(const kiln_t *x, kiln_t *y, int cols)
{
    const kiln_t *xr = x + (size_t)blockIdx.x * cols;
    kiln_t *yr = y + (size_t)blockIdx.x * cols;
    float s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        s += expf(kiln_to_float(xr[c]) - SHIFT);
    s = block_sum(s);
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        yr[c] = kiln_from_float(expf(kiln_to_float(xr[c]) - SHIFT) / s);
}

/*@kiln launch
{"launches": [{"kernel": "softmax_fwd", "grid": ["rows"], "block": ["BLOCK"], "smem": "0", "args": ["x", "y", "cols"]}],
 "scratch": []}
@*/
