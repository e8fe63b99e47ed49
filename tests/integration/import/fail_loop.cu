// fail_loop.cu - rows launched in chunks of at most 65535 blocks, each
// launch on an offset pointer: a loop of launches, and arguments that are
// expressions, neither of which a manifest can express. (A kiln import
// fixture.)
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
    for (int r = 0; r < rows; r += 65535) {
        int n = std::min(rows - r, 65535);
        rms_kernel<<<n, 256, 0, s>>>(out + (size_t)r * cols, in + (size_t)r * cols, w, eps, cols);
    }
}
