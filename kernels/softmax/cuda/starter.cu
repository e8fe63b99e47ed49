/* softmax CUDA starter: plain and correct. One block per row: a block max,
 * then a block sum of exp(x - max) in fp32 (warp shuffles, then one warp
 * over the per-warp partials), then each output exp(x - max) / sum rounded
 * once. Any cols works (1, primes, no vector-width assumption).
 * The baseline CUDA candidates are timed against, and a search's start. */
#include "kiln_cuda.h"

#define BLOCK 256 //@kiln tune 128 256 512 1024

__device__ __forceinline__ float warp_sum(float v)
{
    for (int off = 16; off > 0; off >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, off);
    return v;
}

__device__ __forceinline__ float warp_max(float v)
{
    for (int off = 16; off > 0; off >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, off));
    return v;
}

/* Block-wide sum (max when is_max) of v, returned to every thread. */
__device__ float block_reduce(float v, bool is_max)
{
    __shared__ float part[BLOCK / 32];
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = is_max ? warp_max(v) : warp_sum(v);
    if (lane == 0)
        part[warp] = v;
    __syncthreads();
    float neutral = is_max ? __int_as_float(0xff800000) : 0.0f;   /* -inf or 0 */
    v = lane < BLOCK / 32 ? part[lane] : neutral;
    __syncthreads();   /* part is reused by the next call */
    return is_max ? warp_max(v) : warp_sum(v);
}

extern "C" __global__ void __launch_bounds__(BLOCK)
softmax_fwd(const kiln_t *x, kiln_t *y, int cols)
{
    const kiln_t *xr = x + (size_t)blockIdx.x * cols;
    kiln_t *yr = y + (size_t)blockIdx.x * cols;
    float m = __int_as_float(0xff800000);
    for (int c = threadIdx.x; c < cols; c += BLOCK)
        m = fmaxf(m, kiln_to_float(xr[c]));
    m = block_reduce(m, true);
    float s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += BLOCK)
        s += expf(kiln_to_float(xr[c]) - m);
    s = block_reduce(s, false);
    float inv = 1.0f / s;
    for (int c = threadIdx.x; c < cols; c += BLOCK)
        yr[c] = kiln_from_float(expf(kiln_to_float(xr[c]) - m) * inv);
}

/*@kiln launch
{"launches": [{"kernel": "softmax_fwd", "grid": ["rows"], "block": ["BLOCK"], "smem": "0",
               "args": ["x", "y", "cols"]}],
 "scratch": []}
@*/
