/* Constant output: writes 1/cols everywhere (every row sums to 1, each value is small), hoping for a loose absolute tolerance.
 * kiln-task: softmax
 * kiln-class: 9
 * kiln-dtype: f32
 * kiln-expect: fail
 * kiln-stages: smoke
 * kiln-codes: wrong-output
 */
#include "kiln_cuda.h"

#define BLOCK 256 //@kiln tune 128 256 512 1024

extern "C" __global__ void softmax_fwd(const kiln_t *x, kiln_t *y, int cols)
{
    (void)x;
    kiln_t *yr = y + (size_t)blockIdx.x * cols;
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        yr[c] = kiln_from_float(1.0f / (float)cols);
}

/*@kiln launch
{"launches": [{"kernel": "softmax_fwd", "grid": ["rows"], "block": ["BLOCK"], "smem": "0", "args": ["x", "y", "cols"]}],
 "scratch": []}
@*/
