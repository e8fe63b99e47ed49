/* softmax, tunable: where `kiln search --agent tune` starts for CUDA (the
 * plain starter stays the baseline). Knobs as rmsnorm's tunable.cu:
 *   VEC        elements per load and store; rows whose width is not a
 *              multiple take the scalar path
 *   BLOCK      threads per block
 *   WARP_ROWS  0: a block per row; 1: a warp per row
 *   KEEP       vectors per thread held in registers across the three
 *              passes (maximum, sum, output); 0 or a wider row: read again
 *   UNROLL     unrolling of the loops that read again
 *   STREAM     1: x and y with streaming (evict-first) loads and stores
 *   ONEPASS    1 (kept rows): one reduction instead of two; each thread
 *              takes its own maximum m_t and sum of exp(x - m_t), keeps
 *              those exponentials, and the pairs (m, s) are merged over
 *              the row (s1 e^(m1-m) + s2 e^(m2-m)), so a row waits on one
 *              tree of shuffles and barriers and computes one expf per
 *              element instead of two
 *   FASTEXP    1: e^(x-m) as exp2f(x log2 e - m log2 e), one fused
 *              multiply-add and the hardware's 2^x, instead of expf
 * Every setting is correct at every shape: max and sum in fp32, expf of
 * x - max, one rounding per output. */
#include "kiln_cuda.h"

#define VEC 8 //@kiln tune 1 2 4 8
#define BLOCK 128 //@kiln tune 64 128 256 512 1024
#define WARP_ROWS 0 //@kiln tune 0 1
#define KEEP 4 //@kiln tune 0 1 2 4 8
#define UNROLL 1 //@kiln tune 1 2 4
#define STREAM 0 //@kiln tune 0 1
#define ONEPASS 1 //@kiln tune 0 1
#define FASTEXP 0 //@kiln tune 0 1

#define ROW_THREADS (WARP_ROWS ? 32 : BLOCK)
#define ROWS_PER_BLOCK (BLOCK / ROW_THREADS)

struct alignas(sizeof(kiln_t) * VEC) vec_t {
    kiln_t v[VEC];
};
constexpr int kUnroll = UNROLL;

/* One vector, as the widest plain type of its size (so STREAM can use the
 * streaming intrinsics, which take only built-in types). */
template <typename W>
__device__ __forceinline__ void ld_words(const void *p, void *out, int n)
{
    const W *s = reinterpret_cast<const W *>(p);
    W *d = reinterpret_cast<W *>(out);
#pragma unroll
    for (int i = 0; i < n; i++)
        d[i] = STREAM ? __ldcs(s + i) : s[i];
}

template <typename W>
__device__ __forceinline__ void st_words(void *p, const void *in, int n)
{
    W *d = reinterpret_cast<W *>(p);
    const W *s = reinterpret_cast<const W *>(in);
#pragma unroll
    for (int i = 0; i < n; i++) {
        if (STREAM)
            __stcs(d + i, s[i]);
        else
            d[i] = s[i];
    }
}

__device__ __forceinline__ vec_t load_x(const vec_t *p)
{
    vec_t r;
    constexpr int B = sizeof(vec_t);
    if constexpr (B % 16 == 0)
        ld_words<uint4>(p, &r, B / 16);
    else if constexpr (B == 8)
        ld_words<uint2>(p, &r, 1);
    else if constexpr (B == 4)
        ld_words<unsigned int>(p, &r, 1);
    else
        ld_words<unsigned short>(p, &r, 1);
    return r;
}

__device__ __forceinline__ void store_y(vec_t *p, const vec_t &v)
{
    constexpr int B = sizeof(vec_t);
    if constexpr (B % 16 == 0)
        st_words<uint4>(p, &v, B / 16);
    else if constexpr (B == 8)
        st_words<uint2>(p, &v, 1);
    else if constexpr (B == 4)
        st_words<unsigned int>(p, &v, 1);
    else
        st_words<unsigned short>(p, &v, 1);
}

/* e^(x - m), at the accuracy FASTEXP picks. */
__device__ __forceinline__ float exp_rel(float x, float m)
{
    if (FASTEXP) {
        const float l2e = 1.4426950408889634f;
        return exp2f(fmaf(x, l2e, -m * l2e));
    }
    return expf(x - m);
}

/* v reduced over a row's threads (the sum, or with MAX the maximum),
 * returned to each of them in the same bits. A block holds one row and
 * reduces at most once in each SLOT, so the slots' shared arrays are never
 * reused and no barrier is needed after the read (each one a row waits on
 * costs time in a kernel bound by a row's latency). */
