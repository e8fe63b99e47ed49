/* Truncation: 1024 threads per row, each holding exactly 4 elements in registers (4096 = the widest visible row); columns past 4096 are neither reduced nor written.
 * kiln-task: softmax
 * kiln-class: 2
 * kiln-dtype: bf16
 * kiln-expect: fail
 * kiln-stages: hidden
 * kiln-codes: unwritten-output
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

#define PER 4

extern "C" __global__ void softmax_fwd(const kiln_t *x, kiln_t *y, int cols)
{
    const kiln_t *xr = x + (size_t)blockIdx.x * cols;
    kiln_t *yr = y + (size_t)blockIdx.x * cols;
    float v[PER];
    float m = NEG_INF;
#pragma unroll
    for (int k = 0; k < PER; k++) {
        const int c = threadIdx.x + k * blockDim.x;
        v[k] = c < cols ? kiln_to_float(xr[c]) : NEG_INF;
        m = fmaxf(m, v[k]);
    }
    m = block_max(m);
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < PER; k++) {
        const int c = threadIdx.x + k * blockDim.x;
        v[k] = c < cols ? expf(v[k] - m) : 0.0f;
        s += v[k];
    }
    s = block_sum(s);
#pragma unroll
    for (int k = 0; k < PER; k++) {
        const int c = threadIdx.x + k * blockDim.x;
        if (c < cols)
            yr[c] = kiln_from_float(v[k] / s);
    }
}

/*@kiln launch
{"launches": [{"kernel": "softmax_fwd", "grid": ["rows"], "block": [1024], "smem": "0", "args": ["x", "y", "cols"]}],
 "scratch": []}
@*/
