/*
A kiln import fixture in the shape of llm.c's dev/cuda/layernorm_forward.cu
(written for kiln's tests, not copied): kernels for the layernorm forward
pass, from a direct port of the CPU code to kernels that cooperate within a
warp or a block, each with its own host launcher, and a host function that
picks one by number; every kernel also writes each row's mean and rstd for
the backward pass.

Compile example:
nvcc -O3 --use_fast_math -lcublas -lcublasLt layernorm_forward.cu -o layernorm_forward

version 1: one thread per row, loops over C
./layernorm_forward 1

version 2: the mean, the rstd and the normalization as three kernels
./layernorm_forward 2

version 3: one warp per row, reduced with cooperative groups
./layernorm_forward 3

version 5: one block per row
./layernorm_forward 5

version 6: like 3, keeping the row in shared memory
./layernorm_forward 6
*/

#include <stdio.h>
#include <stdlib.h>
#include <cuda_runtime.h>
#include <assert.h>
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include "common.h"

namespace cg = cooperative_groups;

// ----------------------------------------------------------------------------
// CPU code reference

void layernorm_forward_cpu(float* out, float* mean, float* rstd,
                           const float* inp, const float* weight, const float* bias,
                           int B, int T, int C) {
    float eps = 1e-5f;
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < T; t++) {
            const float* x = inp + b * T * C + t * C;
            float m = 0.0f;
            for (int i = 0; i < C; i++) m += x[i];
            m = m / C;
            float v = 0.0f;
            for (int i = 0; i < C; i++) {
                float xshift = x[i] - m;
                v += xshift * xshift;
            }
            v = v / C;
            float s = 1.0f / sqrtf(v + eps);
            float* out_bt = out + b * T * C + t * C;
            for (int i = 0; i < C; i++) {
                float n = s * (x[i] - m);
                out_bt[i] = n * weight[i] + bias[i];
            }
            mean[b * T + t] = m;
            rstd[b * T + t] = s;
        }
    }
}

// ----------------------------------------------------------------------------
// GPU kernels

// the CPU loop, one thread per row
__global__ void layernorm_forward_kernel1(float* out, float* mean, float* rstd,
                                          const float* inp, const float* weight,
                                          const float* bias, int N, int C) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    float eps = 1e-5f;
    if (idx < N) {
        const float* x = inp + idx * C;
        float m = 0.0f;
        for (int i = 0; i < C; i++) m += x[i];
        m = m / C;
        float v = 0.0f;
        for (int i = 0; i < C; i++) {
            float xshift = x[i] - m;
            v += xshift * xshift;
        }
        v = v / C;
        float s = 1.0f / sqrtf(v + eps);
        float* out_idx = out + idx * C;
        for (int i = 0; i < C; i++) {
            float n = s * (x[i] - m);
            out_idx[i] = n * weight[i] + bias[i];
        }
        mean[idx] = m;
        rstd[idx] = s;
    }
}

// each block one row's mean, reduced in shared memory (block_size a power of 2)
__global__ void mean_kernel(float* mean, const float* inp, int N, int C, int block_size) {
    extern __shared__ float shared[];
    int idx = blockIdx.x;
    int tid = threadIdx.x;
    const float* x = inp + idx * C;
    float sum = 0.0f;
    for (int i = tid; i < C; i += block_size) sum += x[i];
    shared[tid] = sum;
    __syncthreads();
    for (int stride = block_size / 2; stride >= 1; stride /= 2) {
        __syncthreads();
        if (tid < stride) shared[tid] += shared[tid + stride];
    }
    if (tid == 0) mean[idx] = shared[0] / C;
}

__global__ void rstd_kernel(float* rstd, const float* inp, const float* mean, int N, int C,
                            int block_size) {
    extern __shared__ float shared[];
    int idx = blockIdx.x;
    int tid = threadIdx.x;
    const float* x = inp + idx * C;
    float m = mean[idx];
    float sum = 0.0f;
    for (int i = tid; i < C; i += block_size) {
        float diff = x[i] - m;
        sum += diff * diff;
    }
    shared[tid] = sum;
    __syncthreads();
    for (int stride = block_size / 2; stride >= 1; stride /= 2) {
        __syncthreads();
        if (tid < stride) shared[tid] += shared[tid + stride];
    }
    if (tid == 0) rstd[idx] = 1.0f / sqrtf(shared[0] / C + 1e-5f);
}

