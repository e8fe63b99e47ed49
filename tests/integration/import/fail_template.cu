// fail_template.cu - a host template that launches the kernel's instance
// for its own type parameter: no concrete instance is named, so none can
// be made extern "C". The wrapper also makes a stream of its own and
// clears the output first: host work a manifest cannot express. (A kiln
// import fixture.)
#include <cuda_runtime.h>

template <typename T>
__global__ void rms_kernel(T* __restrict__ out, const T* __restrict__ in,
                           const T* __restrict__ w, float eps, int cols)
{
    const T* x = in + (size_t)blockIdx.x * cols;
    T* y = out + (size_t)blockIdx.x * cols;
    float ss = 0.f;
    for (int c = 0; c < cols; c++)
        ss += (float)x[c] * (float)x[c];
    float inv = rsqrtf(ss / cols + eps);
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        y[c] = (T)((float)x[c] * inv * (float)w[c]);
}

template <typename T>
void rmsnorm(T* out, const T* in, const T* w, float eps, int rows, int cols)
{
    cudaStream_t s;
    cudaStreamCreate(&s);
    cudaMemsetAsync(out, 0, sizeof(T) * rows * cols, s);
    rms_kernel<T><<<rows, 256, 0, s>>>(out, in, w, eps, cols);
}
