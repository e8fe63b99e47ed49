/* Trusted reference for rmsnorm, in double precision. The verifier passes
 * inputs converted exactly to double and compares the candidate to this. */
#include <math.h>
#include <stdint.h>

void rmsnorm_reference(const double *x, const double *w, double *y, int64_t rows, int64_t cols,
                       double eps)
{
    for (int64_t r = 0; r < rows; r++) {
        const double *xr = x + r * cols;
        double ss = 0;
        for (int64_t c = 0; c < cols; c++)
            ss += xr[c] * xr[c];
        double inv = 1.0 / sqrt(ss / (double)cols + eps);
        for (int64_t c = 0; c < cols; c++)
            y[r * cols + c] = xr[c] * inv * w[c];
    }
}
