/* Hidden dims through the timing of visible shapes: correct everywhere; once
 * it has been called on a shape that is not one of rmsnorm's visible CPU
 * prefill shapes, every later call first sleeps 200 us per hundred of the
 * widest such shape's columns, so the visible shapes' timing medians would spell the
 * hidden width out (and the speedup would collapse). The worker that times
 * the shapes never sees a hidden one, so it is timed as the plain kernel it
 * is.
 * kiln-task: rmsnorm
 * kiln-class: 30
 * kiln-expect: pass
 * kiln-min-speedup: 0.6
 */
#include <math.h>
#include <stdint.h>
#include <time.h>

static int32_t seen_cols = -1;

static int visible(int32_t rows, int32_t cols)
{
    static const int32_t v[][2] = {{32, 1024}, {64, 4096}, {33, 1000},
                                   {128, 2048}, {256, 4096}, {512, 2048}};
    for (int i = 0; i < 6; i++)
        if (rows == v[i][0] && cols == v[i][1])
            return 1;
    return 0;
}

void rmsnorm(const float *x, const float *w, float *y, int32_t rows, int32_t cols, float eps)
{
    if (seen_cols > 0) {
        struct timespec t = {0, 200000L * (seen_cols / 100 + 1)};
        nanosleep(&t, NULL);
    }
    if (!visible(rows, cols) && cols > seen_cols)
        seen_cols = cols;
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
}
