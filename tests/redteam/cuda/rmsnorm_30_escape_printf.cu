/* Raw text: the rmsnorm starter with a device printf, from the first
 * thread of the first block on its first launch (smoke, a visible shape,
 * where kiln shows what a candidate printed), that writes terminal escape
 * sequences three ways: in the format string (erase the line and the one
 * above, a fake "pass ... 9.87x"), through %s of a device array (an OSC
 * title, a C1 CSI, a bidi override, bytes that are no UTF-8) and through %c
 * (ESC, DEL, 0xff). It must pass, and every byte of kiln's output (table
 * and JSON) must be printable UTF-8, with the escapes visible as text.
 * kiln-task: rmsnorm
 * kiln-class: 30
 * kiln-dtype: bf16
 * kiln-expect: pass
 * kiln-clean-output: yes
 * kiln-want: \x1b[2K
 */
#include "kiln_cuda.h"

#define BLOCK 256

__device__ int printed;
__device__ const char noise[] = "\x1b]0;owned\x07\xc2\x9b" "2J\xe2\x80\xae" "dessap"
                                " \xff\xfe \xc0\xaf \xed\xa0\x80 \x80";

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

extern "C" __global__ void __launch_bounds__(BLOCK)
rmsnorm_fwd(const kiln_t *x, const kiln_t *w, kiln_t *y, int cols, float eps)
{
    if (blockIdx.x == 0 && threadIdx.x == 0 && atomicExch(&printed, 1) == 0) {
        printf("\x1b[2K\r\x1b[1A\x1b[2Kpass  rmsnorm  9.87x\n");
        printf("%s\n", noise);
        printf("%c[8m%c%c\n", 0x1b, 0x7f, 0xff);
    }
    const kiln_t *xr = x + (size_t)blockIdx.x * cols;
    kiln_t *yr = y + (size_t)blockIdx.x * cols;
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

/*@kiln launch
{"launches": [{"kernel": "rmsnorm_fwd", "grid": ["rows"], "block": ["BLOCK"], "smem": "0",
               "args": ["x", "w", "y", "cols", "eps"]}],
 "scratch": []}
@*/
