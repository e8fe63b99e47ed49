/* fileutil.c - file and hashing helpers (see fileutil.h). SHA-256 comes
 * from OpenSSL's libcrypto (docs/decisions.md says why). */
#include "fileutil.h"

#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The buffer is sized to the file, not to the limit: callers pass limits
 * of up to 64 MiB, and a 64 MiB allocation per small file is a mapping and
 * an unmapping each time (under AddressSanitizer also 8 MiB of shadow
 * poisoned and, once quarantined, cleared: most of a sanitizer kilnd's
 * page faults). A file that grows while read, or whose size fstat does not
 * tell (a pipe, /proc), is read in doubling chunks up to the limit. */
static size_t first_capacity(FILE *f, size_t limit)
{
    struct stat st;
    size_t cap = 4096;
    if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0)
        cap = (size_t)st.st_size + 1;   /* + 1: EOF shows as a short read */
    return cap < limit + 1 ? cap : limit + 1;
}

/* Up to limit + 1 bytes of f into *b (room for a NUL after them); -1 when
 * out of memory or on a read error. */
static int read_all(FILE *f, size_t limit, char **b, size_t *n)
{
    size_t cap = first_capacity(f, limit);
    *n = 0;
    if (!(*b = malloc(cap + 1)))
        return -1;
    for (;;) {
        *n += fread(*b + *n, 1, cap - *n, f);
        if (ferror(f))
            return -1;
        if (*n < cap || cap == limit + 1)
            return 0;
        size_t next = cap * 2 < limit + 1 ? cap * 2 : limit + 1;
        char *grown = realloc(*b, next + 1);
        if (!grown)
            return -1;
        *b = grown;
        cap = next;
    }
}

int kiln_read_file(const char *path, size_t limit, char **buf, size_t *len, kiln_error *err)
{
    *buf = NULL;
    if (len)
        *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return kiln_fail(err, "%s: cannot open: %s", path, strerror(errno));
    char *b = NULL;
    size_t n = 0;
    int bad = read_all(f, limit, &b, &n) < 0;
    int oom = bad && !ferror(f);
    fclose(f);
    if (bad) {
        free(b);
        return kiln_fail(err, "%s: cannot read%s", path, oom ? " (out of memory)" : "");
    }
    int over = n > limit;
    n = over ? limit : n;
    b[n] = '\0';
    *buf = b;
    if (len)
        *len = n;
    return over;
}

int kiln_write_bytes(const char *path, const void *buf, size_t len, kiln_error *err)
{
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(buf, 1, len, f) == len;
    if (f && fclose(f) != 0)
        ok = 0;
    return ok ? 0 : kiln_fail(err, "%s: cannot write: %s", path, strerror(errno));
}

int kiln_write_text(const char *path, const char *text, kiln_error *err)
{
    return kiln_write_bytes(path, text, strlen(text), err);
}

void kiln_sha256_hex(const void *buf, size_t len, char out[65])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    out[0] = '\0';
    if (EVP_Digest(buf, len, md, &n, EVP_sha256(), NULL) != 1)
        return;
    for (unsigned i = 0; i < n && i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
}

int kiln_sha256_file(const char *path, char out[65], kiln_error *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return kiln_fail(err, "%s: cannot open: %s", path, strerror(errno));
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    unsigned char buf[65536], md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    size_t got;
    int ok = ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) == 1;
    while (ok && (got = fread(buf, 1, sizeof buf, f)) > 0)
        ok = EVP_DigestUpdate(ctx, buf, got) == 1;
    ok = ok && !ferror(f) && EVP_DigestFinal_ex(ctx, md, &n) == 1;
    EVP_MD_CTX_free(ctx);
    fclose(f);
    if (!ok)
        return kiln_fail(err, "%s: cannot hash", path);
    for (unsigned i = 0; i < n && i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
    return 0;
}
