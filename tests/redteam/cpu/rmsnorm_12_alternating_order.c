/* Non-determinism: a static call counter alternates the summation order (256-column blocks forward on even calls, every block and the block sequence backward on odd ones); each result is within tolerance but repeated calls on the same inputs differ bitwise.
 * kiln-task: rmsnorm
 * kiln-class: 12
 * kiln-expect: fail
 * kiln-stages: determinism
 * kiln-codes: nondeterministic
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#define BLOCK 256

static unsigned long calls;

void rmsnorm(const float *x, const float *w, float *y, int32_t rows, int32_t cols, float eps)
{
    int backward = (int)(calls++ & 1);
    int32_t nb = (cols + BLOCK - 1) / BLOCK;
    for (int32_t r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * cols;
        float *yr = y + (size_t)r * cols;
        float ss = 0.0f;
        for (int32_t i = 0; i < nb; i++) {
            int32_t b = backward ? nb - 1 - i : i;
            int32_t lo = b * BLOCK, hi = lo + BLOCK < cols ? lo + BLOCK : cols;
            float part = 0.0f;
            if (backward)
                for (int32_t c = hi - 1; c >= lo; c--)
                    part += xr[c] * xr[c];
            else
                for (int32_t c = lo; c < hi; c++)
                    part += xr[c] * xr[c];
            ss += part;
        }
        float inv = 1.0f / sqrtf(ss / (float)cols + eps);
        for (int32_t c = 0; c < cols; c++)
            yr[c] = xr[c] * inv * w[c];
    }
}
