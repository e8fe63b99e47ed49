/* build_cache.c - the cache of built libraries (see build_cache.h). A
 * search verifies every candidate against the same parent and reference,
 * and compiling those two was two thirds of each job's compile stage; a
 * tuner and a test suite send the same candidate text again and again. No
 * confined process (compiler or worker) can write the cache directory,
 * which lies outside its job directory, and an entry's bytes are checked
 * against the hash stored with it before it is used. */
#include "build_cache.h"

#include <dirent.h>
#include <errno.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileutil.h"
#include "paths.h"

#define LIB_LIMIT ((size_t)64 << 20)

/* The first processor's model and flags from /proc/cpuinfo, hashed once. */
static char cpu_id[65];
static pthread_once_t cpu_once = PTHREAD_ONCE_INIT;

static void read_cpu_id(void)
{
    char *text = NULL, lines[8192] = "";
    kiln_error ignored;
    if (kiln_read_file("/proc/cpuinfo", 1 << 20, &text, NULL, &ignored) >= 0 && text) {
        size_t used = 0;
        for (char *l = strtok(text, "\n"); l && used < sizeof lines - 1; l = strtok(NULL, "\n")) {
            if (strncmp(l, "model name", 10) && strncmp(l, "flags", 5) && strncmp(l, "vendor_id", 9))
                continue;
            used += (size_t)snprintf(lines + used, sizeof lines - used, "%s\n", l);
            if (strncmp(l, "flags", 5) == 0)
                break;   /* the first processor's are enough */
        }
    }
    free(text);
    kiln_sha256_hex(lines, strlen(lines), cpu_id);
}

static int update(EVP_MD_CTX *c, const void *p, size_t n)
{
    return EVP_DigestUpdate(c, p, n) == 1;
}

int kiln_build_key(const char *const files[], int nfiles, char *const argv[], const char *dir,
                   char key[65], kiln_error *err)
{
    pthread_once(&cpu_once, read_cpu_id);
    EVP_MD_CTX *c = EVP_MD_CTX_new();
    int ok = c && EVP_DigestInit_ex(c, EVP_sha256(), NULL) == 1 &&
             update(c, "kiln-build-1", 12) && update(c, cpu_id, 64);
    for (int i = 0; ok && i < nfiles; i++) {
        char *buf = NULL;
        size_t n = 0;
        if (kiln_read_file(files[i], LIB_LIMIT, &buf, &n, err) != 0) {
            free(buf);
            EVP_MD_CTX_free(c);
            return -1;
        }
        uint64_t len = n;
        ok = update(c, &len, sizeof len) && update(c, buf, n);
        free(buf);
    }
    for (int i = 0; ok && argv[i]; i++) {
        /* the job's own directory in a path is not part of the build */
        const char *a = argv[i], *at = dir && *dir ? strstr(a, dir) : NULL;
        if (at)
            ok = update(c, a, (size_t)(at - a)) && update(c, "$DIR", 4) &&
                 update(c, at + strlen(dir), strlen(at + strlen(dir)) + 1);
        else
            ok = update(c, a, strlen(a) + 1);
    }
    struct stat st;
    if (ok && stat(argv[0], &st) == 0) {   /* the compiler: a new one is a new build */
        long long id[5] = {(long long)st.st_dev, (long long)st.st_ino, (long long)st.st_size,
                           (long long)st.st_mtim.tv_sec, (long long)st.st_mtim.tv_nsec};
        ok = update(c, id, sizeof id);
    }
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdn = 0;
    ok = ok && EVP_DigestFinal_ex(c, md, &mdn) == 1;
    EVP_MD_CTX_free(c);
    if (!ok)
        return kiln_fail(err, "cannot hash the build's inputs");
    for (unsigned i = 0; i < 32; i++)
        snprintf(key + 2 * i, 3, "%02x", md[i]);
    return 0;
}

static void entry_paths(const char *cache, const char *key, char lib[4400], char sum[4400])
{
    snprintf(lib, 4400, "%s/%s.so", cache, key);
    snprintf(sum, 4400, "%s/%s.sha256", cache, key);
}

