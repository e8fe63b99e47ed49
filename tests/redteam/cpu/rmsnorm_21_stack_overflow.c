/* Crash: a recursive pairwise sum whose split never shrinks a length-1 range, so it recurses until the stack overflows (SIGSEGV).
 * kiln-task: rmsnorm
 * kiln-class: 21
 * kiln-expect: fail
 * kiln-stages: smoke
 * kiln-codes: crash
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>

static float sumsq(const float *v, int32_t n)
{
    volatile char frame[256];        /* keeps every frame real */
    frame[0] = (char)n;
    if (n <= 0)
        return 0.0f;
    int32_t h = (n + 1) / 2;         /* BUG: h == n when n == 1 */
    return sumsq(v, h) + sumsq(v + h, n - h) + (float)(frame[0] & 0);
}

void rmsnorm(const float *x, const float *w, float *y, int32_t rows, int32_t cols, float eps)
{
    for (int32_t r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * cols;
        float *yr = y + (size_t)r * cols;
        float inv = 1.0f / sqrtf(sumsq(xr, cols) / (float)cols + eps);
        for (int32_t c = 0; c < cols; c++)
            yr[c] = xr[c] * inv * w[c];
    }
}
