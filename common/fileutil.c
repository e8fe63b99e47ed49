/* fileutil.c - file and hashing helpers (see fileutil.h). SHA-256 comes
 * from OpenSSL's libcrypto (docs/decisions.md says why). */
#include "fileutil.h"

#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int kiln_read_file(const char *path, size_t limit, char **buf, size_t *len, kiln_error *err)
{
    *buf = NULL;
    if (len)
        *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return kiln_fail(err, "%s: cannot open: %s", path, strerror(errno));
    char *b = malloc(limit + 2);
    size_t n = b ? fread(b, 1, limit + 1, f) : 0;
    int bad = !b || ferror(f);
    fclose(f);
    if (bad) {
        free(b);
        return kiln_fail(err, "%s: cannot read%s", path, b ? "" : " (out of memory)");
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
