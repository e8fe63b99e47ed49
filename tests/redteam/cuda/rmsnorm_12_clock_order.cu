/* Non-determinism: thread 0 of each block adds the per-thread partial sums forward or backward depending on a bit of the SM clock (a coin toss per block and per call); every result is within the f32 budget, but the same inputs give bitwise different rows from one run to the next.
 * kiln-task: rmsnorm
 * kiln-class: 12
 * kiln-dtype: f32
 * kiln-expect: fail
 * kiln-stages: determinism
 * kiln-codes: nondeterministic
 */
#include "kiln_cuda.h"

#define BLOCK 256 //@kiln tune 128 256 512 1024

extern "C" __global__ void rmsnorm_fwd(const kiln_t *x, const kiln_t *w, kiln_t *y, int cols, float eps)
{
    __shared__ float part[1024];
    __shared__ float s_inv;
    const size_t r = blockIdx.x;
    const kiln_t *xr = x + r * (size_t)cols;
    kiln_t *yr = y + r * (size_t)cols;
    float ss = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        const float v = kiln_to_float(xr[c]);
        ss += v * v;
    }
    part[threadIdx.x] = ss;
    __syncthreads();
    if (threadIdx.x == 0) {
        const int n = blockDim.x;
        const bool backward = (clock64() >> 4) & 1;
        float t = 0.0f;
        for (int i = 0; i < n; i++)
            t += part[backward ? n - 1 - i : i];
        s_inv = rsqrtf(t / (float)cols + eps);
    }
    __syncthreads();
    const float inv = s_inv;
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        yr[c] = kiln_from_float(kiln_to_float(xr[c]) * inv * kiln_to_float(w[c]));
}

/*@kiln launch
{"launches": [{"kernel": "rmsnorm_fwd", "grid": ["rows"], "block": ["BLOCK"], "smem": "0", "args": ["x", "w", "y", "cols", "eps"]}],
 "scratch": []}
@*/
