/* Porting fixture: kernels a macro declares, once per accumulator type, as
 * libraries do to stamp out variants; C++ linkage, so their symbols are
 * mangled and kiln finds them after compiling. */
#include "kiln_cuda.h"

#define NORM_THREADS 256

#define DEFINE_RMSNORM_KERNEL(NAME, ACC_T)                                                     \
    __global__ void __launch_bounds__(NORM_THREADS)                                           \
        NAME(const kiln_t *x, const kiln_t *w, kiln_t *y, int cols, float eps)               \
    {                                                                                          \
        __shared__ ACC_T part[NORM_THREADS / 32];                                              \
        const kiln_t *xr = x + (size_t)blockIdx.x * cols;                                      \
        kiln_t *yr = y + (size_t)blockIdx.x * cols;                                            \
        ACC_T ss = 0;                                                                          \
        for (int c = threadIdx.x; c < cols; c += NORM_THREADS) {                               \
            ACC_T v = (ACC_T)kiln_to_float(xr[c]);                                             \
            ss += v * v;                                                                       \
        }                                                                                      \
        for (int o = 16; o > 0; o >>= 1)                                                       \
            ss += __shfl_xor_sync(0xffffffffu, ss, o);                                         \
        if ((threadIdx.x & 31) == 0)                                                           \
            part[threadIdx.x >> 5] = ss;                                                       \
        __syncthreads();                                                                       \
        ss = 0;                                                                                \
        for (int k = 0; k < NORM_THREADS / 32; k++)                                            \
            ss += part[k];                                                                     \
        float inv = rsqrtf((float)(ss / (ACC_T)cols) + eps);                                   \
        for (int c = threadIdx.x; c < cols; c += NORM_THREADS)                                 \
            yr[c] = kiln_from_float(kiln_to_float(xr[c]) * inv * kiln_to_float(w[c]));         \
    }

DEFINE_RMSNORM_KERNEL(rmsnorm_acc_f32, float)
DEFINE_RMSNORM_KERNEL(rmsnorm_acc_f64, double)

/*@kiln launch
{"launches": [{"kernel": "rmsnorm_acc_f32", "grid": ["rows"], "block": ["NORM_THREADS"],
               "smem": 0, "args": ["x", "w", "y", "cols", "eps"]}],
 "scratch": []}
@*/
