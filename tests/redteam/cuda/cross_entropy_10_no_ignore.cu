/* Shortcut: every row's loss is computed as if its target were a class, the ignore index included (-100 reads a logit 100 before the row: the previous row's, or the guard before the buffer), so an ignored row never gets its 0.
 * kiln-task: cross_entropy
 * kiln-class: 10
 * kiln-dtype: bf16
 * kiln-expect: fail
 * kiln-stages: smoke visible
 * kiln-codes: wrong-output non-finite
 */
#include "kiln_cuda.h"

#define BLOCK 256 //@kiln tune 128 256 512 1024
#define NEG_INF (-__int_as_float(0x7f800000))

__device__ float block_reduce(float v, int max)
{
    __shared__ float part[BLOCK / 32];
    for (int off = 16; off > 0; off >>= 1) {
        float o = __shfl_xor_sync(0xffffffffu, v, off);
        v = max ? fmaxf(v, o) : v + o;
    }
    if ((threadIdx.x & 31) == 0)
        part[threadIdx.x >> 5] = v;
    __syncthreads();
    v = (threadIdx.x & 31) < BLOCK / 32 ? part[threadIdx.x & 31] : max ? NEG_INF : 0.0f;
    __syncthreads();
    for (int off = 16; off > 0; off >>= 1) {
        float o = __shfl_xor_sync(0xffffffffu, v, off);
        v = max ? fmaxf(v, o) : v + o;
    }
    return v;
}

extern "C" __global__ void __launch_bounds__(BLOCK)
cross_entropy_fwd(const kiln_t *logits, const int *targets, float *loss, int vocab)
{
    const kiln_t *x = logits + (size_t)blockIdx.x * vocab;
    float m = NEG_INF;
    for (int c = threadIdx.x; c < vocab; c += BLOCK)
        m = fmaxf(m, kiln_to_float(x[c]));
    m = block_reduce(m, 1);
    float s = 0.0f;
    for (int c = threadIdx.x; c < vocab; c += BLOCK)
        s += expf(kiln_to_float(x[c]) - m);
    s = block_reduce(s, 0);
    if (threadIdx.x == 0)
        loss[blockIdx.x] = logf(s) + (m - kiln_to_float(x[targets[blockIdx.x]]));
}

/*@kiln launch
{"launches": [{"kernel": "cross_entropy_fwd", "grid": ["rows"], "block": ["BLOCK"], "smem": "0",
               "args": ["logits", "targets", "loss", "vocab"]}],
 "scratch": []}
@*/
