/* features.c - cheap lexical features of a kernel's C or CUDA source, the
 * archive's source descriptor for kernels without knobs (archive.h;
 * docs/search.md, "Population"). A scan of identifiers and #pragma lines,
 * comments and literals skipped: no parsing, so it cannot fail, and two
 * kernels that use the machine differently (vector width, unrolling,
 * shared memory, shuffles, threads, aliasing) land in different cells. */
#include "archive.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct feats {
    int bits;      /* the widest vector used, 0 for none */
    int unroll;    /* -1 no unroll pragma, 0 one without a count, else the largest count */
    int shm, shfl, omp, rs;
} feats;

static int starts(const char *id, size_t n, const char *prefix)
{
    size_t k = strlen(prefix);
    return n >= k && memcmp(id, prefix, k) == 0;
}

static int is(const char *id, size_t n, const char *word)
{
    return strlen(word) == n && memcmp(id, word, n) == 0;
}

static void widest(feats *f, int bits)
{
    if (bits > f->bits)
        f->bits = bits;
}

/* x86 intrinsics and their types: _mm_/__m128, _mm256_/__m256, _mm512_/__m512
 * (less the few _mm_ helpers that are no vector arithmetic). */
static int x86_bits(const char *id, size_t n)
{
    if (starts(id, n, "_mm512_") || starts(id, n, "__m512"))
        return 512;
    if (starts(id, n, "_mm256_") || starts(id, n, "__m256"))
        return 256;
    static const char *const helpers[] = {"_mm_prefetch", "_mm_pause", "_mm_malloc", "_mm_free",
                                          "_mm_sfence", "_mm_lfence", "_mm_mfence"};
    for (size_t i = 0; i < sizeof helpers / sizeof *helpers; i++)
        if (is(id, n, helpers[i]))
            return 0;
    return starts(id, n, "_mm_") || starts(id, n, "__m128") ? 128 : 0;
}

/* NEON vector types: float32x4_t, int8x16_t (element bits x lanes). */
static int neon_bits(const char *id, size_t n)
{
    char buf[64];
    int eb = 0, lanes = 0, used = 0;
    if (n >= sizeof buf)
        return 0;
    memcpy(buf, id, n);
    buf[n] = '\0';
    size_t lead = 0;
    while (islower((unsigned char)buf[lead]))
        lead++;
    if (lead == 0 || sscanf(buf + lead, "%dx%d_t%n", &eb, &lanes, &used) != 2 ||
        (size_t)used != n - lead)
        return 0;
    return eb > 0 && lanes > 1 && eb <= 64 && lanes <= 64 ? eb * lanes : 0;
}

/* CUDA vector types (float4, int2, double2, __half2, make_float4): element
 * bits x lanes, for 2 and 4 lanes (3-lane types are no vector loads). */
static int cuda_bits(const char *id, size_t n)
{
    if (is(id, n, "__half2") || is(id, n, "half2") || is(id, n, "__nv_bfloat162") ||
        is(id, n, "nv_bfloat162"))
        return 32;
    if (starts(id, n, "make_"))
        id += 5, n -= 5;
    if (n < 2 || (id[n - 1] != '2' && id[n - 1] != '4'))
        return 0;
    static const struct { const char *name; int bits; } base[] = {
        {"char", 8},   {"uchar", 8},     {"short", 16},     {"ushort", 16}, {"int", 32},
        {"uint", 32},  {"long", 64},     {"ulong", 64},     {"longlong", 64},
        {"ulonglong", 64}, {"float", 32}, {"double", 64},
    };
    for (size_t i = 0; i < sizeof base / sizeof *base; i++)
        if (is(id, n - 1, base[i].name))
            return base[i].bits * (id[n - 1] - '0');
    return 0;
}

/* The number in "(N)" or " N" right after p on its line, 0 when there is
 * none. */
static int count_after(const char *p)
{
    while (*p == ' ' || *p == '\t' || *p == '(')
        p++;
    if (!isdigit((unsigned char)*p))
        return 0;
    long c = strtol(p, NULL, 10);   /* clamps on overflow */
    return c > 1 << 20 ? 1 << 20 : (int)c;
}

