/* Porting fixture: an rmsnorm in the shape vLLM's takes. A kernel template
 * over the element type and the vector width, explicit instances, and the
 * host's choice of width (8 elements a load where rows allow it, else 1)
 * moved into the manifest as two launches with "when". The body is as such
 * a kernel is written, not adapted to kiln: it names its parameters its
 * own way and takes them in its own order. */
#include "kiln_cuda.h"

template <typename scalar_t, int VEC>
struct alignas(sizeof(scalar_t) * VEC) vec_of {
    scalar_t v[VEC];
};

template <int THREADS>
__device__ float block_reduce_sum(float v)
{
    __shared__ float partial[THREADS / 32];
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    if ((threadIdx.x & 31) == 0)
        partial[threadIdx.x >> 5] = v;
    __syncthreads();
    v = (threadIdx.x & 31) < THREADS / 32 ? partial[threadIdx.x & 31] : 0.0f;
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    __syncthreads();
    return v;
}

template <typename scalar_t, int VEC>
__global__ void rms_norm_kernel(scalar_t *__restrict__ out, const scalar_t *__restrict__ input,
                                const scalar_t *__restrict__ weight, const float epsilon,
                                const int num_tokens, const int hidden_size)
{
    using vec_t = vec_of<scalar_t, VEC>;
    if ((int)blockIdx.x >= num_tokens)
        return;
    const vec_t *in_v = reinterpret_cast<const vec_t *>(input + (size_t)blockIdx.x * hidden_size);
    const vec_t *w_v = reinterpret_cast<const vec_t *>(weight);
    vec_t *out_v = reinterpret_cast<vec_t *>(out + (size_t)blockIdx.x * hidden_size);
    const int n_vec = hidden_size / VEC;
    float variance = 0.0f;
    for (int i = threadIdx.x; i < n_vec; i += blockDim.x) {
        vec_t x = in_v[i];
#pragma unroll
        for (int k = 0; k < VEC; k++) {
            float f = kiln_to_float(x.v[k]);
            variance += f * f;
        }
    }
    variance = block_reduce_sum<256>(variance);
    const float inv_rms = rsqrtf(variance / hidden_size + epsilon);
    for (int i = threadIdx.x; i < n_vec; i += blockDim.x) {
        vec_t x = in_v[i], w = w_v[i], y;
#pragma unroll
        for (int k = 0; k < VEC; k++)
            y.v[k] = kiln_from_float(kiln_to_float(x.v[k]) * inv_rms * kiln_to_float(w.v[k]));
        out_v[i] = y;
    }
}

template __global__ void rms_norm_kernel<kiln_t, 8>(kiln_t *, const kiln_t *, const kiln_t *,
                                                    float, int, int);
template __global__ void rms_norm_kernel<kiln_t, 1>(kiln_t *, const kiln_t *, const kiln_t *,
                                                    float, int, int);

/*@kiln launch
{"launches": [
   {"kernel": "rms_norm_kernel<kiln_t, 8>", "when": "cols % 8 == 0",
    "grid": ["rows"], "block": [256], "smem": 0,
    "args": ["y", "x", "w", "eps", "rows", "cols"]},
   {"kernel": "rms_norm_kernel<kiln_t, 1>", "when": "cols % 8 != 0",
    "grid": ["rows"], "block": [256], "smem": 0,
    "args": ["y", "x", "w", "eps", "rows", "cols"]}],
 "scratch": []}
@*/
