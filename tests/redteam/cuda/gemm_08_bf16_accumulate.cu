/* Precision downgrade: one thread per output with a bf16 running sum (__hfma), where the task wants fp32 accumulation. At K = 1000 the sums reach tens, where a bf16 ulp is 0.125 to 0.25, so each add's rounding (about 0.06) random-walks to an error near 2 over the row, against a budget of about 1.6 bf16 ulps of max(|gold|, gmax/256): caught on the smoke shape (prefill v5, 200x3000x1000).
 * kiln-task: gemm
 * kiln-class: 8
 * kiln-dtype: bf16
 * kiln-expect: fail
 * kiln-stages: smoke visible
 * kiln-codes: wrong-output
 */
#include "kiln_cuda.h"

#define BLOCK 256 //@kiln tune 128 256

extern "C" __global__ void gemm_bf16(const kiln_t *a, const kiln_t *b, kiln_t *c, int M, int N, int K)
{
    const int n = blockIdx.x * blockDim.x + threadIdx.x;
    const int m = blockIdx.y;
    if (n >= N || m >= M)
        return;
    const kiln_t *ar = a + (size_t)m * K;
    const kiln_t *br = b + (size_t)n * K;
    __nv_bfloat16 acc = __float2bfloat16_rn(0.0f);
    for (int k = 0; k < K; k++)
        acc = __hfma(__float2bfloat16_rn(kiln_to_float(ar[k])), __float2bfloat16_rn(kiln_to_float(br[k])), acc);
    c[(size_t)m * N + n] = kiln_from_float(__bfloat162float(acc));
}

/*@kiln launch
{"launches": [{"kernel": "gemm_bf16", "grid": ["cdiv(N, BLOCK)", "M"], "block": ["BLOCK"], "smem": "0",
               "args": ["a", "b", "c", "M", "N", "K"]}],
 "scratch": []}
@*/
