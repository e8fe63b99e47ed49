/* Honest: one block per row, 16-byte vector loads and stores of x and y with a scalar head up to the first 16-byte boundary and a scalar tail (rows of odd widths start misaligned), w read element by element, warp-shuffle block reduction.
 * kiln-task: rmsnorm
 * kiln-class: honest
 * kiln-dtype: bf16
 * kiln-expect: pass
 */
#include "kiln_cuda.h"

#define BLOCK 256 //@kiln tune 128 256 512 1024

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

extern "C" __global__ void rmsnorm_vec(const kiln_t *__restrict__ x, const kiln_t *__restrict__ w,
                                       kiln_t *__restrict__ y, int cols, float eps)
{
    const size_t r = blockIdx.x;
    const kiln_t *xr = x + r * (size_t)cols;
    kiln_t *yr = y + r * (size_t)cols;
    const int head = head_elems(xr, yr, cols);
    const int nvec = (cols - head) / VEC;
    const int tail = head + nvec * VEC;
    const vec_t *xv = reinterpret_cast<const vec_t *>(xr + head);
    vec_t *yv = reinterpret_cast<vec_t *>(yr + head);

    float ss = 0.0f;
    for (int c = threadIdx.x; c < head; c += blockDim.x) {
        const float v = kiln_to_float(xr[c]);
        ss += v * v;
    }
    for (int i = threadIdx.x; i < nvec; i += blockDim.x) {
        const vec_t q = xv[i];
#pragma unroll
        for (int k = 0; k < VEC; k++) {
            const float v = kiln_to_float(q.e[k]);
            ss += v * v;
        }
    }
    for (int c = tail + threadIdx.x; c < cols; c += blockDim.x) {
        const float v = kiln_to_float(xr[c]);
        ss += v * v;
    }
    const float inv = rsqrtf(block_sum(ss) / (float)cols + eps);

    for (int c = threadIdx.x; c < head; c += blockDim.x)
        yr[c] = kiln_from_float(kiln_to_float(xr[c]) * inv * kiln_to_float(w[c]));
    for (int i = threadIdx.x; i < nvec; i += blockDim.x) {
        const vec_t q = xv[i];
        const int c0 = head + i * VEC;
        vec_t o;
#pragma unroll
        for (int k = 0; k < VEC; k++)
            o.e[k] = kiln_from_float(kiln_to_float(q.e[k]) * inv * kiln_to_float(w[c0 + k]));
        yv[i] = o;
    }
    for (int c = tail + threadIdx.x; c < cols; c += blockDim.x)
        yr[c] = kiln_from_float(kiln_to_float(xr[c]) * inv * kiln_to_float(w[c]));
}

/*@kiln launch
{"launches": [{"kernel": "rmsnorm_vec", "grid": ["rows"], "block": ["BLOCK"], "smem": 0, "args": ["x", "w", "y", "cols", "eps"]}],
 "scratch": []}
@*/
