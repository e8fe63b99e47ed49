/* L2 tricks, device side: an honest kernel that loads x and w with an L2::evict_last cache policy and prefetches w with evict_last, trying to keep its inputs in L2 from one call to the next. Fresh inputs every call and the flush before it make this useless: correct, not implausibly fast, so it must pass.
 * kiln-task: rmsnorm
 * kiln-class: 25
 * kiln-dtype: bf16
 * kiln-expect: pass
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

__device__ __forceinline__ unsigned long long evict_last_policy(void)
{
    unsigned long long p;
    asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(p));
    return p;
}

/* A 16-bit or 32-bit load with an L2 cache-policy hint. */
__device__ __forceinline__ float load_hint(const kiln_t *p, unsigned long long pol)
{
#if defined(KILN_DTYPE_F32)
    float v;
    asm volatile("ld.global.L2::cache_hint.f32 %0, [%1], %2;" : "=f"(v) : "l"(p), "l"(pol));
    return v;
#else
    unsigned short b;
    asm volatile("ld.global.L2::cache_hint.b16 %0, [%1], %2;" : "=h"(b) : "l"(p), "l"(pol));
    kiln_t t;
    memcpy(&t, &b, sizeof t);
    return kiln_to_float(t);
#endif
}

extern "C" __global__ void rmsnorm_fwd(const kiln_t *x, const kiln_t *w, kiln_t *y, int cols, float eps)
{
    const unsigned long long pol = evict_last_policy();
    const size_t r = blockIdx.x;
    const kiln_t *xr = x + r * (size_t)cols;
    kiln_t *yr = y + r * (size_t)cols;
    for (int c = threadIdx.x * 64; c < cols; c += blockDim.x * 64)
        asm volatile("prefetch.global.L2::evict_last [%0];" :: "l"(w + c));
    float ss = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        const float v = load_hint(xr + c, pol);
        ss += v * v;
    }
    const float inv = rsqrtf(block_sum(ss) / (float)cols + eps);
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        yr[c] = kiln_from_float(load_hint(xr + c, pol) * inv * load_hint(w + c, pol));
}

/*@kiln launch
{"launches": [{"kernel": "rmsnorm_fwd", "grid": ["rows"], "block": ["BLOCK"], "smem": "0", "args": ["x", "w", "y", "cols", "eps"]}],
 "scratch": []}
@*/
