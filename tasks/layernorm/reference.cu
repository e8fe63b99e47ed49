/* layernorm reference: trusted, run by kiln in a CUDA worker of its own
 * (never the candidate's), on doubles; it computes what reference.c
 * computes, for shapes too large for the CPU: the mean with one correction
 * pass (mean += sum(x - mean) / cols, so rows far from zero or with every
 * element equal give their exact centred values), the variance of the
 * centred values, y = (x - mean) / sqrt(var + eps) * w + b. The inputs are
 * the exact values of the candidate's inputs, everything is in double, and
 * each sum is a per-thread strided sum (at most cols / 256 terms) followed
 * by a pairwise tree over the block, so its relative error is about
 * (cols / 256 + 8) * 2^-53: far below an ulp of any output dtype. One block
 * of 256 threads per row (rows up to 2^30 fit gridDim.x); 64-bit indices. */
#include "kiln_cuda.h"

#define BLOCK 256   /* the manifest's block */

/* The sum of v over the block by a pairwise tree, returned to every thread. */
__device__ double block_sum(double v, double *sh)
{
    sh[threadIdx.x] = v;
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s)
            sh[threadIdx.x] += sh[threadIdx.x + s];
        __syncthreads();
    }
    v = sh[0];
    __syncthreads();   /* sh may be reused */
    return v;
}

extern "C" __global__ void __launch_bounds__(BLOCK)
layernorm_ref(const double *x, const double *w, const double *b, double *y, long long rows,
              long long cols, double eps)
{
    __shared__ double sh[BLOCK];
    const long long r = blockIdx.x;
    if (r >= rows)
        return;
    const double *xr = x + r * cols;
    double *yr = y + r * cols;
    double s = 0.0, d = 0.0, ss = 0.0;
    for (long long c = threadIdx.x; c < cols; c += BLOCK)
        s += xr[c];
    double mean = block_sum(s, sh) / (double)cols;
    for (long long c = threadIdx.x; c < cols; c += BLOCK)
        d += xr[c] - mean;
    mean += block_sum(d, sh) / (double)cols;
    for (long long c = threadIdx.x; c < cols; c += BLOCK)
        ss += (xr[c] - mean) * (xr[c] - mean);
    const double inv = 1.0 / sqrt(block_sum(ss, sh) / (double)cols + eps);
    for (long long c = threadIdx.x; c < cols; c += BLOCK)
        yr[c] = (xr[c] - mean) * inv * w[c] + b[c];
}

/*@kiln launch
{"launches": [{"kernel": "layernorm_ref", "grid": ["rows"], "block": ["256"], "smem": "0",
               "args": ["x", "w", "b", "y", "rows", "cols", "eps"]}],
 "scratch": []}
@*/
