/* softmax starter kernel: plain and correct (max, exp, sum, divide).
 * The baseline every candidate is timed against, and a search's start. */
#include <math.h>
#include <stdint.h>

#define UNROLL 1 //@kiln tune 1 2 4 8

void softmax(const float *x, float *y, int32_t rows, int32_t cols)
{
    for (int32_t r = 0; r < rows; r++) {
        const float *xr = x + (int64_t)r * cols;
        float *yr = y + (int64_t)r * cols;
        float m = xr[0];
        for (int32_t c = 1; c < cols; c++)
            m = xr[c] > m ? xr[c] : m;
        float acc[UNROLL] = {0};
        int32_t c = 0;
        for (; c + UNROLL <= cols; c += UNROLL)
            for (int u = 0; u < UNROLL; u++) {
                yr[c + u] = expf(xr[c + u] - m);
                acc[u] += yr[c + u];
            }
        for (; c < cols; c++) {
            yr[c] = expf(xr[c] - m);
            acc[0] += yr[c];
        }
        float s = 0.0f;
        for (int u = 0; u < UNROLL; u++)
            s += acc[u];
        float inv = 1.0f / s;
        for (c = 0; c < cols; c++)
            yr[c] *= inv;
    }
}
