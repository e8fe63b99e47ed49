/* Crash on odd widths: 16-byte vector loads and stores from each row's start (with a correct scalar tail) assume the row is 16-byte aligned, which holds when cols is a multiple of 8 (every visible shape) and for a single row (hidden 1x1); the second row of the 129x4097 hidden shape starts 2 bytes off, a misaligned address.
 * kiln-task: rmsnorm
 * kiln-class: 21
 * kiln-dtype: bf16
 * kiln-expect: fail
 * kiln-stages: hidden
 * kiln-codes: crash
 */
#include "kiln_cuda.h"

#define BLOCK 256 //@kiln tune 128 256 512 1024

constexpr int VEC = 16 / sizeof(kiln_t);
struct alignas(16) vec_t { kiln_t e[VEC]; };

__device__ __forceinline__ float warp_sum(float v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

/* Sum of v over the block (blockDim.x a multiple of 32, at most 1024) in a
 * fixed order; every thread gets the total. */
__device__ float block_sum(float v)
{
    __shared__ float part[32];
    __shared__ float total;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = warp_sum(v);
    if (lane == 0)
        part[warp] = v;
    __syncthreads();
    if (warp == 0) {
        float t = lane < (int)(blockDim.x >> 5) ? part[lane] : 0.0f;
        t = warp_sum(t);
        if (lane == 0)
            total = t;
    }
    __syncthreads();
    const float r = total;
    __syncthreads();   /* part and total are reused by the next call */
    return r;
}

extern "C" __global__ void rmsnorm_fwd(const kiln_t *x, const kiln_t *w, kiln_t *y, int cols, float eps)
{
    const size_t r = blockIdx.x;
    const kiln_t *xr = x + r * (size_t)cols;
    kiln_t *yr = y + r * (size_t)cols;
    const int nv = cols / VEC, tail0 = nv * VEC;
    const vec_t *xv = reinterpret_cast<const vec_t *>(xr);   /* BUG: row start not checked */
    vec_t *yv = reinterpret_cast<vec_t *>(yr);
    float ss = 0.0f;
    for (int i = threadIdx.x; i < nv; i += blockDim.x) {
        const vec_t q = xv[i];
#pragma unroll
        for (int k = 0; k < VEC; k++) {
            const float v = kiln_to_float(q.e[k]);
            ss += v * v;
        }
    }
    for (int c = tail0 + threadIdx.x; c < cols; c += blockDim.x) {
        const float v = kiln_to_float(xr[c]);
        ss += v * v;
    }
    const float inv = rsqrtf(block_sum(ss) / (float)cols + eps);
    for (int i = threadIdx.x; i < nv; i += blockDim.x) {
        const vec_t q = xv[i];
        vec_t o;
#pragma unroll
        for (int k = 0; k < VEC; k++)
            o.e[k] = kiln_from_float(kiln_to_float(q.e[k]) * inv * kiln_to_float(w[i * VEC + k]));
        yv[i] = o;
    }
    for (int c = tail0 + threadIdx.x; c < cols; c += blockDim.x)
        yr[c] = kiln_from_float(kiln_to_float(xr[c]) * inv * kiln_to_float(w[c]));
}

/*@kiln launch
{"launches": [{"kernel": "rmsnorm_fwd", "grid": ["rows"], "block": ["BLOCK"], "smem": "0", "args": ["x", "w", "y", "cols", "eps"]}],
 "scratch": []}
@*/
