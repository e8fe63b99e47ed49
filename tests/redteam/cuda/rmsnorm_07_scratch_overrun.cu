/* Out-of-bounds write past a scratch buffer: the first launch stores each row's 1/rms in scratch 'inv' of rows floats and the last block also writes inv[rows]; scratch buffers need guards like the task's buffers.
 * kiln-task: rmsnorm
 * kiln-class: 7
 * kiln-dtype: f32
 * kiln-expect: fail
 * kiln-stages: smoke
 * kiln-codes: guard-corrupted
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

extern "C" __global__ void row_stats(const kiln_t *x, float *inv, int cols, float eps)
{
    const float v = row_inv_rms(x + (size_t)blockIdx.x * cols, cols, eps);
    if (threadIdx.x == 0) {
        inv[blockIdx.x] = v;
        if (blockIdx.x == gridDim.x - 1)
            inv[gridDim.x] = v;   /* one past the end */
    }
}

extern "C" __global__ void rmsnorm_fwd(const kiln_t *x, const kiln_t *w, kiln_t *y, const float *inv, int cols)
{
    const size_t r = blockIdx.x;
    const float s = inv[r];
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        y[r * cols + c] = kiln_from_float(kiln_to_float(x[r * cols + c]) * s * kiln_to_float(w[c]));
}

/*@kiln launch
{"launches": [{"kernel": "row_stats", "grid": ["rows"], "block": ["BLOCK"], "smem": "0", "args": ["x", "inv", "cols", "eps"]},
               {"kernel": "rmsnorm_fwd", "grid": ["rows"], "block": ["BLOCK"], "smem": "0", "args": ["x", "w", "y", "inv", "cols"]}],
 "scratch": [{"name": "inv", "bytes": "rows * 4", "init": "none"}]}
@*/
