/* rmsnorm, tunable: where `kiln search --agent tune` starts for CUDA (the
 * plain starter stays the baseline). Its knobs are the choices a fast
 * rmsnorm makes:
 *   VEC        elements per load and store (16 bytes at 8 bf16); rows
 *              whose width is not a multiple take the scalar path
 *   BLOCK      threads per block
 *   WARP_ROWS  0: a block per row; 1: a warp per row (BLOCK / 32 rows a
 *              block), for narrow rows
 *   KEEP       vectors per thread held in registers between the sum of
 *              squares and the output (0: x is read again); a row wider
 *              than KEEP vectors per thread is read again as well
 *   UNROLL     unrolling of the loops that read again
 *   STREAM     1: x and y with streaming (evict-first) loads and stores,
 *              so w stays in cache
 * Every setting is correct at every shape: sums in fp32, one rounding per
 * output. */
#include "kiln_cuda.h"

#define VEC 8 //@kiln tune 1 2 4 8
#define BLOCK 256 //@kiln tune 64 128 256 512 1024
#define WARP_ROWS 0 //@kiln tune 0 1
#define KEEP 2 //@kiln tune 0 1 2 4 8
#define UNROLL 1 //@kiln tune 1 2 4
#define STREAM 0 //@kiln tune 0 1

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

/* The sum of v over a row's threads, returned to each of them; every
 * thread adds the partials in the same order, so all get the same bits. */
__device__ __forceinline__ float row_sum(float v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    if (ROW_THREADS == 32)
        return v;
    __shared__ float part[BLOCK / 32];
    if ((threadIdx.x & 31) == 0)
        part[threadIdx.x >> 5] = v;
    __syncthreads();
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < BLOCK / 32; k++)
        s += part[k];
    return s;
}

__device__ __forceinline__ float sq_sum(const vec_t &a)
{
    float s = 0.0f;
#pragma unroll
    for (int e = 0; e < VEC; e++) {
        float f = kiln_to_float(a.v[e]);
        s += f * f;
    }
    return s;
}

__device__ __forceinline__ vec_t scaled(const vec_t &a, const vec_t &w, float inv)
{
    vec_t o;
#pragma unroll
    for (int e = 0; e < VEC; e++)
        o.v[e] = kiln_from_float(kiln_to_float(a.v[e]) * inv * kiln_to_float(w.v[e]));
    return o;
}

/* A row of nv whole vectors (its start 16-byte aligned: cols % VEC == 0). */
__device__ __forceinline__ void row_vec(const vec_t *xv, const vec_t *wv, vec_t *yv, int nv,
                                        int t, int cols, float eps)
{
    constexpr int K = KEEP > 0 ? KEEP : 1;
    vec_t keep[K];
    const bool kept = KEEP > 0 && nv <= KEEP * ROW_THREADS;
    float ss = 0.0f;
    if (kept) {
#pragma unroll
        for (int k = 0; k < K; k++) {
            int i = t + k * ROW_THREADS;
            if (i < nv) {
                keep[k] = load_x(xv + i);
                ss += sq_sum(keep[k]);
            }
        }
    } else {
#pragma unroll kUnroll
        for (int i = t; i < nv; i += ROW_THREADS)
            ss += sq_sum(load_x(xv + i));
    }
    const float inv = rsqrtf(row_sum(ss) / (float)cols + eps);
    if (kept) {
#pragma unroll
        for (int k = 0; k < K; k++) {
            int i = t + k * ROW_THREADS;
            if (i < nv)
                store_y(yv + i, scaled(keep[k], wv[i], inv));
        }
    } else {
#pragma unroll kUnroll
        for (int i = t; i < nv; i += ROW_THREADS)
            store_y(yv + i, scaled(load_x(xv + i), wv[i], inv));
    }
}

/* Any width: one element at a time. */
__device__ __forceinline__ void row_scalar(const kiln_t *xr, const kiln_t *w, kiln_t *yr, int t,
                                           int cols, float eps)
{
    float ss = 0.0f;
#pragma unroll kUnroll
    for (int c = t; c < cols; c += ROW_THREADS) {
        float f = kiln_to_float(xr[c]);
        ss += f * f;
    }
    const float inv = rsqrtf(row_sum(ss) / (float)cols + eps);
#pragma unroll kUnroll
    for (int c = t; c < cols; c += ROW_THREADS)
        yr[c] = kiln_from_float(kiln_to_float(xr[c]) * inv * kiln_to_float(w[c]));
}

extern "C" __global__ void __launch_bounds__(BLOCK)
rmsnorm_tuned(const kiln_t *x, const kiln_t *w, kiln_t *y, int rows, int cols, float eps)
{
    const int t = threadIdx.x % ROW_THREADS;
    const long long row = (long long)blockIdx.x * ROWS_PER_BLOCK + threadIdx.x / ROW_THREADS;
    if (row >= rows)
        return;   /* a whole warp (WARP_ROWS) or the whole block: no barrier is left waiting */
    const kiln_t *xr = x + row * cols;
    kiln_t *yr = y + row * cols;
    if (VEC > 1 && cols % VEC == 0)
        row_vec(reinterpret_cast<const vec_t *>(xr), reinterpret_cast<const vec_t *>(w),
                reinterpret_cast<vec_t *>(yr), cols / VEC, t, cols, eps);
    else
        row_scalar(xr, w, yr, t, cols, eps);
}

/*@kiln launch
{"launches": [{"kernel": "rmsnorm_tuned",
               "grid": ["WARP_ROWS ? (rows + BLOCK / 32 - 1) / (BLOCK / 32) : rows"],
               "block": ["BLOCK"], "smem": 0,
               "args": ["x", "w", "y", "rows", "cols", "eps"]}],
 "scratch": []}
@*/
