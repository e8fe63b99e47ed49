/* softmax, tunable: where `kiln search --agent tune` starts for CUDA (the
 * plain starter stays the baseline). Knobs as rmsnorm's tunable.cu:
 *   VEC        elements per load and store; rows whose width is not a
 *              multiple take the scalar path
 *   BLOCK      threads per block
 *   WARP_ROWS  0: a block per row; 1: a warp per row
 *   KEEP       vectors per thread held in registers (as their
 *              exponentials, once known) from the load to the output; 0 or
 *              a wider row: read three times (maximum, sum, output)
 *   UNROLL     unrolling of the loops that read again
 *   STREAM     1: x and y with streaming (evict-first) loads and stores
 *   ONEPASS    1 (kept rows): one reduction instead of two; each thread
 *              takes its own maximum m_t and sum of exp(x - m_t), and the
 *              pairs (m, s) are merged over the row (s1 e^(m1-m) +
 *              s2 e^(m2-m)), so a row waits on one tree of shuffles and
 *              barriers; 0: the row's maximum, then its sum
 *   FASTEXP    how e^(x-m) is taken: 0 expf; 1 exp2f((x - m) log2 e), the
 *              hardware's 2^x; 2 the same without exp2f's care for results
 *              below 2^-126 (flushed to 0: softmax outputs that small are
 *              0 to every dtype's tolerance). x - m is formed first, so a
 *              large x and m lose nothing to rounding m log2 e (the fused
 *              form exp2f(x log2 e - m log2 e) failed f32 at 1e4-scaled
 *              rows)
 *   ALLMERGE   1 (ONEPASS): every thread merges the warps' (m, s) pairs
 *              after one barrier; 0: warp 0 merges them and a second
 *              barrier hands the result out (cheaper at large BLOCK)
 *   ROWLOOP    rows a block (a warp, WARP_ROWS) takes one after another;
 *              on kept rows the next row's loads are issued before this
 *              row's reductions, so memory stays busy while the block
 *              waits on its barriers
 * Every setting is correct at every shape: max and sum in fp32, the
 * exponential of x - max, one rounding per output. */
#include "kiln_cuda.h"

#define VEC 8 //@kiln tune 1 2 4 8
#define BLOCK 128 //@kiln tune 64 128 256 512 1024
#define WARP_ROWS 0 //@kiln tune 0 1
#define KEEP 4 //@kiln tune 0 1 2 4 8
#define UNROLL 1 //@kiln tune 1 2 4
#define STREAM 0 //@kiln tune 0 1
#define ONEPASS 0 //@kiln tune 0 1
#define FASTEXP 2 //@kiln tune 0 1 2
#define ALLMERGE 0 //@kiln tune 0 1
#define ROWLOOP 1 //@kiln tune 1 2 4

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
    if (FASTEXP == 2) {
        float r;
        asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"((x - m) * 1.4426950408889634f));
        return r;
    }
    if (FASTEXP)
        return exp2f((x - m) * 1.4426950408889634f);
    return expf(x - m);
}

/* v reduced over a row's threads (the sum, or with MAX the maximum),
 * returned to each of them in the same bits. Each SLOT has its own shared
 * array. A row reduces at most once in a slot, and consecutive rows of a
 * block (ROWLOOP) take alternate slots (P below), so a slot is written
 * again only after a later barrier that every thread reaches after its
 * read: no barrier is needed after the read (each one a row waits on costs
 * time in a kernel bound by a row's latency). */
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

__device__ __forceinline__ void warp_reduce_ms(float &m, float &s, int width)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        if (o >= width)
            continue;   /* lanes past width hold nothing */
        const float m2 = __shfl_xor_sync(0xffffffffu, m, o);
        const float s2 = __shfl_xor_sync(0xffffffffu, s, o);
        ms_merge(m, s, m2, s2);
    }
}

/* The pair merged over a row's threads (as row_reduce, slot P); every
 * thread gets the row's (m, s) in the same bits. */
