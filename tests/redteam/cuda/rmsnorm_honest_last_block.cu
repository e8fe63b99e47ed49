/* Honest: one launch, SPLIT blocks per row; each block stores its partial sum of squares, fences, and takes a ticket from a zero-initialised per-row counter with atomicAdd; the block that draws the last ticket sums the partials in a fixed order and normalises the whole row (the threadFenceReduction pattern: atomics, but deterministic).
 * kiln-task: rmsnorm
 * kiln-class: honest
 * kiln-dtype: bf16
 * kiln-expect: pass
 */
#include "kiln_cuda.h"

#define BLOCK 256 //@kiln tune 128 256 512
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

extern "C" __global__ void rmsnorm_lastblock(const kiln_t *x, const kiln_t *w, kiln_t *y, float *part,
                                             unsigned *ticket, int cols, float eps)
{
    __shared__ int s_last;
    const size_t r = blockIdx.y;
    const kiln_t *xr = x + r * (size_t)cols;
    kiln_t *yr = y + r * (size_t)cols;
    const int chunk = (cols + SPLIT - 1) / SPLIT;
    const int lo = blockIdx.x * chunk, hi = min(cols, lo + chunk);
    float p = 0.0f;
    for (int c = lo + threadIdx.x; c < hi; c += blockDim.x) {
        const float v = kiln_to_float(xr[c]);
        p += v * v;
    }
    p = block_sum(p);
    if (threadIdx.x == 0) {
        part[r * SPLIT + blockIdx.x] = p;
        __threadfence();                           /* the partial is visible before the ticket */
        s_last = atomicAdd(&ticket[r], 1u) == SPLIT - 1;
    }
    __syncthreads();
    if (!s_last)
        return;
    __threadfence();
    float t = 0.0f;
#pragma unroll
    for (int s = 0; s < SPLIT; s++)
        t += __ldcg(&part[r * SPLIT + s]);         /* from L2, in a fixed order */
    const float inv = rsqrtf(t / (float)cols + eps);
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        yr[c] = kiln_from_float(kiln_to_float(xr[c]) * inv * kiln_to_float(w[c]));
}

/*@kiln launch
{"launches": [{"kernel": "rmsnorm_lastblock", "grid": ["SPLIT", "rows"], "block": ["BLOCK"], "smem": "0", "args": ["x", "w", "y", "part", "ticket", "cols", "eps"]}],
 "scratch": [{"name": "part", "bytes": "rows * SPLIT * 4", "init": "none"}, {"name": "ticket", "bytes": "rows * 4", "init": "zero"}]}
@*/
