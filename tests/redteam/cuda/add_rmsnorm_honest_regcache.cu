/* Honest: each thread keeps the rounded r of up to CACHE of its columns in registers between the two passes (no re-read of r), and reads back the rest of a wider row from r as stored; y is computed from r as stored either way. Any cols.
 * kiln-task: add_rmsnorm
 * kiln-class: honest
 * kiln-dtype: bf16
 * kiln-expect: pass
 */
#include "kiln_cuda.h"

#define BLOCK 256 //@kiln tune 128 256 512 1024
#define CACHE 8 //@kiln tune 4 8 16

__device__ float block_sum(float v)
{
    __shared__ float part[BLOCK / 32];
    for (int off = 16; off > 0; off >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, off);
    if ((threadIdx.x & 31) == 0)
        part[threadIdx.x >> 5] = v;
    __syncthreads();
    v = (threadIdx.x & 31) < BLOCK / 32 ? part[threadIdx.x & 31] : 0.0f;
    for (int off = 16; off > 0; off >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, off);
    return v;
}

extern "C" __global__ void __launch_bounds__(BLOCK)
add_rmsnorm_fwd(const kiln_t *x, const kiln_t *residual, const kiln_t *w, kiln_t *r, kiln_t *y,
                int cols, float eps)
{
    size_t row = (size_t)blockIdx.x * cols;
    float keep[CACHE];
    float ss = 0.0f;
    int k = 0;
    for (int c = threadIdx.x; c < cols; c += BLOCK, k++) {
        kiln_t v = kiln_from_float(kiln_to_float(x[row + c]) + kiln_to_float(residual[row + c]));
        r[row + c] = v;
        float f = kiln_to_float(v);
        if (k < CACHE)
            keep[k] = f;
        ss += f * f;
    }
    float inv = rsqrtf(block_sum(ss) / (float)cols + eps);
    k = 0;
    for (int c = threadIdx.x; c < cols; c += BLOCK, k++) {
        float f = k < CACHE ? keep[k] : kiln_to_float(r[row + c]);
        y[row + c] = kiln_from_float(f * inv * kiln_to_float(w[c]));
    }
}

/*@kiln launch
{"launches": [{"kernel": "add_rmsnorm_fwd", "grid": ["rows"], "block": ["BLOCK"], "smem": "0",
               "args": ["x", "residual", "w", "r", "y", "cols", "eps"]}],
 "scratch": []}
@*/
