/* Honest (Hopper): the cluster kernel without cooperative_groups: CLUSTER blocks per row (grid CLUSTER x rows, cluster CLUSTER x 1 x 1) exchange their partial sums of squares through distributed shared memory with raw PTX (%cluster_ctarank, mapa, ld.shared::cluster, barrier.cluster), each summing them in rank order.
 * kiln-task: rmsnorm
 * kiln-class: honest
 * kiln-dtype: f32
 * kiln-expect: pass
 */
#include "kiln_cuda.h"

#define BLOCK 256 //@kiln tune 128 256 512
#define CLUSTER 2 //@kiln tune 2 4 8

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

__device__ __forceinline__ unsigned cluster_rank(void)
{
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}

__device__ __forceinline__ unsigned cluster_blocks(void)
{
    unsigned n;
    asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(n));
    return n;
}

/* Every thread of every block of the cluster; release/acquire for shared memory. */
__device__ __forceinline__ void cluster_sync(void)
{
    asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}

/* Read a float from the same shared variable in block `rank` of the cluster. */
__device__ __forceinline__ float load_from_rank(const float *p, unsigned rank)
{
    const unsigned a = (unsigned)__cvta_generic_to_shared(p);
    unsigned ra;
    float v;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(ra) : "r"(a), "r"(rank));
    asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(ra) : "memory");
    return v;
}

extern "C" __global__ void rmsnorm_cluster(const kiln_t *x, const kiln_t *w, kiln_t *y, int cols, float eps)
{
    __shared__ float s_part;
    const int q = (int)cluster_rank(), nq = (int)cluster_blocks();
    const size_t r = blockIdx.y;
    const kiln_t *xr = x + r * (size_t)cols;
    kiln_t *yr = y + r * (size_t)cols;
    const int chunk = (cols + nq - 1) / nq;
    const int lo = q * chunk, hi = min(cols, lo + chunk);
    float ss = 0.0f;
    for (int c = lo + threadIdx.x; c < hi; c += blockDim.x) {
        const float v = kiln_to_float(xr[c]);
        ss += v * v;
    }
    ss = block_sum(ss);
    if (threadIdx.x == 0)
        s_part = ss;
    cluster_sync();
    float t = 0.0f;
    for (int k = 0; k < nq; k++)
        t += load_from_rank(&s_part, (unsigned)k);
    cluster_sync();   /* keep every s_part alive until all blocks have read it */
    const float inv = rsqrtf(t / (float)cols + eps);
    for (int c = lo + threadIdx.x; c < hi; c += blockDim.x)
        yr[c] = kiln_from_float(kiln_to_float(xr[c]) * inv * kiln_to_float(w[c]));
}

/*@kiln launch
{"launches": [{"kernel": "rmsnorm_cluster", "grid": ["CLUSTER", "rows"], "block": ["BLOCK"], "smem": "0", "args": ["x", "w", "y", "cols", "eps"], "cluster": ["CLUSTER", 1, 1]}],
 "scratch": []}
@*/
