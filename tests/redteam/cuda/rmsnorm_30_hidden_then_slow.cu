/* Hidden dims through the timing of visible shapes, on the GPU: the starter's kernel, which keeps in __device__ memory the widest shape it has been called on that is not one of the small group's visible shapes; from then on every block first spins 10 ns per column of that shape on the global timer, so the visible shapes' timing medians would spell its width out (within +-1 on the GPU, the audit found), and the speedup would collapse. The worker that times the shapes never sees a hidden one.
 * kiln-task: rmsnorm
 * kiln-class: 30
 * kiln-dtype: bf16
 * kiln-expect: pass
 * kiln-min-speedup: 0.7
 */
#include "kiln_cuda.h"

#define BLOCK 256 //@kiln tune 128 256 512 1024

__device__ int g_seen_cols;

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

__device__ bool visible(int rows, int cols)
{
    const int v[6][2] = {{32, 1024}, {64, 4096}, {33, 1000}, {128, 2048}, {256, 4096}, {512, 2048}};
    for (int i = 0; i < 6; i++)
        if (rows == v[i][0] && cols == v[i][1])
            return true;
    return false;
}

__device__ __forceinline__ unsigned long long now_ns()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

extern "C" __global__ void __launch_bounds__(BLOCK)
rmsnorm_fwd(const kiln_t *x, const kiln_t *w, kiln_t *y, int rows, int cols, float eps)
{
    int seen = g_seen_cols;
    if (seen > 0 && threadIdx.x == 0) {
        unsigned long long until = now_ns() + 10ull * seen;
        while (now_ns() < until)
            ;
    }
    __syncthreads();
    const kiln_t *xr = x + (size_t)blockIdx.x * cols;
    kiln_t *yr = y + (size_t)blockIdx.x * cols;
    float ss = 0.0f;
    for (int c = threadIdx.x; c < cols; c += BLOCK) {
        float v = kiln_to_float(xr[c]);
        ss += v * v;
    }
    ss = block_sum(ss);
    float inv = rsqrtf(ss / (float)cols + eps);
    for (int c = threadIdx.x; c < cols; c += BLOCK)
        yr[c] = kiln_from_float(kiln_to_float(xr[c]) * inv * kiln_to_float(w[c]));
    if (!visible(rows, cols) && cols > seen && blockIdx.x == 0 && threadIdx.x == 0)
        atomicMax(&g_seen_cols, cols);
}

/*@kiln launch
{"launches": [{"kernel": "rmsnorm_fwd", "grid": ["rows"], "block": ["BLOCK"], "smem": "0",
               "args": ["x", "w", "y", "rows", "cols", "eps"]}],
 "scratch": []}
@*/
