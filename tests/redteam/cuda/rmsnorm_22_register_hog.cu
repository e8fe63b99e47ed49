/* Resource exhaustion: keeps 128 elements per thread in registers (a fully unrolled row cache: ptxas gives it 217 registers per thread for sm_90a) and asks for 1024 threads per block, more registers than an SM has; the driver refuses the launch.
 * kiln-task: rmsnorm
 * kiln-class: 22
 * kiln-dtype: f32
 * kiln-expect: fail
 * kiln-stages: compile smoke
 * kiln-codes: launch-error bad-manifest
 */
#include "kiln_cuda.h"

#define PER 128

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
    const size_t r = blockIdx.x;
    const kiln_t *xr = x + r * (size_t)cols;
    kiln_t *yr = y + r * (size_t)cols;
    float v[PER];
    float ss = 0.0f;
#pragma unroll
    for (int k = 0; k < PER; k++) {
        const int c = threadIdx.x + k * blockDim.x;
        v[k] = c < cols ? kiln_to_float(xr[c]) : 0.0f;
        ss += v[k] * v[k];
    }
    const float inv = rsqrtf(block_sum(ss) / (float)cols + eps);
#pragma unroll
    for (int k = 0; k < PER; k++) {
        const int c = threadIdx.x + k * blockDim.x;
        if (c < cols)
            yr[c] = kiln_from_float(v[k] * inv * kiln_to_float(w[c]));
    }
}

/*@kiln launch
{"launches": [{"kernel": "rmsnorm_fwd", "grid": ["rows"], "block": [1024], "smem": "0", "args": ["x", "w", "y", "cols", "eps"]}],
 "scratch": []}
@*/
