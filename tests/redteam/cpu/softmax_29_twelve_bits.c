/* Precision: honest softmax, but every output keeps only 12 significant
 * bits. Over the f32 budget at every width.
 * kiln-task: softmax
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

void softmax(const float *x, float *y, int32_t rows, int32_t cols)
{
    for (int32_t r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * cols;
        float *yr = y + (size_t)r * cols;
        float m = xr[0];
        for (int32_t c = 1; c < cols; c++)
            m = xr[c] > m ? xr[c] : m;
        float s = 0.0f;
        for (int32_t c = 0; c < cols; c++) {
            float e = expf(xr[c] - m);
            yr[c] = e;
            s += e;
        }
        for (int32_t c = 0; c < cols; c++)
            yr[c] = twelve_bits(yr[c] / s);
    }
}
