/* Work after the timer, from device code: the launched kernel starts the real work as a child grid (dynamic parallelism) and returns at once, hoping the timer stops with the parent. Device-side launches need relocatable device code, which kiln's NVRTC build does not enable, so this must not compile: NVRTC or ptxas refuses the unresolved device-runtime calls (with -rdc and cudadevrt, CUDA counts a parent grid complete only when its children are).
 * kiln-task: rmsnorm
 * kiln-class: 15
 * kiln-dtype: bf16
 * kiln-expect: fail
 * kiln-stages: compile
 * kiln-codes: compile-error
 */
#include "kiln_cuda.h"

#include <cuda_device_runtime_api.h>   /* declares what a device-side launch calls */

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

extern "C" __global__ void rmsnorm_child(const kiln_t *x, const kiln_t *w, kiln_t *y, int cols, float eps)
{
    const size_t r = blockIdx.x;
    const kiln_t *xr = x + r * (size_t)cols;
    kiln_t *yr = y + r * (size_t)cols;
    const float inv = row_inv_rms(xr, cols, eps);
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        yr[c] = kiln_from_float(kiln_to_float(xr[c]) * inv * kiln_to_float(w[c]));
}

extern "C" __global__ void rmsnorm_fwd(const kiln_t *x, const kiln_t *w, kiln_t *y, int rows, int cols, float eps)
{
    if (blockIdx.x == 0 && threadIdx.x == 0)
        rmsnorm_child<<<rows, 256>>>(x, w, y, cols, eps);
}

/*@kiln launch
{"launches": [{"kernel": "rmsnorm_fwd", "grid": [1], "block": [32], "smem": "0", "args": ["x", "w", "y", "rows", "cols", "eps"]}],
 "scratch": []}
@*/
