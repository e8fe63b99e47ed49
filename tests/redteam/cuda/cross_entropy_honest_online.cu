/* Honest: one pass over the row, each thread a running max with its sum rescaled when the max grows (online softmax), then the (max, sum) pairs merged over the warp and the block; the target's logit read once; ignored rows skipped unread. Any vocab.
 * kiln-task: cross_entropy
 * kiln-class: honest
 * kiln-dtype: bf16
 * kiln-expect: pass
 */
#include "kiln_cuda.h"

#define BLOCK 256 //@kiln tune 128 256 512 1024
#define NEG_INF (-__int_as_float(0x7f800000))

/* (m, s) and (om, os) as one running pair: the sum at the larger max. */
__device__ __forceinline__ void merge(float &m, float &s, float om, float os)
{
    float nm = fmaxf(m, om);
    if (nm == NEG_INF)
        return;
    s = s * expf(m - nm) + os * expf(om - nm);
    m = nm;
}

extern "C" __global__ void __launch_bounds__(BLOCK)
cross_entropy_online(const kiln_t *logits, const int *targets, float *loss, int vocab)
{
    __shared__ float pm[BLOCK / 32], ps[BLOCK / 32];
    int t = targets[blockIdx.x];
    if (t == -100) {
        if (threadIdx.x == 0)
            loss[blockIdx.x] = 0.0f;
        return;
    }
    const kiln_t *x = logits + (size_t)blockIdx.x * vocab;
    float m = NEG_INF, s = 0.0f;
    for (int c = threadIdx.x; c < vocab; c += BLOCK) {
        float v = kiln_to_float(x[c]);
        if (v > m) {
            s = s * expf(m - v) + 1.0f;
            m = v;
        } else {
            s += expf(v - m);
        }
    }
    for (int off = 16; off > 0; off >>= 1)
        merge(m, s, __shfl_xor_sync(0xffffffffu, m, off), __shfl_xor_sync(0xffffffffu, s, off));
    if ((threadIdx.x & 31) == 0) {
        pm[threadIdx.x >> 5] = m;
        ps[threadIdx.x >> 5] = s;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        float bm = pm[0], bs = ps[0];
        for (int k = 1; k < BLOCK / 32; k++)
            merge(bm, bs, pm[k], ps[k]);
        loss[blockIdx.x] = logf(bs) + (bm - kiln_to_float(x[t]));
    }
}

/*@kiln launch
{"launches": [{"kernel": "cross_entropy_online", "grid": ["rows"], "block": ["BLOCK"], "smem": "0",
               "args": ["logits", "targets", "loss", "vocab"]}],
 "scratch": []}
@*/
