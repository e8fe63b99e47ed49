/* Escape, late: behaves for 40 calls, then opens /etc/passwd on every later call (checks that the sandbox is still on during the later stages and timing).
 * kiln-task: rmsnorm
 * kiln-class: 23
 * kiln-expect: fail
 * kiln-stages: smoke visible hidden stability determinism timing
 * kiln-codes: sandbox-violation
 */
#include <stdio.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>

static unsigned long calls;

void rmsnorm(const float *x, const float *w, float *y, int32_t rows, int32_t cols, float eps)
{
    if (++calls > 40) {
        FILE *f = fopen("/etc/passwd", "r");
        if (f)
            fclose(f);
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
