/* rmsnorm in two launches: a fixture of the CUDA export tests, written to
 * exercise every path of an exported dispatch (two launches, a scratch
 * buffer kiln zeroes, a cluster, dynamic shared memory above 48 KiB once
 * cols > 12288, an #include that must stay outside the variant's
 * namespace). Launch 1 (sumsq): blocks of CHUNK columns of a row add their
 * sum of squares into ss[row] with atomics, so the result is not
 * deterministic and `kiln verify` would say so; a fixture needs no more.
 * Launch 2 (scale): one block per row stages the row in shared memory as
 * float, then writes it scaled. Not a kernel named scale in a comment. */
#include "kiln_cuda.h"
#include <cooperative_groups.h>

#define BLOCK 256 //@kiln tune 128 256 512
#define CHUNK 2048 //@kiln tune 1024 2048 4096

namespace cg = cooperative_groups;

__device__ __forceinline__ float warp_sum(float v)
{
    for (int off = 16; off > 0; off >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, off);
    return v;
}

extern "C" __global__ void __launch_bounds__(BLOCK)
sumsq(const kiln_t *x, float *ss, int cols)
{
    const kiln_t *xr = x + (size_t)blockIdx.y * cols;
    int c0 = blockIdx.x * CHUNK, c1 = min(c0 + CHUNK, cols);
    float s = 0.0f;
    for (int c = c0 + (int)threadIdx.x; c < c1; c += BLOCK) {
        float v = kiln_to_float(xr[c]);
        s += v * v;
    }
    s = warp_sum(s);
    if ((threadIdx.x & 31) == 0 && s != 0.0f)
        atomicAdd(&ss[blockIdx.y], s);
}

extern "C" __global__ void __launch_bounds__(BLOCK)
scale(const kiln_t *x, const kiln_t *w, kiln_t *y, const float *ss, int cols, float eps)
{
    extern __shared__ float row[];
    const kiln_t *xr = x + (size_t)blockIdx.x * cols;
    kiln_t *yr = y + (size_t)blockIdx.x * cols;
    for (int c = threadIdx.x; c < cols; c += BLOCK)
        row[c] = kiln_to_float(xr[c]);
    cg::this_thread_block().sync();
    const float scaled = rsqrtf(ss[blockIdx.x] / (float)cols + eps);
    for (int c = threadIdx.x; c < cols; c += BLOCK)
        yr[c] = kiln_from_float(row[c] * scaled * kiln_to_float(w[c]));
}

/*@kiln launch
{"launches": [{"kernel": "sumsq", "grid": ["2 * cdiv(cols, 2 * CHUNK)", "rows"],
               "block": ["BLOCK"], "cluster": [2, 1], "args": ["x", "ss", "cols"]},
              {"kernel":"scale", "grid": ["rows"], "block": ["BLOCK"],
               "smem": "cols * sizeof(f32)", "args": ["x", "w", "y", "ss", "cols", "eps"]}],
 "scratch": [{"name": "ss", "bytes": "max(rows, 1) * sizeof(f32)", "init": "zero"}]}
@*/
