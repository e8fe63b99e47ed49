/* Race: thread 0 sums the warp partials and stores 1/rms in shared memory, but there is no __syncthreads() before the other warps read it, so they read whatever the slot held before (another row's or another kernel's value): wrong on most rows from the first call.
 * kiln-task: rmsnorm
 * kiln-class: 12
 * kiln-dtype: f32
 * kiln-expect: fail
 * kiln-stages: smoke
 * kiln-codes: wrong-output non-finite
 */
#include "kiln_cuda.h"

__device__ __forceinline__ float warp_sum(float v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

#define BLOCK 256 //@kiln tune 128 256 512 1024

extern "C" __global__ void rmsnorm_fwd(const kiln_t *x, const kiln_t *w, kiln_t *y, int cols, float eps)
{
    __shared__ float part[32];
    __shared__ float s_inv;
    const size_t r = blockIdx.x;
    const kiln_t *xr = x + r * (size_t)cols;
    kiln_t *yr = y + r * (size_t)cols;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    float ss = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        const float v = kiln_to_float(xr[c]);
        ss += v * v;
    }
    ss = warp_sum(ss);
    if (lane == 0)
        part[warp] = ss;
    __syncthreads();
    if (threadIdx.x == 0) {
        float t = 0.0f;
        for (int i = 0; i < (int)(blockDim.x >> 5); i++)
            t += part[i];
        s_inv = rsqrtf(t / (float)cols + eps);
    }
    /* BUG: no __syncthreads() here */
    const float inv = s_inv;
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        yr[c] = kiln_from_float(kiln_to_float(xr[c]) * inv * kiln_to_float(w[c]));
}

/*@kiln launch
{"launches": [{"kernel": "rmsnorm_fwd", "grid": ["rows"], "block": ["BLOCK"], "smem": "0", "args": ["x", "w", "y", "cols", "eps"]}],
 "scratch": []}
@*/
