/* softmax, a kernel family: where `kiln search --agent tune` starts for
 * CUDA (the plain starter stays the baseline). One kernel; its knobs:
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
 *   FASTEXP  e^x as 0: expf; 1: exp2f; 2: ex2.approx.ftz (x - m first)
 * Neutral default (docs/cuda.md): each knob's first value, the plainest
 * choice: the starter's CTA of 256 threads per row, one vector held in
 * registers, every other mechanism off. Every setting is correct at every
 * shape: 16-byte accesses with scalar heads and tails; a row that fits
 * neither registers nor shared memory is read twice. Maximum and sum
 * in fp32 in one reduction: each thread's (max m, sum of e^(x - m)), two
 * passes over what it holds (per vector when it holds nothing), merged in
 * a fixed order; e^(x - max) and one rounding per output. */
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
#define FASTEXP 0 //@kiln tune 0 1 2
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
    bool yal;         /* y's vectors 16-byte aligned too */
};

__device__ __forceinline__ row_t row_at(const kiln_t *x, kiln_t *y, long long row, int rows,
                                        int cols, int q, int ce)
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

/* ---- the row's statistic, reduced (softmax: maximum, sum of exponentials) ---- */

struct stat_t {
    float m, s;   /* the elements' maximum, the sum of their e^(x - m) */
};
constexpr int kStat = sizeof(stat_t) / sizeof(float);
#define NEG_INF __int_as_float(0xff800000)

__device__ __forceinline__ stat_t ident(void) { return stat_t{NEG_INF, 0.0f}; }

/* a's elements and b's merged: each sum scaled to the larger maximum (expf
 * whatever FASTEXP says: a merge is rare). Symmetric, as max and + are. */