template <int P>
__device__ __forceinline__ void row_reduce_ms(float &m, float &s)
{
    warp_reduce_ms(m, s, 32);
    if (ROW_THREADS == 32)
        return;
    __shared__ float pm[BLOCK / 32], ps[BLOCK / 32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) {
        pm[warp] = m;
        ps[warp] = s;
    }
    __syncthreads();
    if (ALLMERGE) {
        /* every thread, the warps' pairs in one order: the same bits */
        m = pm[0];
        s = ps[0];
#pragma unroll
        for (int k = 1; k < BLOCK / 32; k++)
            ms_merge(m, s, pm[k], ps[k]);
        return;
    }
    /* warp 0 alone (each merge costs two expf: every thread merging every
     * warp's pair cost more than the row at BLOCK 1024), then a second
     * barrier; its result goes in a slot of its own */
    __shared__ float rm, rs;
    if (warp == 0) {
        m = lane < BLOCK / 32 ? pm[lane] : __int_as_float(0xff800000);
        s = lane < BLOCK / 32 ? ps[lane] : 0.0f;
        warp_reduce_ms(m, s, BLOCK / 32);
        if (lane == 0) {
            rm = m;
            rs = s;
        }
    }
    __syncthreads();
    m = rm;   /* read once: no barrier after it (see row_reduce) */
    s = rs;
}

/* A kept row's vectors, loaded: thread t holds vectors t, t + ROW_THREADS, ... */
__device__ __forceinline__ void load_kept(vec_t (&a)[KEEP > 0 ? KEEP : 1], const vec_t *xv, int nv,
                                          int t)
{
#pragma unroll
    for (int k = 0; k < (KEEP > 0 ? KEEP : 1); k++)
        if (t + k * ROW_THREADS < nv)
            a[k] = load_x(xv + t + k * ROW_THREADS);
}

/* A kept row already loaded, as floats with their maximum. */
__device__ __forceinline__ float kept_floats(float (&e)[KEEP > 0 ? KEEP : 1][VEC],
                                             const vec_t (&a)[KEEP > 0 ? KEEP : 1], int nv, int t)
{
    float m = __int_as_float(0xff800000);
#pragma unroll
    for (int k = 0; k < (KEEP > 0 ? KEEP : 1); k++)
        if (t + k * ROW_THREADS < nv) {
#pragma unroll
            for (int j = 0; j < VEC; j++) {
                e[k][j] = kiln_to_float(a[k].v[j]);
                m = fmaxf(m, e[k][j]);
            }
        }
    return m;
}

/* e replaced by e^(e - m) in place; their sum. */
__device__ __forceinline__ float kept_exps(float (&e)[KEEP > 0 ? KEEP : 1][VEC], float m, int nv,
                                           int t)
{
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < (KEEP > 0 ? KEEP : 1); k++)
        if (t + k * ROW_THREADS < nv) {
#pragma unroll
            for (int j = 0; j < VEC; j++) {
                e[k][j] = exp_rel(e[k][j], m);
                s += e[k][j];
            }
        }
    return s;
}

