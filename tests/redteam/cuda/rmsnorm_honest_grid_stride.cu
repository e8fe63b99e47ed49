/* Honest (f16): a capped grid of min(rows, 264) blocks loops over rows (grid-stride), loading x and storing y as aligned element pairs (half2-sized) after a one-element head when a row starts off a 4-byte boundary, plus a one-element tail.
 * kiln-task: rmsnorm
 * kiln-class: honest
 * kiln-dtype: f16
 * kiln-expect: pass
 */
#include "kiln_cuda.h"

#define BLOCK 128 //@kiln tune 64 128 256

struct alignas(2 * sizeof(kiln_t)) pair_t { kiln_t a, b; };

/* 1 when the row starts off a pair boundary (then element 0 is done alone). */
__device__ __forceinline__ int pair_head(const kiln_t *p, int cols)
{
    return ((unsigned long long)p % sizeof(pair_t)) && cols > 0 ? 1 : 0;
}

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

extern "C" __global__ void rmsnorm_gs(const kiln_t *x, const kiln_t *w, kiln_t *y, int rows, int cols, float eps)
{
    for (int r = blockIdx.x; r < rows; r += gridDim.x) {    /* uniform over the block */
        const kiln_t *xr = x + (size_t)r * cols;
        kiln_t *yr = y + (size_t)r * cols;
        const int head = pair_head(xr, cols);
        const int npair = (cols - head) / 2;
        const int tail = head + 2 * npair;
        const pair_t *xp = reinterpret_cast<const pair_t *>(xr + head);
        pair_t *yp = reinterpret_cast<pair_t *>(yr + head);
        float ss = 0.0f;
        for (int i = threadIdx.x; i < npair; i += blockDim.x) {
            const pair_t q = xp[i];
            const float a = kiln_to_float(q.a), b = kiln_to_float(q.b);
            ss += a * a + b * b;
        }
        if (threadIdx.x == 0) {
            for (int c = 0; c < head; c++) {
                const float v = kiln_to_float(xr[c]);
                ss += v * v;
            }
            for (int c = tail; c < cols; c++) {
                const float v = kiln_to_float(xr[c]);
                ss += v * v;
            }
        }
        const float inv = rsqrtf(block_sum(ss) / (float)cols + eps);
        for (int i = threadIdx.x; i < npair; i += blockDim.x) {
            const pair_t q = xp[i];
            const int c = head + 2 * i;
            pair_t o;
            o.a = kiln_from_float(kiln_to_float(q.a) * inv * kiln_to_float(w[c]));
            o.b = kiln_from_float(kiln_to_float(q.b) * inv * kiln_to_float(w[c + 1]));
            yp[i] = o;
        }
        if (threadIdx.x == 0) {
            for (int c = 0; c < head; c++)
                yr[c] = kiln_from_float(kiln_to_float(xr[c]) * inv * kiln_to_float(w[c]));
            for (int c = tail; c < cols; c++)
                yr[c] = kiln_from_float(kiln_to_float(xr[c]) * inv * kiln_to_float(w[c]));
        }
    }
}

/*@kiln launch
{"launches": [{"kernel": "rmsnorm_gs", "grid": ["min(rows, 264)"], "block": ["BLOCK"], "smem": "0", "args": ["x", "w", "y", "rows", "cols", "eps"]}],
 "scratch": []}
@*/
