/* Non-determinism in the second output only: a process's first call stores r[0] one ULP off (within the budget), later calls exactly; y is the same bits every time. The determinism run in a fresh worker is that worker's first call.
 * kiln-task: add_rmsnorm
 * kiln-class: 12
 * kiln-expect: fail
 * kiln-stages: determinism
 * kiln-codes: nondeterministic
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>

static int calls;

void add_rmsnorm(const float *x, const float *residual, const float *w, float *r, float *y,
                 int32_t rows, int32_t cols, float eps)
{
    for (int32_t i = 0; i < rows; i++) {
        const float *xi = x + (size_t)i * cols, *ri = residual + (size_t)i * cols;
        float *rr = r + (size_t)i * cols, *yi = y + (size_t)i * cols;
        float ss = 0.0f;
        for (int32_t c = 0; c < cols; c++) {
            rr[c] = xi[c] + ri[c];
            ss += rr[c] * rr[c];
        }
        float inv = 1.0f / sqrtf(ss / (float)cols + eps);
        for (int32_t c = 0; c < cols; c++)
            yi[c] = rr[c] * inv * w[c];
    }
    if (calls++ == 0)
        r[0] = nextafterf(r[0], INFINITY);
}
