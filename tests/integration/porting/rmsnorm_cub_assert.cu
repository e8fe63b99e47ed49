/* Porting fixture: a block reduction with cub::BlockReduce and a device
 * assert on the launch shape, as production kernels state what they
 * assume. The assert never fires; the kernel is judged on its merits. */
#include "kiln_cuda.h"
#include <cassert>
#include <cub/block/block_reduce.cuh>

#define BLOCK 256 //@kiln tune 128 256 512 1024

extern "C" __global__ void __launch_bounds__(BLOCK)
rmsnorm_cub(const kiln_t *x, const kiln_t *w, kiln_t *y, int cols, float eps)
{
    assert(blockDim.x == BLOCK);
    using BlockReduce = cub::BlockReduce<float, BLOCK>;
    __shared__ typename BlockReduce::TempStorage tmp;
    __shared__ float inv;
    const kiln_t *xr = x + (size_t)blockIdx.x * cols;
    kiln_t *yr = y + (size_t)blockIdx.x * cols;
    float ss = 0.0f;
    for (int c = threadIdx.x; c < cols; c += BLOCK) {
        float v = kiln_to_float(xr[c]);
        ss += v * v;
    }
    float total = BlockReduce(tmp).Sum(ss);
    if (threadIdx.x == 0)
        inv = rsqrtf(total / (float)cols + eps);
    __syncthreads();
    for (int c = threadIdx.x; c < cols; c += BLOCK)
        yr[c] = kiln_from_float(kiln_to_float(xr[c]) * inv * kiln_to_float(w[c]));
}

/*@kiln launch
{"launches": [{"kernel": "rmsnorm_cub", "grid": ["rows"], "block": ["BLOCK"], "smem": 0,
               "args": ["x", "w", "y", "cols", "eps"]}],
 "scratch": []}
@*/
