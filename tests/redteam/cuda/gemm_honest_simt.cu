/* Honest: no tensor cores. Plain fp32 FMA, register-tiled: a block of 16 x 16 threads owns a 64 x 64 tile of c and each thread a 4 x 4 block of it (rows 4*ty.., columns 4*tx..), 16 accumulators in registers. K goes in steps of 16 through shared memory, stored k-major as fp32 (converted once on load) so the inner loop reads 4 a values and 4 b values with two 16-byte loads per k; loads past M, N or K are zero, so the K tail and any shape work. Each output is rounded once.
 * kiln-task: gemm
 * kiln-class: honest
 * kiln-dtype: bf16
 * kiln-expect: pass
 */
#include "kiln_cuda.h"

#define TILE 64      /* rows and columns of c per block */
#define TK 16        /* K per shared-memory step */
#define PAD 4        /* keeps rows 16-byte aligned, shifts banks between k rows */

extern "C" __global__ void __launch_bounds__(256)
gemm_bf16(const kiln_t *__restrict__ a, const kiln_t *__restrict__ b, kiln_t *__restrict__ c,
          int M, int N, int K)
{
    __shared__ __align__(16) float As[TK][TILE + PAD];   /* As[k][m] = a[m0 + m][k0 + k] */
    __shared__ __align__(16) float Bs[TK][TILE + PAD];   /* Bs[k][n] = b[n0 + n][k0 + k] */

    const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * 16 + tx;
    const int m0 = blockIdx.y * TILE, n0 = blockIdx.x * TILE;
    float acc[4][4];
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++)
            acc[i][j] = 0.0f;

    for (int k0 = 0; k0 < K; k0 += TK) {
        /* 64 x 16 elements of each operand, 4 per thread; 16 neighbouring
         * threads read 16 neighbouring k of one row */
#pragma unroll
        for (int p = 0; p < TILE * TK / 256; p++) {
            const int e = tid + p * 256, r = e / TK, kk = e % TK, gk = k0 + kk;
            const int gm = m0 + r, gn = n0 + r;
            As[kk][r] = gm < M && gk < K ? kiln_to_float(a[(size_t)gm * K + gk]) : 0.0f;
            Bs[kk][r] = gn < N && gk < K ? kiln_to_float(b[(size_t)gn * K + gk]) : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < TK; kk++) {
            const float4 av = *reinterpret_cast<const float4 *>(&As[kk][4 * ty]);
            const float4 bv = *reinterpret_cast<const float4 *>(&Bs[kk][4 * tx]);
            const float ar[4] = {av.x, av.y, av.z, av.w}, br[4] = {bv.x, bv.y, bv.z, bv.w};
#pragma unroll
            for (int i = 0; i < 4; i++)
#pragma unroll
                for (int j = 0; j < 4; j++)
                    acc[i][j] = fmaf(ar[i], br[j], acc[i][j]);
        }
        __syncthreads();   /* As and Bs are overwritten by the next step */
    }

#pragma unroll
    for (int i = 0; i < 4; i++) {
        const int gm = m0 + 4 * ty + i;
#pragma unroll
        for (int j = 0; j < 4; j++) {
            const int gn = n0 + 4 * tx + j;
            if (gm < M && gn < N)
                c[(size_t)gm * N + gn] = kiln_from_float(acc[i][j]);
        }
    }
}

/*@kiln launch
{"launches": [{"kernel": "gemm_bf16", "grid": ["cdiv(N, 64)", "cdiv(M, 64)"], "block": [16, 16], "smem": "0",
               "args": ["a", "b", "c", "M", "N", "K"]}],
 "scratch": []}
@*/
