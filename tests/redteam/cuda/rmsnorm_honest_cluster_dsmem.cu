/* Honest (Hopper): a thread-block cluster of CLUSTER blocks per row (grid CLUSTER x rows, cluster CLUSTER x 1 x 1); each block reduces its slice of the row, the partials are exchanged through distributed shared memory (map_shared_rank) and summed in rank order by every block, and each block normalises its slice. cooperative_groups includes <cuda/std/...>, which CUDA 13 keeps under include/cccl: NVRTC needs that directory on its include path too.
 * kiln-task: rmsnorm
 * kiln-class: honest
 * kiln-dtype: bf16
 * kiln-expect: pass
 */
#include "kiln_cuda.h"

#include <cooperative_groups.h>
namespace cg = cooperative_groups;

#define BLOCK 256 //@kiln tune 128 256 512
#define CLUSTER 4 //@kiln tune 2 4 8

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

extern "C" __global__ void rmsnorm_cluster(const kiln_t *x, const kiln_t *w, kiln_t *y, int cols, float eps)
{
    __shared__ float s_part;
    cg::cluster_group cluster = cg::this_cluster();
    const int q = (int)cluster.block_rank();
    const int nq = (int)cluster.num_blocks();
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
    cluster.sync();
    float t = 0.0f;
    for (int k = 0; k < nq; k++)
        t += *cluster.map_shared_rank(&s_part, k);   /* same order in every block */
    cluster.sync();   /* no block leaves while another may still read its s_part */
    const float inv = rsqrtf(t / (float)cols + eps);
    for (int c = lo + threadIdx.x; c < hi; c += blockDim.x)
        yr[c] = kiln_from_float(kiln_to_float(xr[c]) * inv * kiln_to_float(w[c]));
}

/*@kiln launch
{"launches": [{"kernel": "rmsnorm_cluster", "grid": ["CLUSTER", "rows"], "block": ["BLOCK"], "smem": "0", "args": ["x", "w", "y", "cols", "eps"], "cluster": ["CLUSTER", 1, 1]}],
 "scratch": []}
@*/
