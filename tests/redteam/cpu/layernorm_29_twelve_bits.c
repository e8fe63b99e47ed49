/* Precision: honest layernorm (two passes, the mean corrected), but every
 * output keeps only 12 significant bits: the old f32 budget (256 + 32√n)
 * let that through from about 600 columns, the new one (64 + 4√n) at no
 * width up to 65,536.
 * kiln-task: layernorm
 * kiln-expect: fail
 * kiln-codes: wrong-output
 */
#include <math.h>
#include <stdint.h>

static float twelve_bits(float v)
{
    int e;
    float m = frexpf(v, &e);
    return ldexpf(nearbyintf(ldexpf(m, 12)) / 4096.0f, e);
}

void layernorm(const float *x, const float *w, const float *b, float *y, int32_t rows,
               int32_t cols, float eps)
{
    for (int32_t r = 0; r < rows; r++) {
        const float *xr = x + (int64_t)r * cols;
        float *yr = y + (int64_t)r * cols;
        float s = 0.0f, d = 0.0f, ss = 0.0f;
        for (int32_t c = 0; c < cols; c++)
            s += xr[c];
        float mean = s / (float)cols;
        for (int32_t c = 0; c < cols; c++) {
            float t = xr[c] - mean;
            d += t;
            ss += t * t;
        }
        float dm = d / (float)cols;
        float var = ss / (float)cols - dm * dm;
        mean += dm;
        float inv = 1.0f / sqrtf((var > 0.0f ? var : 0.0f) + eps);
        for (int32_t c = 0; c < cols; c++)
            yr[c] = twelve_bits((xr[c] - mean) * inv * w[c] + b[c]);
    }
}
