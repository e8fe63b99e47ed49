/* rope CUDA starter: plain and correct. Rotary embedding, neox layout:
 * element i < half_dim pairs with element i + half_dim. One thread per
 * rotated pair over the whole [tokens][heads][half_dim] index space (so any
 * tokens, heads and half_dim work: 1, primes), fp32 arithmetic, each output
 * rounded once. cos and sin are f32 [tokens][half_dim].
 * The baseline CUDA candidates are timed against, and a search's start. */
#include "kiln_cuda.h"

#define BLOCK 256 //@kiln tune 128 256 512 1024

extern "C" __global__ void __launch_bounds__(BLOCK)
rope_fwd(const kiln_t *x, const float *cos, const float *sin, kiln_t *y, int tokens,
         int heads, int half_dim)
{
    long long p = (long long)blockIdx.x * BLOCK + threadIdx.x;   /* pair index */
    if (p >= (long long)tokens * heads * half_dim)
        return;
    long long th = p / half_dim;              /* token * heads + head */
    int i = (int)(p - th * half_dim);
    long long t = th / heads;
    const kiln_t *xv = x + th * 2 * half_dim;
    kiln_t *yv = y + th * 2 * half_dim;
    float c = cos[t * half_dim + i], s = sin[t * half_dim + i];
    float x1 = kiln_to_float(xv[i]), x2 = kiln_to_float(xv[i + half_dim]);
    yv[i] = kiln_from_float(x1 * c - x2 * s);
    yv[i + half_dim] = kiln_from_float(x2 * c + x1 * s);
}

/*@kiln launch
{"launches": [{"kernel": "rope_fwd", "grid": ["cdiv(tokens * heads * half_dim, BLOCK)"],
               "block": ["BLOCK"], "smem": "0",
               "args": ["x", "cos", "sin", "y", "tokens", "heads", "half_dim"]}],
 "scratch": []}
@*/
