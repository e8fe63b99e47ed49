/* population/rep.c - keep/slow4.c with its repeat count as a knob (REP):
 * population_test.sh starts from REP 4 and answers REP 1, so the two land
 * in different archive cells whatever the timing noise (REP4, REP1). The
 * empty asm keeps the compiler from merging the repeats. */
#include <math.h>
#include <stdint.h>

#define REP 4 //@kiln tune 1 2 4

static void row(const float *xr, const float *w, float *yr, int32_t cols, float eps)
{
    float ss = 0.0f;
    for (int32_t c = 0; c < cols; c++)
        ss += xr[c] * xr[c];
    float inv = 1.0f / sqrtf(ss / (float)cols + eps);
    for (int32_t c = 0; c < cols; c++)
        yr[c] = xr[c] * inv * w[c];
}

void rmsnorm(const float *x, const float *w, float *y, int32_t rows, int32_t cols, float eps)
{
    for (int rep = 0; rep < REP; rep++) {
        for (int32_t r = 0; r < rows; r++)
            row(x + (int64_t)r * cols, w, y + (int64_t)r * cols, cols, eps);
        __asm__ volatile("" ::: "memory");
    }
}
