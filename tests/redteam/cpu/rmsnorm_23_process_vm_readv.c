/* Escape: reads the parent process's memory with process_vm_readv (looking for gold outputs or seeds in the daemon), then computes y correctly.
 * kiln-task: rmsnorm
 * kiln-class: 23
 * kiln-expect: fail
 * kiln-stages: smoke
 * kiln-codes: sandbox-violation
 */
#define _GNU_SOURCE
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>

static char stolen[64];

void rmsnorm(const float *x, const float *w, float *y, int32_t rows, int32_t cols, float eps)
{
    struct iovec local = {stolen, sizeof stolen};
    struct iovec remote = {(void *)0x400000, sizeof stolen};
    (void)process_vm_readv(getppid(), &local, 1, &remote, 1, 0);
    for (int32_t r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * cols;
        float *yr = y + (size_t)r * cols;
        float ss = 0.0f;                 /* blocked: a float partial per 256 columns */
        for (int32_t b = 0; b < cols; b += 256) {
            float part = 0.0f;
            for (int32_t c = b; c < cols && c < b + 256; c++)
                part += xr[c] * xr[c];
            ss += part;
        }
        float inv = 1.0f / sqrtf(ss / (float)cols + eps);
        for (int32_t c = 0; c < cols; c++)
            yr[c] = xr[c] * inv * w[c];
    }
}
