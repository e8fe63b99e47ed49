/* gemm reference: trusted, run by kiln in a CUDA worker of its own (never
 * the candidate's), on doubles. The inputs it gets are the exact values of
 * the candidate's bf16 inputs, so every product is exact in double and the
 * sum's rounding error (about K * 2^-53 relative) is far below half an ulp
 * of the bf16 output: the gold is the true product for all purposes. Kept
 * plain on purpose (16 x 16 tiles through shared memory, one output per
 * thread); its speed only matters to how long a verification takes. */
#include "kiln_cuda.h"

#define TILE 16

extern "C" __global__ void __launch_bounds__(TILE * TILE)
gemm_ref(const double *a, const double *b, double *c, long long M, long long N, long long K)
{
    __shared__ double as[TILE][TILE + 1], bs[TILE][TILE + 1];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const long long m = (long long)blockIdx.y * TILE + ty, n = (long long)blockIdx.x * TILE + tx;
    const long long nb = (long long)blockIdx.x * TILE + ty;   /* the row of b this thread loads */
    double acc = 0.0;
    for (long long k0 = 0; k0 < K; k0 += TILE) {
        const long long k = k0 + tx;
        as[ty][tx] = m < M && k < K ? a[m * K + k] : 0.0;
        bs[ty][tx] = nb < N && k < K ? b[nb * K + k] : 0.0;
        __syncthreads();
        for (int i = 0; i < TILE; i++)
            acc += as[ty][i] * bs[tx][i];
        __syncthreads();
    }
    if (m < M && n < N)
        c[m * N + n] = acc;
}

/*@kiln launch
{"launches": [{"kernel": "gemm_ref", "grid": ["(N + 15) / 16", "(M + 15) / 16"],
               "block": ["16", "16"], "smem": "0", "args": ["a", "b", "c", "M", "N", "K"]}],
 "scratch": []}
@*/
