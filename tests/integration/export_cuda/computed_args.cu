/* computed_args.cu - an export fixture (issue 39): the rmsnorm starter with
 * launch arguments the manifest computes, as kiln import writes them for a
 * host's int64_t stride and a knob passed to the kernel: "i64(cols)" is a
 * 64-bit value, "BLOCK" and "cols / 2 * 2" 32-bit ones. */
#include "kiln_cuda.h"

#define BLOCK 256 //@kiln tune 128 256 512 1024

__device__ __forceinline__ float warp_sum(float v)
{
    for (int off = 16; off > 0; off >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, off);
    return v;
}

__device__ float block_sum(float v, int block)
{
    __shared__ float part[32];
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = warp_sum(v);
    if (lane == 0)
        part[warp] = v;
    __syncthreads();
    v = lane < block / 32 ? part[lane] : 0.0f;
    __syncthreads();
    return warp_sum(v);
}

extern "C" __global__ void rmsnorm_fwd(const kiln_t *x, const kiln_t *w, kiln_t *y,
                                       long long stride, int block, int even, int cols,
                                       float eps)
{
    const kiln_t *xr = x + blockIdx.x * stride;
    kiln_t *yr = y + blockIdx.x * stride;
    float ss = 0.0f;
    (void)even;
    for (int c = threadIdx.x; c < cols; c += block) {
        float v = kiln_to_float(xr[c]);
        ss += v * v;
    }
    ss = block_sum(ss, block);
    float inv = rsqrtf(ss / (float)cols + eps);
    for (int c = threadIdx.x; c < cols; c += block)
        yr[c] = kiln_from_float(kiln_to_float(xr[c]) * inv * kiln_to_float(w[c]));
}

/*@kiln launch
{"launches": [{"kernel": "rmsnorm_fwd", "grid": ["rows"], "block": ["BLOCK"], "smem": "0",
               "args": ["x", "w", "y", "i64(cols)", "BLOCK", "cols / 2 * 2", "cols", "eps"]}],
 "scratch": []}
@*/
