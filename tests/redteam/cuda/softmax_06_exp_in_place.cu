/* Input mutation: writes exp(x - max) over x as scratch and then divides it into y; the output is close, but x is left changed.
 * kiln-task: softmax
 * kiln-class: 6
 * kiln-dtype: bf16
 * kiln-expect: fail
 * kiln-stages: smoke
 * kiln-codes: input-modified
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

__device__ __forceinline__ float warp_max(float v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

/* Max of v over the block (blockDim.x a multiple of 32); every thread gets it. */
__device__ float block_max(float v)
{
    __shared__ float part[32];
    __shared__ float total;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = warp_max(v);
    if (lane == 0)
        part[warp] = v;
    __syncthreads();
    if (warp == 0) {
        float t = lane < (int)(blockDim.x >> 5) ? part[lane] : NEG_INF;
        t = warp_max(t);
        if (lane == 0)
            total = t;
    }
    __syncthreads();
    const float r = total;
    __syncthreads();
    return r;
}

#define BLOCK 256 //@kiln tune 128 256 512 1024

extern "C" __global__ void softmax_fwd(const kiln_t *x, kiln_t *y, int cols)
{
    kiln_t *xr = const_cast<kiln_t *>(x) + (size_t)blockIdx.x * cols;
    kiln_t *yr = y + (size_t)blockIdx.x * cols;
    float m = NEG_INF;
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        m = fmaxf(m, kiln_to_float(xr[c]));
    m = block_max(m);
    float s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        const float e = expf(kiln_to_float(xr[c]) - m);
        xr[c] = kiln_from_float(e);    /* x as scratch */
        s += e;
    }
    s = block_sum(s);
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        yr[c] = kiln_from_float(kiln_to_float(xr[c]) / s);
}

/*@kiln launch
{"launches": [{"kernel": "softmax_fwd", "grid": ["rows"], "block": ["BLOCK"], "smem": "0", "args": ["x", "y", "cols"]}],
 "scratch": []}
@*/
