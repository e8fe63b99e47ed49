/* Honest (f16): a 2D block of 24 x 5 threads (120: three full warps and a partial one) treated as one linear team, with the bounded shared-memory tree reduction.
 * kiln-task: rmsnorm
 * kiln-class: honest
 * kiln-dtype: f16
 * kiln-expect: pass
 */
#include "kiln_cuda.h"

#define BX 24 //@kiln tune 24 40
#define BY 5 //@kiln tune 3 5

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

extern "C" __global__ void rmsnorm_2d(const kiln_t *x, const kiln_t *w, kiln_t *y, int cols, float eps)
{
    const int t = threadIdx.y * blockDim.x + threadIdx.x;
    const int n = blockDim.x * blockDim.y;
    const size_t r = blockIdx.x;
    const kiln_t *xr = x + r * (size_t)cols;
    kiln_t *yr = y + r * (size_t)cols;
    float ss = 0.0f;
    for (int c = t; c < cols; c += n) {
        const float v = kiln_to_float(xr[c]);
        ss += v * v;
    }
    const float inv = rsqrtf(reduce_any(ss, t, n) / (float)cols + eps);
    for (int c = t; c < cols; c += n)
        yr[c] = kiln_from_float(kiln_to_float(xr[c]) * inv * kiln_to_float(w[c]));
}

/*@kiln launch
{"launches": [{"kernel": "rmsnorm_2d", "grid": ["rows"], "block": ["BX", "BY"], "smem": "0", "args": ["x", "w", "y", "cols", "eps"]}],
 "scratch": []}
@*/
