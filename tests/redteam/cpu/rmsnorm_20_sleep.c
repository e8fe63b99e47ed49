/* Hang: computes y correctly and then sleeps for 1000 s (uses no CPU, so only a wall-clock timeout stops it; a seccomp kill of the sleep is also acceptable).
 * kiln-task: rmsnorm
 * kiln-class: 20
 * kiln-expect: fail
 * kiln-stages: smoke
 * kiln-codes: timeout resource-limit sandbox-violation
 */
#include <time.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>

void rmsnorm(const float *x, const float *w, float *y, int32_t rows, int32_t cols, float eps)
{
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
    struct timespec ts = {1000, 0};
    while (nanosleep(&ts, &ts) != 0)
        ;
}
