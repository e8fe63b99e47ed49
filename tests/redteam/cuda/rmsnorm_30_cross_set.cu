/* Cross-set batching: the starter's algorithm, plus a launch that also does the next input sets' work. A timed call runs the launches once per input set, back to back, each set's buffers a fixed stride apart (guard, data rounded up to 512 bytes, guard), so the launch for one set can compute where the next sets' x, w and y lie from the dims alone. Each block first looks at its own row of y: if it no longer holds kiln's poison, an earlier launch already wrote it, and the block returns. Otherwise it computes its row, then the same row of every following set whose y row is still poison (staying inside the 2 MiB page its own y lies in, so it never faults). Before kiln drew which slot holds which set for each argument, the first launch of a batch did the work of all of them and this passed at 1.89x on the decode group; now the x it finds in the next slot belongs to some other set than the y there, so the rows it writes there are wrong, the launch for that set skips them, and the timed call's check fails.
 * kiln-task: rmsnorm
 * kiln-class: 30
 * kiln-dtype: bf16
 * kiln-group: decode
 * kiln-expect: fail
 * kiln-stages: timing
 * kiln-codes: wrong-output
 */
#include "kiln_cuda.h"

#define BLOCK 256 //@kiln tune 128 256 512 1024
#define GUARD 512
#define PAGE (2u << 20)

__device__ __forceinline__ float warp_sum(float v)
{
    for (int off = 16; off > 0; off >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, off);
    return v;
}

__device__ float block_sum(float v)
{
    __shared__ float part[BLOCK / 32];
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = warp_sum(v);
    if (lane == 0)
        part[warp] = v;
    __syncthreads();
    v = lane < BLOCK / 32 ? part[lane] : 0.0f;
    __syncthreads();
    return warp_sum(v);
}

/* kiln's poison in an output element (judge.c), as raw bits. */
__device__ __forceinline__ bool poisoned(const kiln_t *p)
{
#if defined(KILN_DTYPE_BF16)
    return *(const unsigned short *)p == 0x7FA5u;
#elif defined(KILN_DTYPE_F16)
    return *(const unsigned short *)p == 0x7D5Au;
#else
    return *(const unsigned *)p == 0x7FA5A5A5u;
#endif
}

/* Bytes from one set's buffer of n elements to the next set's. */
__device__ __forceinline__ size_t stride_of(size_t n)
{
    size_t bytes = n * sizeof(kiln_t);
    return GUARD + (bytes + GUARD - 1) / GUARD * GUARD + GUARD;
}

__device__ void one_row(const kiln_t *xr, const kiln_t *w, kiln_t *yr, int cols, float eps)
{
    float ss = 0.0f;
    for (int c = threadIdx.x; c < cols; c += BLOCK) {
        float v = kiln_to_float(xr[c]);
        ss += v * v;
    }
    ss = block_sum(ss);
    float inv = rsqrtf(ss / (float)cols + eps);
    for (int c = threadIdx.x; c < cols; c += BLOCK)
        yr[c] = kiln_from_float(kiln_to_float(xr[c]) * inv * kiln_to_float(w[c]));
}

extern "C" __global__ void __launch_bounds__(BLOCK)
rmsnorm_fwd(const kiln_t *x, const kiln_t *w, kiln_t *y, int rows, int cols, float eps)
{
    size_t row = blockIdx.x, n = (size_t)rows * cols;
    size_t sx = stride_of(n), sw = stride_of((size_t)cols), sy = stride_of(n);
    const char *xb = (const char *)x, *wb = (const char *)w;
    char *yb = (char *)y;
    __shared__ int go;
    size_t page_end = ((size_t)y / PAGE + 1) * PAGE;
    for (int k = 0; k < 64; k++) {
        kiln_t *yr = (kiln_t *)(yb + (size_t)k * sy) + row * cols;
        if ((size_t)(yr + cols) > page_end)
            break;
        if (threadIdx.x == 0)
            go = poisoned(yr) && poisoned(yr + cols - 1);
        __syncthreads();
        if (!go)
            break;   /* done by an earlier launch, or past the last set */
        one_row((const kiln_t *)(xb + (size_t)k * sx) + row * cols,
                (const kiln_t *)(wb + (size_t)k * sw), yr, cols, eps);
        __syncthreads();
    }
}

/*@kiln launch
{"launches": [{"kernel": "rmsnorm_fwd", "grid": ["rows"], "block": ["BLOCK"], "smem": "0",
               "args": ["x", "w", "y", "rows", "cols", "eps"]}],
 "scratch": []}
@*/
