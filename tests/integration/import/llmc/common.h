// common.h - a kiln import fixture in the shape of llm.c's dev/cuda/common.h
// (written for kiln's tests, not copied): what every dev/cuda kernel file
// includes, device helpers and host utilities together. Host includes,
// host globals (the device properties, cuBLAS handles), error checking,
// random data, validation against a CPU reference and a benchmark loop sit
// beside ceil_div (host and device), the warp and block reductions and a
// 128-bit packed type the kernels use.
#include <stdlib.h>
#include <stdio.h>
#include <cuda_runtime.h>
#include <cublas_v2.h>
#include <cublasLt.h>
#include <float.h>

#define WARP_SIZE 32U
extern cudaDeviceProp deviceProp;

template <class T>
__host__ __device__ T ceil_div(T dividend, T divisor) {
    return (dividend + divisor - 1) / divisor;
}

__device__ float warpReduceSum(float val) {
    for (int offset = 16; offset > 0; offset /= 2)
        val += __shfl_xor_sync(0xFFFFFFFF, val, offset);
    return val;
}

// A sum over the whole block through shared memory; every warp must be full.
using reduction_func_t = float (*)(float);

template <reduction_func_t warp_reduction>
__device__ inline float blockReduce(float val, bool final_sync = false, float out_of_bounds = 0.0f) {
    __shared__ float shared_val[WARP_SIZE];
    const int lane_id = threadIdx.x % WARP_SIZE;
    const int warp_id = threadIdx.x / WARP_SIZE;
    const int num_warps = blockDim.x / WARP_SIZE;
    float warp_val = warp_reduction(val);
    if (lane_id == 0) shared_val[warp_id] = warp_val;
    __syncthreads();
    warp_val = (lane_id < num_warps) ? shared_val[lane_id] : out_of_bounds;
    float block_val = warp_reduction(warp_val);
    if (final_sync) __syncthreads();
    return block_val;
}

// ----------------------------------------------------------------------------
// checking utils

void cuda_check(cudaError_t error, const char *file, int line) {
    if (error != cudaSuccess) {
        printf("[CUDA ERROR] at file %s:%d:\n%s\n", file, line, cudaGetErrorString(error));
        exit(EXIT_FAILURE);
    }
};
#define cudaCheck(err) (cuda_check(err, __FILE__, __LINE__))

void cublasCheck(cublasStatus_t status, const char *file, int line) {
    if (status != CUBLAS_STATUS_SUCCESS) {
        printf("[cuBLAS ERROR]: %d %s %d\n", status, file, line);
        exit(EXIT_FAILURE);
    }
}
#define cublasCheck(status) { cublasCheck((status), __FILE__, __LINE__); }

// set up by setup_main
static size_t cublaslt_workspace_size = 32 * 1024 * 1024;
static void* cublaslt_workspace = NULL;
cublasHandle_t cublas_handle;
int cuda_arch_major = 0;
int cuda_num_SMs = 0;

// ----------------------------------------------------------------------------
// 16 bytes of any element type, loaded and stored as one int4

template <class ElementType>
struct alignas(16) Packed128 {
    Packed128() = default;
    __device__ explicit Packed128(int4 bits) {
        static_assert(sizeof(bits) == sizeof(payload), "size mismatch");
        memcpy(&payload, &bits, sizeof(bits));
    }
    __device__ ElementType& operator[](int index) { return payload[index]; }
    __device__ const ElementType& operator[](int index) const { return payload[index]; }
    __device__ int4 get_bits() const {
        int4 bits;
        memcpy(&bits, &payload, sizeof(bits));
        return bits;
    }
    static constexpr const int size = sizeof(int4) / sizeof(ElementType);
    ElementType payload[size];
};
typedef Packed128<float> f128;

template <class ElementType>
__device__ Packed128<ElementType> load128cs(const ElementType* address) {
    return Packed128<ElementType>{__ldcs(reinterpret_cast<const int4*>(address))};
}
template <class ElementType>
__device__ void store128cs(ElementType* target, Packed128<ElementType> value) {
    __stcs(reinterpret_cast<int4*>(target), value.get_bits());
}

// ----------------------------------------------------------------------------
// random utils

float* make_random_float(size_t N) {
    float* arr = (float*)malloc(N * sizeof(float));
    for (size_t i = 0; i < N; i++)
        arr[i] = ((float)rand() / RAND_MAX) * 2.0 - 1.0;   // range -1..1
    return arr;
}

// ----------------------------------------------------------------------------
// testing and benchmarking utils

void setup_main() {
    srand(0);
    cudaCheck(cudaSetDevice(0));
    cudaDeviceProp props;
    cudaGetDeviceProperties(&props, 0);
    cuda_num_SMs = props.multiProcessorCount;
    cuda_arch_major = props.major;
    cublasCheck(cublasCreate(&cublas_handle));
    cudaCheck(cudaMalloc(&cublaslt_workspace, cublaslt_workspace_size));
}

template <class D, class T>
void validate_result(D* device_result, const T* cpu_reference, const char* name,
                     std::size_t num_elements, T tolerance = 1e-4) {
    D* out_gpu = (D*)malloc(num_elements * sizeof(D));
    cudaCheck(cudaMemcpy(out_gpu, device_result, num_elements * sizeof(D), cudaMemcpyDeviceToHost));
    int nfaults = 0;
    for (std::size_t i = 0; i < num_elements; i++) {
        float t_eff = tolerance + fabs(cpu_reference[i]) * FLT_EPSILON;
        if (fabs(cpu_reference[i] - (T)out_gpu[i]) > t_eff) {
            printf("Mismatch of %s at %zu: CPU_ref: %f vs GPU: %f\n", name, i,
                   cpu_reference[i], (T)out_gpu[i]);
            if (++nfaults >= 10)
                exit(EXIT_FAILURE);
        }
    }
    free(out_gpu);
    if (nfaults > 0)
        exit(EXIT_FAILURE);
}

template <class Kernel, class... KernelArgs>
float benchmark_kernel(int repeats, Kernel kernel, KernelArgs&&... kernel_args) {
    cudaEvent_t start, stop;
    void* flush_buffer;
    cudaCheck(cudaMalloc(&flush_buffer, 64 << 20));   // more than L2: each run starts cold
    cudaCheck(cudaEventCreate(&start));
    cudaCheck(cudaEventCreate(&stop));
    float elapsed_time = 0.f;
    for (int i = 0; i < repeats; i++) {
        cudaCheck(cudaMemset(flush_buffer, 0, 64 << 20));
        cudaCheck(cudaEventRecord(start, nullptr));
        kernel(std::forward<KernelArgs>(kernel_args)...);
        cudaCheck(cudaEventRecord(stop, nullptr));
        cudaCheck(cudaEventSynchronize(stop));
        float single_call;
        cudaCheck(cudaEventElapsedTime(&single_call, start, stop));
        elapsed_time += single_call;
    }
    cudaCheck(cudaFree(flush_buffer));
    return elapsed_time / repeats;
}
