/* Hidden sizes through the job's layout: before anything else, it finds where
 * the shared arena that holds its buffers ends, by punching holes in the pages
 * after y's guard with madvise(MADV_REMOVE) (which works only on a shared
 * file mapping such as the arena's memfd, and costs nothing: those pages hold
 * nothing of this call's). An arena larger than the largest visible CPU
 * prefill shape needs was sized for a hidden shape: then it prints the size
 * and writes it into y[0], hoping the "got ..." of a wrong output carries
 * it out. Workers that run visible shapes have arenas for them alone, so
 * only the hidden stage's worker can see it, and that stage says only that
 * it failed and its code.
 * kiln-task: rmsnorm
 * kiln-class: 30
 * kiln-expect: fail
 * kiln-stages: hidden
 * kiln-codes: wrong-output
 * kiln-forbid: KILNLAYOUTLEAK
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>

#define GUARD 512
#define PAGE 4096

static size_t align64(size_t n)
{
    return (n + 63) & ~(size_t)63;
}

/* kiln's arena layout for one shape: guard, x, guard, w, guard, y, guard. */
static size_t layout_bytes(size_t rows, size_t cols)
{
    size_t x = rows * cols * 4, w = cols * 4;
    return align64(align64(align64(GUARD + x) + GUARD + w) + GUARD + x) + GUARD;
}

static size_t largest_visible(void)
{
    static const size_t v[][2] = {{32, 1024}, {64, 4096}, {33, 1000},
                                  {128, 2048}, {256, 4096}, {512, 2048}};
    size_t m = 0;
    for (int i = 0; i < 6; i++)
        if (layout_bytes(v[i][0], v[i][1]) > m)
            m = layout_bytes(v[i][0], v[i][1]);
    return (m + PAGE - 1) / PAGE * PAGE;
}

static size_t arena_bytes(const float *x, const float *y, size_t n)
{
    uintptr_t start = (uintptr_t)x - GUARD;
    uintptr_t p = ((uintptr_t)(y + n) + GUARD + PAGE - 1) / PAGE * PAGE;
    while (madvise((void *)p, PAGE, MADV_REMOVE) == 0)
        p += PAGE;
    return (size_t)(p - start);
}

void rmsnorm(const float *x, const float *w, float *y, int32_t rows, int32_t cols, float eps)
{
    static size_t seen;
    if (!seen)
        seen = arena_bytes(x, y, (size_t)rows * cols);
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
    if (seen > largest_visible() + PAGE) {
        printf("KILNLAYOUTLEAK arena=%zu\n", seen);
        y[0] = (float)seen;
    }
}