static void identifier(feats *f, const char *id, size_t n, const char *after)
{
    if (is(id, n, "restrict") || is(id, n, "__restrict") || is(id, n, "__restrict__"))
        f->rs = 1;
    else if (is(id, n, "__shared__"))
        f->shm = 1;
    else if (starts(id, n, "__shfl"))
        f->shfl = 1;
    else if (is(id, n, "vector_size") || is(id, n, "__vector_size__"))
        widest(f, 8 * count_after(after));   /* GCC vector extensions: bytes */
    else {
        widest(f, x86_bits(id, n));
        widest(f, neon_bits(id, n));
        widest(f, cuda_bits(id, n));
    }
}

/* One #pragma line [p, end): OpenMP, and unrolling (CUDA's and clang's
 * "unroll N", GCC's "GCC unroll N", clang's "unroll_count(N)"); a count of
 * 1 asks for no unrolling. */
static void pragma(feats *f, const char *p, const char *end)
{
    int first = 1;
    while (p < end) {
        if (!isalpha((unsigned char)*p) && *p != '_') {
            p++;
            continue;
        }
        const char *id = p;
        while (p < end && (isalnum((unsigned char)*p) || *p == '_'))
            p++;
        size_t n = (size_t)(p - id);
        if (first && is(id, n, "omp"))
            f->omp = 1;
        if (is(id, n, "unroll") || is(id, n, "unroll_count")) {
            int c = count_after(p);
            if (c != 1 && c > f->unroll)
                f->unroll = c;
        }
        first = first && is(id, n, "pragma");
    }
}

/* Past a comment or a literal at p, or p itself when there is none there. */
static const char *skip_opaque(const char *p)
{
    if (p[0] == '/' && p[1] == '/')
        return p + strcspn(p, "\n");
    if (p[0] == '/' && p[1] == '*') {
        const char *e = strstr(p + 2, "*/");
        return e ? e + 2 : p + strlen(p);
    }
    if (*p == '"' || *p == '\'') {
        char q = *p++;
        while (*p && *p != q && *p != '\n')
            p += p[0] == '\\' && p[1] ? 2 : 1;
        return *p == q ? p + 1 : p;
    }
    return p;
}

static void scan(const char *src, feats *f)
{
    int bol = 1;   /* only blanks since the line began: a '#' opens a directive */
    for (const char *p = src; *p;) {
        const char *q = skip_opaque(p);
        if (q != p) {
            p = q;
            continue;
        }
        if (bol && *p == '#') {
            const char *end = p + strcspn(p, "\n");
            while (end > p && end[-1] == '\\' && *end)   /* continued lines */
                end += 1 + strcspn(end + 1, "\n");
            const char *d = p + 1 + strspn(p + 1, " \t");
            if (strncmp(d, "pragma", 6) == 0)
                pragma(f, d, end);
            p = end;
            continue;
        }
        if (isalpha((unsigned char)*p) || *p == '_') {
            const char *id = p;
            while (isalnum((unsigned char)*p) || *p == '_')
                p++;
            identifier(f, id, (size_t)(p - id), p);
        } else if (isdigit((unsigned char)*p)) {
            while (isalnum((unsigned char)*p) || *p == '.' || *p == '_')   /* 0x4f, 1e5f */
                p++;
        } else {
            bol = *p == '\n' || (bol && (*p == ' ' || *p == '\t'));
            p++;
            continue;
        }
        bol = 0;
    }
}

static void tag(char *out, size_t len, size_t *at, const char *t)
{
    if (*at >= len)
        return;
    int w = snprintf(out + *at, len - *at, "%s%s", *at ? "-" : "", t);
    *at += w > 0 ? (size_t)w : 0;
}

void kiln_code_features(const char *source, char *out, size_t len)
{
    feats f = {.unroll = -1};
    if (len == 0)
        return;
    out[0] = '\0';
    if (!source)
        return;
    scan(source, &f);
    char t[16];
    size_t at = 0;
    if (f.bits > 0) {
        snprintf(t, sizeof t, "v%d", f.bits > 4096 ? 4096 : f.bits);
        tag(out, len, &at, t);
    }
    if (f.unroll == 0)
        tag(out, len, &at, "u");
    if (f.unroll > 0) {
        snprintf(t, sizeof t, "u%d", f.unroll > 1024 ? 1024 : f.unroll);
        tag(out, len, &at, t);
    }
    if (f.shm)
        tag(out, len, &at, "shm");
    if (f.shfl)
        tag(out, len, &at, "shfl");
    if (f.omp)
        tag(out, len, &at, "omp");
    if (f.rs)
        tag(out, len, &at, "rs");
}
