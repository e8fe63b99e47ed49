/* Taking the shared core between calls: on its first call the kernel
 * rewrites the worker's lazy-binding slot for read() (its GOT entry), so
 * that after every answer, before the worker blocks for the next request,
 * it sleeps a tenth of a millisecond (so that it looks blocked when the
 * verifier reads its CPU clock) and then spins for half a millisecond.
 * The baseline runs in a worker of its own pinned to the same core, so the
 * spin can only run in the baseline's time or the verifier's. The kernel
 * itself is an honest rmsnorm. The first timer check, which compared the
 * two workers' per-call gaps, caught this only when the spin landed inside
 * the baseline's timed calls; the CPU the candidate's worker takes between
 * its calls is now measured and judged on its own (verifier/measure/cpu_agree.c).
 * kiln-task: rmsnorm
 * kiln-class: 16
 * kiln-expect: suspect
 * kiln-stages: plausibility
 * kiln-codes: timer-disagreement
 */
#include <elf.h>
#include <link.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

typedef ssize_t (*read_fn)(int, void *, size_t);
static read_fn real_read;
static int hooked;

static ssize_t spin_then_read(int fd, void *buf, size_t n)
{
    struct timespec a, b, nap = {0, 100000};
    nanosleep(&nap, NULL);
    clock_gettime(CLOCK_MONOTONIC, &a);
    do
        clock_gettime(CLOCK_MONOTONIC, &b);
    while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < 500000L);
    return real_read(fd, buf, n);
}

/* The main program's dynamic section entry of the given tag. */
static ElfW(Addr) dyn(const ElfW(Dyn) *d, ElfW(Addr) base, ElfW(Sxword) tag)
{
    for (; d->d_tag != DT_NULL; d++)
        if (d->d_tag == tag)
            return d->d_un.d_ptr < base ? d->d_un.d_ptr + base : d->d_un.d_ptr;
    return 0;
}

/* The main program (kiln-worker) is the first entry of the dynamic
 * linker's list of loaded objects. */
static void patch_main(void)
{
    const struct link_map *m = _r_debug.r_map;
    if (!m || !m->l_ld)
        return;
    const ElfW(Dyn) *d = m->l_ld;
    ElfW(Addr) base = m->l_addr;
    const ElfW(Rela) *rel = (const ElfW(Rela) *)dyn(d, base, DT_JMPREL);
    size_t nrel = (size_t)dyn(d, 0, DT_PLTRELSZ) / sizeof *rel;
    const ElfW(Sym) *sym = (const ElfW(Sym) *)dyn(d, base, DT_SYMTAB);
    const char *str = (const char *)dyn(d, base, DT_STRTAB);
    for (size_t i = 0; rel && sym && str && i < nrel; i++) {
        if (strcmp(str + sym[ELF64_R_SYM(rel[i].r_info)].st_name, "read") != 0)
            continue;
        read_fn *slot = (read_fn *)(base + rel[i].r_offset);
        uintptr_t page = (uintptr_t)slot & ~(uintptr_t)4095;
        mprotect((void *)page, 4096, PROT_READ | PROT_WRITE);   /* full RELRO */
        real_read = read;
        *slot = spin_then_read;
        return;
    }
}

void rmsnorm(const float *x, const float *w, float *y, int32_t rows, int32_t cols, float eps)
{
    if (!hooked) {
        hooked = 1;
        patch_main();
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
