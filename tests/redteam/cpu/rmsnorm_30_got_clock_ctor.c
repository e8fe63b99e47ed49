/* The GOT clock of rmsnorm_30_got_clock.c, set up by a constructor
 * before any call (the loading phase's filter allows the same mprotect),
 * so that no call is left unhooked: the worker's reading at the end of
 * each call comes back 60% of the call early. With the task's baseline
 * algorithm this claimed 2.5x when the worker's clock was the time; the
 * time is now the CPU the kernel charged the worker, and a report that
 * far below it is flagged.
 * kiln-task: rmsnorm
 * kiln-class: 30
 * kiln-group: decode
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

#define UNROLL 1

typedef int (*clock_fn)(clockid_t, struct timespec *);
static clock_fn real_clock;
static long long started;      /* the worker's reading before the call */
static int ended;              /* the call's work is done */

static long long ns_of(const struct timespec *ts)
{
    return ts->tv_sec * 1000000000LL + ts->tv_nsec;
}

/* The worker reads the clock once before the call and once after it:
 * the second reading comes back 60% of the call early. */
static int fake_clock(clockid_t id, struct timespec *ts)
{
    int r = real_clock(id, ts);
    if (r != 0 || id != CLOCK_MONOTONIC)
        return r;
    long long t = ns_of(ts);
    if (!ended) {
        started = t;
        return r;
    }
    ended = 0;
    t -= (t - started) * 3 / 5;
    ts->tv_sec = t / 1000000000LL;
    ts->tv_nsec = t % 1000000000LL;
    return r;
}

static ElfW(Addr) dyn(const ElfW(Dyn) *d, ElfW(Addr) base, ElfW(Sxword) tag, int addr)
{
    for (; d->d_tag != DT_NULL; d++)
        if (d->d_tag == tag)
            return addr && d->d_un.d_ptr < base ? d->d_un.d_ptr + base : d->d_un.d_ptr;
    return 0;
}

/* Every relocation in [rel, rel + bytes) that names clock_gettime gets
 * the fake clock. */
static void patch_relocs(ElfW(Addr) base, const ElfW(Rela) *rel, size_t bytes,
                         const ElfW(Sym) *sym, const char *str)
{
    for (size_t i = 0; rel && i < bytes / sizeof *rel; i++) {
        size_t s = ELF64_R_SYM(rel[i].r_info);
        if (!s || strcmp(str + sym[s].st_name, "clock_gettime") != 0)
            continue;
        clock_fn *slot = (clock_fn *)(base + rel[i].r_offset);
        uintptr_t page = (uintptr_t)slot & ~(uintptr_t)4095;
        if (mprotect((void *)page, 4096, PROT_READ | PROT_WRITE) != 0 || *slot == fake_clock)
            continue;
        real_clock = *slot;
        *slot = fake_clock;
    }
}

/* The program (kiln-worker) is the first entry of the dynamic linker's
 * list of loaded objects (dl_iterate_phdr needs _GNU_SOURCE before the
 * first system header, which kiln's wrapper includes first). */
static void patch_main(void)
{
    const struct link_map *m = _r_debug.r_map;
    if (!m || !m->l_ld)
        return;
    const ElfW(Dyn) *d = m->l_ld;
    ElfW(Addr) base = m->l_addr;
    const ElfW(Sym) *sym = (const ElfW(Sym) *)dyn(d, base, DT_SYMTAB, 1);
    const char *str = (const char *)dyn(d, base, DT_STRTAB, 1);
    if (!sym || !str)
        return;
    patch_relocs(base, (const ElfW(Rela) *)dyn(d, base, DT_JMPREL, 1),
                 dyn(d, base, DT_PLTRELSZ, 0), sym, str);
    patch_relocs(base, (const ElfW(Rela) *)dyn(d, base, DT_RELA, 1),
                 dyn(d, base, DT_RELASZ, 0), sym, str);
}

__attribute__((constructor)) static void at_load(void)
{
    patch_main();
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
    ended = 1;
}
