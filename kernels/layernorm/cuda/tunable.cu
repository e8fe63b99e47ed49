/* layernorm, a kernel family: where `kiln search --agent tune` starts
 * for CUDA (the plain starter stays the baseline). One kernel; its knobs:
 *   TPR      threads per row slice (a warp .. a whole CTA)
 *   ROWS     rows per CTA, each with TPR threads (capped at 1024 threads)
 *   CLUSTER  up to this many CTAs per row in a cluster, reducing over
 *            DSMEM; used where cols >= CTAs * TPR * 16 bytes, else fewer
 *   HOLD     0: row held in registers, shared memory when it does not
 *            fit; 1: always in (dynamic) shared memory
 *   REGS     16-byte vectors per thread held in registers (HOLD 0)
 *   PERSIST  0: a CTA per ROWS rows; k: k x SMS CTAs stride the rows
 *   PREFETCH 1: the next row's loads issued before this row reduces
 *   STREAM   1: x and y with evict-first loads and stores
 *   UNROLL   unrolling of the shared-memory and re-read loops
 *   OCC      CTAs per SM the registers must allow (launch bounds)
 * Neutral default (docs/cuda.md): each knob's first value, the plainest
 * choice: the starter's CTA of 256 threads per row, one vector held in
 * registers, every other mechanism off. Every setting is correct at every
 * shape: 16-byte accesses with scalar heads and tails; a row that fits
 * neither registers nor shared memory is read twice. Mean and variance
 * in fp32 in one reduction: each thread's (count, mean, sum of squared
 * deviations), two passes over what it holds (per vector when it holds
 * nothing), merged by Chan et al.'s pairwise update in a fixed order;
 * one rounding per output. */
#include "kiln_cuda.h"

#define TPR 256 //@kiln tune 256 32 64 128 512 1024
#define ROWS 1 //@kiln tune 1 2 4 8 16 32
#define CLUSTER 1 //@kiln tune 1 2 4 8 16
#define HOLD 0 //@kiln tune 0 1
#define REGS 1 //@kiln tune 1 2 4 8 16
#define PERSIST 0 //@kiln tune 0 1 2 4 8
#define PREFETCH 0 //@kiln tune 0 1
#define STREAM 0 //@kiln tune 0 1
#define UNROLL 1 //@kiln tune 1 2 4
#define OCC 1 //@kiln tune 1 2 4 8
#define SMS 132

constexpr int kVec = 16 / (int)sizeof(kiln_t);                 /* elements per vector */
constexpr int kRows = ROWS < 1024 / TPR ? ROWS : 1024 / TPR;    /* rows per CTA */
constexpr int kBlock = TPR * kRows;
constexpr int kWarps = TPR / 32;                                /* warps per row */
constexpr int kRegs = HOLD == 0 ? REGS : 1;
constexpr int kUnroll = UNROLL;
/* OCC within the SM's 2048 threads; 16 CTAs a cluster (non-portable): two
 * must fit an SM, so that half a GPC's SMs hold a cluster */
constexpr int kOcc = OCC < 2048 / kBlock ? OCC : 2048 / kBlock;
constexpr int kMinBlocks = CLUSTER > 8 && kOcc < 2 ? 2 : kOcc;
enum { M_REG, M_SMEM, M_READ };

struct alignas(16) vec_t {
    kiln_t v[kVec];
};

/* ---- clusters (PTX: what cooperative_groups does, without its headers) ---- */

__device__ __forceinline__ unsigned cluster_ctas(void)
{
    unsigned n = 1;
    if (CLUSTER > 1)
        asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(n));
    return n;
}

__device__ __forceinline__ unsigned cluster_rank(void)
{
    unsigned r = 0;
    if (CLUSTER > 1)
        asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}

/* Every thread of every CTA of the cluster; orders shared memory. */
__device__ __forceinline__ void cluster_sync(void)
{
    asm volatile("barrier.cluster.arrive.release.aligned;\n\t"
                 "barrier.cluster.wait.acquire.aligned;" ::: "memory");
}

__device__ __forceinline__ float dsmem_ld(const float *p, unsigned rank)
{
    const unsigned a = (unsigned)__cvta_generic_to_shared(p);
    unsigned ra;
    float v;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(ra) : "r"(a), "r"(rank));
    asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(ra) : "memory");
    return v;
}