// every element of every row, flattened (no bounds check, as written for C = 768)
__global__ void normalization_kernel(float* out, const float* inp, float* mean, float* rstd,
                                     const float* weight, const float* bias, int B, int T, int C) {
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    int bt = idx / C;
    int c = idx % C;
    float m = mean[bt];
    float s = rstd[bt];
    float xi = inp[idx];
    float n = s * (xi - m);
    out[idx] = n * weight[c] + bias[c];
}

// one warp per row, its sums reduced by cooperative groups
__global__ void layernorm_forward_kernel3(float* __restrict__ out, float* __restrict__ mean,
                                          float* __restrict__ rstd, const float* __restrict__ inp,
                                          const float* __restrict__ weight,
                                          const float* __restrict__ bias, int N, int C) {
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    int idx = blockIdx.x * warp.meta_group_size() + warp.meta_group_rank();
    if (idx >= N) return;
    const float* x = inp + idx * C;
    float sum = 0.0f;
    for (int i = warp.thread_rank(); i < C; i += warp.size()) sum += x[i];
    sum = cg::reduce(warp, sum, cg::plus<float>{});
    float m = sum / C;
    if (warp.thread_rank() == 0 && mean != nullptr) __stcs(mean + idx, m);
    sum = 0.0f;
    for (int i = warp.thread_rank(); i < C; i += warp.size()) {
        float diff = x[i] - m;
        sum += diff * diff;
    }
    sum = cg::reduce(warp, sum, cg::plus<float>{});
    float s = rsqrtf(sum / C + 1e-5f);
    if (warp.thread_rank() == 0 && rstd != nullptr) __stcs(rstd + idx, s);
    float* o = out + idx * C;
    for (int c = warp.thread_rank(); c < C; c += warp.size()) {
        // streaming loads and stores: x and o are touched once, weight and bias by every row
        float n = s * (__ldcs(x + c) - m);
        __stcs(o + c, n * weight[c] + bias[c]);
    }
}

// one block per row: sum(x) and sum(x*x) by warps, then across the warps
__global__ void layernorm_forward_kernel5(float* __restrict__ out, float* __restrict__ mean,
                                          float* __restrict__ rstd, const float* __restrict__ inp,
                                          const float* __restrict__ weight,
                                          const float* __restrict__ bias, int N, int C) {
    __shared__ float shared_sum[32];
    __shared__ float shared_sum2[32];
    int num_warps = blockDim.x / 32;
    int warp_id = threadIdx.x / 32;
    int lane_id = threadIdx.x % 32;
    int idx = blockIdx.x;
    const float* x = inp + idx * C;
    float thread_sum = 0.0f, thread_sum2 = 0.0f;
    for (int i = threadIdx.x; i < C; i += blockDim.x) {
        float xi = x[i];
        thread_sum += xi;
        thread_sum2 += xi * xi;
    }
    float warp_sum = warpReduceSum(thread_sum);
    float warp_sum2 = warpReduceSum(thread_sum2);
    shared_sum[warp_id] = warp_sum;
    shared_sum2[warp_id] = warp_sum2;
    __syncthreads();
    warp_sum = (lane_id < num_warps) ? shared_sum[lane_id] : 0.0f;
    warp_sum2 = (lane_id < num_warps) ? shared_sum2[lane_id] : 0.0f;
    float block_sum = warpReduceSum(warp_sum) / C;
    float block_sum2 = warpReduceSum(warp_sum2) / C;
    float m = block_sum;
    float var = block_sum2 - m * m;
    float s = rsqrtf(var + 1e-5f);
    if (threadIdx.x == 0 && mean != nullptr) __stcs(mean + idx, m);
    if (threadIdx.x == 0 && rstd != nullptr) __stcs(rstd + idx, s);
    float* o = out + idx * C;
    for (int i = threadIdx.x; i < C; i += blockDim.x) {
        float n = s * (__ldcs(x + i) - m);
        __stcs(o + i, n * weight[i] + bias[i]);
    }
}

