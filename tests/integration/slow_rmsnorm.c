/* An honest rmsnorm that takes 100 ms on every call: a job that holds the
 * device lane for many seconds whatever the machine, so the daemon tests
 * can shut down or kill kilnd while a job surely runs. (An honest fast
 * kernel stops timing once its median is stable, which may be in a second.)
 * (A job of it, --group decode --timing-ms 200, makes 13 calls: 6.5 s.)
 * It sleeps out its 100 ms rather than spinning: the time it reports is the
 * time the call took, its CPU time is less (as for a call that waited for a
 * core, which the CPU timer check allows), and the suite's other tests get
 * the core. Spinning, it burned about 20 s of CPU per suite. */
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
    double until = now_s() + 0.1;
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
    for (double left; (left = until - now_s()) > 0;) {
        struct timespec pause = {0, (long)(left * 1e9)};
        nanosleep(&pause, NULL);
    }
}
