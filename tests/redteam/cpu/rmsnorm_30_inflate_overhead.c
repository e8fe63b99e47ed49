/* Inflating the overhead that is taken off each call: a constructor
 * points kiln-worker's GOT slot for read at a function of its own (as in
 * rmsnorm_30_got_clock.c), which spins 3 us after any request that is a
 * call of no library, the calls whose CPU measures what a round trip
 * costs. Were that overhead measured in the candidate's worker, the spin
 * would be taken off every call of the candidate's and the baseline's
 * alike, and the same call would look faster the shorter it is (up to
 * about 3x on the shortest shape). It is measured only in the reference's
 * worker, which runs nothing of the candidate's or of a search's parent,
 * so this worker never sees such a call. The plant is its own baseline and
 * does this only where it was loaded as the candidate (cand.so): a pass at
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
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define UNROLL 1

typedef ssize_t (*read_fn)(int, void *, size_t);
static read_fn real_read;

/* kiln's request begins with its magic ("Cnlk") and the library called. */
static ssize_t slow_null_read(int fd, void *buf, size_t n)
{
    ssize_t got = real_read(fd, buf, n);
    uint32_t head[2];
    if (got >= 8) {
        memcpy(head, buf, sizeof head);
        if (head[0] == 0x6b6c6e43u && head[1] == 0xffffffffu) {
            struct timespec a, b;
            clock_gettime(CLOCK_MONOTONIC, &a);
            do
                clock_gettime(CLOCK_MONOTONIC, &b);
            while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < 3000);
        }
    }
    return got;
}

static ElfW(Addr) dyn(const ElfW(Dyn) *d, ElfW(Addr) base, ElfW(Sxword) tag, int addr)
{
    for (; d->d_tag != DT_NULL; d++)
        if (d->d_tag == tag)
            return addr && d->d_un.d_ptr < base ? d->d_un.d_ptr + base : d->d_un.d_ptr;
    return 0;
}

/* Every relocation in [rel, rel + bytes) that names read gets the
 * plant's own. */
static void patch_relocs(ElfW(Addr) base, const ElfW(Rela) *rel, size_t bytes,
                         const ElfW(Sym) *sym, const char *str)
{
    for (size_t i = 0; rel && i < bytes / sizeof *rel; i++) {
        size_t s = ELF64_R_SYM(rel[i].r_info);
        if (!s || strcmp(str + sym[s].st_name, "read") != 0)
            continue;
        read_fn *slot = (read_fn *)(base + rel[i].r_offset);
        uintptr_t page = (uintptr_t)slot & ~(uintptr_t)4095;
        if (mprotect((void *)page, 4096, PROT_READ | PROT_WRITE) != 0 || *slot == slow_null_read)
            continue;
        real_read = *slot;
        *slot = slow_null_read;
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
