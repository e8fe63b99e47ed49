/* cross_entropy reference: trusted, run by kiln in a CUDA worker (never the
 * candidate's code), on doubles; it computes what reference.c computes, for
 * shapes too large for the CPU. One block of 256 threads per row: a strided
 * max and a tree over the block, then a strided sum of exp(x - max) (at most
 * vocab / 256 terms a thread) and a pairwise tree, all in double: a
 * relative error of about (vocab / 256 + 8) * 2^-53 in the sum, far below
 * an ulp of the fp32 loss. 0 at the ignore index -100; NaN for any other
 * target outside [0, vocab). 64-bit indices. */
#include "kiln_cuda.h"

#define BLOCK 256   /* the manifest's block */
#define IGNORE_INDEX -100

/* The max or the sum of v over the block by a tree, returned to every thread. */
__device__ double block_reduce(double v, double *sh, int max)
{
    sh[threadIdx.x] = v;
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s)
            sh[threadIdx.x] = max ? fmax(sh[threadIdx.x], sh[threadIdx.x + s])
                                  : sh[threadIdx.x] + sh[threadIdx.x + s];
        __syncthreads();
    }
    v = sh[0];
    __syncthreads();   /* sh may be reused */
    return v;
}

extern "C" __global__ void __launch_bounds__(BLOCK)
cross_entropy_ref(const double *logits, const double *targets, double *loss, long long rows,
                  long long vocab)
{
    __shared__ double sh[BLOCK];
    const long long i = blockIdx.x;
    if (i >= rows)
        return;
    const double *x = logits + i * vocab;
    const long long t = (long long)targets[i];
    if (t == IGNORE_INDEX || t < 0 || t >= vocab) {   /* the same for the whole block */
        if (threadIdx.x == 0)
            loss[i] = t == IGNORE_INDEX ? 0.0 : __longlong_as_double(0x7FF8000000000000ll);
        return;
    }
    double m = -__longlong_as_double(0x7FF0000000000000ll);   /* -inf: NVRTC has no math.h */
    for (long long c = threadIdx.x; c < vocab; c += BLOCK)
        m = fmax(m, x[c]);
    m = block_reduce(m, sh, 1);
    double s = 0.0;
    for (long long c = threadIdx.x; c < vocab; c += BLOCK)
        s += exp(x[c] - m);
    s = block_reduce(s, sh, 0);
    if (threadIdx.x == 0)
        loss[i] = log(s) + (m - x[t]);
}

/*@kiln launch
{"launches": [{"kernel": "cross_entropy_ref", "grid": ["rows"], "block": ["256"], "smem": "0",
               "args": ["logits", "targets", "loss", "rows", "vocab"]}],
 "scratch": []}
@*/
