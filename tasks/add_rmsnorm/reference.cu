/* add_rmsnorm reference: trusted, run by kiln in a CUDA worker (never the
 * candidate's code), on doubles; it computes what reference.c computes, for
 * shapes too large for the CPU. r is the exact sum x + residual rounded
 * once to the run's dtype (kiln_round_to_run: kiln defines KILN_RUN_DTYPE_*
 * for a reference), y is computed from that rounded r. The sum of squares
 * is a per-thread strided sum (at most cols / 256 terms) followed by a
 * pairwise tree over the block, as in rmsnorm's reference: a relative error
 * of about (cols / 256 + 8) * 2^-53, far below an ulp of any output dtype.
 * One block of 256 threads per row; 64-bit indices. */
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
add_rmsnorm_ref(const double *x, const double *residual, const double *w, double *r, double *y,
                long long rows, long long cols, double eps)
{
    __shared__ double sh[BLOCK];
    const long long i = blockIdx.x;
    if (i >= rows)
        return;
    const double *xr = x + i * cols, *rr = residual + i * cols;
    double *ri = r + i * cols, *yi = y + i * cols;
    double ss = 0.0;
    for (long long c = threadIdx.x; c < cols; c += BLOCK) {
        double v = kiln_round_to_run(xr[c] + rr[c]);
        ri[c] = v;
        ss += v * v;
    }
    ss = block_sum(ss, sh);
    const double inv = 1.0 / sqrt(ss / (double)cols + eps);
    for (long long c = threadIdx.x; c < cols; c += BLOCK)
        yi[c] = ri[c] * inv * w[c];   /* ri[c]: written by this thread above */
}

/*@kiln launch
{"launches": [{"kernel": "add_rmsnorm_ref", "grid": ["rows"], "block": ["256"], "smem": "0",
               "args": ["x", "residual", "w", "r", "y", "rows", "cols", "eps"]}],
 "scratch": []}
@*/
