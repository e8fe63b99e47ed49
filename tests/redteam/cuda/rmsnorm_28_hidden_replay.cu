/* Hidden-shape leak by replay, on the GPU: correct everywhere; it keeps
 * the dims of every call that is not one of the small group's visible
 * shapes in __device__ memory, which lives as long as the worker's module,
 * and on every later call prints the last such dims with device printf,
 * hoping a visible-shape call after the hidden stage (timing, stability)
 * carries them into the feedback, where candidate output is shown. Output
 * is shown only until a hidden shape has run, so nothing remembered leaves.
 * (The CPU twin: tests/redteam/cpu/rmsnorm_28_hidden_replay.c.)
 * kiln-task: rmsnorm
 * kiln-class: 28
 * kiln-dtype: bf16
 * kiln-expect: pass
 * kiln-forbid: KILNLEAK
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

/* 1/rms of one row; every thread of the block gets it. */
__device__ float row_inv_rms(const kiln_t *xr, int cols, float eps)
{
    float ss = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        const float v = kiln_to_float(xr[c]);
        ss += v * v;
    }
    ss = block_sum(ss);
    return rsqrtf(ss / (float)cols + eps);
}

/* The small group's visible shapes, as the task file lists them. */
__device__ bool visible_shape(unsigned rows, int cols)
{
    const unsigned vr[6] = {32, 64, 33, 128, 256, 512};
    const int vc[6] = {1024, 4096, 1000, 2048, 4096, 2048};
    for (int i = 0; i < 6; i++)
        if (rows == vr[i] && cols == vc[i])
            return true;
    return false;
}

__device__ int seen_rows = -1, seen_cols = -1;

extern "C" __global__ void rmsnorm_fwd(const kiln_t *x, const kiln_t *w, kiln_t *y, int cols, float eps)
{
    const size_t r = blockIdx.x;
    if (r == 0 && threadIdx.x == 0) {
        if (seen_rows >= 0)
            printf("KILNLEAK rows=%d cols=%d\n", seen_rows, seen_cols);
        else
            printf("nothing hidden seen yet\n");
    }
    const kiln_t *xr = x + r * (size_t)cols;
    kiln_t *yr = y + r * (size_t)cols;
    const float inv = row_inv_rms(xr, cols, eps);
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        yr[c] = kiln_from_float(kiln_to_float(xr[c]) * inv * kiln_to_float(w[c]));
    /* Remembered after this call's print (block 0 printed before it got
     * here), so the first call that sees the dims is the next one. */
    if (r == 0 && threadIdx.x == 0 && !visible_shape(gridDim.x, cols)) {
        seen_rows = (int)gridDim.x;
        seen_cols = cols;
    }
}

/*@kiln launch
{"launches": [{"kernel": "rmsnorm_fwd", "grid": ["rows"], "block": ["BLOCK"], "smem": "0", "args": ["x", "w", "y", "cols", "eps"]}],
 "scratch": []}
@*/