__device__ __forceinline__ stat_t merge(const stat_t &a, const stat_t &b)
{
    const float m = fmaxf(a.m, b.m);
    if (m == NEG_INF)
        return a;   /* both empty */
    return stat_t{m, a.s * expf(a.m - m) + b.s * expf(b.m - m)};
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

/* ---- softmax's passes ---- */

/* e^(x - m), at the accuracy FASTEXP picks. x - m is formed first, so a
 * large x and m lose nothing to rounding m log2 e. */
__device__ __forceinline__ float exp_rel(float x, float m)
{
    if (FASTEXP == 2) {
        float r;
        asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"((x - m) * 1.4426950408889634f));
        return r;
    }
    if (FASTEXP == 1)
        return exp2f((x - m) * 1.4426950408889634f);
    return expf(x - m);
}

__device__ __forceinline__ float vmax(const vec_t &a, float m)
{
#pragma unroll
    for (int e = 0; e < kVec; e++)
        m = fmaxf(m, kiln_to_float(a.v[e]));
    return m;
}

__device__ __forceinline__ float vexps(const vec_t &a, float m)
{
    float s = 0.0f;
#pragma unroll
    for (int e = 0; e < kVec; e++)
        s += exp_rel(kiln_to_float(a.v[e]), m);
    return s;
}

__device__ __forceinline__ vec_t out(const vec_t &a, float m, float inv)
{
    vec_t o;
#pragma unroll
    for (int e = 0; e < kVec; e++)
        o.v[e] = kiln_from_float(exp_rel(kiln_to_float(a.v[e]), m) * inv);
    return o;
}

/* What this thread holds, two passes: its maximum, then the sum. */
__device__ __forceinline__ stat_t stat_regs(const regs_t &a, const row_t &r, int t)
{
    const bool hd = t < r.hh, tl = t < r.tt;
    float m = NEG_INF;
    if (hd)
        m = a.hx;
    if (tl)
        m = fmaxf(m, a.tx);
#pragma unroll
    for (int k = 0; k < kRegs; k++)
        if (t + k * TPR < r.n)
            m = vmax(a.v[k], m);
    if (m == NEG_INF)
        return ident();
    float s = (hd ? exp_rel(a.hx, m) : 0.0f) + (tl ? exp_rel(a.tx, m) : 0.0f);
#pragma unroll
    for (int k = 0; k < kRegs; k++)
        if (t + k * TPR < r.n)
            s += vexps(a.v[k], m);
    return stat_t{m, s};
}

__device__ __forceinline__ void out_regs(const regs_t &a, const row_t &r, int t, float m,
                                         float inv)
{
#pragma unroll
    for (int k = 0; k < kRegs; k++)
        if (t + k * TPR < r.n) {
            const int c = col_of(r, t + k * TPR);
            st_y(r.y + c, out(a.v[k], m, inv), r.yal);
        }
    if (t < r.hh)
        r.y[t] = kiln_from_float(exp_rel(a.hx, m) * inv);
    if (t < r.tt)
        r.y[r.ts + t] = kiln_from_float(exp_rel(a.tx, m) * inv);
}

/* The first pass from global memory, each vector's (max, sum) merged in
 * column order; SM: each vector also kept in this thread's own slots of
 * shared memory (no other thread reads them). */
template <bool SM>
__device__ __forceinline__ stat_t stat_pass(uint4 *mine, const row_t &r, int t, float &hx,
                                            float &tx)
{
    hx = t < r.hh ? kiln_to_float(r.x[t]) : 0.0f;
    tx = t < r.tt ? kiln_to_float(r.x[r.ts + t]) : 0.0f;
    stat_t s = t < r.hh ? stat_t{hx, 1.0f} : ident();
#pragma unroll kUnroll
    for (int j = t; j < r.n; j += TPR) {
        const vec_t v = ld_x(r.x + col_of(r, j));
        if (SM)
            mine[j] = *reinterpret_cast<const uint4 *>(&v);
        const float vm = vmax(v, NEG_INF);
        s = merge(s, stat_t{vm, vexps(v, vm)});
    }
    return t < r.tt ? merge(s, stat_t{tx, 1.0f}) : s;
}

/* The output pass: x from shared memory (SM) or read again. */
template <bool SM>
__device__ __forceinline__ void out_pass(const uint4 *mine, const row_t &r, int t, float hx,
                                         float tx, float m, float inv)
{
#pragma unroll kUnroll
    for (int j = t; j < r.n; j += TPR) {
        const int c = col_of(r, j);
        vec_t v;
        if (SM)
            *reinterpret_cast<uint4 *>(&v) = mine[j];
        else
            v = ld_x(r.x + c);
        st_y(r.y + c, out(v, m, inv), r.yal);
    }
    if (t < r.hh)
        r.y[t] = kiln_from_float(exp_rel(hx, m) * inv);
    if (t < r.tt)
        r.y[r.ts + t] = kiln_from_float(exp_rel(tx, m) * inv);
}

/* Row group g (rows g * kRows ...) to the end in steps of the grid's
 * clusters; which way a row is held is decided once, the same for all. */
extern "C" __global__ void __launch_bounds__(kBlock, kMinBlocks)
softmax_family(const kiln_t *x, kiln_t *y, int rows, int cols)
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
    row_t r = row_at(x, y, g * kRows + rg, rows, cols, q, ce), nr;
    regs_t cur, nxt;
    if (PREFETCH && mode == M_REG)
        load_regs(cur, r, t);
#pragma unroll 1
    for (int it = 0; g < groups; g += step, it++) {
        float hx = 0.0f, tx = 0.0f;
        stat_t s;
        if (mode == M_REG) {
            if (PREFETCH) {   /* the next row's loads in flight while this row reduces */
                nr = row_at(x, y, (g + step) * kRows + rg, rows, cols, q, ce);
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
        const float inv = 1.0f / s.s;
        if (mode == M_REG)
            out_regs(cur, r, t, s.m, inv);
        else if (mode == M_SMEM)
            out_pass<true>(mine, r, t, hx, tx, s.m, inv);
        else
            out_pass<false>(mine, r, t, hx, tx, s.m, inv);
        if (PREFETCH && mode == M_REG) {
            r = nr;
            cur = nxt;
        } else {
            r = row_at(x, y, (g + step) * kRows + rg, rows, cols, q, ce);
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
 "launches": [{"kernel": "softmax_family", "when": "ce > 1", "grid": ["ce * g"],
               "block": ["TPR * re"], "cluster": ["ce", 1, 1], "smem": "dsm",
               "args": ["x", "y", "rows", "cols"]},
              {"kernel": "softmax_family", "when": "ce == 1", "grid": ["g"],
               "block": ["TPR * re"], "smem": "dsm",
               "args": ["x", "y", "rows", "cols"]}],
 "scratch": []}
@*/
