/* Non-determinism: the sum of squares is split over 8 blocks per row and every thread atomicAdds its partial into a zero-initialised scratch float, so the order of the additions (and the last bits of y) depends on scheduling; each result is within the f32 budget, but two runs on the same inputs differ bitwise.
 * kiln-task: rmsnorm
 * kiln-class: 12
 * kiln-dtype: f32
 * kiln-expect: fail
 * kiln-stages: determinism
 * kiln-codes: nondeterministic
 */
#include "kiln_cuda.h"

#define BLOCK 256 //@kiln tune 128 256 512 1024
#define SPLIT 8 //@kiln tune 4 8 16

extern "C" __global__ void sumsq_atomic(const kiln_t *x, float *ss, int cols)
{
    const size_t r = blockIdx.y;
    const int chunk = (cols + SPLIT - 1) / SPLIT;
    const int lo = blockIdx.x * chunk, hi = min(cols, lo + chunk);
    float p = 0.0f;
    for (int c = lo + threadIdx.x; c < hi; c += blockDim.x) {
        const float v = kiln_to_float(x[r * cols + c]);
        p += v * v;
    }
    atomicAdd(&ss[r], p);    /* in whatever order the hardware serves them */
}

extern "C" __global__ void rmsnorm_fwd(const kiln_t *x, const kiln_t *w, kiln_t *y, const float *ss, int cols, float eps)
{
    const size_t r = blockIdx.x;
    const float inv = rsqrtf(ss[r] / (float)cols + eps);
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        y[r * cols + c] = kiln_from_float(kiln_to_float(x[r * cols + c]) * inv * kiln_to_float(w[c]));
}

/*@kiln launch
{"launches": [{"kernel": "sumsq_atomic", "grid": ["SPLIT", "rows"], "block": ["BLOCK"], "smem": "0", "args": ["x", "ss", "cols"]},
               {"kernel": "rmsnorm_fwd", "grid": ["rows"], "block": ["BLOCK"], "smem": "0", "args": ["x", "w", "y", "ss", "cols", "eps"]}],
 "scratch": [{"name": "ss", "bytes": "rows * 4", "init": "zero"}]}
@*/
