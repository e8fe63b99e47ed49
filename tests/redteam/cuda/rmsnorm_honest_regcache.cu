/* Honest: __launch_bounds__(512) kernel that reads x once for the usual widths, keeping up to CACHE 16-byte vectors per thread in registers between the reduction and the output pass (wider rows re-read the rest), with scalar head and tail; its manifest gives the block as an integer and the smem as a number.
 * kiln-task: rmsnorm
 * kiln-class: honest
 * kiln-dtype: f32
 * kiln-expect: pass
 */
#include "kiln_cuda.h"

#define CACHE 4 //@kiln tune 2 4 8

constexpr int VEC = 16 / sizeof(kiln_t);            /* elements per 16-byte vector */
struct alignas(16) vec_t { kiln_t e[VEC]; };

/* Elements of a row before its first 16-byte boundary, or the whole row when
 * x and y rows are not aligned alike (then it is all scalar). */
__device__ __forceinline__ int head_elems(const kiln_t *xr, const kiln_t *yr, int cols)
{
    const unsigned ax = (unsigned)((unsigned long long)xr & 15), ay = (unsigned)((unsigned long long)yr & 15);
    int head = ax ? (int)((16 - ax) / sizeof(kiln_t)) : 0;
    if (ax != ay)
        head = cols;
    return head < cols ? head : cols;
}

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

extern "C" __global__ void __launch_bounds__(512) rmsnorm_regcache(const kiln_t *__restrict__ x,
        const kiln_t *__restrict__ w, kiln_t *__restrict__ y, int cols, float eps)
{
    const size_t r = blockIdx.x;
    const kiln_t *xr = x + r * (size_t)cols;
    kiln_t *yr = y + r * (size_t)cols;
    const int head = head_elems(xr, yr, cols);
    const int nvec = (cols - head) / VEC;
    const int tail = head + nvec * VEC;
    const vec_t *xv = reinterpret_cast<const vec_t *>(xr + head);
    vec_t *yv = reinterpret_cast<vec_t *>(yr + head);

    vec_t cache[CACHE];
    float ss = 0.0f;
#pragma unroll
    for (int j = 0; j < CACHE; j++) {
        const int i = threadIdx.x + j * blockDim.x;
        if (i < nvec) {
            cache[j] = xv[i];
#pragma unroll
            for (int k = 0; k < VEC; k++) {
                const float v = kiln_to_float(cache[j].e[k]);
                ss += v * v;
            }
        }
    }
    for (int i = threadIdx.x + CACHE * blockDim.x; i < nvec; i += blockDim.x) {
        const vec_t q = xv[i];
#pragma unroll
        for (int k = 0; k < VEC; k++) {
            const float v = kiln_to_float(q.e[k]);
            ss += v * v;
        }
    }
    for (int c = threadIdx.x; c < head; c += blockDim.x) {
        const float v = kiln_to_float(xr[c]);
        ss += v * v;
    }
    for (int c = tail + threadIdx.x; c < cols; c += blockDim.x) {
        const float v = kiln_to_float(xr[c]);
        ss += v * v;
    }
    const float inv = rsqrtf(block_sum(ss) / (float)cols + eps);

#pragma unroll
    for (int j = 0; j < CACHE; j++) {
        const int i = threadIdx.x + j * blockDim.x;
        if (i < nvec) {
            const int c0 = head + i * VEC;
            vec_t o;
#pragma unroll
            for (int k = 0; k < VEC; k++)
                o.e[k] = kiln_from_float(kiln_to_float(cache[j].e[k]) * inv * kiln_to_float(w[c0 + k]));
            yv[i] = o;
        }
    }
    for (int i = threadIdx.x + CACHE * blockDim.x; i < nvec; i += blockDim.x) {
        const vec_t q = xv[i];
        const int c0 = head + i * VEC;
        vec_t o;
#pragma unroll
        for (int k = 0; k < VEC; k++)
            o.e[k] = kiln_from_float(kiln_to_float(q.e[k]) * inv * kiln_to_float(w[c0 + k]));
        yv[i] = o;
    }
    for (int c = threadIdx.x; c < head; c += blockDim.x)
        yr[c] = kiln_from_float(kiln_to_float(xr[c]) * inv * kiln_to_float(w[c]));
    for (int c = tail + threadIdx.x; c < cols; c += blockDim.x)
        yr[c] = kiln_from_float(kiln_to_float(xr[c]) * inv * kiln_to_float(w[c]));
}

/*@kiln launch
{"launches": [{"kernel": "rmsnorm_regcache", "grid": ["rows"], "block": [512], "smem": 0, "args": ["x", "w", "y", "cols", "eps"]}],
 "scratch": []}
@*/
