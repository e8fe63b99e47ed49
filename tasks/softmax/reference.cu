/* softmax reference: trusted, run by kiln in a CUDA worker of its own (never
 * the candidate's), on doubles; it computes what reference.c computes, for
 * shapes too large for the CPU: the row max m (exact: a max never rounds),
 * s = sum of exp(x - m), y = exp(x - m) / s. The inputs are the exact values
 * of the candidate's inputs, everything is in double, and s is a per-thread
 * strided sum (at most cols / 256 terms) followed by a pairwise tree over
 * the block, so with every term in (0, 1] its relative error is about
 * (cols / 256 + 8) * 2^-53 plus exp's 1 ulp: far below an ulp of any output
 * dtype. One block of 256 threads per row (rows up to 2^30 fit gridDim.x);
 * 64-bit indices. */
#include "kiln_cuda.h"

#define BLOCK 256   /* the manifest's block */

/* The max (max_op) or sum of v over the block by a tree, returned to every thread. */
template <bool max_op>
__device__ double block_reduce(double v, double *sh)
{
    sh[threadIdx.x] = v;
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) {
            const double o = sh[threadIdx.x + s];
            sh[threadIdx.x] = max_op ? (o > sh[threadIdx.x] ? o : sh[threadIdx.x])
                                     : sh[threadIdx.x] + o;
        }
        __syncthreads();
    }
    v = sh[0];
    __syncthreads();   /* sh may be reused */
    return v;
}

extern "C" __global__ void __launch_bounds__(BLOCK)
softmax_ref(const double *x, double *y, long long rows, long long cols)
{
    __shared__ double sh[BLOCK];
    const long long r = blockIdx.x;
    if (r >= rows)
        return;
    const double *xr = x + r * cols;
    double *yr = y + r * cols;
    double m = xr[0], s = 0.0;   /* as reference.c: the max starts at x[0] */
    for (long long c = threadIdx.x; c < cols; c += BLOCK)
        m = xr[c] > m ? xr[c] : m;
    m = block_reduce<true>(m, sh);
    for (long long c = threadIdx.x; c < cols; c += BLOCK)
        s += exp(xr[c] - m);
    s = block_reduce<false>(s, sh);
    for (long long c = threadIdx.x; c < cols; c += BLOCK)
        yr[c] = exp(xr[c] - m) / s;
}

/*@kiln launch
{"launches": [{"kernel": "softmax_ref", "grid": ["rows"], "block": ["256"], "smem": "0",
               "args": ["x", "y", "rows", "cols"]}],
 "scratch": []}
@*/
