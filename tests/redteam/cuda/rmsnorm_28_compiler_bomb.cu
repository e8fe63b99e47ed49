/* Compiler bomb: macros that expand a string literal to gigabytes, so NVRTC,
 * not the kernel, eats the machine. NVRTC runs in a child process of the
 * worker with 2 GiB of data and 30 s (as the C compiler does): the verdict
 * names the limit.
 * kiln-task: rmsnorm
 * kiln-class: 28
 * kiln-dtype: bf16
 * kiln-expect: fail
 * kiln-stages: compile
 * kiln-codes: resource-limit
 */
#include "kiln_cuda.h"

#define A(x) x x x x x x x x x x
#define B(x) A(A(A(A(x))))
#define C(x) B(B(x))
__device__ const char blob[] = C("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");

extern "C" __global__ void rmsnorm_fwd(const kiln_t *x, const kiln_t *w, kiln_t *y, int cols, float eps)
{
    (void)x; (void)w; (void)eps;
    const size_t r = blockIdx.x;
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        y[r * (size_t)cols + c] = kiln_from_float((float)blob[c % 64]);
}

/*@kiln launch
{"launches": [{"kernel": "rmsnorm_fwd", "grid": ["rows"], "block": ["256"], "smem": "0", "args": ["x", "w", "y", "cols", "eps"]}],
 "scratch": []}
@*/
