// fail_query.cu - the grid is sized from the device's SM count, a runtime
// query the manifest has no form for. (A kiln import fixture: import
// refuses it, naming line 34.)
#include <cuda_runtime.h>
#include <algorithm>

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

void rmsnorm(float* out, const float* in, const float* w, float eps, int rows, int cols,
             cudaStream_t s)
{
    int dev = 0, sms = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    int blocks = std::min(rows, sms * 4);
    rms_kernel<<<blocks, 256, 0, s>>>(out, in, w, eps, cols);
}
