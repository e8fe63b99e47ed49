/* Trusted reference for softmax, in double precision. */
#include <math.h>
#include <stdint.h>

void softmax_reference(const double *x, double *y, int64_t rows, int64_t cols)
{
    for (int64_t r = 0; r < rows; r++) {
        const double *xr = x + r * cols;
        double m = xr[0], s = 0;
        for (int64_t c = 1; c < cols; c++)
            m = xr[c] > m ? xr[c] : m;
        for (int64_t c = 0; c < cols; c++)
            s += exp(xr[c] - m);
        for (int64_t c = 0; c < cols; c++)
            y[r * cols + c] = exp(xr[c] - m) / s;
    }
}
