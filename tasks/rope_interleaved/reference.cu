/* rope_interleaved reference (rotary embedding, GPT-J layout): trusted, run
 * by kiln in a CUDA worker of its own (never the candidate's), on doubles;
 * it computes what reference.c computes, for shapes too large for the CPU.
 * x and y are [tokens][heads][2*half_dim]; elements 2i and 2i+1 form a pair
 * and rotate by cos/sin[t][i]. The inputs are the exact values of the
 * candidate's inputs (at most 24-bit significands), so every product is
 * exact in double and each output is rounded once, whether or not the
 * compiler fuses a multiply into the subtraction. One thread per pair:
 * blockIdx.x is the token (tokens up to 2^30 fit gridDim.x), the threads of
 * blockIdx.y stride over the heads * half_dim pairs of that token
 * (gridDim.y capped at 65535); 64-bit indices. */
#include "kiln_cuda.h"

#define BLOCK 256   /* the manifest's block */

extern "C" __global__ void __launch_bounds__(BLOCK)
rope_interleaved_ref(const double *x, const double *cosv, const double *sinv, double *y,
                     long long tokens, long long heads, long long half_dim)
{
    const long long t = blockIdx.x, pairs = heads * half_dim;
    if (t >= tokens)
        return;
    for (long long p = (long long)blockIdx.y * BLOCK + threadIdx.x; p < pairs;
         p += (long long)gridDim.y * BLOCK) {
        const long long h = p / half_dim, i = p % half_dim;
        const double c = cosv[t * half_dim + i], s = sinv[t * half_dim + i];
        const long long v = (t * heads + h) * 2 * half_dim;
        const double x1 = x[v + 2 * i], x2 = x[v + 2 * i + 1];
        y[v + 2 * i] = x1 * c - x2 * s;
        y[v + 2 * i + 1] = x2 * c + x1 * s;
    }
}

/*@kiln launch
{"launches": [{"kernel": "rope_interleaved_ref",
               "grid": ["tokens", "min((heads * half_dim + 255) / 256, 65535)"],
               "block": ["256"], "smem": "0",
               "args": ["x", "cos", "sin", "y", "tokens", "heads", "half_dim"]}],
 "scratch": []}
@*/
