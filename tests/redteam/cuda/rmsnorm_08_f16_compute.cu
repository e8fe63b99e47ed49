/* Precision downgrade: an f32 task computed in half precision: x and w converted to __half, squares summed with __hfma, 1/rms and the product in half, the result widened back to f32 (relative error ~5e-4, far over the f32 budget).
 * kiln-task: rmsnorm
 * kiln-class: 8
 * kiln-dtype: f32
 * kiln-expect: fail
 * kiln-stages: smoke
 * kiln-codes: wrong-output
 */
#include "kiln_cuda.h"

#define BLOCK 256 //@kiln tune 128 256 512 1024

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
    const kiln_t *xr = x + (size_t)blockIdx.x * cols;
    kiln_t *yr = y + (size_t)blockIdx.x * cols;
    __half hs = __float2half(0.0f);
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        const __half h = __float2half(kiln_to_float(xr[c]));
        hs = __hfma(h, h, hs);
    }
    const float ss = block_sum(__half2float(hs));
    const __half inv = hrsqrt(__float2half(ss / (float)cols + eps));
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        const __half h = __float2half(kiln_to_float(xr[c]));
        const __half g = __float2half(kiln_to_float(w[c]));
        yr[c] = kiln_from_float(__half2float(__hmul(__hmul(h, inv), g)));
    }
}

/*@kiln launch
{"launches": [{"kernel": "rmsnorm_fwd", "grid": ["rows"], "block": ["BLOCK"], "smem": "0", "args": ["x", "w", "y", "cols", "eps"]}],
 "scratch": []}
@*/
