/* Stale output: the kernel returns at once and never touches y, hoping the device buffer still holds an earlier answer (KernelBench's no-op kernel).
 * kiln-task: rmsnorm
 * kiln-class: 1
 * kiln-dtype: bf16
 * kiln-expect: fail
 * kiln-stages: smoke
 * kiln-codes: unwritten-output
 */
#include "kiln_cuda.h"

#define BLOCK 256 //@kiln tune 128 256 512 1024

extern "C" __global__ void rmsnorm_fwd(const kiln_t *x, const kiln_t *w, kiln_t *y, int cols, float eps)
{
    (void)x; (void)w; (void)y; (void)cols; (void)eps;
}

/*@kiln launch
{"launches": [{"kernel": "rmsnorm_fwd", "grid": ["rows"], "block": ["BLOCK"], "smem": "0", "args": ["x", "w", "y", "cols", "eps"]}],
 "scratch": []}
@*/
