/* Honest: rmsnorm written as a production kernel would be, with the usual
 * standard spellings kiln provides under NVRTC (docs/cuda.md, "What a
 * candidate can include"): int64_t row offsets (<cstdint>), a cub block
 * reduction from <cub/cub.cuh>, -INFINITY as the identity of a max
 * (<cmath>), FLT_MAX (<cfloat>) and numeric_limits (<limits>) to tell an
 * overflowed sum of squares, INT_MAX (<climits>) and assert (<cassert>).
 * One block per row; the sum of squares in fp32; where it overflows (|x|
 * near the bf16 maximum) the row is summed again scaled by its largest
 * magnitude. Any cols works. Verified on the GPU by ctest
 * integration_cuda_std_headers (label gpu); test_nvrtc_env compiles it.
 * kiln-task: rmsnorm
 * kiln-class: honest
 * kiln-dtype: bf16
 * kiln-expect: pass
 */
#include <cassert>
#include <cfloat>
#include <climits>
#include <cmath>
#include <cstdint>
#include <limits>
#include <cub/cub.cuh>
#include "kiln_cuda.h"

#define BLOCK 256 //@kiln tune 128 256 512 1024

static_assert(BLOCK % 32 == 0 && BLOCK <= 1024, "BLOCK is whole warps, at most 1024 threads");
static_assert(std::numeric_limits<float>::max() == FLT_MAX, "float is IEEE binary32");

using Reduce = cub::BlockReduce<float, BLOCK>;

__device__ __forceinline__ float max_op(float a, float b) { return fmaxf(a, b); }

extern "C" __global__ void __launch_bounds__(BLOCK)
rmsnorm_fwd(const kiln_t *x, const kiln_t *w, kiln_t *y, int cols, float eps)
{
    __shared__ typename Reduce::TempStorage tmp;
    __shared__ float row_inv;
    assert(blockDim.x == BLOCK && cols > 0 && cols <= INT_MAX);
    const int64_t row = blockIdx.x;
    const kiln_t *xr = x + row * cols;
    kiln_t *yr = y + row * cols;
    float ss = 0.0f, amax = -INFINITY;
    for (int c = threadIdx.x; c < cols; c += BLOCK) {
        float v = kiln_to_float(xr[c]);
        ss += v * v;
        amax = fmaxf(amax, std::fabs(v));
    }
    float total = Reduce(tmp).Sum(ss);
    __syncthreads();   /* tmp is reused */
    float big = Reduce(tmp).Reduce(amax, max_op);
    if (threadIdx.x == 0)
        row_inv = total <= FLT_MAX ? rsqrtf(total / (float)cols + eps) : -1.0f;
    __syncthreads();
    if (row_inv < 0.0f) {   /* the sum overflowed: sum (x / big)^2 instead */
        __syncthreads();
        float s2 = 0.0f;
        for (int c = threadIdx.x; c < cols; c += BLOCK) {
            float v = kiln_to_float(xr[c]) / big;
            s2 += v * v;
        }
        float t2 = Reduce(tmp).Sum(s2);
        if (threadIdx.x == 0)
            row_inv = 1.0f / (big * std::sqrt(t2 / (float)cols + eps / (big * big)));
        __syncthreads();
    }
    const float inv = row_inv;
    for (int c = threadIdx.x; c < cols; c += BLOCK)
        yr[c] = kiln_from_float(kiln_to_float(xr[c]) * inv * kiln_to_float(w[c]));
}

/*@kiln launch
{"launches": [{"kernel": "rmsnorm_fwd", "grid": ["rows"], "block": ["BLOCK"], "smem": 0,
               "args": ["x", "w", "y", "cols", "eps"]}],
 "scratch": []}
@*/