// like 3, keeping each warp's row in shared memory for the last pass
__global__ void __launch_bounds__(512) layernorm_forward_kernel6(
        float* __restrict__ out, float* __restrict__ mean, float* __restrict__ rstd,
        const float* __restrict__ inp, const float* __restrict__ weight,
        const float* __restrict__ bias, int N, int C) {
    extern __shared__ float xShared[];
    int warpsPerBlock = blockDim.x / warpSize;
    int warpId = threadIdx.x / warpSize;
    int laneId = threadIdx.x % warpSize;
    float* const xSharedThisWarp = xShared + warpId * C;
    int row = blockIdx.x * warpsPerBlock + warpId;
    if (row >= N) return;
    const float* const x = inp + row * C;
    float partialSum = 0.0f, partialSum2 = 0.0f;
    for (int i = laneId; i < C; i += warpSize) {
        float xi = x[i];
        xSharedThisWarp[i] = xi;
        partialSum += xi;
        partialSum2 += xi * xi;
    }
    float mean1 = warpReduceSum(partialSum) / C;
    float mean2 = warpReduceSum(partialSum2) / C;
    float invStd = rsqrtf(mean2 - mean1 * mean1 + 1e-5f);
    if (laneId == 0 && mean != nullptr) __stcs(mean + row, mean1);
    if (laneId == 0 && rstd != nullptr) __stcs(rstd + row, invStd);
    for (int i = laneId; i < C; i += warpSize)
        __stcs(out + row * C + i, weight[i] * (xSharedThisWarp[i] - mean1) * invStd + bias[i]);
}

// ----------------------------------------------------------------------------
// kernel launchers

void layernorm_forward1(float* out, float* mean, float* rstd,
                        const float* inp, const float* weight, const float* bias,
                        int B, int T, int C, const int block_size) {
    const int N = B * T;
    const int grid_size = ceil_div(N, block_size);
    layernorm_forward_kernel1<<<grid_size, block_size>>>(out, mean, rstd, inp, weight, bias, N, C);
    cudaCheck(cudaGetLastError());
}

void layernorm_forward2(float* out, float* mean, float* rstd,
                        const float* inp, const float* weight, const float* bias,
                        int B, int T, int C, const int block_size) {
    int N = B * T;
    // the row sums cooperate in shared memory
    mean_kernel<<<B * T, block_size, block_size * sizeof(float)>>>(mean, inp, N, C, block_size);
    cudaCheck(cudaGetLastError());
    rstd_kernel<<<B * T, block_size, block_size * sizeof(float)>>>(rstd, inp, mean, N, C, block_size);
    cudaCheck(cudaGetLastError());
    // the normalization is flat
    const int block_size2 = 256;
    const int grid_size = ceil_div(B * T * C, block_size2);
    normalization_kernel<<<grid_size, block_size2>>>(out, inp, mean, rstd, weight, bias, B, T, C);
    cudaCheck(cudaGetLastError());
}

void layernorm_forward3(float* out, float* mean, float* rstd,
                        const float* inp, const float* weight, const float* bias,
                        int B, int T, int C, const int block_size) {
    assert(block_size % 32 == 0);
    const int N = B * T;
    const int grid_size = ceil_div(N * 32, block_size);
    layernorm_forward_kernel3<<<grid_size, block_size>>>(out, mean, rstd, inp, weight, bias, N, C);
    cudaCheck(cudaGetLastError());
}

void layernorm_forward5(float* out, float* mean, float* rstd,
                        const float* inp, const float* weight, const float* bias,
                        int B, int T, int C, const int block_size) {
    assert(block_size % 32 == 0);
    const int N = B * T;
    const int grid_size = N;
    layernorm_forward_kernel5<<<grid_size, block_size>>>(out, mean, rstd, inp, weight, bias, N, C);
    cudaCheck(cudaGetLastError());
}

void layernorm_forward6(float* out, float* mean, float* rstd,
                        const float* inp, const float* weight, const float* bias,
                        int B, int T, int C, const int block_size) {
    assert(block_size % 32 == 0);
    const int maxBlockSizeKernel6 = 512;
    const int N = B * T;
    const int grid_size = ceil_div(N * 32, min(maxBlockSizeKernel6, block_size));
    int device;
    cudaCheck(cudaGetDevice(&device));
    cudaDeviceProp prop;
    cudaCheck(cudaGetDeviceProperties(&prop, device));
    unsigned int smemSize = C * sizeof(float) * (min(maxBlockSizeKernel6, block_size) / 32);
    layernorm_forward_kernel6<<<grid_size, min(maxBlockSizeKernel6, block_size), smemSize>>>(
        out, mean, rstd, inp, weight, bias, N, C);
    cudaCheck(cudaGetLastError());
}

