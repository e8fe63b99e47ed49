/* Honest: 200 threads per block (6 full warps and one of 8 threads), with a bounded shared-memory tree reduction that never reads a slot no thread wrote.
 * kiln-task: rmsnorm
 * kiln-class: honest
 * kiln-dtype: f32
 * kiln-expect: pass
 */
#include "kiln_cuda.h"

#define BLOCK 200 //@kiln tune 72 200 328

/* Sum over n threads of any count (thread t of n), by a bounded tree in
 * shared memory: fixed order, every thread gets the total. */
__device__ float reduce_any(float v, int t, int n)
{
    __shared__ float buf[1024];
    buf[t] = v;
    __syncthreads();
    for (int s = 512; s > 0; s >>= 1) {
        if (t < s && t + s < n)
            buf[t] += buf[t + s];
        __syncthreads();
    }
    const float r = buf[0];
    __syncthreads();
    return r;
}

extern "C" __global__ void rmsnorm_odd(const kiln_t *x, const kiln_t *w, kiln_t *y, int cols, float eps)
{
    const size_t r = blockIdx.x;
    const kiln_t *xr = x + r * (size_t)cols;
    kiln_t *yr = y + r * (size_t)cols;
    float ss = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        const float v = kiln_to_float(xr[c]);
        ss += v * v;
    }
    const float inv = rsqrtf(reduce_any(ss, threadIdx.x, blockDim.x) / (float)cols + eps);
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        yr[c] = kiln_from_float(kiln_to_float(xr[c]) * inv * kiln_to_float(w[c]));
}

/*@kiln launch
{"launches": [{"kernel": "rmsnorm_odd", "grid": ["rows"], "block": ["BLOCK"], "smem": "0", "args": ["x", "w", "y", "cols", "eps"]}],
 "scratch": []}
@*/
