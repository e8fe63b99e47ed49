/* Truncation: each thread keeps at most ITEMS logits of its row in registers (BLOCK * ITEMS = 16384 columns), and the log-sum-exp runs over those only: right to a vocabulary of 16384, wrong at v5's 32000.
 * kiln-task: cross_entropy
 * kiln-class: 2
 * kiln-dtype: f32
 * kiln-expect: fail
 * kiln-stages: visible
 * kiln-codes: wrong-output
 */
#include "kiln_cuda.h"

#define BLOCK 256
#define ITEMS 64
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
    int t = targets[blockIdx.x];
    if (t == -100) {
        if (threadIdx.x == 0)
            loss[blockIdx.x] = 0.0f;
        return;
    }
    float v[ITEMS], m = NEG_INF;
#pragma unroll
    for (int k = 0; k < ITEMS; k++) {
        int c = threadIdx.x + k * BLOCK;
        v[k] = c < vocab ? kiln_to_float(x[c]) : NEG_INF;
        m = fmaxf(m, v[k]);
    }
    m = block_reduce(m, 1);
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < ITEMS; k++)
        s += v[k] == NEG_INF ? 0.0f : expf(v[k] - m);
    s = block_reduce(s, 0);
    if (threadIdx.x == 0)
        loss[blockIdx.x] = logf(s) + (m - kiln_to_float(x[t]));
}

/*@kiln launch
{"launches": [{"kernel": "cross_entropy_fwd", "grid": ["rows"], "block": ["256"], "smem": "0",
               "args": ["logits", "targets", "loss", "vocab"]}],
 "scratch": []}
@*/
