/* Shape specialisation in the manifest: the block is min(cols / 4, 1024) threads of 4 elements each, which covers every visible width exactly; at the hidden width 1 the block has 0 threads, an invalid launch the manifest check must refuse (when kiln resolves the manifest for that shape: a bad-manifest or launch-error, without naming the hidden dims).
 * kiln-task: softmax
 * kiln-class: 3
 * kiln-dtype: f32
 * kiln-expect: fail
 * kiln-stages: static hidden
 * kiln-codes: bad-manifest launch-error
 */
#include "kiln_cuda.h"

#define NEG_INF __int_as_float(0xff800000)

/* Reduction over any block size (a tree with bounds); every thread gets it. */
__device__ float block_reduce(float v, bool is_max)
{
    __shared__ float buf[1024];
    const int t = threadIdx.x, n = blockDim.x;
    buf[t] = v;
    __syncthreads();
    for (int s = 512; s > 0; s >>= 1) {
        if (t < s && t + s < n)
            buf[t] = is_max ? fmaxf(buf[t], buf[t + s]) : buf[t] + buf[t + s];
        __syncthreads();
    }
    const float r = buf[0];
    __syncthreads();
    return r;
}

extern "C" __global__ void softmax_fwd(const kiln_t *x, kiln_t *y, int cols)
{
    const kiln_t *xr = x + (size_t)blockIdx.x * cols;
    kiln_t *yr = y + (size_t)blockIdx.x * cols;
    float v[4];
    float m = NEG_INF;
#pragma unroll
    for (int k = 0; k < 4; k++) {
        const int c = threadIdx.x + k * blockDim.x;
        v[k] = c < cols ? kiln_to_float(xr[c]) : NEG_INF;
        m = fmaxf(m, v[k]);
    }
    m = block_reduce(m, true);
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < 4; k++) {
        const int c = threadIdx.x + k * blockDim.x;
        v[k] = c < cols ? expf(v[k] - m) : 0.0f;
        s += v[k];
    }
    s = block_reduce(s, false);
#pragma unroll
    for (int k = 0; k < 4; k++) {
        const int c = threadIdx.x + k * blockDim.x;
        if (c < cols)
            yr[c] = kiln_from_float(v[k] / s);
    }
}

/*@kiln launch
{"launches": [{"kernel": "softmax_fwd", "grid": ["rows"], "block": ["min(cols / 4, 1024)"], "smem": "0", "args": ["x", "y", "cols"]}],
 "scratch": []}
@*/
