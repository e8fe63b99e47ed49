/* cublas_gemm.c - the built-in cuBLAS baseline (see cublas_gemm.h).
 *
 * cuBLAS is opened with dlopen, only by a worker whose job names it: most
 * tasks never need it, its libraries are large (libcublasLt alone is about
 * 500 MB to map) and a GPU host may lack them, so linking it would slow
 * every worker's start and tie the worker to hosts that have it. The
 * function types come from cublas_v2.h, so the calls stay type-checked. */
#include "cublas_gemm.h"

#include <cublas_v2.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>

typedef struct cublas_api {
    void *lib;
    cublasHandle_t h;
    int version;
    __typeof__(&cublasCreate_v2) create;
    __typeof__(&cublasSetStream_v2) set_stream;
    __typeof__(&cublasSetWorkspace_v2) set_workspace;
    __typeof__(&cublasSetMathMode) set_math_mode;
    __typeof__(&cublasGetVersion_v2) get_version;
    __typeof__(&cublasGemmEx) gemm;
} cublas_api;

static cublas_api api;

static void *open_lib(void)
{
    static const char *const names[] = {
        "libcublas.so." KILN_CUBLAS_SOVERSION, KILN_CUDA_LIB_DIR "/libcublas.so." KILN_CUBLAS_SOVERSION,
        "libcublas.so", NULL,
    };
    for (int i = 0; names[i]; i++) {
        void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (h)
            return h;
    }
    return NULL;
}

#define LOAD(field, sym)                                                  \
    do {                                                                  \
        *(void **)&api.field = dlsym(api.lib, sym);                      \
        if (!api.field)                                                   \
            return snprintf(info, len, "cuBLAS lacks %s", sym), -1;       \
    } while (0)

int kiln_cublas_open(CUstream stream, CUdeviceptr workspace, size_t workspace_bytes, char *info,
                     size_t len)
{
    if (!(api.lib = open_lib()))
        return snprintf(info, len, "cannot load cuBLAS (libcublas.so.%s): %s",
                        KILN_CUBLAS_SOVERSION, dlerror()), -1;
    LOAD(create, "cublasCreate_v2");
    LOAD(set_stream, "cublasSetStream_v2");
    LOAD(set_workspace, "cublasSetWorkspace_v2");
    LOAD(set_math_mode, "cublasSetMathMode");
    LOAD(get_version, "cublasGetVersion_v2");
    LOAD(gemm, "cublasGemmEx");
    cublasStatus_t s = api.create(&api.h);
    if (s == CUBLAS_STATUS_SUCCESS)
        s = api.set_stream(api.h, (cudaStream_t)stream);
    /* A workspace of kiln's: without one cuBLAS may allocate inside the
     * timed region. */
    if (s == CUBLAS_STATUS_SUCCESS)
        s = api.set_workspace(api.h, (void *)(uintptr_t)workspace, workspace_bytes);
    if (s == CUBLAS_STATUS_SUCCESS)
        s = api.set_math_mode(api.h, CUBLAS_DEFAULT_MATH);
    if (s == CUBLAS_STATUS_SUCCESS)
        s = api.get_version(api.h, &api.version);
    if (s != CUBLAS_STATUS_SUCCESS)
        return snprintf(info, len, "cuBLAS set-up failed (status %d)", (int)s), -1;
    return 0;
}

int kiln_cublas_gemm_bf16(CUdeviceptr a, CUdeviceptr b, CUdeviceptr c, int M, int N, int K,
                          char *info, size_t len)
{
    /* cuBLAS is column-major: row-major c (M x N) is column-major c^T
     * (N x M) = b * a^T, where row-major b (N x K) read column-major is
     * b^T (K x N, so op T) and row-major a (M x K) is a^T (K x M, op N). */
    const float one = 1.0f, zero = 0.0f;
    cublasStatus_t s = api.gemm(api.h, CUBLAS_OP_T, CUBLAS_OP_N, N, M, K, &one,
                                (const void *)(uintptr_t)b, CUDA_R_16BF, K,
                                (const void *)(uintptr_t)a, CUDA_R_16BF, K, &zero,
                                (void *)(uintptr_t)c, CUDA_R_16BF, N, CUBLAS_COMPUTE_32F,
                                CUBLAS_GEMM_DEFAULT);
    if (s != CUBLAS_STATUS_SUCCESS)
        return snprintf(info, len, "cublasGemmEx failed (status %d) at M=%d N=%d K=%d", (int)s, M,
                        N, K), -1;
    return 0;
}

int kiln_cublas_version(void)
{
    return api.version;
}
