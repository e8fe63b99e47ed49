/* layernorm, tunable: where `kiln search --agent tune` starts for CUDA
 * (the plain starter stays the baseline). Knobs as rmsnorm's tunable.cu:
 *   VEC        elements per load and store; rows whose width is not a
 *              multiple take the scalar path
 *   BLOCK      threads per block
 *   WARP_ROWS  0: a block per row; 1: a warp per row
 *   KEEP       vectors per thread held in registers across the passes
 *              (mean, variance, output; in the two-reduction path as
 *              floats, then as their deviations from the mean); 0 or a
 *              wider row: read again
 *   UNROLL     unrolling of the loops that read again
 *   STREAM     1: x and y with streaming (evict-first) loads and stores
 *   ONEPASS    1 (kept rows): one reduction instead of two; each thread
 *              takes the count, mean and sum of squared deviations of its
 *              own elements (two passes over its registers), and those
 *              are merged over the row by Chan et al.'s pairwise update,
 *   PREFETCH   1 (kept rows): w and b loaded with x, before the row waits
 *              on its reductions, at the cost of registers
 * Every setting is correct at every shape: the mean, then the variance as
 * the mean of (x - mean)^2 (two passes, no cancellation), in fp32, one
 * rounding per output. */
#include "kiln_cuda.h"

#define VEC 8 //@kiln tune 1 2 4 8
#define BLOCK 128 //@kiln tune 64 128 256 512 1024
#define WARP_ROWS 0 //@kiln tune 0 1
#define KEEP 4 //@kiln tune 0 1 2 4 8
#define UNROLL 1 //@kiln tune 1 2 4
#define STREAM 0 //@kiln tune 0 1
#define ONEPASS 0 //@kiln tune 0 1
#define PREFETCH 0 //@kiln tune 0 1

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

/* v reduced over a row's threads (the sum, or with MAX the maximum),
 * returned to each of them in the same bits. A block holds one row and
 * reduces at most once in each SLOT, so the slots' shared arrays are never
 * reused. A barrier after the read is not needed for them, yet on the H200
 * (bf16, 16384x4096) this kernel took 93 us with it and 99 us without in
 * two separate sweeps (docs/BENCHMARKS.md), so it stays until one run
 * compares both. */
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
    __syncthreads();   /* not needed for the arrays; measured faster with it */
    return s;
}

__device__ __forceinline__ float vec_sum(const vec_t &a)
{
    float s = 0.0f;
#pragma unroll
    for (int e = 0; e < VEC; e++)
        s += kiln_to_float(a.v[e]);
    return s;
}

__device__ __forceinline__ float vec_dev2(const vec_t &a, float mean)
{
    float s = 0.0f;
#pragma unroll
    for (int e = 0; e < VEC; e++) {
        float d = kiln_to_float(a.v[e]) - mean;
        s += d * d;
    }
    return s;
}

__device__ __forceinline__ vec_t vec_out(const vec_t &a, const vec_t &w, const vec_t &b,
                                         float mean, float inv)
{
    vec_t o;
#pragma unroll
    for (int e = 0; e < VEC; e++)
        o.v[e] = kiln_from_float((kiln_to_float(a.v[e]) - mean) * inv * kiln_to_float(w.v[e]) +
                                 kiln_to_float(b.v[e]));
    return o;
}

/* Two parts' (count, mean, sum of squared deviations) merged into the
 * first (Chan, Golub and LeVeque's pairwise update): no cancellation, as
 * in the two-pass form. Not symmetric in its operands, so callers always
 * pass the lower lane or warp first and every thread gets the same bits. */
__device__ __forceinline__ void stats_merge(float &n, float &mu, float &m2, float nb, float mub,
                                            float m2b)
{
    const float nn = n + nb;
    if (nb == 0.0f)
        return;
    if (n == 0.0f) {
        n = nb, mu = mub, m2 = m2b;
        return;
    }
    const float d = mub - mu, f = nb / nn;
    mu = mu + d * f;
    m2 = m2 + m2b + d * d * n * f;
    n = nn;
}

