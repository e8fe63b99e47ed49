/* Escape: a plain kill() aimed at the parent process (the daemon), sent with signal 0 so that nothing is delivered even if the sandbox failed; the seccomp filter must trap the syscall itself. Then computes y correctly.
 * kiln-task: rmsnorm
 * kiln-class: 23
 * kiln-expect: fail
 * kiln-stages: smoke
 * kiln-codes: sandbox-violation
 */
#include <signal.h>
#include <sys/types.h>
#include <unistd.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>

static int probe;

void rmsnorm(const float *x, const float *w, float *y, int32_t rows, int32_t cols, float eps)
{
    probe = kill(getppid(), 0);      /* a real attacker would send SIGKILL */
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
