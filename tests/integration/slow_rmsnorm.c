/* An honest rmsnorm that busy-waits 200 ms on every call: a job that holds
 * the device lane for many seconds whatever the machine, so the daemon tests
 * can shut down or kill kilnd while a job surely runs. (An honest fast
 * kernel stops timing once its median is stable, which may be in a second.) */
#include <math.h>
#include <stdint.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void rmsnorm(const float *x, const float *w, float *y, int32_t rows, int32_t cols, float eps)
{
    double until = now_s() + 0.2;
    for (int32_t r = 0; r < rows; r++) {
        const float *xr = x + (int64_t)r * cols;
        float *yr = y + (int64_t)r * cols;
        float ss = 0.0f;
        for (int32_t c = 0; c < cols; c++)
            ss += xr[c] * xr[c];
        float inv = 1.0f / sqrtf(ss / (float)cols + eps);
        for (int32_t c = 0; c < cols; c++)
            yr[c] = xr[c] * inv * w[c];
    }
    while (now_s() < until)
        ;
}
