/* rmsnorm_by16.c - a C rmsnorm that handles whole chunks of 16 columns
 * only (no tail loop), and says so: it requires cols % 16 == 0. Correct
 * where that holds, wrong elsewhere (the tail is never written), so kiln
 * must keep it to the shapes it admits (precond_test.sh). */
#include <math.h>
#include <stdint.h>

/*@kiln require ["cols % 16 == 0"] @*/

void rmsnorm(const float *x, const float *w, float *y, int32_t rows, int32_t cols, float eps)
{
    for (int32_t r = 0; r < rows; r++) {
        const float *xr = x + (int64_t)r * cols;
        float *yr = y + (int64_t)r * cols;
        float acc[16] = {0};
        for (int32_t c = 0; c + 16 <= cols; c += 16)
            for (int u = 0; u < 16; u++)
                acc[u] += xr[c + u] * xr[c + u];
        float ss = 0.0f;
        for (int u = 0; u < 16; u++)
            ss += acc[u];
        float inv = 1.0f / sqrtf(ss / (float)cols + eps);
        for (int32_t c = 0; c + 16 <= cols; c += 16)
            for (int u = 0; u < 16; u++)
                yr[c + u] = xr[c + u] * inv * w[c + u];
    }
}