__device__ __forceinline__ unsigned dyn_smem_bytes(void)
{
    unsigned n;
    asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(n));
    return n;
}

/* ---- loads and stores ---- */

__device__ __forceinline__ vec_t ld_x(const kiln_t *p)   /* p 16-byte aligned */
{
    vec_t r;
    const uint4 *s = reinterpret_cast<const uint4 *>(p);
    *reinterpret_cast<uint4 *>(&r) = STREAM ? __ldcs(s) : *s;
    return r;
}

/* w (or b) at a vector's columns: one load where they are aligned. */
__device__ __forceinline__ vec_t ld_w(const kiln_t *p, bool al)
{
    vec_t r;
    if (al) {
        *reinterpret_cast<uint4 *>(&r) = *reinterpret_cast<const uint4 *>(p);
    } else {
#pragma unroll
        for (int e = 0; e < kVec; e++)
            r.v[e] = p[e];
    }
    return r;
}

__device__ __forceinline__ void st_y(kiln_t *p, const vec_t &v, bool al)
{
    if (al) {
        uint4 *d = reinterpret_cast<uint4 *>(p);
        const uint4 u = *reinterpret_cast<const uint4 *>(&v);
        if (STREAM)
            __stcs(d, u);
        else
            *d = u;
    } else {
#pragma unroll
        for (int e = 0; e < kVec; e++)
            p[e] = v.v[e];
    }
}

/* ---- a row, as this CTA and thread see it ---- */

/* The row's scalar head (up to its first 16-byte boundary), its whole
 * vectors, its scalar tail; this CTA's share of the vectors [lo, lo + n),
 * the head on rank 0 and the tail on the last rank. A row past the end
 * (on false) has nothing. */
struct row_t {
    const kiln_t *x;
    kiln_t *y;
    int h, nv, ts;    /* head length, vectors, where the tail starts */
    int lo, n;        /* this CTA's vectors */
    int hh, tt;       /* head and tail elements this CTA takes (by thread t < hh, tt) */
    bool yal, wal;    /* y's, and w's and b's, vectors 16-byte aligned too */
};

__device__ __forceinline__ row_t row_at(const kiln_t *x, kiln_t *y, const kiln_t *w,
                                        const kiln_t *b, long long row, int rows, int cols,
                                        int q, int ce)
{
    row_t r;
    const bool on = row < rows;
    const long long at = on ? row * (long long)cols : 0;
    r.x = x + at;
    r.y = y + at;
    const int mis = (int)(((unsigned long long)r.x & 15) / sizeof(kiln_t));
    r.h = on ? min(mis ? kVec - mis : 0, cols) : 0;
    r.nv = on ? (cols - r.h) / kVec : 0;
    r.ts = r.h + r.nv * kVec;
    const int chunk = (r.nv + ce - 1) / ce;
    r.lo = min(q * chunk, r.nv);
    r.n = min(chunk, r.nv - r.lo);
    r.hh = q == 0 ? r.h : 0;
    r.tt = on && q == ce - 1 ? cols - r.ts : 0;
    r.yal = ((unsigned long long)(r.y + r.h) & 15) == 0;
    r.wal = (((unsigned long long)(w + r.h) | (unsigned long long)(b + r.h)) & 15) == 0;
    return r;
}

/* Column of this CTA's vector j. */
__device__ __forceinline__ int col_of(const row_t &r, int j)
{
    return r.h + (r.lo + j) * kVec;
}

/* Registers: vectors t, t + TPR, ... of this CTA's share, and the head and
 * tail elements this thread takes. */
struct regs_t {
    vec_t v[kRegs];
    float hx, tx;
};

__device__ __forceinline__ void load_regs(regs_t &a, const row_t &r, int t)
{
#pragma unroll
    for (int k = 0; k < kRegs; k++)
        if (t + k * TPR < r.n)
            a.v[k] = ld_x(r.x + col_of(r, t + k * TPR));
    a.hx = t < r.hh ? kiln_to_float(r.x[t]) : 0.0f;
    a.tx = t < r.tt ? kiln_to_float(r.x[r.ts + t]) : 0.0f;
}

/* ---- the row's statistic, reduced (layernorm: count, mean, M2) ---- */

