/* Honest, and says hello: the first block of the first call prints one line with device printf (a __device__ flag keeps it to once per worker), then every block computes like the starter. What it printed is shown in the verdict's feedback; nothing about it is judged.
 * kiln-task: rmsnorm
 * kiln-class: honest
 * kiln-dtype: bf16
 * kiln-expect: pass
 */
#include "kiln_cuda.h"

#define BLOCK 256 //@kiln tune 128 256 512 1024

__device__ int g_said;

__device__ __forceinline__ float warp_sum(float v)
{
    for (int off = 16; off > 0; off >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, off);
    return v;
}

__device__ float block_sum(float v)
{
    __shared__ float part[BLOCK / 32];
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = warp_sum(v);
    if (lane == 0)
        part[warp] = v;
    __syncthreads();
    v = lane < BLOCK / 32 ? part[lane] : 0.0f;
    __syncthreads();
    return warp_sum(v);
}

extern "C" __global__ void __launch_bounds__(BLOCK)
rmsnorm_fwd(const kiln_t *x, const kiln_t *w, kiln_t *y, int rows, int cols, float eps)
{
    if (blockIdx.x == 0 && threadIdx.x == 0 && atomicExch(&g_said, 1) == 0)
        printf("rmsnorm_fwd: first call, %d x %d\n", rows, cols);
    const kiln_t *xr = x + (size_t)blockIdx.x * cols;
    kiln_t *yr = y + (size_t)blockIdx.x * cols;
    float ss = 0.0f;
    for (int c = threadIdx.x; c < cols; c += BLOCK) {
        float v = kiln_to_float(xr[c]);
        ss += v * v;
    }
    ss = block_sum(ss);
    float inv = rsqrtf(ss / (float)cols + eps);
    for (int c = threadIdx.x; c < cols; c += BLOCK)
        yr[c] = kiln_from_float(kiln_to_float(xr[c]) * inv * kiln_to_float(w[c]));
}

/*@kiln launch
{"launches": [{"kernel": "rmsnorm_fwd", "grid": ["rows"], "block": ["BLOCK"], "smem": "0",
               "args": ["x", "w", "y", "rows", "cols", "eps"]}],
 "scratch": []}
@*/