__device__ __forceinline__ void kept_store(const float (&e)[KEEP > 0 ? KEEP : 1][VEC], float scale,
                                           vec_t *yv, int nv, int t)
{
#pragma unroll
    for (int k = 0; k < (KEEP > 0 ? KEEP : 1); k++) {
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

/* A kept row already loaded; its exponentials stay in registers for the
 * output. ONEPASS: one reduction of (max, sum) pairs; otherwise the row's
 * maximum, then the sum of e^(x - max). One exponential per element
 * either way. */
template <int P>
__device__ __forceinline__ void row_kept(const vec_t (&a)[KEEP > 0 ? KEEP : 1], vec_t *yv, int nv,
                                         int t)
{
    float e[KEEP > 0 ? KEEP : 1][VEC];
    float m = kept_floats(e, a, nv, t);
    if (ONEPASS) {
        float s = kept_exps(e, m, nv, t);
        const float mine = m;
        row_reduce_ms<P>(m, s);
        kept_store(e, (mine == __int_as_float(0xff800000) ? 0.0f : expf(mine - m)) / s, yv, nv, t);
    } else {
        m = row_reduce<true, 2 * P>(m);
        const float s = kept_exps(e, m, nv, t);
        kept_store(e, 1.0f / row_reduce<false, 2 * P + 1>(s), yv, nv, t);
    }
}

/* A row of nv whole vectors (cols % VEC == 0, so its start is aligned),
 * too wide to keep: read three times (maximum, sum, output). */
template <int P>
__device__ __forceinline__ void row_vec(const vec_t *xv, vec_t *yv, int nv, int t)
{
    float m = __int_as_float(0xff800000);
#pragma unroll kUnroll
    for (int i = t; i < nv; i += ROW_THREADS)
        m = vec_max(load_x(xv + i), m);
    m = row_reduce<true, 2 * P>(m);
    float s = 0.0f;
#pragma unroll kUnroll
    for (int i = t; i < nv; i += ROW_THREADS)
        s += vec_expsum(load_x(xv + i), m);
    const float inv = 1.0f / row_reduce<false, 2 * P + 1>(s);
#pragma unroll kUnroll
    for (int i = t; i < nv; i += ROW_THREADS)
        store_y(yv + i, vec_out(load_x(xv + i), m, inv));
}

/* Any width: one element at a time. */
template <int P>
__device__ __forceinline__ void row_scalar(const kiln_t *xr, kiln_t *yr, int t, int cols)
{
    float m = __int_as_float(0xff800000);
    for (int c = t; c < cols; c += ROW_THREADS)
        m = fmaxf(m, kiln_to_float(xr[c]));
    m = row_reduce<true, 2 * P>(m);
    float s = 0.0f;
#pragma unroll kUnroll
    for (int c = t; c < cols; c += ROW_THREADS)
        s += expf(kiln_to_float(xr[c]) - m);
    const float inv = 1.0f / row_reduce<false, 2 * P + 1>(s);
#pragma unroll kUnroll
    for (int c = t; c < cols; c += ROW_THREADS)
        yr[c] = kiln_from_float(expf(kiln_to_float(xr[c]) - m) * inv);
}

/* Kept rows, ROWLOOP of them: row j + 1's loads are issued before row
 * j's reductions wait, and land while it computes. */
__device__ __forceinline__ void rows_kept(const kiln_t *x, kiln_t *y, long long first, int rows,
                                             int cols, int t)
{
    constexpr int K = KEEP > 0 ? KEEP : 1;
    const int nv = cols / VEC;
    vec_t cur[K], next[K];
    load_kept(cur, reinterpret_cast<const vec_t *>(x + first * cols), nv, t);
#pragma unroll
    for (int j = 0; j < ROWLOOP; j++) {
        const long long row = first + (long long)j * ROWS_PER_BLOCK;
        if (row >= rows)
            return;   /* the same for the whole row: no barrier is left waiting */
        const long long nrow = row + ROWS_PER_BLOCK;
        if (j + 1 < ROWLOOP && nrow < rows)
            load_kept(next, reinterpret_cast<const vec_t *>(x + nrow * cols), nv, t);
        vec_t *yv = reinterpret_cast<vec_t *>(y + row * cols);
        if (j & 1)
            row_kept<1>(cur, yv, nv, t);
        else
            row_kept<0>(cur, yv, nv, t);
#pragma unroll
        for (int k = 0; k < K; k++)
            cur[k] = next[k];
    }
}

extern "C" __global__ void __launch_bounds__(BLOCK)
softmax_tuned(const kiln_t *x, kiln_t *y, int rows, int cols)
{
    const int t = threadIdx.x % ROW_THREADS;
    /* this thread's rows: first, first + ROWS_PER_BLOCK, ... (ROWLOOP) */
    const long long first = (long long)blockIdx.x * ROWS_PER_BLOCK * ROWLOOP +
                            threadIdx.x / ROW_THREADS;
    if (first >= rows)
        return;   /* a whole warp (WARP_ROWS) or the whole block */
    const bool vec = VEC > 1 && cols % VEC == 0;
    if (vec && KEEP > 0 && cols / VEC <= KEEP * ROW_THREADS) {
        rows_kept(x, y, first, rows, cols, t);
        return;
    }
#pragma unroll 1
    for (int j = 0; j < ROWLOOP; j++) {
        const long long row = first + (long long)j * ROWS_PER_BLOCK;
        if (row >= rows)
            return;
        const kiln_t *xr = x + row * cols;
        kiln_t *yr = y + row * cols;
        const int p = j & 1;
        if (vec && p)
            row_vec<1>(reinterpret_cast<const vec_t *>(xr), reinterpret_cast<vec_t *>(yr), cols / VEC, t);
        else if (vec)
            row_vec<0>(reinterpret_cast<const vec_t *>(xr), reinterpret_cast<vec_t *>(yr), cols / VEC, t);
        else if (p)
            row_scalar<1>(xr, yr, t, cols);
        else
            row_scalar<0>(xr, yr, t, cols);
    }
}

/*@kiln launch
{"launches": [{"kernel": "softmax_tuned",
               "grid": ["cdiv(rows, (WARP_ROWS ? BLOCK / 32 : 1) * ROWLOOP)"],
               "block": ["BLOCK"], "smem": 0, "args": ["x", "y", "rows", "cols"]}],
 "scratch": []}
@*/
