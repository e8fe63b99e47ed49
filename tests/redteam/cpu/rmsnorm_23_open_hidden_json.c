/* Escape: tries to read the task's hidden shapes (../../tasks/rmsnorm/hidden.json and similar paths) to specialise on them, then computes y correctly.
 * kiln-task: rmsnorm
 * kiln-class: 23
 * kiln-expect: fail
 * kiln-stages: smoke
 * kiln-codes: sandbox-violation
 */
#include <stdio.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>

static const char *const paths[] = {
    "../../tasks/rmsnorm/hidden.json",
    "tasks/rmsnorm/hidden.json",
    "../tasks/rmsnorm/hidden.json",
    "../../../tasks/rmsnorm/hidden.json",
};

static long hidden_bytes;

void rmsnorm(const float *x, const float *w, float *y, int32_t rows, int32_t cols, float eps)
{
    for (size_t i = 0; i < sizeof paths / sizeof *paths; i++) {
        FILE *f = fopen(paths[i], "r");
        if (!f)
            continue;
        while (fgetc(f) != EOF)
            hidden_bytes++;
        fclose(f);
        break;
    }
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
            yr[c] = xr[c] * inv * w[c];
    }
}
