/* Honest (Hopper bulk copy): thread 0 initialises an mbarrier and issues one cp.async.bulk (the TMA engine) for the 16-byte-aligned middle of the row into dynamic shared memory, announcing the bytes with expect_tx; the other threads copy the unaligned head and tail; everyone waits on the barrier's phase, then the row is reduced and normalised from shared memory.
 * kiln-task: rmsnorm
 * kiln-class: honest
 * kiln-dtype: bf16
 * kiln-expect: pass
 */
#include "kiln_cuda.h"

#define BLOCK 256 //@kiln tune 128 256 512 1024

constexpr int E = sizeof(kiln_t);
constexpr int VEC = 16 / E;

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

extern "C" __global__ void rmsnorm_bulk(const kiln_t *x, const kiln_t *w, kiln_t *y, int cols, float eps)
{
    extern __shared__ __align__(128) unsigned char smem_raw[];
    __shared__ __align__(8) unsigned long long bar;
    const size_t r = blockIdx.x;
    const kiln_t *xr = x + r * (size_t)cols;
    kiln_t *yr = y + r * (size_t)cols;
    const int shift = (int)(((unsigned long long)xr & 15) / E);
    kiln_t *srow = reinterpret_cast<kiln_t *>(smem_raw) + shift;
    const int head = shift ? min(cols, VEC - shift) : 0;
    const int nvec = (cols - head) / VEC;
    const int tail = head + nvec * VEC;
    const unsigned bytes = (unsigned)nvec * 16u;
    const unsigned bar_a = (unsigned)__cvta_generic_to_shared(&bar);

    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(bar_a) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    if (threadIdx.x == 0 && bytes) {
        const unsigned dst = (unsigned)__cvta_generic_to_shared(srow + head);
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar_a), "r"(bytes) : "memory");
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                     :: "r"(dst), "l"(xr + head), "r"(bytes), "r"(bar_a) : "memory");
    }
    for (int c = threadIdx.x; c < head; c += blockDim.x)
        srow[c] = xr[c];
    for (int c = tail + threadIdx.x; c < cols; c += blockDim.x)
        srow[c] = xr[c];
    if (bytes) {
        unsigned done = 0;
        while (!done)
            asm volatile("{\n\t.reg .pred p;\n\t"
                         "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0;\n\t"
                         "selp.u32 %0, 1, 0, p;\n\t}"
                         : "=r"(done) : "r"(bar_a) : "memory");
    }
    __syncthreads();
    float ss = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        const float v = kiln_to_float(srow[c]);
        ss += v * v;
    }
    const float inv = rsqrtf(block_sum(ss) / (float)cols + eps);
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        yr[c] = kiln_from_float(kiln_to_float(srow[c]) * inv * kiln_to_float(w[c]));
}

/*@kiln launch
{"launches": [{"kernel": "rmsnorm_bulk", "grid": ["rows"], "block": ["BLOCK"], "smem": "(cols + 16) * sizeof(T)", "args": ["x", "w", "y", "cols", "eps"]}],
 "scratch": []}
@*/
