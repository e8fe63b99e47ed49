/* Leaving out the worker's own work instead of its clock: a constructor
 * points kiln-worker's GOT slots for memset and mallopt at functions of
 * its own (mprotect, as in rmsnorm_30_got_clock.c), which skip the 32 KiB
 * stack scribble and the freed-heap perturbing that the worker does for
 * every call, and pass everything else on. Where that work lay in the
 * call's round trip, the CPU the kernel charged the candidate's worker
 * would hold less than the baseline's for the same call (about 1 us of a
 * 1.5 us call here). The worker now scribbles in a round trip of its own,
 * before the call's data are staged, so nothing a candidate can leave out
 * is in the time. The plant is its own baseline and does this only where
 * it was loaded as the candidate (cand.so): a pass at about 1.0x.
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
#include <sys/mman.h>

#define UNROLL 1

typedef void *(*memset_fn)(void *, int, size_t);
typedef int (*mallopt_fn)(int, int);
static memset_fn real_memset;

/* The worker's scribble is one memset of 32 KiB of its stack. */
static void *lazy_memset(void *p, int c, size_t n)
{
    return n == 32768 ? p : real_memset(p, c, n);
}

static int lazy_mallopt(int param, int value)
{
    (void)param;
    (void)value;
    return 1;
}

static ElfW(Addr) dyn(const ElfW(Dyn) *d, ElfW(Addr) base, ElfW(Sxword) tag, int addr)
{
    for (; d->d_tag != DT_NULL; d++)
        if (d->d_tag == tag)
            return addr && d->d_un.d_ptr < base ? d->d_un.d_ptr + base : d->d_un.d_ptr;
    return 0;
}

/* Every relocation in [rel, rel + bytes) that names memset or mallopt
 * gets the plant's own. */
static void patch_relocs(ElfW(Addr) base, const ElfW(Rela) *rel, size_t bytes,
                         const ElfW(Sym) *sym, const char *str)
{
    for (size_t i = 0; rel && i < bytes / sizeof *rel; i++) {
        size_t s = ELF64_R_SYM(rel[i].r_info);
        const char *name = s ? str + sym[s].st_name : "";
        int ms = strcmp(name, "memset") == 0, mo = strcmp(name, "mallopt") == 0;
        if (!ms && !mo)
            continue;
        void **slot = (void **)(base + rel[i].r_offset);
        uintptr_t page = (uintptr_t)slot & ~(uintptr_t)4095;
        if (mprotect((void *)page, 4096, PROT_READ | PROT_WRITE) != 0)
            continue;
        if (ms && *slot != (void *)lazy_memset) {
            real_memset = (memset_fn)*slot;
            *slot = (void *)lazy_memset;
        } else if (mo) {
            *slot = (void *)lazy_mallopt;
        }
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

static int loaded_as_candidate(void)
{
    int cand = 0;
    for (const struct link_map *m = _r_debug.r_map; m; m = m->l_next) {
        size_t n = m->l_name ? strlen(m->l_name) : 0;
        cand |= n >= 8 && strcmp(m->l_name + n - 8, "/cand.so") == 0;
    }
    return cand;
}

__attribute__((constructor)) static void at_load(void)
{
    if (loaded_as_candidate())
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
}
