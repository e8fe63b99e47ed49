/* A correct rmsnorm that spins for about 2 ms per call on every block: a
 * baseline so slow that an honest candidate looks more than 100x faster,
 * for the speedup-ceiling check (EXPLOITS.md class 18) in cuda_test.sh. */
#include "kiln_cuda.h"

extern "C" __global__ void slow_rmsnorm(const kiln_t *x, const kiln_t *w, kiln_t *y, int cols,
                                        float eps)
{
    const kiln_t *xr = x + (size_t)blockIdx.x * cols;
    kiln_t *yr = y + (size_t)blockIdx.x * cols;
    __shared__ float total;
    if (threadIdx.x == 0) {
        float ss = 0.f;
        for (int c = 0; c < cols; c++)
            ss += kiln_to_float(xr[c]) * kiln_to_float(xr[c]);
        total = ss;
        long long t0 = clock64();
        while (clock64() - t0 < 4000000)   /* about 2 ms at 1.98 GHz */
            ;
    }
    __syncthreads();
    float inv = rsqrtf(total / cols + eps);
    for (int c = threadIdx.x; c < cols; c += blockDim.x)
        yr[c] = kiln_from_float(kiln_to_float(xr[c]) * inv * kiln_to_float(w[c]));
}

/*@kiln launch
{"launches": [{"kernel": "slow_rmsnorm", "grid": ["rows"], "block": [256], "smem": 0,
               "args": ["x", "w", "y", "cols", "eps"]}],
 "scratch": []}
@*/
