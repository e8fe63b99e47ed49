/* rmsnorm_vec8.cu - a vectorised rmsnorm as production kernels write it:
 * every load and store moves 16 bytes (8 bf16, 4 f32) and there is no tail
 * loop, so it needs cols to be a multiple of the vector width (which also
 * makes every row 16-byte aligned, since buffers start 256-byte aligned).
 * It states that in "require"; precond_cuda_test.sh verifies it with and
 * without the precondition. */
#include "kiln_cuda.h"

#define BLOCK 256
#define VEC (16 / (int)sizeof(kiln_t))

union kiln_vec {
    uint4 raw;
    kiln_t e[16 / sizeof(kiln_t)];
};

__device__ __forceinline__ float warp_sum(float v)
{
    for (int off = 16; off > 0; off >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, off);
    return v;
}

__device__ float block_sum(float v)
{
    __shared__ float part[BLOCK / 32];
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = warp_sum(v);
    if (lane == 0)
        part[warp] = v;
    __syncthreads();
    v = lane < BLOCK / 32 ? part[lane] : 0.0f;
    __syncthreads();
    return warp_sum(v);
}

extern "C" __global__ void __launch_bounds__(BLOCK)
rmsnorm_vec(const kiln_t *x, const kiln_t *w, kiln_t *y, int cols, float eps)
{
    const uint4 *xr = (const uint4 *)(x + (size_t)blockIdx.x * cols);
    const uint4 *wv = (const uint4 *)w;
    uint4 *yr = (uint4 *)(y + (size_t)blockIdx.x * cols);
    int nv = cols / VEC;   /* no tail: the precondition says there is none */
    float ss = 0.0f;
    for (int i = threadIdx.x; i < nv; i += BLOCK) {
        union kiln_vec a;
        a.raw = xr[i];
        for (int k = 0; k < VEC; k++) {
            float f = kiln_to_float(a.e[k]);
            ss += f * f;
        }
    }
    ss = block_sum(ss);
    float inv = rsqrtf(ss / (float)cols + eps);
    for (int i = threadIdx.x; i < nv; i += BLOCK) {
        union kiln_vec a, b, o;
        a.raw = xr[i];
        b.raw = wv[i];
        for (int k = 0; k < VEC; k++)
            o.e[k] = kiln_from_float(kiln_to_float(a.e[k]) * inv * kiln_to_float(b.e[k]));
        yr[i] = o.raw;
    }
}

/*@kiln launch
{"launches": [{"kernel": "rmsnorm_vec", "grid": ["rows"], "block": ["BLOCK"], "smem": 0,
               "args": ["x", "w", "y", "cols", "eps"]}],
 "scratch": [],
 "require": ["cols % 8 == 0"]}
@*/