__device__ __forceinline__ void row_reduce_stats(float &n, float &mu, float &m2)
{
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        const float nb = __shfl_xor_sync(0xffffffffu, n, o);
        const float mub = __shfl_xor_sync(0xffffffffu, mu, o);
        const float m2b = __shfl_xor_sync(0xffffffffu, m2, o);
        if (lane & o) {   /* the partner is the lower lane: it goes first */
            float pn = nb, pmu = mub, pm2 = m2b;
            stats_merge(pn, pmu, pm2, n, mu, m2);
            n = pn, mu = pmu, m2 = pm2;
        } else {
            stats_merge(n, mu, m2, nb, mub, m2b);
        }
    }
    if (ROW_THREADS == 32)
        return;
    /* The warps' parts merged by warp 0 alone, lower warps first. */
    __shared__ float pn[BLOCK / 32], pmu[BLOCK / 32], pm2[BLOCK / 32];
    const int warp = threadIdx.x >> 5;
    if (lane == 0) {
        pn[warp] = n;
        pmu[warp] = mu;
        pm2[warp] = m2;
    }
    __syncthreads();
    if (warp == 0) {
        const int w = lane < BLOCK / 32;
        n = w ? pn[lane] : 0.0f;
        mu = w ? pmu[lane] : 0.0f;
        m2 = w ? pm2[lane] : 0.0f;
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
            if (o >= BLOCK / 32)
                continue;
            const float nb = __shfl_xor_sync(0xffffffffu, n, o);
            const float mub = __shfl_xor_sync(0xffffffffu, mu, o);
            const float m2b = __shfl_xor_sync(0xffffffffu, m2, o);
            if (lane & o) {
                float qn = nb, qmu = mub, qm2 = m2b;
                stats_merge(qn, qmu, qm2, n, mu, m2);
                n = qn, mu = qmu, m2 = qm2;
            } else {
                stats_merge(n, mu, m2, nb, mub, m2b);
            }
        }
        if (lane == 0) {
            pn[0] = n;
            pmu[0] = mu;
            pm2[0] = m2;
        }
    }
    __syncthreads();
    n = pn[0], mu = pmu[0], m2 = pm2[0];
    __syncthreads();   /* as in row_reduce */
}

/* ONEPASS on a kept row: one reduction, w and b in flight during it. */
__device__ __forceinline__ void row_vec_onepass(const vec_t *xv, const vec_t *wv, const vec_t *bv,
                                                vec_t *yv, int nv, int t, int cols, float eps)
{
    constexpr int K = KEEP > 0 ? KEEP : 1;
    vec_t keep[K], wk[K], bk[K];
    float s = 0.0f, n = 0.0f;
#pragma unroll
    for (int k = 0; k < K; k++) {
        const int i = t + k * ROW_THREADS;
        if (i < nv) {
            keep[k] = load_x(xv + i);
            if (PREFETCH) {
                wk[k] = wv[i];
                bk[k] = bv[i];
            }
            s += vec_sum(keep[k]);
            n += (float)VEC;
        }
    }
    float mu = n > 0.0f ? s / n : 0.0f, m2 = 0.0f;
#pragma unroll
    for (int k = 0; k < K; k++)
        if (t + k * ROW_THREADS < nv)
            m2 += vec_dev2(keep[k], mu);
    row_reduce_stats(n, mu, m2);
    const float inv = rsqrtf(m2 / (float)cols + eps);
#pragma unroll
    for (int k = 0; k < K; k++) {
        const int i = t + k * ROW_THREADS;
        if (i < nv)
            store_y(yv + i, vec_out(keep[k], PREFETCH ? wk[k] : wv[i], PREFETCH ? bk[k] : bv[i], mu, inv));
    }
}

/* A kept row, two reductions: x as floats, then as their deviations from
 * the mean, stay in registers for the output (converted once); with
 * PREFETCH w and b are loaded with x. */
__device__ __forceinline__ void row_kept(const vec_t *xv, const vec_t *wv, const vec_t *bv,
                                         vec_t *yv, int nv, int t, int cols, float eps)
{
    constexpr int K = KEEP > 0 ? KEEP : 1;
    float d[K][VEC];
    vec_t wk[K], bk[K];
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < K; k++) {
        const int i = t + k * ROW_THREADS;
        if (i < nv) {
            const vec_t a = load_x(xv + i);
            if (PREFETCH) {
                wk[k] = wv[i];
                bk[k] = bv[i];
            }
#pragma unroll
            for (int e = 0; e < VEC; e++) {
                d[k][e] = kiln_to_float(a.v[e]);
                s += d[k][e];
            }
        }
    }
    const float mean = row_reduce<false, 0>(s) / (float)cols;
    float d2 = 0.0f;
#pragma unroll
    for (int k = 0; k < K; k++)
        if (t + k * ROW_THREADS < nv) {
#pragma unroll
            for (int e = 0; e < VEC; e++) {
                d[k][e] -= mean;
                d2 += d[k][e] * d[k][e];
            }
        }
    const float inv = rsqrtf(row_reduce<false, 1>(d2) / (float)cols + eps);