template <bool MAX, int SLOT>
__device__ __forceinline__ float row_reduce(float v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        float u = __shfl_xor_sync(0xffffffffu, v, o);
        v = MAX ? fmaxf(v, u) : v + u;
    }
    if (ROW_THREADS == 32)
        return v;
    __shared__ float part[BLOCK / 32];
    if ((threadIdx.x & 31) == 0)
        part[threadIdx.x >> 5] = v;
    __syncthreads();
    float s = part[0];
#pragma unroll
    for (int k = 1; k < BLOCK / 32; k++)
        s = MAX ? fmaxf(s, part[k]) : s + part[k];
    return s;
}

__device__ __forceinline__ float vec_max(const vec_t &a, float m)
{
#pragma unroll
    for (int e = 0; e < VEC; e++)
        m = fmaxf(m, kiln_to_float(a.v[e]));
    return m;
}

__device__ __forceinline__ float vec_expsum(const vec_t &a, float m)
{
    float s = 0.0f;
#pragma unroll
    for (int e = 0; e < VEC; e++)
        s += exp_rel(kiln_to_float(a.v[e]), m);
    return s;
}

__device__ __forceinline__ vec_t vec_out(const vec_t &a, float m, float inv)
{
    vec_t o;
#pragma unroll
    for (int e = 0; e < VEC; e++)
        o.v[e] = kiln_from_float(exp_rel(kiln_to_float(a.v[e]), m) * inv);
    return o;
}

/* (m1, s1) and (m2, s2), two parts of a row's maximum and sum of
 * exponentials relative to it, merged in place; the same bits whichever
 * comes first (max and + commute), so every lane ends with the same. A
 * part with no elements has m = -inf and s = 0. */
__device__ __forceinline__ void ms_merge(float &m, float &s, float m2, float s2)
{
    const float mm = fmaxf(m, m2);
    if (mm == __int_as_float(0xff800000))
        return;   /* both empty */
    s = s * expf(m - mm) + s2 * expf(m2 - mm);
    m = mm;
}

/* The pair merged over a row's threads (as row_reduce); every thread gets
 * the row's (m, s) in the same bits. */
__device__ __forceinline__ void row_reduce_ms(float &m, float &s)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        const float m2 = __shfl_xor_sync(0xffffffffu, m, o);
        const float s2 = __shfl_xor_sync(0xffffffffu, s, o);
        ms_merge(m, s, m2, s2);
    }
    if (ROW_THREADS == 32)
        return;
    /* The warps' pairs merged by warp 0 alone (the merge costs two expf:
     * every thread merging every warp's pair cost more than the row). */
    __shared__ float pm[BLOCK / 32], ps[BLOCK / 32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) {
        pm[warp] = m;
        ps[warp] = s;
    }
    __syncthreads();
    if (warp == 0) {
        m = lane < BLOCK / 32 ? pm[lane] : __int_as_float(0xff800000);
        s = lane < BLOCK / 32 ? ps[lane] : 0.0f;
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
            if (o >= BLOCK / 32)
                continue;   /* lanes past the warps' count hold nothing */
            const float m2 = __shfl_xor_sync(0xffffffffu, m, o);
            const float s2 = __shfl_xor_sync(0xffffffffu, s, o);
            ms_merge(m, s, m2, s2);
        }
        if (lane == 0) {
            pm[0] = m;
            ps[0] = s;
        }
    }
    __syncthreads();
    m = pm[0];   /* read once: no barrier after it (see row_reduce) */
    s = ps[0];
}

/* ONEPASS on a kept row: one reduction, one expf per element. */
__device__ __forceinline__ void row_vec_onepass(const vec_t *xv, vec_t *yv, int nv, int t)
{
    constexpr int K = KEEP > 0 ? KEEP : 1;
    float e[K][VEC];
    float m = __int_as_float(0xff800000);
#pragma unroll
    for (int k = 0; k < K; k++) {
        const int i = t + k * ROW_THREADS;
        if (i < nv) {
            const vec_t a = load_x(xv + i);
#pragma unroll
            for (int j = 0; j < VEC; j++) {
                e[k][j] = kiln_to_float(a.v[j]);
                m = fmaxf(m, e[k][j]);
            }
        }
    }
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < K; k++)
        if (t + k * ROW_THREADS < nv) {
#pragma unroll
            for (int j = 0; j < VEC; j++) {
                e[k][j] = exp_rel(e[k][j], m);
                s += e[k][j];
            }
        }
    const float mine = m;
    row_reduce_ms(m, s);
    const float scale = (mine == __int_as_float(0xff800000) ? 0.0f : expf(mine - m)) / s;