struct stat_t {
    float n, mean, m2;   /* elements, their mean, their sum of squared deviations */
};
constexpr int kStat = sizeof(stat_t) / sizeof(float);

__device__ __forceinline__ stat_t ident(void) { return stat_t{0.0f, 0.0f, 0.0f}; }

/* a's elements and b's merged (Chan, Golub and LeVeque): no cancellation,
 * as in the two-pass form. Not symmetric in rounding, so a is always the
 * lower lane, warp or rank: every thread gets the same bits. */
__device__ __forceinline__ stat_t merge(const stat_t &a, const stat_t &b)
{
    if (b.n == 0.0f)
        return a;
    if (a.n == 0.0f)
        return b;
    const float n = a.n + b.n, d = b.mean - a.mean, f = b.n / n;
    return stat_t{n, a.mean + d * f, a.m2 + b.m2 + d * d * a.n * f};
}

__device__ __forceinline__ stat_t shfl_xor(stat_t v, int o)
{
    float *f = reinterpret_cast<float *>(&v);
#pragma unroll
    for (int i = 0; i < kStat; i++)
        f[i] = __shfl_xor_sync(0xffffffffu, f[i], o);
    return v;
}

__device__ __forceinline__ stat_t shfl_lane0(stat_t v)
{
    float *f = reinterpret_cast<float *>(&v);
#pragma unroll
    for (int i = 0; i < kStat; i++)
        f[i] = __shfl_sync(0xffffffffu, f[i], 0);
    return v;
}

__device__ __forceinline__ stat_t remote(const stat_t *p, unsigned rank)
{
    stat_t v;
    float *f = reinterpret_cast<float *>(&v);
#pragma unroll
    for (int i = 0; i < kStat; i++)
        f[i] = dsmem_ld(reinterpret_cast<const float *>(p) + i, rank);
    return v;
}

/* Lanes 0..width-1 (a power of two) merged by a butterfly, the lower
 * lane's part first: each lane of a group ends with the same bits. */
__device__ __forceinline__ stat_t warp_merge(stat_t v, int width)
{
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        if (o >= width)
            continue;
        const stat_t u = shfl_xor(v, o);
        const bool up = (lane & o) != 0;
        v = merge(up ? u : v, up ? v : u);
    }
    return v;
}

/* v merged over the row's threads, then over the cluster's CTAs, every
 * thread getting the same bits. Every thread of the grid calls it once
 * per row step, p alternating: a slot is written again only after the
 * next step's barrier, which every reader reaches after reading it. */
__device__ __forceinline__ stat_t row_reduce(stat_t v, int p, int t, int rg, int ce)
{
    v = warp_merge(v, 32);
    if (kWarps > 1) {
        __shared__ stat_t wpart[2][kBlock / 32];
        const int lane = threadIdx.x & 31;
        if (lane == 0)
            wpart[p][threadIdx.x >> 5] = v;
        __syncthreads();
        v = lane < kWarps ? wpart[p][rg * kWarps + lane] : ident();
        v = shfl_lane0(warp_merge(v, kWarps));
    }
    if (CLUSTER > 1 && ce > 1) {
        __shared__ stat_t cpart[2][kRows];
        const int lane = threadIdx.x & 31;
        if (t == 0)
            cpart[p][rg] = v;
        cluster_sync();
        v = lane < ce ? remote(&cpart[p][rg], (unsigned)lane) : ident();
        v = shfl_lane0(warp_merge(v, ce));
    }
    return v;
}

/* ---- layernorm's passes ---- */

/* One vector's own statistic, two passes over its elements. */
__device__ __forceinline__ stat_t vstat(const vec_t &a)
{
    float s = 0.0f, m2 = 0.0f;
#pragma unroll
    for (int e = 0; e < kVec; e++)
        s += kiln_to_float(a.v[e]);
    const float mean = s / (float)kVec;
#pragma unroll
    for (int e = 0; e < kVec; e++) {
        const float d = kiln_to_float(a.v[e]) - mean;
        m2 += d * d;
    }
    return stat_t{(float)kVec, mean, m2};
}

__device__ __forceinline__ float norm(float x, float mean, float rstd, kiln_t w, kiln_t b)
{
    return (x - mean) * rstd * kiln_to_float(w) + kiln_to_float(b);
}

