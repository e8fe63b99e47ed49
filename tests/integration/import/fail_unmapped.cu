// fail_unmapped.cu - a wrapper over (batch, seq, hidden) where the task
// has (rows, cols): 'batch', 'seq' and 'hidden' have no counterpart among
// the task's dims, so the grid and the cols argument cannot be mapped
// (--map hidden=cols maps one). Its helper header is another file. (A
// kiln import fixture.)
#include <cuda_runtime.h>
#include "norm_utils.h"

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

void rmsnorm(float* out, const float* in, const float* w, int batch, int seq, int hidden,
             float eps, cudaStream_t s)
{
    rms_kernel<<<batch * seq, 256, 0, s>>>(out, in, w, eps, hidden);
}
