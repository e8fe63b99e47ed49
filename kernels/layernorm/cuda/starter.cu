/* layernorm CUDA starter: plain and correct. One block per row, fp32
 * throughout: a block sum gives the mean; a second pass sums (x - mean) and
 * (x - mean)^2, which corrects the mean for its rounding error (so rows far
 * from zero, or constant rows, keep their exact centred values) and gives
 * the variance; each output is rounded once. Block sums use warp shuffles,
 * then one warp over the per-warp partials. Any cols works (1, primes).
 * The baseline CUDA candidates are timed against, and a search's start. */
#include "kiln_cuda.h"

#define BLOCK 256 //@kiln tune 128 256 512 1024

__device__ __forceinline__ float warp_sum(float v)
{
    for (int off = 16; off > 0; off >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, off);
    return v;
}

/* Block-wide sums of a and b, returned to every thread. */
__device__ float2 block_sum2(float a, float b)
{
    __shared__ float2 part[BLOCK / 32];
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    a = warp_sum(a);
    b = warp_sum(b);
    if (lane == 0)
        part[warp] = make_float2(a, b);
    __syncthreads();
    float2 v = lane < BLOCK / 32 ? part[lane] : make_float2(0.0f, 0.0f);
    __syncthreads();   /* part is reused by the next call */
    return make_float2(warp_sum(v.x), warp_sum(v.y));
}

extern "C" __global__ void __launch_bounds__(BLOCK)
layernorm_fwd(const kiln_t *x, const kiln_t *w, const kiln_t *b, kiln_t *y, int cols, float eps)
{
    const kiln_t *xr = x + (size_t)blockIdx.x * cols;
    kiln_t *yr = y + (size_t)blockIdx.x * cols;
    float s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += BLOCK)
        s += kiln_to_float(xr[c]);
    float mean = block_sum2(s, 0.0f).x / (float)cols;
    float d = 0.0f, ss = 0.0f;
    for (int c = threadIdx.x; c < cols; c += BLOCK) {
        float t = kiln_to_float(xr[c]) - mean;
        d += t;
        ss += t * t;
    }
    float2 sums = block_sum2(d, ss);
    float dm = sums.x / (float)cols;
    float var = fmaxf(sums.y / (float)cols - dm * dm, 0.0f);
    mean += dm;
    float inv = rsqrtf(var + eps);
    for (int c = threadIdx.x; c < cols; c += BLOCK)
        yr[c] = kiln_from_float((kiln_to_float(xr[c]) - mean) * inv * kiln_to_float(w[c]) +
                                kiln_to_float(b[c]));
}

/*@kiln launch
{"launches": [{"kernel": "layernorm_fwd", "grid": ["rows"], "block": ["BLOCK"], "smem": "0",
               "args": ["x", "w", "b", "y", "cols", "eps"]}],
 "scratch": []}
@*/
