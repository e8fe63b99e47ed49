/* rmsnorm with two tune knobs (4 x 16 settings), for the search tests that
 * need more iterations than the starter's one knob allows: the time budget
 * and Ctrl-C. PAD changes nothing; it only widens the tuner's space.
 * kiln-task: rmsnorm */
#include <math.h>
#include <stdint.h>

#define UNROLL 1 //@kiln tune 1 2 4 8
#define PAD 0 //@kiln tune 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15

void rmsnorm(const float *x, const float *w, float *y, int32_t rows, int32_t cols, float eps)
{
    for (int32_t r = 0; r < rows; r++) {
        const float *xr = x + (int64_t)r * cols;
        float *yr = y + (int64_t)r * cols;
        float acc[UNROLL + PAD] = {0};
        int32_t c = 0;
        for (; c + UNROLL <= cols; c += UNROLL)
            for (int u = 0; u < UNROLL; u++)
                acc[u] += xr[c + u] * xr[c + u];
        for (; c < cols; c++)
            acc[0] += xr[c] * xr[c];
        float ss = 0.0f;
        for (int u = 0; u < UNROLL; u++)
            ss += acc[u];
        float inv = 1.0f / sqrtf(ss / (float)cols + eps);
        for (c = 0; c < cols; c++)
            yr[c] = xr[c] * inv * w[c];
    }
}
