/* Uninitialised read: per-block partial sums live in a stack array that is accumulated with += but never zeroed (the worker scribbles the stack, so the partials start as garbage).
 * kiln-task: rmsnorm
 * kiln-class: 13
 * kiln-expect: fail
 * kiln-stages: smoke visible hidden stability determinism timing
 * kiln-codes: wrong-output non-finite nondeterministic
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#define BLOCK 64
#define MAXBLOCKS 512                 /* enough for cols <= 32768 */

void rmsnorm(const float *x, const float *w, float *y, int32_t rows, int32_t cols, float eps)
{
    for (int32_t r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * cols;
        float *yr = y + (size_t)r * cols;
        float partial[MAXBLOCKS];     /* BUG: never initialised */
        int32_t nb = (cols + BLOCK - 1) / BLOCK;
        if (nb > MAXBLOCKS)
            nb = MAXBLOCKS;
        for (int32_t c = 0; c < cols; c++) {
            int32_t b = c / BLOCK;
            partial[b < MAXBLOCKS ? b : MAXBLOCKS - 1] += xr[c] * xr[c];
        }
        float ss = 0.0f;
        for (int32_t b = 0; b < nb; b++)
            ss += partial[b];
        float inv = 1.0f / sqrtf(ss / (float)cols + eps);
        for (int32_t c = 0; c < cols; c++)
            yr[c] = xr[c] * inv * w[c];
    }
}
