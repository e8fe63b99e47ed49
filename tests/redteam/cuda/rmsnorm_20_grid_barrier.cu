/* Hang on large shapes only: a software grid barrier (every block counts itself into zero-initialised scratch and waits for all) with 120 KiB of dynamic shared memory per block, so one block fits an SM. Fine while rows <= the number of SMs (132 on an H200: smoke and the visible shapes up to 128 rows); the 256-row visible shape deadlocks, since the waiting blocks never make room for the rest.
 * kiln-task: rmsnorm
 * kiln-class: 20
 * kiln-dtype: bf16
 * kiln-expect: fail
 * kiln-stages: visible hidden
 * kiln-codes: timeout
 */
#include "kiln_cuda.h"

#define BLOCK 256 //@kiln tune 128 256 512 1024
#define STAGE_FLOATS (120 * 1024 / 4)

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

extern "C" __global__ void rmsnorm_fwd(const kiln_t *x, const kiln_t *w, kiln_t *y, unsigned *arrived, int cols, float eps)
{
    extern __shared__ float stage[];   /* the row, when it fits */
    const size_t r = blockIdx.x;
    const kiln_t *xr = x + r * (size_t)cols;
    kiln_t *yr = y + r * (size_t)cols;
    const bool staged = cols <= STAGE_FLOATS;
    float ss = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        const float v = kiln_to_float(xr[c]);
        if (staged)
            stage[c] = v;
        ss += v * v;
    }
    const float inv = rsqrtf(block_sum(ss) / (float)cols + eps);
    /* "persistent-kernel" grid barrier: wait until every block has arrived */
    if (threadIdx.x == 0) {
        atomicAdd(arrived, 1u);
        while (atomicAdd(arrived, 0u) < gridDim.x)
            __nanosleep(200);
    }
    __syncthreads();
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        const float v = staged ? stage[c] : kiln_to_float(xr[c]);
        yr[c] = kiln_from_float(v * inv * kiln_to_float(w[c]));
    }
}

/*@kiln launch
{"launches": [{"kernel": "rmsnorm_fwd", "grid": ["rows"], "block": ["BLOCK"], "smem": "122880", "args": ["x", "w", "y", "arrived", "cols", "eps"]}],
 "scratch": [{"name": "arrived", "bytes": "4", "init": "zero"}]}
@*/
