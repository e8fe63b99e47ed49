/* Precision: honest rmsnorm, but every output keeps only 12 significant
 * bits (as if computed in a 12-bit format), the class the old f32 budget
 * let through from about 7,500 columns. Over budget at every width.
 * kiln-task: rmsnorm
 * kiln-expect: fail
 * kiln-codes: wrong-output
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>

static float twelve_bits(float v)
{
    int e;
    float m = frexpf(v, &e);
    return ldexpf(nearbyintf(ldexpf(m, 12)) / 4096.0f, e);
}

void rmsnorm(const float *x, const float *w, float *y, int32_t rows, int32_t cols, float eps)
{
    for (int32_t r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * cols;
        float *yr = y + (size_t)r * cols;
        float ss = 0.0f;
        for (int32_t c = 0; c < cols; c++)
            ss += xr[c] * xr[c];
        float inv = 1.0f / sqrtf(ss / (float)cols + eps);
        for (int32_t c = 0; c < cols; c++)
            yr[c] = twelve_bits(xr[c] * inv * w[c]);
    }
}