__device__ __forceinline__ vec_t out(const vec_t &a, const vec_t &w, const vec_t &b, float mean,
                                     float rstd)
{
    vec_t o;
#pragma unroll
    for (int e = 0; e < kVec; e++)
        o.v[e] = kiln_from_float(norm(kiln_to_float(a.v[e]), mean, rstd, w.v[e], b.v[e]));
    return o;
}

/* What this thread holds, two passes: the mean, then squared deviations. */
__device__ __forceinline__ stat_t stat_regs(const regs_t &a, const row_t &r, int t)
{
    const bool hd = t < r.hh, tl = t < r.tt;
    float s = (hd ? a.hx : 0.0f) + (tl ? a.tx : 0.0f), n = (float)(hd + tl);
#pragma unroll
    for (int k = 0; k < kRegs; k++)
        if (t + k * TPR < r.n) {
#pragma unroll
            for (int e = 0; e < kVec; e++)
                s += kiln_to_float(a.v[k].v[e]);
            n += (float)kVec;
        }
    if (n == 0.0f)
        return ident();
    const float mean = s / n;
    float m2 = (hd ? (a.hx - mean) * (a.hx - mean) : 0.0f) +
               (tl ? (a.tx - mean) * (a.tx - mean) : 0.0f);
#pragma unroll
    for (int k = 0; k < kRegs; k++)
        if (t + k * TPR < r.n) {
#pragma unroll
            for (int e = 0; e < kVec; e++) {
                const float d = kiln_to_float(a.v[k].v[e]) - mean;
                m2 += d * d;
            }
        }
    return stat_t{n, mean, m2};
}

__device__ __forceinline__ void out_regs(const regs_t &a, const row_t &r, const kiln_t *w,
                                         const kiln_t *b, int t, float mean, float rstd)
{
#pragma unroll
    for (int k = 0; k < kRegs; k++)
        if (t + k * TPR < r.n) {
            const int c = col_of(r, t + k * TPR);
            st_y(r.y + c, out(a.v[k], ld_w(w + c, r.wal), ld_w(b + c, r.wal), mean, rstd), r.yal);
        }
    if (t < r.hh)
        r.y[t] = kiln_from_float(norm(a.hx, mean, rstd, w[t], b[t]));
    if (t < r.tt)
        r.y[r.ts + t] = kiln_from_float(norm(a.tx, mean, rstd, w[r.ts + t], b[r.ts + t]));
}

/* The first pass from global memory, each vector's statistic merged in
 * column order; SM: each vector also kept in this thread's own slots of
 * shared memory (no other thread reads them). */
template <bool SM>
__device__ __forceinline__ stat_t stat_pass(uint4 *mine, const row_t &r, int t, float &hx,
                                            float &tx)
{
    hx = t < r.hh ? kiln_to_float(r.x[t]) : 0.0f;
    tx = t < r.tt ? kiln_to_float(r.x[r.ts + t]) : 0.0f;
    stat_t s = t < r.hh ? stat_t{1.0f, hx, 0.0f} : ident();
#pragma unroll kUnroll
    for (int j = t; j < r.n; j += TPR) {
        const vec_t v = ld_x(r.x + col_of(r, j));
        if (SM)
            mine[j] = *reinterpret_cast<const uint4 *>(&v);
        s = merge(s, vstat(v));
    }
    return t < r.tt ? merge(s, stat_t{1.0f, tx, 0.0f}) : s;
}

/* The output pass: x from shared memory (SM) or read again. */
template <bool SM>
__device__ __forceinline__ void out_pass(const uint4 *mine, const row_t &r, const kiln_t *w,
                                         const kiln_t *b, int t, float hx, float tx, float mean,
                                         float rstd)
{
#pragma unroll kUnroll
    for (int j = t; j < r.n; j += TPR) {
        const int c = col_of(r, j);
        vec_t v;
        if (SM)
            *reinterpret_cast<uint4 *>(&v) = mine[j];
        else
            v = ld_x(r.x + c);
        st_y(r.y + c, out(v, ld_w(w + c, r.wal), ld_w(b + c, r.wal), mean, rstd), r.yal);
    }
    if (t < r.hh)
        r.y[t] = kiln_from_float(norm(hx, mean, rstd, w[t], b[t]));
    if (t < r.tt)
        r.y[r.ts + t] = kiln_from_float(norm(tx, mean, rstd, w[r.ts + t], b[r.ts + t]));
}

