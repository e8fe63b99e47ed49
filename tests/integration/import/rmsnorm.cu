// rmsnorm.cu - RMS normalisation as a library ships it: a kernel, and a host
// wrapper that sizes the launch from the tensor shape and runs it on the
// caller's stream. (A kiln import fixture: kiln import rmsnorm.cu --task rmsnorm.)
#include <cuda_runtime.h>
#include <algorithm>

__device__ __forceinline__ float warp_sum(float v)
{
    for (int off = 16; off > 0; off >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, off);
    return v;
}

// One block per row; any block size up to 1024.
__global__ void rms_kernel(float* __restrict__ out, const float* __restrict__ in,
                           const float* __restrict__ w, float eps, int cols)
{
    __shared__ float part[32];
    const float* x = in + (size_t)blockIdx.x * cols;
    float* y = out + (size_t)blockIdx.x * cols;
    float ss = 0.f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        ss += x[c] * x[c];
    ss = warp_sum(ss);
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = (blockDim.x + 31) >> 5;
    if (lane == 0)
        part[warp] = ss;
    __syncthreads();
    ss = warp_sum(lane < nwarps ? part[lane] : 0.f);
    float inv = rsqrtf(ss / cols + eps);
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        y[c] = x[c] * inv * w[c];
}

void rmsnorm(float* out, const float* in, const float* w, float eps, int rows, int cols,
             cudaStream_t s)
{
    dim3 grid(rows);
    dim3 block(std::min(cols, 1024));
    rms_kernel<<<grid, block, 0, s>>>(out, in, w, eps, cols);
}
