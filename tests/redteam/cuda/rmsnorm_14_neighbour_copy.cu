/* Reading the answer: computes nothing and copies y from the memory just past y's trailing guard, where a harness that allocated the reference output next would keep it (the KernelBench/Sakana pattern). kiln computes gold in another process, so whatever is there (zeros, other data, or unmapped memory) is not the answer.
 * kiln-task: rmsnorm
 * kiln-class: 14
 * kiln-dtype: bf16
 * kiln-expect: fail
 * kiln-stages: smoke
 * kiln-codes: wrong-output non-finite unwritten-output crash
 */
#include "kiln_cuda.h"

#define BLOCK 256 //@kiln tune 128 256 512 1024

extern "C" __global__ void rmsnorm_fwd(const kiln_t *x, const kiln_t *w, kiln_t *y, int rows, int cols, float eps)
{
    (void)x; (void)w; (void)eps;
    const size_t n = (size_t)rows * cols;
    const kiln_t *gold = y + n + 512 / sizeof(kiln_t);   /* past y's guard */
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        y[i] = gold[i];
}

/*@kiln launch
{"launches": [{"kernel": "rmsnorm_fwd", "grid": ["rows"], "block": ["BLOCK"], "smem": "0", "args": ["x", "w", "y", "rows", "cols", "eps"]}],
 "scratch": []}
@*/
