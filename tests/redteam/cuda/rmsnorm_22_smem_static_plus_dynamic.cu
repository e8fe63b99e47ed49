/* Resource exhaustion: 48 KiB of static shared memory plus 200000 bytes of dynamic shared memory; each is within the device's limits (the manifest check passes) but together they exceed the 227 KiB a block may have, so raising the kernel's dynamic limit or the launch fails.
 * kiln-task: rmsnorm
 * kiln-class: 22
 * kiln-dtype: bf16
 * kiln-expect: fail
 * kiln-stages: static compile smoke
 * kiln-codes: launch-error bad-manifest
 */
#include "kiln_cuda.h"

#define BLOCK 256 //@kiln tune 128 256 512 1024
#define TILE 12288   /* 48 KiB of floats */

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
    __shared__ float tile[TILE];
    extern __shared__ float big[];
    const size_t r = blockIdx.x;
    const kiln_t *xr = x + r * (size_t)cols;
    kiln_t *yr = y + r * (size_t)cols;
    float ss = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        const float v = kiln_to_float(xr[c]);
        if (c < TILE)
            tile[c] = v;
        else
            big[c - TILE] = v;
        ss += v * v;
    }
    const float inv = rsqrtf(block_sum(ss) / (float)cols + eps);
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        const float v = c < TILE ? tile[c] : big[c - TILE];
        yr[c] = kiln_from_float(v * inv * kiln_to_float(w[c]));
    }
}

/*@kiln launch
{"launches": [{"kernel": "rmsnorm_fwd", "grid": ["rows"], "block": ["BLOCK"], "smem": "200000", "args": ["x", "w", "y", "cols", "eps"]}],
 "scratch": []}
@*/
