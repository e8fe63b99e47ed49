/* Determinism that is replayed, on the GPU: the sum of squares is split over 8 blocks per row that atomicAdd their partials (rmsnorm_12_atomic_split: the last bits of y depend on the order the hardware serves them), and a third launch keeps a fingerprint of x (a few of its elements, the dims) and a copy of y in __device__ memory, which lives as long as the worker's module. When the same inputs come back, the last launch copies the kept y over its own, so two runs in one worker agree bit for bit. Determinism's second run is in a fresh worker, with no copy to replay, so the order and the bits differ.
 * kiln-task: rmsnorm
 * kiln-class: 30
 * kiln-dtype: f32
 * kiln-expect: fail
 * kiln-stages: determinism
 * kiln-codes: nondeterministic
 */
#include "kiln_cuda.h"

#define BLOCK 256 //@kiln tune 128 256 512 1024
#define SPLIT 8 //@kiln tune 4 8 16
#define CAP (512 * 4096)   /* elements kept: the small group's shapes fit */

__device__ float g_last[CAP];
__device__ unsigned long long g_key;

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
    atomicAdd(&ss[r], p);
}

extern "C" __global__ void rmsnorm_fwd(const kiln_t *x, const kiln_t *w, kiln_t *y, const float *ss, int cols, float eps)
{
    const size_t r = blockIdx.x;
    const float inv = rsqrtf(ss[r] / (float)cols + eps);
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        y[r * cols + c] = kiln_from_float(kiln_to_float(x[r * cols + c]) * inv * kiln_to_float(w[c]));
}

/* The inputs' fingerprint: the dims and 64 elements of x and w, as bits. */
__device__ unsigned long long fingerprint(const kiln_t *x, const kiln_t *w, int rows, int cols)
{
    unsigned long long h = 1469598103934665603ull ^ ((unsigned long long)rows << 32 | (unsigned)cols);
    size_t n = (size_t)rows * cols;
    for (int k = 0; k < 64; k++) {
        h = (h ^ __float_as_uint(kiln_to_float(x[(size_t)k * 7919 % n]))) * 1099511628211ull;
        h = (h ^ __float_as_uint(kiln_to_float(w[k % cols]))) * 1099511628211ull;
    }
    return h;
}

/* One block: replay the kept y when the inputs are the last ones seen,
 * else keep this y and its fingerprint. */
extern "C" __global__ void replay(const kiln_t *x, const kiln_t *w, kiln_t *y, int rows, int cols)
{
    __shared__ unsigned long long key;
    __shared__ int hit;
    size_t n = (size_t)rows * cols;
    if (n > CAP)
        return;
    if (threadIdx.x == 0) {
        key = fingerprint(x, w, rows, cols);
        hit = key == g_key;
    }
    __syncthreads();
    for (size_t i = threadIdx.x; i < n; i += blockDim.x) {
        if (hit)
            y[i] = kiln_from_float(g_last[i]);
        else
            g_last[i] = kiln_to_float(y[i]);
    }
    if (threadIdx.x == 0 && !hit)
        g_key = key;
}

/*@kiln launch
{"launches": [{"kernel": "sumsq_atomic", "grid": ["SPLIT", "rows"], "block": ["BLOCK"], "smem": "0", "args": ["x", "ss", "cols"]},
               {"kernel": "rmsnorm_fwd", "grid": ["rows"], "block": ["BLOCK"], "smem": "0", "args": ["x", "w", "y", "ss", "cols", "eps"]},
               {"kernel": "replay", "grid": ["1"], "block": ["1024"], "smem": "0", "args": ["x", "w", "y", "rows", "cols"]}],
 "scratch": [{"name": "ss", "bytes": "rows * 4", "init": "zero"}]}
@*/
