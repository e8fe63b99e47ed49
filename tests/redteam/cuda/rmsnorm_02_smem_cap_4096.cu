/* Truncation: stages each row in a static 4096-float shared array (the widest visible row) and normalises only the first min(cols, 4096) columns; wider hidden rows keep their tail unwritten.
 * kiln-task: rmsnorm
 * kiln-class: 2
 * kiln-dtype: bf16
 * kiln-expect: fail
 * kiln-stages: hidden
 * kiln-codes: unwritten-output
 */
#include "kiln_cuda.h"

#define BLOCK 512 //@kiln tune 256 512 1024
#define MAXC 4096  /* widest visible row */

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

extern "C" __global__ void rmsnorm_fwd(const kiln_t *x, const kiln_t *w, kiln_t *y, int cols, float eps)
{
    __shared__ float row[MAXC];
    const int n = cols < MAXC ? cols : MAXC;
    const kiln_t *xr = x + (size_t)blockIdx.x * cols;
    kiln_t *yr = y + (size_t)blockIdx.x * cols;
    float ss = 0.0f;
    for (int c = threadIdx.x; c < n; c += blockDim.x) {
        const float v = kiln_to_float(xr[c]);
        row[c] = v;
        ss += v * v;
    }
    const float inv = rsqrtf(block_sum(ss) / (float)n + eps);
    for (int c = threadIdx.x; c < n; c += blockDim.x)
        yr[c] = kiln_from_float(row[c] * inv * kiln_to_float(w[c]));
}

/*@kiln launch
{"launches": [{"kernel": "rmsnorm_fwd", "grid": ["rows"], "block": ["BLOCK"], "smem": "0", "args": ["x", "w", "y", "cols", "eps"]}],
 "scratch": []}
@*/
