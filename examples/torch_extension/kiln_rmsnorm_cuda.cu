// kiln_rmsnorm_cuda.cu - the CUDA half of the PyTorch extension: the one
// .cu file that includes the kiln export (kiln_rmsnorm_bf16.cuh), behind a
// plain C++ function so the binding (kiln_rmsnorm.cpp) needs no CUDA
// types. nvcc builds it; it includes nothing of torch.
#include "kiln_rmsnorm_bf16.cuh"

size_t kiln_example_scratch_bytes(int rows, int cols)
{
    return kiln_rmsnorm_bf16_scratch_bytes(rows, cols);
}

// 0, or the CUDA error's text.
const char *kiln_example_rmsnorm(const void *x, const void *w, void *y, int rows, int cols, float eps,
                                 void *scratch, void *stream)
{
    cudaError_t e = kiln_rmsnorm_bf16(static_cast<const kiln_t *>(x), static_cast<const kiln_t *>(w),
                                      static_cast<kiln_t *>(y), rows, cols, eps, scratch,
                                      static_cast<cudaStream_t>(stream));
    return e == cudaSuccess ? nullptr : cudaGetErrorString(e);
}
