/* Resource exhaustion: every thread printf()s a long line on every call; the driver writes the device printf buffer to the worker's stdout (its log) at each synchronize, several MB per call, until the file-size limit stops the worker.
 * kiln-task: rmsnorm
 * kiln-class: 22
 * kiln-dtype: f32
 * kiln-expect: fail
 * kiln-stages: smoke visible hidden stability determinism
 * kiln-codes: resource-limit crash timeout
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

extern "C" __global__ void rmsnorm_fwd(const kiln_t *x, const kiln_t *w, kiln_t *y, int cols, float eps)
{
    printf("kiln flood: block %d thread %d ................................................................"
           "................................................................................................\n",
           (int)blockIdx.x, (int)threadIdx.x);
    const size_t r = blockIdx.x;
    const kiln_t *xr = x + r * (size_t)cols;
    kiln_t *yr = y + r * (size_t)cols;
    const float inv = row_inv_rms(xr, cols, eps);
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        yr[c] = kiln_from_float(kiln_to_float(xr[c]) * inv * kiln_to_float(w[c]));
}

/*@kiln launch
{"launches": [{"kernel": "rmsnorm_fwd", "grid": ["rows"], "block": ["BLOCK"], "smem": "0", "args": ["x", "w", "y", "cols", "eps"]}],
 "scratch": []}
@*/
