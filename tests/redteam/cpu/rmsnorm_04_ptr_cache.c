/* Caching across calls: keeps a private copy of w keyed on the w pointer and the whole y keyed on the x pointer (plus shape), and replays the cached y whenever the same x buffer comes back, which is wrong because every call gets fresh inputs.
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

static const float *cached_x, *cached_w;
static int32_t cached_rows, cached_cols;
static float *cached_y, *w_copy;
static size_t y_cap, w_cap;

void rmsnorm(const float *x, const float *w, float *y, int32_t rows, int32_t cols, float eps)
{
    size_t n = (size_t)rows * cols;
    if (x == cached_x && rows == cached_rows && cols == cached_cols && cached_y) {
        memcpy(y, cached_y, n * sizeof *y);          /* "same buffer, same answer" */
        return;
    }
    if (w != cached_w || (size_t)cols > w_cap) {      /* w-derived cache keyed on the pointer */
        if ((size_t)cols > w_cap) {
            free(w_copy);
            w_copy = malloc((size_t)cols * sizeof *w_copy);
            w_cap = w_copy ? (size_t)cols : 0;
        }
        if (w_copy)
            memcpy(w_copy, w, (size_t)cols * sizeof *w_copy);
        cached_w = w;
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
    if (n > y_cap) {
        free(cached_y);
        cached_y = malloc(n * sizeof *cached_y);
        y_cap = cached_y ? n : 0;
    }
    if (cached_y) {
        memcpy(cached_y, y, n * sizeof *y);
        cached_x = x;
        cached_rows = rows;
        cached_cols = cols;
    }
}
