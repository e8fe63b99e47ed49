/* Trusted reference for layernorm, in double precision. The mean gets one
 * correction pass (mean += sum(x - mean) / cols), so rows far from zero or
 * with every element equal give their exact centred values. */
#include <math.h>
#include <stdint.h>

void layernorm_reference(const double *x, const double *w, const double *b, double *y,
                         int64_t rows, int64_t cols, double eps)
{
    for (int64_t r = 0; r < rows; r++) {
        const double *xr = x + r * cols;
        double s = 0, d = 0, ss = 0;
        for (int64_t c = 0; c < cols; c++)
            s += xr[c];
        double mean = s / (double)cols;
        for (int64_t c = 0; c < cols; c++)
            d += xr[c] - mean;
        mean += d / (double)cols;
        for (int64_t c = 0; c < cols; c++)
            ss += (xr[c] - mean) * (xr[c] - mean);
        double inv = 1.0 / sqrt(ss / (double)cols + eps);
        for (int64_t c = 0; c < cols; c++)
            y[r * cols + c] = (xr[c] - mean) * inv * w[c] + b[c];
    }
}
