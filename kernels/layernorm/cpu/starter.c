/* layernorm starter kernel: plain and correct, float accumulators. The mean
 * of a row is a sum divided by cols; a second pass sums (x - mean) and
 * (x - mean)^2, which corrects the mean for its rounding error (rows far
 * from zero, or constant rows, keep their exact centred values) and gives
 * the variance. The baseline every candidate is timed against, and a
 * search's start. */
#include <math.h>
#include <stdint.h>

#define UNROLL 1 //@kiln tune 1 2 4 8

void layernorm(const float *x, const float *w, const float *b, float *y, int32_t rows,
               int32_t cols, float eps)
{
    for (int32_t r = 0; r < rows; r++) {
        const float *xr = x + (int64_t)r * cols;
        float *yr = y + (int64_t)r * cols;
        float acc[UNROLL] = {0};
        int32_t c = 0;
        for (; c + UNROLL <= cols; c += UNROLL)
            for (int u = 0; u < UNROLL; u++)
                acc[u] += xr[c + u];
        for (; c < cols; c++)
            acc[0] += xr[c];
        float s = 0.0f;
        for (int u = 0; u < UNROLL; u++)
            s += acc[u];
        float mean = s / (float)cols, d = 0.0f, ss = 0.0f;
        for (c = 0; c < cols; c++) {
            float t = xr[c] - mean;
            d += t;
            ss += t * t;
        }
        float dm = d / (float)cols;
        float var = ss / (float)cols - dm * dm;
        mean += dm;
        float inv = 1.0f / sqrtf((var > 0.0f ? var : 0.0f) + eps);
        for (c = 0; c < cols; c++)
            yr[c] = (xr[c] - mean) * inv * w[c] + b[c];
    }
}
