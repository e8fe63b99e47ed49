/* Uninitialised read: per-block partial sums live in a malloc'd scratch buffer (malloc, not calloc) that is accumulated with += before ever being written (each slot is zeroed only after use, for the next row), so row 0 starts from whatever the allocator or the worker's perturbation left there.
 * kiln-task: rmsnorm
 * kiln-class: 13
 * kiln-expect: fail
 * kiln-stages: smoke visible hidden stability determinism timing
 * kiln-codes: wrong-output non-finite nondeterministic
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#define BLOCK 64

void rmsnorm(const float *x, const float *w, float *y, int32_t rows, int32_t cols, float eps)
{
    int32_t nb = (cols + BLOCK - 1) / BLOCK;
    float *partial = malloc((size_t)nb * sizeof *partial);   /* BUG: not zeroed */
    if (!partial)
        return;
    for (int32_t r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * cols;
        float *yr = y + (size_t)r * cols;
        for (int32_t c = 0; c < cols; c++)
            partial[c / BLOCK] += xr[c] * xr[c];
        float ss = 0.0f;
        for (int32_t b = 0; b < nb; b++) {
            ss += partial[b];
            partial[b] = 0.0f;            /* zeroed after use, for the next row */
        }
        float inv = 1.0f / sqrtf(ss / (float)cols + eps);
        for (int32_t c = 0; c < cols; c++)
            yr[c] = xr[c] * inv * w[c];
    }
    free(partial);
}