int kiln_build_cache_get(const char *cache, const char *key, const char *dst, kiln_error *err)
{
    char lib[4400], sum[4400], want[65] = "", got[65];
    entry_paths(cache, key, lib, sum);
    char *buf = NULL, *stored = NULL;
    size_t n = 0;
    kiln_error miss;
    int found = kiln_read_file(sum, 128, &stored, NULL, &miss) == 0 &&
                kiln_read_file(lib, LIB_LIMIT, &buf, &n, &miss) == 0;
    if (stored)
        snprintf(want, sizeof want, "%.64s", stored);
    free(stored);
    if (found) {
        kiln_sha256_hex(buf, n, got);
        found = strcmp(got, want) == 0;
        if (!found) {   /* damaged: built again and stored afresh */
            unlink(lib);
            unlink(sum);
        }
    }
    int rc = found ? (kiln_write_bytes(dst, buf, n, err) < 0 ? -1 : 1) : 0;
    free(buf);
    return rc;
}

/* Remove every entry: the cache only saves time, and a search uses few. */
static void empty_cache(const char *cache)
{
    DIR *d = opendir(cache);
    struct dirent *e;
    char path[4400];
    while (d && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "%s/%s", cache, e->d_name);
        unlink(path);
    }
    if (d)
        closedir(d);
}

static int count_entries(const char *cache)
{
    DIR *d = opendir(cache);
    struct dirent *e;
    int n = 0;
    while (d && (e = readdir(d)) != NULL)
        n += strstr(e->d_name, ".sha256") != NULL;
    if (d)
        closedir(d);
    return n;
}

/* Write n bytes to a new file beside path, then rename it to path: a
 * reader sees the old file or the whole new one. Unique names (mkstemp)
 * keep two lanes that store the same key at once apart. */
static int replace_file(const char *path, const char *buf, size_t n, kiln_error *err)
{
    char tmp[4500];
    snprintf(tmp, sizeof tmp, "%s.XXXXXX", path);
    int fd = mkstemp(tmp);
    if (fd < 0)
        return kiln_fail(err, "%s: cannot create: %s", tmp, strerror(errno));
    FILE *f = fdopen(fd, "wb");
    int ok = f && fwrite(buf, 1, n, f) == n;
    if (!f)
        close(fd);
    if (f && fclose(f) != 0)
        ok = 0;
    if (ok && rename(tmp, path) == 0)
        return 0;
    int e = errno;
    unlink(tmp);
    return kiln_fail(err, "%s: cannot store: %s", path, strerror(e));
}

int kiln_build_cache_put(const char *cache, const char *key, const char *src, int max,
                         kiln_error *err)
{
    char lib[4400], sum[4400], hex[65];
    char *buf = NULL;
    size_t n = 0;
    int rc = kiln_read_file(src, KILN_BUILD_CACHE_ENTRY_BYTES, &buf, &n, err);
    if (rc != 0) {
        free(buf);
        return rc == 1 ? 0 : -1;   /* 1: too large to keep, not an error */
    }
    if (count_entries(cache) >= max)
        empty_cache(cache);
    entry_paths(cache, key, lib, sum);
    kiln_sha256_hex(buf, n, hex);
    /* The library first, then the hash that makes it an entry. */
    rc = replace_file(lib, buf, n, err) < 0 || replace_file(sum, hex, 64, err) < 0 ? -1 : 0;
    free(buf);
    return rc;
}

int kiln_build_cache_dir(const char *fallback, char *out, size_t len, kiln_error *err)
{
    const char *env = getenv("KILN_BUILD_CACHE");
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    int chosen = 1;   /* named by the user or kilnd: failing to make it is an error */
    if (env && strcmp(env, "off") == 0)
        return 0;
    if (env && *env)
        snprintf(out, len, "%s", env);
    else if (fallback)
        snprintf(out, len, "%s", fallback);
    else if (xdg && *xdg)   /* as kiln_state_dir reads XDG_STATE_HOME */
        chosen = 0, snprintf(out, len, "%s/kiln/build-cache", xdg);
    else if (home && *home)
        chosen = 0, snprintf(out, len, "%s/.cache/kiln/build-cache", home);
    else
        return 0;
    kiln_error mk;
    if (kiln_mkdirs(out, &mk) == 0)
        return 1;
    if (!chosen)
        return 0;
    return kiln_fail(err, "build cache %s%s: %s", out, env && *env ? " (KILN_BUILD_CACHE)" : "",
                     mk.msg);
}