// kernel version dispatch
void layernorm_forward(int kernel_num,
                       float* out, float* mean, float* rstd,
                       const float* inp, const float* weight, const float* bias,
                       int B, int T, int C, const int block_size) {
    switch (kernel_num) {
    case 1:
        layernorm_forward1(out, mean, rstd, inp, weight, bias, B, T, C, block_size);
        break;
    case 2:
        layernorm_forward2(out, mean, rstd, inp, weight, bias, B, T, C, block_size);
        break;
    case 3:
        layernorm_forward3(out, mean, rstd, inp, weight, bias, B, T, C, block_size);
        break;
    case 5:
        layernorm_forward5(out, mean, rstd, inp, weight, bias, B, T, C, block_size);
        break;
    case 6:
        layernorm_forward6(out, mean, rstd, inp, weight, bias, B, T, C, block_size);
        break;
    default:
        printf("Invalid kernel number\n");
        exit(1);
    }
}

// ----------------------------------------------------------------------------

int main(int argc, char **argv) {
    setup_main();
    int B = 8, T = 1024, C = 768;

    float* out = (float*)malloc(B * T * C * sizeof(float));
    float* mean = (float*)malloc(B * T * sizeof(float));
    float* rstd = (float*)malloc(B * T * sizeof(float));
    float* inp = make_random_float(B * T * C);
    float* weight = make_random_float(C);
    float* bias = make_random_float(C);

    float *d_out, *d_mean, *d_rstd, *d_inp, *d_weight, *d_bias;
    cudaCheck(cudaMalloc(&d_out, B * T * C * sizeof(float)));
    cudaCheck(cudaMalloc(&d_mean, B * T * sizeof(float)));
    cudaCheck(cudaMalloc(&d_rstd, B * T * sizeof(float)));
    cudaCheck(cudaMalloc(&d_inp, B * T * C * sizeof(float)));
    cudaCheck(cudaMalloc(&d_weight, C * sizeof(float)));
    cudaCheck(cudaMalloc(&d_bias, C * sizeof(float)));
    cudaCheck(cudaMemcpy(d_inp, inp, B * T * C * sizeof(float), cudaMemcpyHostToDevice));
    cudaCheck(cudaMemcpy(d_weight, weight, C * sizeof(float), cudaMemcpyHostToDevice));
    cudaCheck(cudaMemcpy(d_bias, bias, C * sizeof(float), cudaMemcpyHostToDevice));

    int kernel_num = 2;
    if (argc > 1) kernel_num = atoi(argv[1]);
    printf("Using kernel %d\n", kernel_num);

    int block_sizes[] = {32, 64, 128, 256, 512, 1024};
    layernorm_forward_cpu(out, mean, rstd, inp, weight, bias, B, T, C);
    for (int j = 0; j < (int)(sizeof(block_sizes) / sizeof(int)); j++) {
        int block_size = block_sizes[j];
        printf("Checking block size %d.\n", block_size);
        layernorm_forward(kernel_num, d_out, d_mean, d_rstd, d_inp, d_weight, d_bias, B, T, C,
                          block_size);
        validate_result(d_out, out, "out", B * T * C, 1e-5f);
        validate_result(d_mean, mean, "mean", B * T, 1e-5f);
        validate_result(d_rstd, rstd, "rstd", B * T, 1e-5f);
    }
    printf("All results match. Starting benchmarks.\n\n");
    for (int j = 0; j < (int)(sizeof(block_sizes) / sizeof(int)); j++) {
        int block_size = block_sizes[j];
        float elapsed_time = benchmark_kernel(2000, layernorm_forward, kernel_num, d_out, d_mean,
                                              d_rstd, d_inp, d_weight, d_bias, B, T, C, block_size);
        long memory_ops = (2 * B * T * C) * 4;
        printf("block_size %4d | time %.4f ms | bandwidth %.2f GB/s\n", block_size,
               elapsed_time, memory_ops / elapsed_time / 1e6);
    }

    free(out);
    free(mean);
    free(rstd);
    free(inp);
    free(weight);
    free(bias);
    cudaCheck(cudaFree(d_out));
    cudaCheck(cudaFree(d_mean));
    cudaCheck(cudaFree(d_rstd));
    cudaCheck(cudaFree(d_inp));
    cudaCheck(cudaFree(d_weight));
    cudaCheck(cudaFree(d_bias));
    return 0;
}