#pragma unroll
    for (int k = 0; k < K; k++) {
        const int i = t + k * ROW_THREADS;
        if (i < nv) {
            const vec_t w = PREFETCH ? wk[k] : wv[i], b = PREFETCH ? bk[k] : bv[i];
            vec_t o;
#pragma unroll
            for (int e = 0; e < VEC; e++)
                o.v[e] = kiln_from_float(d[k][e] * inv * kiln_to_float(w.v[e]) +
                                         kiln_to_float(b.v[e]));
            store_y(yv + i, o);
        }
    }
}

/* A row of nv whole vectors (cols % VEC == 0, so its start is aligned). */
__device__ __forceinline__ void row_vec(const vec_t *xv, const vec_t *wv, const vec_t *bv,
                                        vec_t *yv, int nv, int t, int cols, float eps)
{
    if (KEEP > 0 && nv <= KEEP * ROW_THREADS) {
        if (ONEPASS)
            row_vec_onepass(xv, wv, bv, yv, nv, t, cols, eps);
        else
            row_kept(xv, wv, bv, yv, nv, t, cols, eps);
        return;
    }
    /* too wide to keep: read three times (mean, variance, output) */
    float s = 0.0f;
#pragma unroll kUnroll
    for (int i = t; i < nv; i += ROW_THREADS)
        s += vec_sum(load_x(xv + i));
    const float mean = row_reduce<false, 0>(s) / (float)cols;
    float d2 = 0.0f;
#pragma unroll kUnroll
    for (int i = t; i < nv; i += ROW_THREADS)
        d2 += vec_dev2(load_x(xv + i), mean);
    const float inv = rsqrtf(row_reduce<false, 1>(d2) / (float)cols + eps);
#pragma unroll kUnroll
    for (int i = t; i < nv; i += ROW_THREADS)
        store_y(yv + i, vec_out(load_x(xv + i), wv[i], bv[i], mean, inv));
}

/* Any width: one element at a time. */
__device__ __forceinline__ void row_scalar(const kiln_t *xr, const kiln_t *w, const kiln_t *b,
                                           kiln_t *yr, int t, int cols, float eps)
{
    float s = 0.0f;
#pragma unroll kUnroll
    for (int c = t; c < cols; c += ROW_THREADS)
        s += kiln_to_float(xr[c]);
    const float mean = row_reduce<false, 0>(s) / (float)cols;
    float d2 = 0.0f;
#pragma unroll kUnroll
    for (int c = t; c < cols; c += ROW_THREADS) {
        float d = kiln_to_float(xr[c]) - mean;
        d2 += d * d;
    }
    const float inv = rsqrtf(row_reduce<false, 1>(d2) / (float)cols + eps);
#pragma unroll kUnroll
    for (int c = t; c < cols; c += ROW_THREADS)
        yr[c] = kiln_from_float((kiln_to_float(xr[c]) - mean) * inv * kiln_to_float(w[c]) +
                                kiln_to_float(b[c]));
}

extern "C" __global__ void __launch_bounds__(BLOCK)
layernorm_tuned(const kiln_t *x, const kiln_t *w, const kiln_t *b, kiln_t *y, int rows, int cols,
                float eps)
{
    const int t = threadIdx.x % ROW_THREADS;
    const long long row = (long long)blockIdx.x * ROWS_PER_BLOCK + threadIdx.x / ROW_THREADS;
    if (row >= rows)
        return;   /* a whole warp (WARP_ROWS) or the whole block: no barrier is left waiting */
    const kiln_t *xr = x + row * cols;
    kiln_t *yr = y + row * cols;
    if (VEC > 1 && cols % VEC == 0)
        row_vec(reinterpret_cast<const vec_t *>(xr), reinterpret_cast<const vec_t *>(w),
                reinterpret_cast<const vec_t *>(b), reinterpret_cast<vec_t *>(yr), cols / VEC, t,
                cols, eps);
    else
        row_scalar(xr, w, b, yr, t, cols, eps);
}

/*@kiln launch
{"launches": [{"kernel": "layernorm_tuned",
               "grid": ["WARP_ROWS ? (rows + BLOCK / 32 - 1) / (BLOCK / 32) : rows"],
               "block": ["BLOCK"], "smem": 0,
               "args": ["x", "w", "b", "y", "rows", "cols", "eps"]}],
 "scratch": []}
@*/
