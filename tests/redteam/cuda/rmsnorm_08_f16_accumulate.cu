/* Precision downgrade: an f16 task whose squares and partial sums are kept in __half (per thread, then warp shuffles in half) instead of f32; off by about an f16 ulp on standard inputs, and the squares overflow to Inf on the scaled-up and offset inputs, giving 1/rms = 0 and y = 0.
 * kiln-task: rmsnorm
 * kiln-class: 8
 * kiln-dtype: f16
 * kiln-expect: fail
 * kiln-stages: smoke visible hidden stability
 * kiln-codes: wrong-output
 */
#include "kiln_cuda.h"

#define BLOCK 256 //@kiln tune 128 256 512 1024

__device__ __forceinline__ __half warp_sum_h(__half v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        v = __hadd(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

extern "C" __global__ void rmsnorm_fwd(const kiln_t *x, const kiln_t *w, kiln_t *y, int cols, float eps)
{
    __shared__ __half part[32];
    __shared__ float s_inv;
    const kiln_t *xr = x + (size_t)blockIdx.x * cols;
    kiln_t *yr = y + (size_t)blockIdx.x * cols;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    __half hs = __float2half(0.0f);
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        const __half h = __float2half(kiln_to_float(xr[c]));
        hs = __hfma(h, h, hs);
    }
    hs = warp_sum_h(hs);
    if (lane == 0)
        part[warp] = hs;
    __syncthreads();
    if (warp == 0) {
        __half t = lane < (int)(blockDim.x >> 5) ? part[lane] : __float2half(0.0f);
        t = warp_sum_h(t);
        if (lane == 0)
            s_inv = rsqrtf(__half2float(t) / (float)cols + eps);
    }
    __syncthreads();
    const float inv = s_inv;
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        yr[c] = kiln_from_float(kiln_to_float(xr[c]) * inv * kiln_to_float(w[c]));
}

/*@kiln launch
{"launches": [{"kernel": "rmsnorm_fwd", "grid": ["rows"], "block": ["BLOCK"], "smem": "0", "args": ["x", "w", "y", "cols", "eps"]}],
 "scratch": []}
@*/