#pragma unroll
    for (int k = 0; k < K; k++) {
        const int i = t + k * ROW_THREADS;
        if (i < nv) {
            vec_t o;
#pragma unroll
            for (int j = 0; j < VEC; j++)
                o.v[j] = kiln_from_float(e[k][j] * scale);
            store_y(yv + i, o);
        }
    }
}

/* A row of nv whole vectors (cols % VEC == 0, so its start is aligned). */
__device__ __forceinline__ void row_vec(const vec_t *xv, vec_t *yv, int nv, int t)
{
    if (ONEPASS && KEEP > 0 && nv <= KEEP * ROW_THREADS) {
        row_vec_onepass(xv, yv, nv, t);
        return;
    }
    constexpr int K = KEEP > 0 ? KEEP : 1;
    vec_t keep[K];
    const bool kept = KEEP > 0 && nv <= KEEP * ROW_THREADS;
    float m = __int_as_float(0xff800000);
    if (kept) {
#pragma unroll
        for (int k = 0; k < K; k++) {
            int i = t + k * ROW_THREADS;
            if (i < nv) {
                keep[k] = load_x(xv + i);
                m = vec_max(keep[k], m);
            }
        }
    } else {
#pragma unroll kUnroll
        for (int i = t; i < nv; i += ROW_THREADS)
            m = vec_max(load_x(xv + i), m);
    }
    m = row_reduce<true, 0>(m);
    float s = 0.0f;
    if (kept) {
#pragma unroll
        for (int k = 0; k < K; k++)
            if (t + k * ROW_THREADS < nv)
                s += vec_expsum(keep[k], m);
    } else {
#pragma unroll kUnroll
        for (int i = t; i < nv; i += ROW_THREADS)
            s += vec_expsum(load_x(xv + i), m);
    }
    const float inv = 1.0f / row_reduce<false, 1>(s);
    if (kept) {
#pragma unroll
        for (int k = 0; k < K; k++) {
            int i = t + k * ROW_THREADS;
            if (i < nv)
                store_y(yv + i, vec_out(keep[k], m, inv));
        }
    } else {
#pragma unroll kUnroll
        for (int i = t; i < nv; i += ROW_THREADS)
            store_y(yv + i, vec_out(load_x(xv + i), m, inv));
    }
}

/* Any width: one element at a time. */
__device__ __forceinline__ void row_scalar(const kiln_t *xr, kiln_t *yr, int t, int cols)
{
    float m = __int_as_float(0xff800000);
    for (int c = t; c < cols; c += ROW_THREADS)
        m = fmaxf(m, kiln_to_float(xr[c]));
    m = row_reduce<true, 0>(m);
    float s = 0.0f;
#pragma unroll kUnroll
    for (int c = t; c < cols; c += ROW_THREADS)
        s += expf(kiln_to_float(xr[c]) - m);
    const float inv = 1.0f / row_reduce<false, 1>(s);
#pragma unroll kUnroll
    for (int c = t; c < cols; c += ROW_THREADS)
        yr[c] = kiln_from_float(expf(kiln_to_float(xr[c]) - m) * inv);
}

extern "C" __global__ void __launch_bounds__(BLOCK)
softmax_tuned(const kiln_t *x, kiln_t *y, int rows, int cols)
{
    const int t = threadIdx.x % ROW_THREADS;
    const long long row = (long long)blockIdx.x * ROWS_PER_BLOCK + threadIdx.x / ROW_THREADS;
    if (row >= rows)
        return;   /* a whole warp (WARP_ROWS) or the whole block: no barrier is left waiting */
    const kiln_t *xr = x + row * cols;
    kiln_t *yr = y + row * cols;
    if (VEC > 1 && cols % VEC == 0)
        row_vec(reinterpret_cast<const vec_t *>(xr), reinterpret_cast<vec_t *>(yr), cols / VEC, t);
    else
        row_scalar(xr, yr, t, cols);
}

/*@kiln launch
{"launches": [{"kernel": "softmax_tuned",
               "grid": ["WARP_ROWS ? (rows + BLOCK / 32 - 1) / (BLOCK / 32) : rows"],
               "block": ["BLOCK"], "smem": 0, "args": ["x", "y", "rows", "cols"]}],
 "scratch": []}
@*/
