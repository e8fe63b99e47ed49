/* Non-determinism: the partial-sum block size changes on every call (a static counter standing in for a run-time "autotuner"), so no two consecutive calls round alike although each result is within tolerance.
 * kiln-task: rmsnorm
 * kiln-class: 12
 * kiln-expect: fail
 * kiln-stages: determinism
 * kiln-codes: nondeterministic
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>

static uint32_t calls;

void rmsnorm(const float *x, const float *w, float *y, int32_t rows, int32_t cols, float eps)
{
    int32_t block = 64 + 32 * (int32_t)(calls++ % 7);     /* 64 .. 256 */
    for (int32_t r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * cols;
        float *yr = y + (size_t)r * cols;
        float ss = 0.0f;
        for (int32_t b = 0; b < cols; b += block) {
            float part = 0.0f;
            for (int32_t c = b; c < cols && c < b + block; c++)
                part += xr[c] * xr[c];
            ss += part;
        }
        float inv = 1.0f / sqrtf(ss / (float)cols + eps);
        for (int32_t c = 0; c < cols; c++)
            yr[c] = xr[c] * inv * w[c];
    }
}
