/* Out-of-bounds write: 16-byte vector stores over cdiv(cols, 8) groups per row, so a width that is not a multiple of 8 stores up to 7 elements past the row (the reduction is masked, the stores are not); the last row runs into y's trailing guard. Visible widths are multiples of 8; the first hidden shape (1x1) is not.
 * kiln-task: rmsnorm
 * kiln-class: 7
 * kiln-dtype: bf16
 * kiln-expect: fail
 * kiln-stages: hidden
 * kiln-codes: guard-corrupted
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
    const int nv = (cols + VEC - 1) / VEC;        /* rounds up */
    const vec_t *xv = reinterpret_cast<const vec_t *>(x + (size_t)blockIdx.x * cols);
    const vec_t *wv = reinterpret_cast<const vec_t *>(w);
    vec_t *yv = reinterpret_cast<vec_t *>(y + (size_t)blockIdx.x * cols);
    float ss = 0.0f;
    for (int i = threadIdx.x; i < nv; i += blockDim.x) {
        const vec_t q = xv[i];
#pragma unroll
        for (int k = 0; k < VEC; k++) {
            const float v = kiln_to_float(q.e[k]);
            if (i * VEC + k < cols)
                ss += v * v;
        }
    }
    const float inv = rsqrtf(block_sum(ss) / (float)cols + eps);
    for (int i = threadIdx.x; i < nv; i += blockDim.x) {
        const vec_t q = xv[i], g = wv[i];
        vec_t o;
#pragma unroll
        for (int k = 0; k < VEC; k++)
            o.e[k] = kiln_from_float(kiln_to_float(q.e[k]) * inv * kiln_to_float(g.e[k]));
        yv[i] = o;    /* the whole group, even past the row */
    }
}

/*@kiln launch
{"launches": [{"kernel": "rmsnorm_fwd", "grid": ["rows"], "block": ["BLOCK"], "smem": "0", "args": ["x", "w", "y", "cols", "eps"]}],
 "scratch": []}
@*/
