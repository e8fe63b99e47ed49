/* add_rmsnorm CUDA starter: plain and correct. One block per row; each
 * thread forms r = x + residual over a strided slice of the row, rounds it
 * to T and stores it, and sums the squares of the rounded values in fp32;
 * a warp-shuffle block reduction gives every thread the row's sum, and y
 * is computed from r as stored (each thread reads back what it wrote).
 * Any cols works (1, primes, no vector-width assumption). The baseline
 * CUDA candidates are timed against, and a search's start. */
#include "kiln_cuda.h"

#define BLOCK 256 //@kiln tune 128 256 512 1024

__device__ __forceinline__ float warp_sum(float v)
{
    for (int off = 16; off > 0; off >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, off);
    return v;
}

/* The sum of v over the block, returned to every thread (each warp reduces
 * the per-warp partials in the same order, so all get the same bits). */
__device__ float block_sum(float v)
{
    __shared__ float part[BLOCK / 32];
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = warp_sum(v);
    if (lane == 0)
        part[warp] = v;
    __syncthreads();
    v = lane < BLOCK / 32 ? part[lane] : 0.0f;
    __syncthreads();   /* part may be reused by the next call */
    return warp_sum(v);
}

extern "C" __global__ void __launch_bounds__(BLOCK)
add_rmsnorm_fwd(const kiln_t *x, const kiln_t *residual, const kiln_t *w, kiln_t *r, kiln_t *y,
                int cols, float eps)
{
    size_t row = (size_t)blockIdx.x * cols;
    float ss = 0.0f;
    for (int c = threadIdx.x; c < cols; c += BLOCK) {
        kiln_t v = kiln_from_float(kiln_to_float(x[row + c]) + kiln_to_float(residual[row + c]));
        r[row + c] = v;
        float f = kiln_to_float(v);
        ss += f * f;
    }
    ss = block_sum(ss);
    float inv = rsqrtf(ss / (float)cols + eps);
    for (int c = threadIdx.x; c < cols; c += BLOCK)
        y[row + c] = kiln_from_float(kiln_to_float(r[row + c]) * inv * kiln_to_float(w[c]));
}

/*@kiln launch
{"launches": [{"kernel": "add_rmsnorm_fwd", "grid": ["rows"], "block": ["BLOCK"], "smem": "0",
               "args": ["x", "residual", "w", "r", "y", "cols", "eps"]}],
 "scratch": []}
@*/
