/* Crash: an integer division by a lane count read from a volatile zero (SIGFPE on x86-64) before computing y.
 * kiln-task: rmsnorm
 * kiln-class: 21
 * kiln-expect: fail
 * kiln-stages: smoke
 * kiln-codes: crash
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>

static volatile int32_t lanes = 0;   /* "filled in by the tuner" */

void rmsnorm(const float *x, const float *w, float *y, int32_t rows, int32_t cols, float eps)
{
    int32_t l = lanes;
    int32_t chunks = cols / l;       /* SIGFPE */
    for (int32_t r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * cols;
        float *yr = y + (size_t)r * cols;
        float ss = 0.0f;             /* one float partial per chunk of l columns */
        for (int32_t k = 0; k < chunks; k++) {
            float part = 0.0f;
            for (int32_t c = k * l; c < (k + 1) * l; c++)
                part += xr[c] * xr[c];
            ss += part;
        }
        for (int32_t c = chunks * l; c < cols; c++)
            ss += xr[c] * xr[c];
        float inv = 1.0f / sqrtf(ss / (float)cols + eps);
        for (int32_t c = 0; c < cols; c++)
            yr[c] = xr[c] * inv * w[c];
    }
}