/* Row group g (rows g * kRows ...) to the end in steps of the grid's
 * clusters; which way a row is held is decided once, the same for all. */
extern "C" __global__ void __launch_bounds__(kBlock, kMinBlocks)
layernorm_family(const kiln_t *x, const kiln_t *w, const kiln_t *b, kiln_t *y, int rows, int cols,
                 float eps)
{
    extern __shared__ uint4 held[];
    const int ce = (int)cluster_ctas(), q = (int)cluster_rank();
    const int t = threadIdx.x % TPR, rg = threadIdx.x / TPR;
    const long long groups = ((long long)rows + kRows - 1) / kRows, step = gridDim.x / ce;
    const int capv = (cols / kVec + ce - 1) / ce;   /* most vectors a CTA takes of a row */
    const int mode = HOLD == 0 && capv <= REGS * TPR ? M_REG
                     : dyn_smem_bytes() >= (unsigned long long)kRows * capv * 16 ? M_SMEM
                                                                                  : M_READ;
    uint4 *mine = held + (long long)rg * capv;
    long long g = blockIdx.x / ce;
    row_t r = row_at(x, y, w, b, g * kRows + rg, rows, cols, q, ce), nr;
    regs_t cur, nxt;
    if (PREFETCH && mode == M_REG)
        load_regs(cur, r, t);
#pragma unroll 1
    for (int it = 0; g < groups; g += step, it++) {
        float hx = 0.0f, tx = 0.0f;
        stat_t s;
        if (mode == M_REG) {
            if (PREFETCH) {   /* the next row's loads in flight while this row reduces */
                nr = row_at(x, y, w, b, (g + step) * kRows + rg, rows, cols, q, ce);
                load_regs(nxt, nr, t);
            } else {
                load_regs(cur, r, t);
            }
            s = stat_regs(cur, r, t);
        } else if (mode == M_SMEM) {
            s = stat_pass<true>(mine, r, t, hx, tx);
        } else {
            s = stat_pass<false>(mine, r, t, hx, tx);
        }
        s = row_reduce(s, it & 1, t, rg, ce);
        const float rstd = rsqrtf(s.m2 / (float)cols + eps);
        if (mode == M_REG)
            out_regs(cur, r, w, b, t, s.mean, rstd);
        else if (mode == M_SMEM)
            out_pass<true>(mine, r, w, b, t, hx, tx, s.mean, rstd);
        else
            out_pass<false>(mine, r, w, b, t, hx, tx, s.mean, rstd);
        if (PREFETCH && mode == M_REG) {
            r = nr;
            cur = nxt;
        } else {
            r = row_at(x, y, w, b, (g + step) * kRows + rg, rows, cols, q, ce);
        }
    }
    if (CLUSTER > 1 && ce > 1)
        cluster_sync();   /* no CTA leaves while another may read its partials */
}

/*@kiln launch
{"let": {"re": "min(ROWS, 1024 / TPR)", "nvec": "cols * sizeof(T) / 16",
         "ce4": "CLUSTER >= 4 && nvec >= 4 * TPR ? 4 : CLUSTER >= 2 && nvec >= 2 * TPR ? 2 : 1",
         "ce": "CLUSTER >= 16 && nvec >= 16 * TPR ? 16 : CLUSTER >= 8 && nvec >= 8 * TPR ? 8 : ce4",
         "capv": "cdiv(nvec, ce)", "need": "re * capv * 16",
         "dsm": "(HOLD == 1 || capv > REGS * TPR) && need <= (ce > 8 ? 102400 : 225280) ? need : 0",
         "groups": "cdiv(rows, re)",
         "g": "PERSIST > 0 ? min(groups, max(1, PERSIST * SMS / ce)) : groups"},
 "launches": [{"kernel": "layernorm_family", "when": "ce > 1", "grid": ["ce * g"],
               "block": ["TPR * re"], "cluster": ["ce", 1, 1], "smem": "dsm",
               "args": ["x", "w", "b", "y", "rows", "cols", "eps"]},
              {"kernel": "layernorm_family", "when": "ce == 1", "grid": ["g"],
               "block": ["TPR * re"], "smem": "dsm",
               "args": ["x", "w", "b", "y", "rows", "cols", "eps"]}],
 "scratch": []}
@*/
