/* cross_entropy CUDA starter: plain and correct. One block per row; each
 * thread takes the max of a strided slice of the row's logits in fp32, a
 * block reduction gives every thread the row's max, then each sums
 * exp(x - max) over its slice and a second reduction gives the sum; thread
 * 0 writes loss = log(sum) + (max - x[target]), or 0 where the target is
 * the ignore index -100 (such a row's logits are never read). Any vocab
 * works (1, primes, no vector-width assumption). The baseline CUDA
 * candidates are timed against, and a search's start. */
#include "kiln_cuda.h"

#define BLOCK 256 //@kiln tune 128 256 512 1024
#define IGNORE_INDEX -100
#define NEG_INF (-__int_as_float(0x7f800000))   /* NVRTC has no math.h INFINITY */

__device__ __forceinline__ float warp_reduce(float v, int max)
{
    for (int off = 16; off > 0; off >>= 1) {
        float o = __shfl_xor_sync(0xffffffffu, v, off);
        v = max ? fmaxf(v, o) : v + o;
    }
    return v;
}

/* The max or sum of v over the block, returned to every thread (each warp
 * reduces the per-warp partials in the same order, so all get the same bits). */
__device__ float block_reduce(float v, int max)
{
    __shared__ float part[BLOCK / 32];
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = warp_reduce(v, max);
    if (lane == 0)
        part[warp] = v;
    __syncthreads();
    v = lane < BLOCK / 32 ? part[lane] : max ? NEG_INF : 0.0f;
    __syncthreads();   /* part is reused by the next reduction */
    return warp_reduce(v, max);
}

extern "C" __global__ void __launch_bounds__(BLOCK)
cross_entropy_fwd(const kiln_t *logits, const int *targets, float *loss, int vocab)
{
    const kiln_t *x = logits + (size_t)blockIdx.x * vocab;
    int t = targets[blockIdx.x];
    if (t == IGNORE_INDEX) {   /* the same for the whole block */
        if (threadIdx.x == 0)
            loss[blockIdx.x] = 0.0f;
        return;
    }
    float m = NEG_INF;
    for (int c = threadIdx.x; c < vocab; c += BLOCK)
        m = fmaxf(m, kiln_to_float(x[c]));
    m = block_reduce(m, 1);
    float s = 0.0f;
    for (int c = threadIdx.x; c < vocab; c += BLOCK)
        s += expf(kiln_to_float(x[c]) - m);
    s = block_reduce(s, 0);
    if (threadIdx.x == 0)
        loss[blockIdx.x] = logf(s) + (m - kiln_to_float(x[t]));
}

/*@kiln launch
{"launches": [{"kernel": "cross_entropy_fwd", "grid": ["rows"], "block": ["BLOCK"], "smem": "0",
               "args": ["logits", "targets", "loss", "vocab"]}],
 "scratch": []}
@*/
