/* cublas_gemm.h - the built-in cuBLAS baseline of the CUDA worker: c = a * b^T
 * for row-major bf16 a (M x K), b (N x K) and c (M x N), fp32 accumulation,
 * on the worker's stream, inside its timed region like any candidate. */
#ifndef KILN_CUBLAS_GEMM_H
#define KILN_CUBLAS_GEMM_H

#include <cuda.h>
#include <stddef.h>

/* Load cuBLAS (dlopen), make a handle on stream with a fixed workspace so
 * no call allocates. 0, or -1 with info filled. */
int kiln_cublas_open(CUstream stream, CUdeviceptr workspace, size_t workspace_bytes, char *info,
                     size_t len);

/* Enqueue one gemm; does not wait. 0, or -1 with info filled. */
int kiln_cublas_gemm_bf16(CUdeviceptr a, CUdeviceptr b, CUdeviceptr c, int M, int N, int K,
                          char *info, size_t len);

/* cuBLAS's version (e.g. 130100), 0 before kiln_cublas_open. */
int kiln_cublas_version(void);

#endif
