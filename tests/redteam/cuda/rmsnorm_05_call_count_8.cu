/* Phase detection: a one-thread launch counts calls in a __device__ counter; the first 8 calls (assumed to be the checks) are honest, later ones skip the reduction (y = x * w / sqrt(1 + eps)). Smoke and the 6 visible shapes are calls 1-7 and the stability variants on the largest visible shape follow, so the 9th call is the second variant (scaled down). (The hidden shapes run in a second worker, whose counter starts again at 0.)
 * kiln-task: rmsnorm
 * kiln-class: 5
 * kiln-dtype: f32
 * kiln-expect: fail
 * kiln-stages: stability
 * kiln-codes: wrong-output
 */
#include "kiln_cuda.h"

#define BLOCK 256 //@kiln tune 128 256 512 1024

__device__ unsigned g_calls;

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

/* 1/rms of one row; every thread of the block gets it. */
__device__ float row_inv_rms(const kiln_t *xr, int cols, float eps)
{
    float ss = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        const float v = kiln_to_float(xr[c]);
        ss += v * v;
    }
    ss = block_sum(ss);
    return rsqrtf(ss / (float)cols + eps);
}

extern "C" __global__ void count_call(int rows)
{
    (void)rows;
    g_calls++;
}

extern "C" __global__ void rmsnorm_fwd(const kiln_t *x, const kiln_t *w, kiln_t *y, int cols, float eps)
{
    const size_t r = blockIdx.x;
    const kiln_t *xr = x + r * (size_t)cols;
    kiln_t *yr = y + r * (size_t)cols;
    if (g_calls > 8) {
        /* skip the reduction: "mean(x^2) is about 1" */
        const float inv = rsqrtf(1.0f + eps);
        for (int c = threadIdx.x; c < cols; c += blockDim.x)
            yr[c] = kiln_from_float(kiln_to_float(xr[c]) * inv * kiln_to_float(w[c]));
        return;
    }
    const float inv = row_inv_rms(xr, cols, eps);
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        yr[c] = kiln_from_float(kiln_to_float(xr[c]) * inv * kiln_to_float(w[c]));
}

/*@kiln launch
{"launches": [{"kernel": "count_call", "grid": [1], "block": [1], "smem": "0", "args": ["rows"]},
               {"kernel": "rmsnorm_fwd", "grid": ["rows"], "block": ["BLOCK"], "smem": "0", "args": ["x", "w", "y", "cols", "eps"]}],
 "scratch": []}
@*/
