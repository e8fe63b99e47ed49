/* Uninitialised read: a split reduction that accumulates each (row, split) partial with += into scratch declared "init": "none" (it should say "zero"); kiln fills such scratch with 0xff bytes, a NaN in every float type, so every row's sum is NaN.
 * kiln-task: rmsnorm
 * kiln-class: 13
 * kiln-dtype: f32
 * kiln-expect: fail
 * kiln-stages: smoke
 * kiln-codes: non-finite
 */
#include "kiln_cuda.h"

#define BLOCK 256 //@kiln tune 128 256 512 1024
#define SPLIT 4 //@kiln tune 2 4 8

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

extern "C" __global__ void partial_sumsq(const kiln_t *x, float *part, int cols)
{
    const size_t r = blockIdx.y;
    const int chunk = (cols + SPLIT - 1) / SPLIT;
    const int lo = blockIdx.x * chunk, hi = min(cols, lo + chunk);
    float p = 0.0f;
    for (int c = lo + threadIdx.x; c < hi; c += blockDim.x) {
        const float v = kiln_to_float(x[r * cols + c]);
        p += v * v;
    }
    p = block_sum(p);
    if (threadIdx.x == 0)
        part[r * SPLIT + blockIdx.x] += p;    /* assumes the slot starts at 0 */
}

extern "C" __global__ void rmsnorm_fwd(const kiln_t *x, const kiln_t *w, kiln_t *y, const float *part, int cols, float eps)
{
    const size_t r = blockIdx.x;
    float t = 0.0f;
    for (int s = 0; s < SPLIT; s++)
        t += part[r * SPLIT + s];
    const float inv = rsqrtf(t / (float)cols + eps);
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        y[r * cols + c] = kiln_from_float(kiln_to_float(x[r * cols + c]) * inv * kiln_to_float(w[c]));
}

/*@kiln launch
{"launches": [{"kernel": "partial_sumsq", "grid": ["SPLIT", "rows"], "block": ["BLOCK"], "smem": "0", "args": ["x", "part", "cols"]},
               {"kernel": "rmsnorm_fwd", "grid": ["rows"], "block": ["BLOCK"], "smem": "0", "args": ["x", "w", "y", "part", "cols", "eps"]}],
 "scratch": [{"name": "part", "bytes": "rows * SPLIT * 4", "init": "none"}]}
@*/
