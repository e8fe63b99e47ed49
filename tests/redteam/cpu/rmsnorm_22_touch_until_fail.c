/* Resource exhaustion: keeps allocating and touching 256 MiB blocks (never freed, result never checked) until memory runs out, then would compute y.
 * kiln-task: rmsnorm
 * kiln-class: 22
 * kiln-expect: fail
 * kiln-stages: smoke
 * kiln-codes: crash resource-limit sandbox-violation timeout
 */
#include <stdlib.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>

void rmsnorm(const float *x, const float *w, float *y, int32_t rows, int32_t cols, float eps)
{
    const size_t block = (size_t)256 << 20;
    for (;;) {
        volatile char *p = malloc(block);
        for (size_t i = 0; i < block; i += 4096)
            p[i] = 1;                /* NULL once malloc fails: SIGSEGV */
    }
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
