// type_convert.cuh - a kiln import fixture in the shape of vLLM's
// csrc/type_convert.cuh (written for kiln's tests, not copied): converters
// between torch's 16-bit scalar types and CUDA's, and the vector of them
// that the vectorized fused_add_rms_norm_kernel loads and stores 16 bytes
// at a time. It includes torch (host code) for c10::Half and
// c10::BFloat16, and tests CUDA_VERSION, which cuda.h defines.
#pragma once

#include <torch/all.h>

#ifndef USE_ROCM
  #include <cuda_bf16.h>
  #include <cuda_fp16.h>
#else
  #include <hip/hip_bf16.h>
  #include <hip/hip_fp16.h>
using __nv_bfloat16 = __hip_bfloat16;
using __nv_bfloat162 = __hip_bfloat162;
#endif

namespace vllm {

/* _typeConvert<T>::exists says whether the vectorized kernels may be used
   for torch type T; when it does, the struct also names the CUDA scalar and
   packed pair types and converts them to and from float. */
template <typename torch_type>
struct _typeConvert {
  static constexpr bool exists = false;
};

#if defined(USE_ROCM) || (defined(CUDA_VERSION) && (CUDA_VERSION >= 12000))
template <>
struct _typeConvert<c10::Half> {
  static constexpr bool exists = true;
  using hip_type = __half;
  using packed_hip_type = __half2;

  __device__ static inline float convert(hip_type x) { return __half2float(x); }
  __device__ static inline float2 convert(packed_hip_type x) { return __half22float2(x); }
  __device__ static inline hip_type convert(float x) { return __float2half_rn(x); }
  __device__ static inline packed_hip_type convert(float2 x) { return __float22half2_rn(x); }
};

  #if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
  // no bfloat16 arithmetic before sm_80
  #else
template <>
struct _typeConvert<c10::BFloat16> {
  static constexpr bool exists = true;
  using hip_type = __nv_bfloat16;
  using packed_hip_type = __nv_bfloat162;

  __device__ static inline float convert(hip_type x) { return __bfloat162float(x); }
  __device__ static inline float2 convert(packed_hip_type x) { return __bfloat1622float2(x); }
  __device__ static inline hip_type convert(float x) { return __float2bfloat16(x); }
  __device__ static inline packed_hip_type convert(float2 x) {
    return __float22bfloat162_rn(x);
  }
};
  #endif
#endif

/* width 16-bit values in 16-byte-aligned storage, so a load or store of
   one is a single 128-bit access; only what fused_add_rms_norm_kernel
   needs is here. */
template <typename scalar_t, int width>
struct alignas(16) _f16Vec {
  static_assert(width > 0 && (width & (width - 1)) == 0,
                "the width must be a power of 2");
  using Converter = _typeConvert<scalar_t>;
  using T1 = typename Converter::hip_type;
  using T2 = typename Converter::packed_hip_type;
  T1 data[width];

  __device__ _f16Vec& operator+=(const _f16Vec<scalar_t, width>& other) {
    if constexpr (width % 2 == 0) {
#pragma unroll
      for (int i = 0; i < width; i += 2) {
        T2 a{data[i], data[i + 1]};
        a += T2{other.data[i], other.data[i + 1]};
        data[i] = a.x;
        data[i + 1] = a.y;
      }
    } else {
#pragma unroll
      for (int i = 0; i < width; ++i) data[i] += other.data[i];
    }
    return *this;
  }

  __device__ _f16Vec& operator*=(const _f16Vec<scalar_t, width>& other) {
    if constexpr (width % 2 == 0) {
#pragma unroll
      for (int i = 0; i < width; i += 2) {
        T2 a{data[i], data[i + 1]};
        a *= T2{other.data[i], other.data[i + 1]};
        data[i] = a.x;
        data[i + 1] = a.y;
      }
    } else {
#pragma unroll
      for (int i = 0; i < width; ++i) data[i] *= other.data[i];
    }
    return *this;
  }

  __device__ _f16Vec& operator*=(const float scale) {
    if constexpr (width % 2 == 0) {
#pragma unroll
      for (int i = 0; i < width; i += 2) {
        float2 f = Converter::convert(T2{data[i], data[i + 1]});
        f.x *= scale;
        f.y *= scale;
        T2 a = Converter::convert(f);
        data[i] = a.x;
        data[i + 1] = a.y;
      }
    } else {
#pragma unroll
      for (int i = 0; i < width; ++i)
        data[i] = Converter::convert(Converter::convert(data[i]) * scale);
    }
    return *this;
  }

  __device__ float sum_squares() const {
    float sum = 0.0f;
    if constexpr (width % 2 == 0) {
#pragma unroll
      for (int i = 0; i < width; i += 2) {
        float2 f = Converter::convert(T2{data[i], data[i + 1]});
        sum += f.x * f.x + f.y * f.y;
      }
    } else {
#pragma unroll
      for (int i = 0; i < width; ++i) {
        float f = Converter::convert(data[i]);
        sum += f * f;
      }
    }
    return sum;
  }
};

}  // namespace vllm
