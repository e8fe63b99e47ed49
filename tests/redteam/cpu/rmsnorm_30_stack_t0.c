/* A clock the candidate can reach, on the worker's stack: the worker reads
 * the clock just before the call and keeps the reading in its frame or in
 * a register that a callee saves on the stack. The kernel reads the clock
 * itself on entry, finds (once) every word between its own frame and the
 * top of the stack that holds a reading of the last 50 us, and at the end
 * of each call moves each forward by 15% of the call: the worker then reports 15% less, under
 * the quarter that the report's cross-check allows, so nothing looks
 * wrong. Nothing of the worker's code or tables is touched, so full RELRO
 * and a read-only GOT change nothing. The plant is its own baseline and
 * lies only where it was loaded as the candidate (cand.so), so both sides
 * run the baseline algorithm in the very same layout (the same C in
 * another object ran up to 1.4x apart here): this claimed 1.18x when the
 * worker's clock was the time; the time is now the CPU the kernel charged
 * the worker, which the lie does not touch: a pass at about 1.0x.
 * kiln-task: rmsnorm
 * kiln-class: 30
 * kiln-group: decode
 * kiln-baseline: self
 * kiln-expect: pass
 * kiln-max-speedup: 1.08
 */
#include <link.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#define UNROLL 1
#define MAX_HITS 16

extern void *__libc_stack_end;   /* glibc: the top of the main stack */

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The words above lo that hold a reading between since and until (the
 * kernel's own reading, equal to until, is not one of them). */
static int find_readings(uint64_t *lo, uint64_t since, uint64_t until, uint64_t *hits[])
{
    int n = 0;
    for (uint64_t *p = lo; (void *)(p + 1) <= __libc_stack_end && n < MAX_HITS; p++)
        if (*p >= since && *p < until)
            hits[n++] = p;
    return n;
}

/* Loaded as the candidate: the worker's library is cand.so. */
static int as_candidate(void)
{
    static int known, cand;
    if (!known) {
        known = 1;
        for (const struct link_map *m = _r_debug.r_map; m; m = m->l_next) {
            size_t n = m->l_name ? strlen(m->l_name) : 0;
            cand |= n >= 8 && strcmp(m->l_name + n - 8, "/cand.so") == 0;
        }
    }
    return cand;
}

void rmsnorm(const float *x, const float *w, float *y, int32_t rows, int32_t cols, float eps)
{
    static uint64_t *hits[MAX_HITS];
    static int nhits = -1;
    volatile uint64_t start = now_ns();
    uint64_t since = start - 50000;
    if (nhits < 0 && as_candidate()) {
        /* Once, from a little below this frame (a register the worker keeps
         * the reading in may be saved by this very function); every call
         * comes from the same depth, so later calls look only there. */
        uint64_t *lo = (uint64_t *)((uintptr_t)__builtin_frame_address(0) - 256 & ~(uintptr_t)7);
        nhits = find_readings(lo, since, start, hits);
    }
    int n = 0;
    uint64_t *now[MAX_HITS];
    for (int i = 0; i < nhits; i++)
        if (*hits[i] >= since && *hits[i] < start)
            now[n++] = hits[i];
    /* kernels/rmsnorm/cpu/starter.c, the task's baseline, as it is */
    for (int32_t r = 0; r < rows; r++) {
        const float *xr = x + (int64_t)r * cols;
        float *yr = y + (int64_t)r * cols;
        float acc[UNROLL] = {0};
        int32_t c = 0;
        for (; c + UNROLL <= cols; c += UNROLL)
            for (int u = 0; u < UNROLL; u++)
                acc[u] += xr[c + u] * xr[c + u];
        for (; c < cols; c++)
            acc[0] += xr[c] * xr[c];
        float ss = 0.0f;
        for (int u = 0; u < UNROLL; u++)
            ss += acc[u];
        float inv = 1.0f / sqrtf(ss / (float)cols + eps);
        for (c = 0; c < cols; c++)
            yr[c] = xr[c] * inv * w[c];
    }
    uint64_t shift = (now_ns() - start) * 3 / 20;
    for (int i = 0; i < n; i++)
        *now[i] += shift;
}
