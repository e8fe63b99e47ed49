/* gemm CUDA starter: plain and correct, a search's start (the timing
 * baseline is cuBLAS). c = a * b^T with a M x K, b N x K, c M x N, all
 * row-major bf16. Tensor cores through WMMA: each block of 4 warps owns a
 * 64 x 64 tile of c, each warp a 32 x 32 quarter of it as 2 x 2 fragments of
 * 16 x 16 with fp32 accumulators. K is walked in steps of BK through shared
 * memory; every load is bounds-checked and zero-fills what lies past M, N or
 * K, so any M, N, K works (1, primes, K tails). 16-byte loads are used only
 * when K is a multiple of 8 and a, b are 16-byte aligned (then every row
 * starts aligned); otherwise element by element. The accumulators go through
 * shared memory (fp32) and each output is rounded to bf16 once. */
#include "kiln_cuda.h"
#include <mma.h>

#define BK 64 //@kiln tune 16 32 64
#define BM 64          /* rows of c per block */
#define BN 64          /* columns of c per block */
#define THREADS 128    /* 4 warps, 2 x 2 over the tile */
#define SKEW 8         /* kiln_t padding per shared row: ldm stays a multiple of 8
                        * elements (WMMA) and ldmatrix rows spread over the banks */
#define CSKEW 4        /* float padding of the staging tile (ldm a multiple of 4) */

using namespace nvcuda;

constexpr int VEC = 16 / sizeof(kiln_t);   /* elements per 16-byte load */

/* Load rows [r0, r0 + ROWS) x columns [k0, k0 + BK) of the row-major
 * rows x K matrix src into dst[ROWS][BK + SKEW], zero outside the matrix. */
template <int ROWS>
__device__ __forceinline__ void load_tile(kiln_t (*dst)[BK + SKEW], const kiln_t *src,
                                          int rows, int K, int r0, int k0, bool vec)
{
    if (vec) {
        /* K % VEC == 0 and k0 % VEC == 0: a vector is wholly inside or outside */
        for (int i = threadIdx.x; i < ROWS * BK / VEC; i += THREADS) {
            const int r = i / (BK / VEC), kk = (i % (BK / VEC)) * VEC;
            const int gr = r0 + r, gk = k0 + kk;
            uint4 v = make_uint4(0u, 0u, 0u, 0u);
            if (gr < rows && gk < K)
                v = *reinterpret_cast<const uint4 *>(src + (size_t)gr * K + gk);
            *reinterpret_cast<uint4 *>(&dst[r][kk]) = v;
        }
    } else {
        const kiln_t zero = kiln_from_float(0.0f);
        for (int i = threadIdx.x; i < ROWS * BK; i += THREADS) {
            const int r = i / BK, kk = i % BK;
            const int gr = r0 + r, gk = k0 + kk;
            dst[r][kk] = (gr < rows && gk < K) ? src[(size_t)gr * K + gk] : zero;
        }
    }
}

extern "C" __global__ void __launch_bounds__(THREADS)
gemm_bf16(const kiln_t *__restrict__ a, const kiln_t *__restrict__ b, kiln_t *__restrict__ c,
          int M, int N, int K)
{
    __shared__ __align__(128) kiln_t As[BM][BK + SKEW];   /* a tile, row-major (m, k) */
    __shared__ __align__(128) kiln_t Bs[BN][BK + SKEW];   /* b tile (n, k): col-major k x n */
    __shared__ __align__(128) float Cs[BM][BN + CSKEW];   /* accumulators, for the bf16 store */

    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const int warp = threadIdx.x >> 5;
    const int wm = (warp >> 1) * 32, wn = (warp & 1) * 32;   /* the warp's quarter */
    const bool vec = K % VEC == 0 &&
                     (((unsigned long long)a | (unsigned long long)b) & 15) == 0;

    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][2];
#pragma unroll
    for (int i = 0; i < 2; i++)
#pragma unroll
        for (int j = 0; j < 2; j++)
            wmma::fill_fragment(acc[i][j], 0.0f);

    for (int k0 = 0; k0 < K; k0 += BK) {
        load_tile<BM>(As, a, M, K, m0, k0, vec);
        load_tile<BN>(Bs, b, N, K, n0, k0, vec);
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, kiln_t, wmma::row_major> fa[2];
            wmma::fragment<wmma::matrix_b, 16, 16, 16, kiln_t, wmma::col_major> fb[2];
#pragma unroll
            for (int i = 0; i < 2; i++)
                wmma::load_matrix_sync(fa[i], &As[wm + 16 * i][kk], BK + SKEW);
#pragma unroll
            for (int j = 0; j < 2; j++)
                wmma::load_matrix_sync(fb[j], &Bs[wn + 16 * j][kk], BK + SKEW);
#pragma unroll
            for (int i = 0; i < 2; i++)
#pragma unroll
                for (int j = 0; j < 2; j++)
                    wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
        }
        __syncthreads();   /* As and Bs are overwritten by the next step */
    }

#pragma unroll
    for (int i = 0; i < 2; i++)
#pragma unroll
        for (int j = 0; j < 2; j++)
            wmma::store_matrix_sync(&Cs[wm + 16 * i][wn + 16 * j], acc[i][j], BN + CSKEW,
                                    wmma::mem_row_major);
    __syncthreads();
    for (int i = threadIdx.x; i < BM * BN; i += THREADS) {
        const int r = i / BN, col = i % BN;
        const int gm = m0 + r, gn = n0 + col;
        if (gm < M && gn < N)
            c[(size_t)gm * N + gn] = kiln_from_float(Cs[r][col]);
    }
}

/*@kiln launch
{"launches": [{"kernel": "gemm_bf16", "grid": ["cdiv(N, 64)", "cdiv(M, 64)"], "block": [128], "smem": "0",
               "args": ["a", "b", "c", "M", "N", "K"]}],
 "scratch": []}
@*/
