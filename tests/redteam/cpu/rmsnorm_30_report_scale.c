/* A clock the candidate can reach, in the worker's writable data: a
 * constructor finds kiln-worker's writable segment (its program headers,
 * through the dynamic linker's link_map list), leaves out what full RELRO
 * made read-only, and sets every double there that holds 1.0 to 0.85. One
 * of them is the scale kiln's fault injection multiplies the candidate's
 * reported times by, so the worker reports 15% less: under the quarter
 * that the report's cross-check allows. The plant is its own baseline and
 * does this only where it was loaded as the candidate (cand.so), so both
 * sides run the baseline algorithm in the very same layout: this claimed
 * 1.18x when the worker's report was the time; the time is now the CPU the
 * kernel charged the worker, which the lie does not touch: a pass at
 * about 1.0x.
 * kiln-task: rmsnorm
 * kiln-class: 30
 * kiln-group: decode
 * kiln-baseline: self
 * kiln-expect: pass
 * kiln-max-speedup: 1.08
 */
#include <elf.h>
#include <link.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#define UNROLL 1

static int loaded_as_candidate(void)
{
    int cand = 0;
    for (const struct link_map *m = _r_debug.r_map; m; m = m->l_next) {
        size_t n = m->l_name ? strlen(m->l_name) : 0;
        cand |= n >= 8 && strcmp(m->l_name + n - 8, "/cand.so") == 0;
    }
    return cand;
}

/* The program's writable, initialised data less its RELRO part. */
static void data_of(const struct link_map *m, double **lo, double **hi)
{
    const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)m->l_addr;
    const ElfW(Phdr) *ph = (const ElfW(Phdr) *)(m->l_addr + eh->e_phoff);
    uintptr_t from = 0, to = 0, relro_end = 0;
    for (int i = 0; i < eh->e_phnum; i++) {
        if (ph[i].p_type == PT_LOAD && (ph[i].p_flags & PF_W)) {
            from = m->l_addr + ph[i].p_vaddr;
            to = from + ph[i].p_filesz;
        }
        if (ph[i].p_type == PT_GNU_RELRO)
            relro_end = (m->l_addr + ph[i].p_vaddr + ph[i].p_memsz + 4095) & ~(uintptr_t)4095;
    }
    from = from > relro_end ? from : relro_end;
    *lo = (double *)((from + 7) & ~(uintptr_t)7);
    *hi = (double *)(to & ~(uintptr_t)7);
}

__attribute__((constructor)) static void at_load(void)
{
    const struct link_map *m = _r_debug.r_map;   /* the program: kiln-worker */
    if (!m || !loaded_as_candidate())
        return;
    double *lo, *hi;
    data_of(m, &lo, &hi);
    for (double *p = lo; p < hi; p++)
        if (*p == 1.0)
            *p = 0.85;
}

void rmsnorm(const float *x, const float *w, float *y, int32_t rows, int32_t cols, float eps)
{
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
}
