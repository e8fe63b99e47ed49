/* Prints what it is about to do, then gets the scale wrong (no 1/cols in
 * the mean): the failing verdict's feedback shows the printed line. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>

void rmsnorm(const float *x, const float *w, float *y, int32_t rows, int32_t cols, float eps)
{
    printf("KILNWRONG about to normalise %d rows\n", rows);
    for (int32_t r = 0; r < rows; r++) {
        const float *xr = x + (int64_t)r * cols;
        float *yr = y + (int64_t)r * cols;
        float ss = 0.0f;
        for (int32_t c = 0; c < cols; c++)
            ss += xr[c] * xr[c];
        float inv = 1.0f / sqrtf(ss + eps);
        for (int32_t c = 0; c < cols; c++)
            yr[c] = xr[c] * inv * w[c];
    }
}
