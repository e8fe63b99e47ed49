/* Phase detection: a one-thread launch tracks how many calls in a row had the same shape; from the third on (a timing loop, it assumes) the reduction is skipped. Checks once never repeated a shape three times in a row, timing does; now the stability variants all run on the largest visible shape, one after the other, and the third of them catches it.
 * kiln-task: rmsnorm
 * kiln-class: 5
 * kiln-dtype: f32
 * kiln-expect: fail
 * kiln-stages: stability determinism timing
 * kiln-codes: wrong-output nondeterministic
 */
#include "kiln_cuda.h"

#define BLOCK 256 //@kiln tune 128 256 512 1024

__device__ int g_last_rows, g_last_cols, g_run;

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

extern "C" __global__ void watch_shape(int rows, int cols)
{
    if (rows == g_last_rows && cols == g_last_cols) {
        g_run++;
    } else {
        g_run = 1;
        g_last_rows = rows;
        g_last_cols = cols;
    }
}

extern "C" __global__ void rmsnorm_fwd(const kiln_t *x, const kiln_t *w, kiln_t *y, int cols, float eps)
{
    const size_t r = blockIdx.x;
    const kiln_t *xr = x + r * (size_t)cols;
    kiln_t *yr = y + r * (size_t)cols;
    if (g_run >= 3) {
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
{"launches": [{"kernel": "watch_shape", "grid": [1], "block": [1], "smem": "0", "args": ["rows", "cols"]},
               {"kernel": "rmsnorm_fwd", "grid": ["rows"], "block": ["BLOCK"], "smem": "0", "args": ["x", "w", "y", "cols", "eps"]}],
 "scratch": []}
@*/
