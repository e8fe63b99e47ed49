// layernorm_smem.cu - layer normalisation with a shared-memory reduction
// sized by the launch: the block is a multiple of 32 up to THREADS and the
// dynamic shared memory holds one float per thread. (A kiln import
// fixture: kiln import layernorm_smem.cu --task layernorm.)
#include <cuda_runtime.h>
#include <cstdio>
#include <algorithm>

#define THREADS 256

static inline int ceil_div(int a, int b) { return (a + b - 1) / b; }

// The sum of v over the block, in red[0]; any block size.
__device__ float block_sum(float v, float* red)
{
    red[threadIdx.x] = v;
    __syncthreads();
    for (int stride = 1; stride < blockDim.x; stride *= 2) {
        if (threadIdx.x % (2 * stride) == 0 && threadIdx.x + stride < blockDim.x)
            red[threadIdx.x] += red[threadIdx.x + stride];
        __syncthreads();
    }
    float sum = red[0];
    __syncthreads();
    return sum;
}

__global__ void layernorm_kernel(const float* __restrict__ x, const float* __restrict__ gamma,
                                 const float* __restrict__ beta, float* __restrict__ y,
                                 int cols, float eps)
{
    extern __shared__ float red[];   // blockDim.x floats
    const float* xr = x + (size_t)blockIdx.x * cols;
    float* yr = y + (size_t)blockIdx.x * cols;
    float s = 0.f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        s += xr[c];
    float mean = block_sum(s, red) / cols;
    float v = 0.f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        v += (xr[c] - mean) * (xr[c] - mean);
    float rstd = rsqrtf(block_sum(v, red) / cols + eps);
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        yr[c] = (xr[c] - mean) * rstd * gamma[c] + beta[c];
}

void layernorm_forward(const float* x, const float* gamma, const float* beta, float* y,
                       int rows, int cols, float eps, cudaStream_t stream)
{
    if (rows == 0 || cols == 0)
        return;
    const int threads = std::min(THREADS, ceil_div(cols, 32) * 32);
    dim3 block(threads);
    dim3 grid(rows);
    size_t smem = block.x * sizeof(float);
    layernorm_kernel<<<grid, block, smem, stream>>>(x, gamma, beta, y, cols, eps);
    cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess)
        fprintf(stderr, "layernorm_kernel: %s\n", cudaGetErrorString(err));
}
