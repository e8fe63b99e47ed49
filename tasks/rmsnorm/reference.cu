/* rmsnorm reference: trusted, run by kiln in a CUDA worker of its own (never
 * the candidate's), on doubles; it computes what reference.c computes, for
 * shapes too large for the CPU. The inputs are the exact values of the
 * candidate's inputs, every operation is in double, and the sum of squares
 * is a per-thread strided sum (at most cols / 256 terms) followed by a
 * pairwise tree over the block, so its relative error is about
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
rmsnorm_ref(const double *x, const double *w, double *y, long long rows, long long cols, double eps)
{
    __shared__ double sh[BLOCK];
    const long long r = blockIdx.x;
    if (r >= rows)
        return;
    const double *xr = x + r * cols;
    double *yr = y + r * cols;
    double ss = 0.0;
    for (long long c = threadIdx.x; c < cols; c += BLOCK)
        ss += xr[c] * xr[c];
    ss = block_sum(ss, sh);
    const double inv = 1.0 / sqrt(ss / (double)cols + eps);
    for (long long c = threadIdx.x; c < cols; c += BLOCK)
        yr[c] = xr[c] * inv * w[c];
}

/*@kiln launch
{"launches": [{"kernel": "rmsnorm_ref", "grid": ["rows"], "block": ["256"], "smem": "0",
               "args": ["x", "w", "y", "rows", "cols", "eps"]}],
 "scratch": []}
@*/
