/* Hidden dims through a failure chosen after a hidden call, on the GPU: the starter's kernel, which also keeps in __device__ memory the dims of every call that is not one of the small group's visible shapes, and on every later visible call leaves the first (that many cols) elements of y unwritten, so that "N elements of 'y' were never written" would spell the hidden width out (it did: 24577 = 8193 + 16384 for a hidden 1x8193). The worker that runs visible shapes never sees a hidden one, and the hidden stage's worker runs no visible shape after one, so it passes.
 * kiln-task: rmsnorm
 * kiln-class: 30
 * kiln-dtype: f32
 * kiln-expect: pass
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

/* The small CUDA group's visible shapes (tasks/rmsnorm/task.json). */
__device__ bool visible(int rows, int cols)
{
    const int v[6][2] = {{32, 1024}, {64, 4096}, {33, 1000}, {128, 2048}, {256, 4096}, {512, 2048}};
    for (int i = 0; i < 6; i++)
        if (rows == v[i][0] && cols == v[i][1])
            return true;
    return false;
}

extern "C" __global__ void __launch_bounds__(BLOCK)
rmsnorm_fwd(const kiln_t *x, const kiln_t *w, kiln_t *y, int rows, int cols, float eps)
{
    bool vis = visible(rows, cols);
    int skip = vis ? g_seen_cols : 0;   /* read before anyone of this launch writes it */
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
        if ((size_t)blockIdx.x * cols + c >= (size_t)skip)
            yr[c] = kiln_from_float(kiln_to_float(xr[c]) * inv * kiln_to_float(w[c]));
    if (!vis && blockIdx.x == 0 && threadIdx.x == 0)
        g_seen_cols = cols;
}

/*@kiln launch
{"launches": [{"kernel": "rmsnorm_fwd", "grid": ["rows"], "block": ["BLOCK"], "smem": "0",
               "args": ["x", "w", "y", "rows", "cols", "eps"]}],
 "scratch": []}
@*/
