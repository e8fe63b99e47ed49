/* Same-process tampering: looks for the baseline's library (base.so) in its
 * own process, and if it is there, finds the worker's table of entry points
 * on the stack above its frame and swaps the baseline's entry for a wrapper
 * that runs the baseline three times. With baseline and candidate in one
 * worker this passed at about 3x; kiln now runs the baseline in a worker of
 * its own, so there is nothing to find and the kernel is judged as the
 * honest rmsnorm it otherwise is: a pass at about 1.3x (its blocked float
 * sums against the starter), far below the 3x the swap gave.
 * kiln-task: rmsnorm
 * kiln-class: 16
 * kiln-expect: pass
 * kiln-max-speedup: 2.0
 */
#include <dlfcn.h>
#include <link.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef void (*entry_fn)(void *const *args);
static entry_fn base_entry;
static int looked, swapped;

/* The baseline's library, if this process has it: found in the dynamic
 * linker's list of loaded objects (no system call), whose entries glibc
 * also accepts as dlopen handles. */
static void find_base(void)
{
    for (struct link_map *m = _r_debug.r_map; m; m = m->l_next) {
        size_t l = m->l_name ? strlen(m->l_name) : 0;
        if (l >= 7 && strcmp(m->l_name + l - 7, "base.so") == 0) {
            void *sym = dlsym((void *)m, "kiln_entry");
            memcpy(&base_entry, &sym, sizeof sym);
            return;
        }
    }
}

static void slow_baseline(void *const *args)
{
    for (int i = 0; i < 3; i++)
        base_entry(args);
}

static void __attribute__((noinline)) swap_on_stack(void)
{
    volatile uintptr_t here = 0;
    volatile uintptr_t *p = &here;
    for (int i = 0; i < 512 && !swapped; i++)   /* 4 KiB above this frame */
        if (p[i] == (uintptr_t)base_entry) {
            p[i] = (uintptr_t)slow_baseline;
            swapped = 1;
        }
}

void rmsnorm(const float *x, const float *w, float *y, int32_t rows, int32_t cols, float eps)
{
    if (!looked) {
        looked = 1;
        find_base();
    }
    if (base_entry && !swapped)
        swap_on_stack();
    for (int32_t r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * cols;
        float *yr = y + (size_t)r * cols;
        float ss = 0.0f;
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
