/* kiln_cuda.h - the one header a CUDA candidate may include from kiln
 * (#include "kiln_cuda.h"); NVRTC also reaches CUDA's own device headers.
 *
 * kiln compiles every candidate once per dtype with exactly one of
 * KILN_DTYPE_F32, KILN_DTYPE_F16 or KILN_DTYPE_BF16 defined, so one source
 * can serve all of a task's dtypes: the task's type variable T is kiln_t
 * here, and the helpers below load and store it through float. */
#ifndef KILN_CUDA_H
#define KILN_CUDA_H

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#if defined(KILN_DTYPE_F16)
typedef __half kiln_t;
__device__ __forceinline__ float kiln_to_float(kiln_t v) { return __half2float(v); }
__device__ __forceinline__ kiln_t kiln_from_float(float v) { return __float2half_rn(v); }
#elif defined(KILN_DTYPE_BF16)
typedef __nv_bfloat16 kiln_t;
__device__ __forceinline__ float kiln_to_float(kiln_t v) { return __bfloat162float(v); }
__device__ __forceinline__ kiln_t kiln_from_float(float v) { return __float2bfloat16_rn(v); }
#elif defined(KILN_DTYPE_F64)
/* Only kiln's own CUDA references are built for f64: they read and write
 * doubles, the exact values of the candidate's inputs and the gold. */
typedef double kiln_t;
__device__ __forceinline__ float kiln_to_float(kiln_t v) { return (float)v; }
__device__ __forceinline__ kiln_t kiln_from_float(float v) { return v; }
/* v rounded once, to nearest even, to the run's dtype (kiln defines
 * KILN_RUN_DTYPE_* for a reference): for gold that depends on a value the
 * candidate stores in T and uses again, as add_rmsnorm's y depends on r. */
__device__ __forceinline__ double kiln_round_to_run(double v)
{
#if defined(KILN_RUN_DTYPE_BF16)
    return (double)__bfloat162float(__double2bfloat16(v));
#elif defined(KILN_RUN_DTYPE_F16)
    return (double)__half2float(__double2half(v));
#elif defined(KILN_RUN_DTYPE_F64)
    return v;
#else
    return (double)__double2float_rn(v);
#endif
}
#else
typedef float kiln_t;
__device__ __forceinline__ float kiln_to_float(kiln_t v) { return v; }
__device__ __forceinline__ kiln_t kiln_from_float(float v) { return v; }
#endif

#endif
