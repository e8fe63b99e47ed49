/* Caching across calls: keeps the last y in a 1 MiB __device__ array keyed on (x pointer, rows, cols) and replays it when the same x buffer and shape come back. kiln reuses its device buffers, so the key matches on the second call of a shape (visible v1 after smoke), but the inputs are fresh, so the replayed y is wrong.
 * kiln-task: rmsnorm
 * kiln-class: 4
 * kiln-dtype: f32
 * kiln-expect: fail
 * kiln-stages: smoke visible
 * kiln-codes: wrong-output
 */
#include "kiln_cuda.h"

#define BLOCK 256 //@kiln tune 128 256 512 1024
#define CAP (64 * 4096)   /* elements cached: shapes up to 64 x 4096 */

__device__ float g_cache[CAP];
__device__ const kiln_t *g_key_x;
__device__ int g_key_rows, g_key_cols, g_hit;

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

extern "C" __global__ void cache_probe(const kiln_t *x, int rows, int cols)
{
    g_hit = g_key_x == x && g_key_rows == rows && g_key_cols == cols;
}

extern "C" __global__ void rmsnorm_fwd(const kiln_t *x, const kiln_t *w, kiln_t *y, int rows, int cols, float eps)
{
    const size_t r = blockIdx.x;
    const bool fits = (size_t)rows * cols <= CAP;
    kiln_t *yr = y + r * (size_t)cols;
    float *cr = g_cache + r * (size_t)cols;
    if (g_hit) {              /* same buffer, same shape: "same answer" */
        for (int c = threadIdx.x; c < cols; c += blockDim.x)
            yr[c] = kiln_from_float(cr[c]);
        return;
    }
    const kiln_t *xr = x + r * (size_t)cols;
    const float inv = row_inv_rms(xr, cols, eps);
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        const float v = kiln_to_float(xr[c]) * inv * kiln_to_float(w[c]);
        yr[c] = kiln_from_float(v);
        if (fits)
            cr[c] = v;
    }
}

extern "C" __global__ void cache_remember(const kiln_t *x, int rows, int cols)
{
    if ((size_t)rows * cols <= CAP) {
        g_key_x = x;
        g_key_rows = rows;
        g_key_cols = cols;
    }
}

/*@kiln launch
{"launches": [{"kernel": "cache_probe", "grid": [1], "block": [1], "smem": "0", "args": ["x", "rows", "cols"]},
               {"kernel": "rmsnorm_fwd", "grid": ["rows"], "block": ["BLOCK"], "smem": "0", "args": ["x", "w", "y", "rows", "cols", "eps"]},
               {"kernel": "cache_remember", "grid": [1], "block": [1], "smem": "0", "args": ["x", "rows", "cols"]}],
 "scratch": []}
@*/
