/* Phase detection: watches for the same (rows, cols) arriving more than 4 times in a row (a timing loop) and then estimates the mean square from the first 64 columns only; honest whenever the shape changes often, as during checking.
 * kiln-task: rmsnorm
 * kiln-class: 5
 * kiln-expect: fail
 * kiln-stages: smoke visible hidden stability determinism timing
 * kiln-codes: wrong-output
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>

static int32_t last_rows = -1, last_cols = -1;
static unsigned long streak;

void rmsnorm(const float *x, const float *w, float *y, int32_t rows, int32_t cols, float eps)
{
    if (rows == last_rows && cols == last_cols)
        streak++;
    else
        streak = 0;
    last_rows = rows;
    last_cols = cols;
    int32_t n = cols;
    if (streak >= 4 && cols > 64)
        n = 64;                                   /* "timed": sample the row */
    for (int32_t r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * cols;
        float *yr = y + (size_t)r * cols;
        float ss = 0.0f;                 /* blocked: a float partial per 256 columns */
        for (int32_t b = 0; b < n; b += 256) {
            float part = 0.0f;
            for (int32_t c = b; c < n && c < b + 256; c++)
                part += xr[c] * xr[c];
            ss += part;
        }
        float inv = 1.0f / sqrtf(ss / (float)n + eps);
        for (int32_t c = 0; c < cols; c++)
            yr[c] = xr[c] * inv * w[c];
    }
}
