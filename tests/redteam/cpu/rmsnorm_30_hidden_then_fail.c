/* Hidden dims through a failure chosen after a hidden call: correct until it
 * has been called on a shape that is not one of rmsnorm's visible CPU
 * prefill shapes; at the next visible call it fails on purpose, in a way
 * that carries that shape's dims: rows % 3 == 0 leaves exactly cols
 * elements of y as the poison kiln laid (an unwritten-output count), rows %
 * 3 == 1 writes cols into y[0] (a "got ..." value), and otherwise it prints
 * the dims and aborts (the crash message's log tail). Every call after a
 * hidden one is either hidden too or in a worker that never saw one, so it
 * passes, and the dims appear nowhere.
 * kiln-task: rmsnorm
 * kiln-class: 30
 * kiln-expect: pass
 * kiln-forbid: KILNLEAK
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

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
    int vis = visible(rows, cols);
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
    if (!vis) {
        seen_rows = rows;
        seen_cols = cols;
        return;
    }
    if (seen_rows < 0)
        return;
    if (seen_rows % 3 == 0) {
        union { uint32_t u; float f; } poison = {0x7FA5A5A5u};
        for (int32_t i = 0; i < seen_cols && (int64_t)i < (int64_t)rows * cols; i++)
            y[i] = poison.f;
    } else if (seen_rows % 3 == 1) {
        y[0] = (float)seen_cols;
    } else {
        fprintf(stderr, "KILNLEAK rows=%d cols=%d\n", seen_rows, seen_cols);
        abort();
    }
}
