/* Truncation: the starter's WMMA tiling with K walked only in whole steps of 16 (no K bounds check, "K is a multiple of 16 in practice"), so the last K % 16 products are dropped. Right on visible v1..v4 and v6; the smoke shape is the smallest visible one by M*N*K, prefill v5 (200x3000x1000, K = 62*16 + 8): 8 of 1000 products missing is an error of about sqrt(8) against outputs of about 32, far over budget (visible lists the same v5, should smoke ever take another shape).
 * kiln-task: gemm
 * kiln-class: 2
 * kiln-dtype: bf16
 * kiln-expect: fail
 * kiln-stages: smoke visible
 * kiln-codes: wrong-output
 */
#include "kiln_cuda.h"
#include <mma.h>

#define BM 64
#define BN 64
#define BK 16
#define THREADS 128
#define SKEW 8

using namespace nvcuda;

constexpr int VEC = 16 / sizeof(kiln_t);

/* Rows [r0, r0 + ROWS) x columns [k0, k0 + 16) of src (row-major, rows x K);
 * rows past the matrix read as zero, but K is never checked. */
template <int ROWS>
__device__ __forceinline__ void load_tile(kiln_t (*dst)[BK + SKEW], const kiln_t *src,
                                          int rows, int K, int r0, int k0, bool vec)
{
    if (vec) {
        for (int i = threadIdx.x; i < ROWS * BK / VEC; i += THREADS) {
            const int r = i / (BK / VEC), kk = (i % (BK / VEC)) * VEC;
            uint4 v = make_uint4(0u, 0u, 0u, 0u);
            if (r0 + r < rows)
                v = *reinterpret_cast<const uint4 *>(src + (size_t)(r0 + r) * K + k0 + kk);
            *reinterpret_cast<uint4 *>(&dst[r][kk]) = v;
        }
    } else {
        for (int i = threadIdx.x; i < ROWS * BK; i += THREADS) {
            const int r = i / BK, kk = i % BK;
            dst[r][kk] = r0 + r < rows ? src[(size_t)(r0 + r) * K + k0 + kk] : kiln_from_float(0.0f);
        }
    }
}

extern "C" __global__ void __launch_bounds__(THREADS)
gemm_bf16(const kiln_t *__restrict__ a, const kiln_t *__restrict__ b, kiln_t *__restrict__ c,
          int M, int N, int K)
{
    __shared__ __align__(128) kiln_t As[BM][BK + SKEW];
    __shared__ __align__(128) kiln_t Bs[BN][BK + SKEW];
    __shared__ __align__(128) float Cs[BM][BN + 4];

    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const int warp = threadIdx.x >> 5;
    const int wm = (warp >> 1) * 32, wn = (warp & 1) * 32;
    const bool vec = K % VEC == 0 && (((unsigned long long)a | (unsigned long long)b) & 15) == 0;

    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][2];
#pragma unroll
    for (int i = 0; i < 2; i++)
#pragma unroll
        for (int j = 0; j < 2; j++)
            wmma::fill_fragment(acc[i][j], 0.0f);

    for (int k0 = 0; k0 + BK <= K; k0 += BK) {   /* the K tail never comes */
        load_tile<BM>(As, a, M, K, m0, k0, vec);
        load_tile<BN>(Bs, b, N, K, n0, k0, vec);
        __syncthreads();
        wmma::fragment<wmma::matrix_a, 16, 16, 16, kiln_t, wmma::row_major> fa[2];
        wmma::fragment<wmma::matrix_b, 16, 16, 16, kiln_t, wmma::col_major> fb[2];
#pragma unroll
        for (int i = 0; i < 2; i++)
            wmma::load_matrix_sync(fa[i], &As[wm + 16 * i][0], BK + SKEW);
#pragma unroll
        for (int j = 0; j < 2; j++)
            wmma::load_matrix_sync(fb[j], &Bs[wn + 16 * j][0], BK + SKEW);
#pragma unroll
        for (int i = 0; i < 2; i++)
#pragma unroll
            for (int j = 0; j < 2; j++)
                wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
        __syncthreads();
    }

#pragma unroll
    for (int i = 0; i < 2; i++)
#pragma unroll
        for (int j = 0; j < 2; j++)
            wmma::store_matrix_sync(&Cs[wm + 16 * i][wn + 16 * j], acc[i][j], BN + 4, wmma::mem_row_major);
    __syncthreads();
    for (int i = threadIdx.x; i < BM * BN; i += THREADS) {
        const int r = i / BN, col = i % BN;
        if (m0 + r < M && n0 + col < N)
            c[(size_t)(m0 + r) * N + n0 + col] = kiln_from_float(Cs[r][col]);
    }
}

/*@kiln launch
{"launches": [{"kernel": "gemm_bf16", "grid": ["cdiv(N, 64)", "cdiv(M, 64)"], "block": [128], "smem": "0",
               "args": ["a", "b", "c", "M", "N", "K"]}],
 "scratch": []}
@*/
