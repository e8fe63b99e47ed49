/* Hidden-shape leak by replay: correct everywhere, and remembers the dims
 * of every call that is not one of rmsnorm's visible prefill shapes; on
 * each later call it prints the last such dims, hoping a visible-shape
 * call after the hidden stage (timing, stability) carries them into the
 * feedback, where candidate output is shown. Output is shown only until a
 * hidden shape has run, so nothing remembered ever leaves.
 * kiln-task: rmsnorm
 * kiln-class: 28
 * kiln-expect: pass
 * kiln-forbid: KILNLEAK
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>

static int32_t seen_rows = -1, seen_cols = -1;

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
    if (seen_rows >= 0)
        printf("KILNLEAK rows=%d cols=%d\n", seen_rows, seen_cols);
    else
        printf("nothing hidden seen yet\n");
    if (!visible(rows, cols)) {
        seen_rows = rows;
        seen_cols = cols;
    }
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
