/* add_rmsnorm, tunable: where `kiln search --agent tune` starts for CUDA (the
 * plain starter stays the baseline). A block per row; its knobs:
 *   VEC    elements per load and store (16 bytes at 8 bf16); rows whose
 *          width is not a multiple take the scalar path
 *   BLOCK  threads per block
 *   KEEP   vectors of r per thread held in registers between the sum of
 *          squares and y (0: r is read back from memory); a row wider than
 *          KEEP vectors per thread reads r back as well
 * Every setting is correct at every shape: r rounded to T once and stored,
 * its squares summed in fp32, y computed from r as stored (the rounded
 * values) and rounded once. */
#include "kiln_cuda.h"

#define VEC 8 //@kiln tune 1 2 4 8
#define BLOCK 256 //@kiln tune 128 256 512 1024
#define KEEP 2 //@kiln tune 0 1 2 4

struct alignas(sizeof(kiln_t) * VEC) vec_t {
    kiln_t v[VEC];
};

/* The sum of v over the block, returned to every thread; every thread adds
 * the partials in the same order, so all get the same bits. */
__device__ __forceinline__ float block_sum(float v)
{
    __shared__ float part[BLOCK / 32];
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    if ((threadIdx.x & 31) == 0)
        part[threadIdx.x >> 5] = v;
    __syncthreads();
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < BLOCK / 32; k++)
        s += part[k];
    return s;
}

/* r = x + residual for one vector, rounded to T; its squares into *ss. */
__device__ __forceinline__ vec_t add_vec(const vec_t &a, const vec_t &b, float *ss)
{
    vec_t r;
#pragma unroll
    for (int e = 0; e < VEC; e++) {
        r.v[e] = kiln_from_float(kiln_to_float(a.v[e]) + kiln_to_float(b.v[e]));
        float f = kiln_to_float(r.v[e]);
        *ss += f * f;
    }
    return r;
}

__device__ __forceinline__ vec_t scaled(const vec_t &r, const vec_t &w, float inv)
{
    vec_t o;
#pragma unroll
    for (int e = 0; e < VEC; e++)
        o.v[e] = kiln_from_float(kiln_to_float(r.v[e]) * inv * kiln_to_float(w.v[e]));
    return o;
}

/* A row of nv whole vectors (cols % VEC == 0, so every row starts aligned). */
__device__ __forceinline__ void row_vec(const vec_t *xv, const vec_t *resv, const vec_t *wv,
                                        vec_t *rv, vec_t *yv, int nv, int cols, float eps)
{
    constexpr int K = KEEP > 0 ? KEEP : 1;
    vec_t keep[K];
    const bool kept = KEEP > 0 && nv <= KEEP * BLOCK;
    const int t = threadIdx.x;
    float ss = 0.0f;
    if (kept) {
#pragma unroll
        for (int k = 0; k < K; k++) {
            int i = t + k * BLOCK;
            if (i < nv) {
                keep[k] = add_vec(xv[i], resv[i], &ss);
                rv[i] = keep[k];
            }
        }
    } else {
        for (int i = t; i < nv; i += BLOCK)
            rv[i] = add_vec(xv[i], resv[i], &ss);
    }
    const float inv = rsqrtf(block_sum(ss) / (float)cols + eps);
    if (kept) {
#pragma unroll
        for (int k = 0; k < K; k++) {
            int i = t + k * BLOCK;
            if (i < nv)
                yv[i] = scaled(keep[k], wv[i], inv);
        }
    } else {
        for (int i = t; i < nv; i += BLOCK)   /* r read back: this thread wrote it */
            yv[i] = scaled(rv[i], wv[i], inv);
    }
}

/* Any width: one element at a time, as the starter. */
__device__ __forceinline__ void row_scalar(const kiln_t *x, const kiln_t *res, const kiln_t *w,
                                           kiln_t *r, kiln_t *y, int cols, float eps)
{
    float ss = 0.0f;
    for (int c = threadIdx.x; c < cols; c += BLOCK) {
        kiln_t v = kiln_from_float(kiln_to_float(x[c]) + kiln_to_float(res[c]));
        r[c] = v;
        float f = kiln_to_float(v);
        ss += f * f;
    }
    const float inv = rsqrtf(block_sum(ss) / (float)cols + eps);
    for (int c = threadIdx.x; c < cols; c += BLOCK)
        y[c] = kiln_from_float(kiln_to_float(r[c]) * inv * kiln_to_float(w[c]));
}

extern "C" __global__ void __launch_bounds__(BLOCK)
add_rmsnorm_tuned(const kiln_t *x, const kiln_t *residual, const kiln_t *w, kiln_t *r, kiln_t *y,
                  int cols, float eps)
{
    const size_t off = (size_t)blockIdx.x * cols;
    if (VEC > 1 && cols % VEC == 0)
        row_vec(reinterpret_cast<const vec_t *>(x + off), reinterpret_cast<const vec_t *>(residual + off),
                reinterpret_cast<const vec_t *>(w), reinterpret_cast<vec_t *>(r + off),
                reinterpret_cast<vec_t *>(y + off), cols / VEC, cols, eps);
    else
        row_scalar(x + off, residual + off, w, r + off, y + off, cols, eps);
}

/*@kiln launch
{"launches": [{"kernel": "add_rmsnorm_tuned", "grid": ["rows"], "block": ["BLOCK"], "smem": 0,
               "args": ["x", "residual", "w", "r", "y", "cols", "eps"]}],
 "scratch": []}
@*/
