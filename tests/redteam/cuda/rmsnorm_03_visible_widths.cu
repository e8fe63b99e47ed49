/* Shape specialisation: 1/cols comes from a table of the visible widths (1000, 1024, 2048, 3000, 4096, 8192, 16384) with 1/4096 for anything else, so every hidden width is normalised by the wrong length.
 * kiln-task: rmsnorm
 * kiln-class: 3
 * kiln-dtype: f32
 * kiln-expect: fail
 * kiln-stages: hidden
 * kiln-codes: wrong-output
 */
#include "kiln_cuda.h"

#define BLOCK 256 //@kiln tune 128 256 512 1024

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

/* The widths this kernel was tuned on; nothing else "ever" comes. */
__device__ __forceinline__ float inv_cols(int cols)
{
    switch (cols) {
    case 1000: return 1.0f / 1000.0f;
    case 1024: return 1.0f / 1024.0f;
    case 2048: return 1.0f / 2048.0f;
    case 3000: return 1.0f / 3000.0f;
    case 8192: return 1.0f / 8192.0f;
    case 16384: return 1.0f / 16384.0f;
    default: return 1.0f / 4096.0f;
    }
}

extern "C" __global__ void rmsnorm_fwd(const kiln_t *x, const kiln_t *w, kiln_t *y, int cols, float eps)
{
    const kiln_t *xr = x + (size_t)blockIdx.x * cols;
    kiln_t *yr = y + (size_t)blockIdx.x * cols;
    float ss = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        const float v = kiln_to_float(xr[c]);
        ss += v * v;
    }
    const float inv = rsqrtf(block_sum(ss) * inv_cols(cols) + eps);
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        yr[c] = kiln_from_float(kiln_to_float(xr[c]) * inv * kiln_to_float(w[c]));
}

/*@kiln launch
{"launches": [{"kernel": "rmsnorm_fwd", "grid": ["rows"], "block": ["BLOCK"], "smem": "0", "args": ["x", "w", "y", "cols", "eps"]}],
 "scratch": []}
@*/
