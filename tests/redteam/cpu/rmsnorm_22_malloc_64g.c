/* Resource exhaustion: mallocs a 64 GiB 'lookup table' without checking the result and touches every page of it, then computes y correctly.
 * kiln-task: rmsnorm
 * kiln-class: 22
 * kiln-expect: fail
 * kiln-stages: smoke
 * kiln-codes: crash resource-limit sandbox-violation
 */
#include <stdlib.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>

void rmsnorm(const float *x, const float *w, float *y, int32_t rows, int32_t cols, float eps)
{
    size_t bytes = (size_t)64 << 30;
    volatile char *table = malloc(bytes);
    for (size_t i = 0; i < bytes; i += 4096)
        table[i] = (char)i;
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
    free((void *)table);
}
