/* Honest: single-pass online softmax statistics (running max and rescaled sum per thread), merged across lanes with xor shuffles and across warps through shared memory, x read as aligned element pairs with a one-element head and tail, then y = exp(x - max) / sum.
 * kiln-task: softmax
 * kiln-class: honest
 * kiln-dtype: bf16
 * kiln-expect: pass
 */
#include "kiln_cuda.h"

#define NEG_INF __int_as_float(0xff800000)

struct alignas(2 * sizeof(kiln_t)) pair_t { kiln_t a, b; };

/* 1 when the row starts off a pair boundary (then element 0 is done alone). */
__device__ __forceinline__ int pair_head(const kiln_t *p, int cols)
{
    return ((unsigned long long)p % sizeof(pair_t)) && cols > 0 ? 1 : 0;
}

#define BLOCK 256 //@kiln tune 128 256 512 1024

struct ms_t { float m, s; };

__device__ __forceinline__ ms_t ms_add(ms_t a, float v)
{
    if (v > a.m)
        return {v, a.s * expf(a.m - v) + 1.0f};
    return {a.m, a.s + expf(v - a.m)};
}

/* Symmetric in a and b, so both lanes of a shuffle pair get the same bits. */
__device__ __forceinline__ ms_t ms_merge(ms_t a, ms_t b)
{
    const float m = fmaxf(a.m, b.m);
    if (m == NEG_INF)
        return a;
    return {m, a.s * expf(a.m - m) + b.s * expf(b.m - m)};
}

__device__ __forceinline__ ms_t warp_merge(ms_t v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        ms_t u;
        u.m = __shfl_xor_sync(0xffffffffu, v.m, o);
        u.s = __shfl_xor_sync(0xffffffffu, v.s, o);
        v = ms_merge(v, u);
    }
    return v;
}

extern "C" __global__ void softmax_online(const kiln_t *x, kiln_t *y, int cols)
{
    __shared__ ms_t part[32];
    __shared__ ms_t total;
    const size_t r = blockIdx.x;
    const kiln_t *xr = x + r * (size_t)cols;
    kiln_t *yr = y + r * (size_t)cols;
    const int head = pair_head(xr, cols);
    const int npair = (cols - head) / 2;
    const int tail = head + 2 * npair;
    const pair_t *xp = reinterpret_cast<const pair_t *>(xr + head);
    ms_t st = {NEG_INF, 0.0f};
    for (int i = threadIdx.x; i < npair; i += blockDim.x) {
        const pair_t q = xp[i];
        st = ms_add(st, kiln_to_float(q.a));
        st = ms_add(st, kiln_to_float(q.b));
    }
    if (threadIdx.x == 0) {
        for (int c = 0; c < head; c++)
            st = ms_add(st, kiln_to_float(xr[c]));
        for (int c = tail; c < cols; c++)
            st = ms_add(st, kiln_to_float(xr[c]));
    }
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    st = warp_merge(st);
    if (lane == 0)
        part[warp] = st;
    __syncthreads();
    if (warp == 0) {
        ms_t t = lane < (int)(blockDim.x >> 5) ? part[lane] : ms_t{NEG_INF, 0.0f};
        t = warp_merge(t);
        if (lane == 0)
            total = t;
    }
    __syncthreads();
    const float m = total.m, inv_s = 1.0f / total.s;
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        yr[c] = kiln_from_float(expf(kiln_to_float(xr[c]) - m) * inv_s);
}

/*@kiln launch
{"launches": [{"kernel": "softmax_online", "grid": ["rows"], "block": ["BLOCK"], "smem": "0", "args": ["x", "y", "cols"]}],
 "scratch": []}
@*/
