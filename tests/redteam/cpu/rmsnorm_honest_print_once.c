/* Honest, and says hello: prints one line on its first call (smoke), as a
 * kernel author debugging would, then computes like the plain starter. What
 * it printed is shown in the verdict's feedback; nothing about it is judged.
 * kiln-task: rmsnorm
 * kiln-class: honest
 * kiln-expect: pass
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>

void rmsnorm(const float *x, const float *w, float *y, int32_t rows, int32_t cols, float eps)
{
    static int said;
    if (!said++)
        printf("rmsnorm: first call, %d x %d\n", rows, cols);
    for (int32_t r = 0; r < rows; r++) {
        const float *xr = x + (int64_t)r * cols;
        float *yr = y + (int64_t)r * cols;
        double ss = 0;
        for (int32_t c = 0; c < cols; c++)
            ss += (double)xr[c] * xr[c];
        float inv = (float)(1.0 / sqrt(ss / cols + eps));
        for (int32_t c = 0; c < cols; c++)
            yr[c] = xr[c] * inv * w[c];
    }
}
