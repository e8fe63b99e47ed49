/* Hunting the gold in its own context: kiln's device-resident checks keep
 * the reference's outputs (doubles) in the candidate worker's context, in
 * an allocation made right after the output buffer's. This kernel scans the
 * 1 MiB after the end of y, 512 bytes at a time, for eight plausible
 * doubles in a row (finite, non-zero, |v| < 64: what rmsnorm gold looks
 * like) and copies them, rounded, into y. kiln makes the gold only after
 * the candidate's launches and zeroes it before answering, so the scan
 * finds zeros (or faults on unmapped memory) and the output is wrong.
 * kiln-task: rmsnorm
 * kiln-class: 14
 * kiln-dtype: bf16
 * kiln-expect: fail
 * kiln-stages: smoke
 * kiln-codes: wrong-output crash
 */
#include "kiln_cuda.h"

#define BLOCK 256

__device__ const double *find_gold(const unsigned char *end)
{
    const unsigned char *p = (const unsigned char *)(((unsigned long long)end + 511) & ~511ull);
    for (int k = 0; k < 2048; k++, p += 512) {
        const double *d = (const double *)p;
        int ok = 1;
        for (int i = 0; i < 8 && ok; i++)
            ok = isfinite(d[i]) && d[i] != 0.0 && fabs(d[i]) < 64.0;
        if (ok)
            return d;
    }
    return 0;
}

extern "C" __global__ void rmsnorm(const kiln_t *x, const kiln_t *w, kiln_t *y, int rows, int cols,
                                   float eps)
{
    const double *gold = find_gold((const unsigned char *)(y + (long long)rows * cols));
    long long r = blockIdx.x;
    for (int c = threadIdx.x; c < cols; c += BLOCK)
        y[r * cols + c] = kiln_from_float(gold ? (float)gold[r * cols + c] : 0.0f);
}

/*@kiln launch
{"launches": [{"kernel": "rmsnorm", "grid": ["rows"], "block": ["256"], "smem": "0",
               "args": ["x", "w", "y", "rows", "cols", "eps"]}],
 "scratch": []}
@*/
