/* Porting fixture: kernels in an extern "C" { } block, as llm.c writes
 * them, with a helper of its own inside the block. One warp per row. */
#include "kiln_cuda.h"

extern "C" {

__device__ float warp_reduce_sum(float val)
{
    for (int offset = 16; offset > 0; offset /= 2)
        val += __shfl_xor_sync(0xFFFFFFFF, val, offset);
    return val;
}

__global__ void rmsnorm_forward_kernel(kiln_t *out, const kiln_t *inp, const kiln_t *weight,
                                       int N, int C, float eps)
{
    int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32;
    int lane = threadIdx.x % 32;
    if (warp >= N)
        return;
    const kiln_t *x = inp + (size_t)warp * C;
    float sum = 0.0f;
    for (int i = lane; i < C; i += 32) {
        float v = kiln_to_float(x[i]);
        sum += v * v;
    }
    sum = warp_reduce_sum(sum);
    float s = rsqrtf(sum / C + eps);
    kiln_t *o = out + (size_t)warp * C;
    for (int i = lane; i < C; i += 32)
        o[i] = kiln_from_float(kiln_to_float(x[i]) * s * kiln_to_float(weight[i]));
}

}   /* extern "C" */

/*@kiln launch
{"launches": [{"kernel": "rmsnorm_forward_kernel", "grid": ["(rows * 32 + 255) / 256"],
               "block": [256], "smem": 0, "args": ["y", "x", "w", "rows", "cols", "eps"]}],
 "scratch": []}
@*/
