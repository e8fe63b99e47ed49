/* cross_entropy, tunable: where `kiln search --agent tune` starts for CUDA
 * (the plain starter stays the baseline). A block per row; an ignored row
 * (target -100) writes 0 and reads nothing. Its knobs:
 *   VEC     logits per load (16 bytes at 8 bf16); a vocabulary that is not
 *           a multiple takes the scalar path
 *   BLOCK   threads per block
 *   ONLINE  0: two passes over the row (the max, then the sum of
 *           exp(x - max)); 1: one pass, each thread's sum rescaled when its
 *           max grows (online softmax), the pairs merged over the block
 * Every setting is correct at every shape: fp32 throughout, the max
 * subtracted before every exponential. */
#include "kiln_cuda.h"

#define VEC 8 //@kiln tune 1 2 4 8
#define BLOCK 512 //@kiln tune 128 256 512 1024
#define ONLINE 1 //@kiln tune 0 1

#define IGNORE_INDEX -100
#define NEG_INF (-__int_as_float(0x7f800000))   /* NVRTC has no math.h INFINITY */

/* L logits, loaded as one (16 bytes at 8 bf16). */
template <int L> struct alignas(sizeof(kiln_t) * L) pack_t {
    kiln_t v[L];
};

/* (m, s) and (om, os) as one pair: the sum at the larger max. */
__device__ __forceinline__ void merge(float &m, float &s, float om, float os)
{
    float nm = fmaxf(m, om);
    if (nm == NEG_INF)
        return;   /* both empty */
    s = s * expf(m - nm) + os * expf(om - nm);
    m = nm;
}

/* One logit into a thread's running pair. */
__device__ __forceinline__ void online(float &m, float &s, float v)
{
    if (v > m) {
        s = s * expf(m - v) + 1.0f;
        m = v;
    } else {
        s += expf(v - m);
    }
}

/* The block's max (merge 0) or merged pair (merge 1), to every thread. */
__device__ __forceinline__ void block_pair(float &m, float &s, int pair)
{
    __shared__ float pm[BLOCK / 32], ps[BLOCK / 32];
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        float om = __shfl_xor_sync(0xffffffffu, m, o), os = __shfl_xor_sync(0xffffffffu, s, o);
        if (pair)
            merge(m, s, om, os);
        else
            m = fmaxf(m, om), s += os;
    }
    if ((threadIdx.x & 31) == 0) {
        pm[threadIdx.x >> 5] = m;
        ps[threadIdx.x >> 5] = s;
    }
    __syncthreads();
    float bm = pm[0], bs = ps[0];
#pragma unroll
    for (int k = 1; k < BLOCK / 32; k++) {
        if (pair)
            merge(bm, bs, pm[k], ps[k]);
        else
            bm = fmaxf(bm, pm[k]), bs += ps[k];
    }
    __syncthreads();   /* pm, ps reused by the next call */
    m = bm;
    s = bs;
}

/* The row's log-sum-exp: n loads of L logits each from x (L = VEC or 1). */
template <int L>
__device__ __forceinline__ float row_lse(const kiln_t *x, int n)
{
    typedef pack_t<L> load_t;
    const load_t *p = reinterpret_cast<const load_t *>(x);
    float m = NEG_INF, s = 0.0f;
    if (ONLINE) {
        for (int i = threadIdx.x; i < n; i += BLOCK) {
            load_t a = p[i];
#pragma unroll
            for (int e = 0; e < L; e++)
                online(m, s, kiln_to_float(a.v[e]));
        }
        block_pair(m, s, 1);
    } else {
        for (int i = threadIdx.x; i < n; i += BLOCK) {
            load_t a = p[i];
#pragma unroll
            for (int e = 0; e < L; e++)
                m = fmaxf(m, kiln_to_float(a.v[e]));
        }
        float z = 0.0f;
        block_pair(m, z, 0);
        for (int i = threadIdx.x; i < n; i += BLOCK) {
            load_t a = p[i];
#pragma unroll
            for (int e = 0; e < L; e++)
                s += expf(kiln_to_float(a.v[e]) - m);
        }
        float mm = NEG_INF;
        block_pair(mm, s, 0);
    }
    return m + logf(s);
}

extern "C" __global__ void __launch_bounds__(BLOCK)
cross_entropy_tuned(const kiln_t *logits, const int *targets, float *loss, int vocab)
{
    const int t = targets[blockIdx.x];
    if (t == IGNORE_INDEX) {   /* the same for the whole block */
        if (threadIdx.x == 0)
            loss[blockIdx.x] = 0.0f;
        return;
    }
    const kiln_t *x = logits + (size_t)blockIdx.x * vocab;
    float lse = VEC > 1 && vocab % VEC == 0 ? row_lse<VEC>(x, vocab / VEC) : row_lse<1>(x, vocab);
    if (threadIdx.x == 0)
        loss[blockIdx.x] = lse - kiln_to_float(x[t]);
}

/*@kiln launch
{"launches": [{"kernel": "cross_entropy_tuned", "grid": ["rows"], "block": ["BLOCK"], "smem": 0,
               "args": ["logits", "targets", "loss", "vocab"]}],
 "scratch": []}
@*/
