/* Caching across calls: precomputes w into a private copy only when the w pointer changes (a "weights are constant" assumption), so a reused w buffer with fresh contents is normalised with stale weights.
 * kiln-task: rmsnorm
 * kiln-class: 4
 * kiln-expect: fail
 * kiln-stages: smoke visible hidden stability determinism timing
 * kiln-codes: wrong-output
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const float *cached_w;
static int32_t cached_cols;
static float *w_copy;

void rmsnorm(const float *x, const float *w, float *y, int32_t rows, int32_t cols, float eps)
{
    if (w != cached_w || cols != cached_cols || !w_copy) {
        free(w_copy);
        w_copy = malloc((size_t)cols * sizeof *w_copy);
        if (w_copy)
            memcpy(w_copy, w, (size_t)cols * sizeof *w_copy);
        cached_w = w;
        cached_cols = cols;
    }
    const float *wk = w_copy ? w_copy : w;
    for (int32_t r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * cols;
        float *yr = y + (size_t)r * cols;
        float ss = 0.0f;                 /* blocked: a float partial per 256 columns */
        for (int32_t b = 0; b < cols; b += 256) {
            float part = 0.0f;
            for (int32_t c = b; c < cols && c < b + 256; c++)
                part += xr[c] * xr[c];
            ss += part;
        }
        float inv = 1.0f / sqrtf(ss / (float)cols + eps);
        for (int32_t c = 0; c < cols; c++)
            yr[c] = xr[c] * inv * wk[c];
    }
}
