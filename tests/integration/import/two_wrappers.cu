// two_wrappers.cu - two host functions that launch the same kernel: one
// sized for decode (one warp per row), one for prefill; import needs
// --function to pick one. The prefill wrapper's pointers are not
// const-qualified, so they map by --map. (A kiln import fixture.)
#include <cuda_runtime.h>

#define WARP 32

__global__ void rms_kernel(float* __restrict__ out, const float* __restrict__ in,
                           const float* __restrict__ w, float eps, int cols)
{
    __shared__ float part[32];
    const float* x = in + (size_t)blockIdx.x * cols;
    float* y = out + (size_t)blockIdx.x * cols;
    float ss = 0.f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        ss += x[c] * x[c];
    for (int off = 16; off > 0; off >>= 1)
        ss += __shfl_xor_sync(0xffffffffu, ss, off);
    if ((threadIdx.x & 31) == 0)
        part[threadIdx.x >> 5] = ss;
    __syncthreads();
    ss = 0.f;
    for (int k = 0; k < (int)((blockDim.x + 31) >> 5); k++)
        ss += part[k];
    float inv = rsqrtf(ss / cols + eps);
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        y[c] = x[c] * inv * w[c];
}

void rmsnorm_decode(float* out, const float* in, const float* w, float eps, int rows,
                    int cols)
{
    rms_kernel<<<rows, WARP>>>(out, in, w, eps, cols);
}

void rmsnorm_prefill(float* dst, float* src, float* gain, float eps, int rows, int cols)
{
    const int warps = cols >= 4096 ? 16 : 8;
    rms_kernel<<<rows, warps * WARP, 0, 0>>>(dst, src, gain, eps, cols);
}
