// softmax_vec.cu - row softmax, templated on the vector width and launched
// as one concrete instance (kVec = 1): kiln import copies softmax_kernel<1>
// out as an extern "C" kernel, softmax_kernel_1. (A kiln import fixture:
// kiln import softmax_vec.cu --task softmax.)
#include <cuda_runtime.h>

template <int VEC>
__global__ void softmax_kernel(const float* __restrict__ in, float* __restrict__ out, int cols)
{
    __shared__ float red[32];
    const float* x = in + (size_t)blockIdx.x * cols;
    float* y = out + (size_t)blockIdx.x * cols;
    float m = -3.402823466e38f;   // -FLT_MAX
    for (int c = threadIdx.x * VEC; c < cols; c += blockDim.x * VEC)
        for (int v = 0; v < VEC; v++)
            m = fmaxf(m, x[c + v]);
    for (int off = 16; off > 0; off >>= 1)
        m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));
    if ((threadIdx.x & 31) == 0)
        red[threadIdx.x >> 5] = m;
    __syncthreads();
    m = red[0];
    for (int w = 1; w < (int)(blockDim.x >> 5); w++)
        m = fmaxf(m, red[w]);
    __syncthreads();
    float s = 0.f;
    for (int c = threadIdx.x * VEC; c < cols; c += blockDim.x * VEC)
        for (int v = 0; v < VEC; v++)
            s += __expf(x[c + v] - m);
    for (int off = 16; off > 0; off >>= 1)
        s += __shfl_xor_sync(0xffffffffu, s, off);
    if ((threadIdx.x & 31) == 0)
        red[threadIdx.x >> 5] = s;
    __syncthreads();
    s = 0.f;
    for (int w = 0; w < (int)(blockDim.x >> 5); w++)
        s += red[w];
    for (int c = threadIdx.x * VEC; c < cols; c += blockDim.x * VEC)
        for (int v = 0; v < VEC; v++)
            y[c + v] = __expf(x[c + v] - m) / s;
}

void softmax(const float* in, float* out, int rows, int cols, cudaStream_t stream)
{
    constexpr int kVec = 1;
    const int threads = 256;
    softmax_kernel<kVec><<<rows, threads, 0, stream>>>(in, out, cols);
}
