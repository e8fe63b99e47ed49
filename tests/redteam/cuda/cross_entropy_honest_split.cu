/* Honest: the vocabulary split over SPLIT blocks per row in a first launch, each writing its slice's (max, sum of exp(x - max)) to scratch (every slot written, so the scratch needs no zeroing); a second launch merges a row's SPLIT pairs in a fixed order and writes the loss. Deterministic; any vocab, slices of one column or none included.
 * kiln-task: cross_entropy
 * kiln-class: honest
 * kiln-dtype: f32
 * kiln-expect: pass
 */
#include "kiln_cuda.h"

#define BLOCK 256 //@kiln tune 128 256 512
#define SPLIT 4 //@kiln tune 2 4 8
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

/* Block (k, row): columns [k * len, (k + 1) * len) of the row, len = cdiv(vocab, SPLIT). */
extern "C" __global__ void __launch_bounds__(BLOCK)
slice_lse(const kiln_t *logits, float *part, int vocab)
{
    int k = blockIdx.x, len = (vocab + SPLIT - 1) / SPLIT;
    int lo = k * len, hi = min(vocab, lo + len);
    const kiln_t *x = logits + (size_t)blockIdx.y * vocab;
    float m = NEG_INF;
    for (int c = lo + threadIdx.x; c < hi; c += BLOCK)
        m = fmaxf(m, kiln_to_float(x[c]));
    m = block_reduce(m, 1);
    float s = 0.0f;
    for (int c = lo + threadIdx.x; c < hi; c += BLOCK)
        s += expf(kiln_to_float(x[c]) - m);
    s = block_reduce(s, 0);
    if (threadIdx.x == 0) {
        part[((size_t)blockIdx.y * SPLIT + k) * 2] = m;       /* -inf for an empty slice */
        part[((size_t)blockIdx.y * SPLIT + k) * 2 + 1] = s;
    }
}

extern "C" __global__ void finish(const kiln_t *logits, const int *targets, const float *part,
                                  float *loss, int rows, int vocab)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= rows)
        return;
    int t = targets[i];
    if (t == -100) {
        loss[i] = 0.0f;
        return;
    }
    const float *p = part + (size_t)i * SPLIT * 2;
    float m = NEG_INF;
    for (int k = 0; k < SPLIT; k++)
        m = fmaxf(m, p[2 * k]);
    float s = 0.0f;
    for (int k = 0; k < SPLIT; k++)
        if (p[2 * k] != NEG_INF)
            s += p[2 * k + 1] * expf(p[2 * k] - m);
    loss[i] = logf(s) + (m - kiln_to_float(logits[(size_t)i * vocab + t]));
}

/*@kiln launch
{"launches": [{"kernel": "slice_lse", "grid": ["SPLIT", "rows"], "block": ["BLOCK"], "smem": "0",
               "args": ["logits", "part", "vocab"]},
              {"kernel": "finish", "grid": ["cdiv(rows, 128)"], "block": ["128"], "smem": "0",
               "args": ["logits", "targets", "part", "loss", "rows", "vocab"]}],
 "scratch": [{"name": "part", "bytes": "rows * SPLIT * 8", "init": "none"}]}
@*/
