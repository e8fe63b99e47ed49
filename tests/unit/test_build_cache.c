/* test_build_cache.c - unit tests for verifier/build_cache.c: what changes a
 * build's key and what does not, an entry kept and taken back, a damaged
 * entry refused and removed, the caps on the number of entries and on an
 * entry's size, and which directory is the cache. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "build_cache.h"
#include "fileutil.h"

static char root[256];

static int setup(void **state)
{
    (void)state;
    snprintf(root, sizeof root, "/tmp/kiln-test-build-cache-XXXXXX");
    return mkdtemp(root) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    return system(cmd) == 0 ? 0 : -1;
}

static void put_text(const char *dir, const char *name, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    kiln_error err;
    assert_int_equal(kiln_write_text(path, text, &err), 0);
}

/* The key of a build in dir: source.c and shim.c, compiled by /bin/sh
 * (any file that exists stands for the compiler) with dir in its flags. */
static void key_in(const char *dir, const char *flag, char key[65])
{
    char a[512], b[512], inc[512], out[512];
    snprintf(a, sizeof a, "%s/source.c", dir);
    snprintf(b, sizeof b, "%s/shim.c", dir);
    snprintf(inc, sizeof inc, "-I%s", dir);
    snprintf(out, sizeof out, "%s/base.so", dir);
    const char *files[] = {a, b};
    char *argv[] = {"/bin/sh", (char *)flag, inc, "-o", out, NULL};
    kiln_error err;
    assert_int_equal(kiln_build_key(files, 2, argv, dir, key, &err), 0);
    assert_int_equal(strlen(key), 64);
}

static void test_key(void **state)
{
    (void)state;
    char d1[300], d2[300], k1[65], k2[65], k3[65];
    snprintf(d1, sizeof d1, "%s/job1", root);
    snprintf(d2, sizeof d2, "%s/job2-elsewhere", root);
    mkdir(d1, 0700);
    mkdir(d2, 0700);
    put_text(d1, "source.c", "int f(void) { return 1; }\n");
    put_text(d1, "shim.c", "/* shim */\n");
    put_text(d2, "source.c", "int f(void) { return 1; }\n");
    put_text(d2, "shim.c", "/* shim */\n");
    key_in(d1, "-O2", k1);
    key_in(d2, "-O2", k2);
    assert_string_equal(k1, k2);   /* the same build in another job's directory */
    key_in(d1, "-O3", k3);
    assert_string_not_equal(k1, k3);   /* another flag */
    put_text(d2, "source.c", "int f(void) { return 2; }\n");
    key_in(d2, "-O2", k3);
    assert_string_not_equal(k1, k3);   /* another source */
    put_text(d2, "source.c", "int f(void) { return 1; }\n");
    put_text(d2, "shim.c", "/* shim */\n/* more */\n");
    key_in(d2, "-O2", k3);
    assert_string_not_equal(k1, k3);   /* another wrapper */
    /* bytes moved from one file to the next change the key too */
    put_text(d2, "source.c", "int f(void) { return 1; }\n/* shim */\n");
    put_text(d2, "shim.c", "");
    key_in(d2, "-O2", k3);
    assert_string_not_equal(k1, k3);
    /* a file that cannot be read: an error, not a key */
    const char *missing[] = {"/nonexistent/kiln/source.c"};
    char *argv[] = {"/bin/sh", NULL};
    kiln_error err;
    assert_int_equal(kiln_build_key(missing, 1, argv, d1, k3, &err), -1);
}

static void test_put_get(void **state)
{
    (void)state;
    char cache[300], lib[300], dst[300];
    snprintf(cache, sizeof cache, "%s/cache", root);
    mkdir(cache, 0700);
    snprintf(lib, sizeof lib, "%s/built.so", root);
    snprintf(dst, sizeof dst, "%s/copy.so", root);
    put_text(root, "built.so", "\177ELF pretend library bytes");
    const char *key = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    kiln_error err;
    assert_int_equal(kiln_build_cache_get(cache, key, dst, &err), 0);   /* not yet */
    assert_int_equal(access(dst, F_OK), -1);
    assert_int_equal(kiln_build_cache_put(cache, key, lib, KILN_BUILD_CACHE_MAX, &err), 0);
    assert_int_equal(kiln_build_cache_get(cache, key, dst, &err), 1);
    char *got = NULL;
    assert_int_equal(kiln_read_file(dst, 1 << 20, &got, NULL, &err), 0);
    assert_string_equal(got, "\177ELF pretend library bytes");
    free(got);
    unlink(dst);
    /* damaged: the bytes no longer hash as stored; refused and removed */
    char entry[400];
    snprintf(entry, sizeof entry, "%s/%s.so", cache, key);
    kiln_write_text(entry, "\177ELF pretend library bytez", &err);
    assert_int_equal(kiln_build_cache_get(cache, key, dst, &err), 0);
    assert_int_equal(access(dst, F_OK), -1);
    assert_int_equal(access(entry, F_OK), -1);
    /* a hash without its library: a miss */
    assert_int_equal(kiln_build_cache_put(cache, key, lib, KILN_BUILD_CACHE_MAX, &err), 0);
    unlink(entry);
    assert_int_equal(kiln_build_cache_get(cache, key, dst, &err), 0);
}

/* A cache directory of its own, root/name, in cache. */
static void new_cache(const char *name, char cache[300])
{
    snprintf(cache, 300, "%s/%s", root, name);
    mkdir(cache, 0700);
}

static void test_cap(void **state)
{
    (void)state;
    char cache[300], lib[300], key[65], path[400];
    new_cache("capped", cache);
    snprintf(lib, sizeof lib, "%s/small.so", root);
    put_text(root, "small.so", "x");
    kiln_error err;
    enum { MAX = 8 };
    for (int i = 0; i <= MAX; i++) {
        snprintf(key, sizeof key, "%064d", i);
        assert_int_equal(kiln_build_cache_put(cache, key, lib, MAX, &err), 0);
        /* up to MAX the entries pile up */
        snprintf(path, sizeof path, "%s/%064d.sha256", cache, 0);
        assert_int_equal(access(path, F_OK), i < MAX ? 0 : -1);
    }
    /* the last put found the cache full and emptied it first */
    int n = 0;
    for (int i = 0; i <= MAX; i++) {
        snprintf(path, sizeof path, "%s/%064d.sha256", cache, i);
        n += access(path, F_OK) == 0;
    }
    assert_int_equal(n, 1);
    snprintf(path, sizeof path, "%s/%064d.so", cache, MAX);
    assert_int_equal(access(path, F_OK), 0);
}

/* A library over KILN_BUILD_CACHE_ENTRY_BYTES (a candidate decides its
 * size) is not kept; one at the limit is. */
static void test_entry_size(void **state)
{
    (void)state;
    char cache[300], lib[300], path[400], key[65];
    new_cache("sized", cache);
    snprintf(lib, sizeof lib, "%s/big.so", root);
    kiln_error err;
    for (int over = 0; over <= 1; over++) {
        FILE *f = fopen(lib, "wb");
        assert_non_null(f);
        assert_int_equal(ftruncate(fileno(f), (off_t)(KILN_BUILD_CACHE_ENTRY_BYTES + over)), 0);
        fclose(f);
        snprintf(key, sizeof key, "%064d", over);
        assert_int_equal(kiln_build_cache_put(cache, key, lib, KILN_BUILD_CACHE_MAX, &err), 0);
        snprintf(path, sizeof path, "%s/%s.so", cache, key);
        assert_int_equal(access(path, F_OK), over ? -1 : 0);
    }
}

/* Which directory: $KILN_BUILD_CACHE, "off", the fallback, XDG, HOME. */
static void test_dir(void **state)
{
    (void)state;
    char out[600], want[600], home[300], file[300];
    kiln_error err;
    snprintf(home, sizeof home, "%s/home", root);
    setenv("HOME", home, 1);
    unsetenv("XDG_CACHE_HOME");
    unsetenv("KILN_BUILD_CACHE");
    assert_int_equal(kiln_build_cache_dir(NULL, out, sizeof out, &err), 1);
    snprintf(want, sizeof want, "%s/.cache/kiln/build-cache", home);
    assert_string_equal(out, want);
    struct stat st;
    assert_int_equal(stat(want, &st), 0);   /* made */
    setenv("XDG_CACHE_HOME", root, 1);
    assert_int_equal(kiln_build_cache_dir(NULL, out, sizeof out, &err), 1);
    snprintf(want, sizeof want, "%s/kiln/build-cache", root);
    assert_string_equal(out, want);
    snprintf(want, sizeof want, "%s/state/build-cache", root);
    assert_int_equal(kiln_build_cache_dir(want, out, sizeof out, &err), 1);
    assert_string_equal(out, want);   /* kilnd's fallback before the user's */
    setenv("KILN_BUILD_CACHE", "off", 1);
    assert_int_equal(kiln_build_cache_dir(want, out, sizeof out, &err), 0);
    snprintf(want, sizeof want, "%s/shared", root);
    setenv("KILN_BUILD_CACHE", want, 1);
    assert_int_equal(kiln_build_cache_dir("/nonexistent/x", out, sizeof out, &err), 1);
    assert_string_equal(out, want);
    /* A directory that cannot be made: an error naming the variable when
     * the user chose it, no cache when it was only the default. */
    snprintf(file, sizeof file, "%s/plain", root);
    put_text(root, "plain", "x");
    snprintf(want, sizeof want, "%s/under", file);
    setenv("KILN_BUILD_CACHE", want, 1);
    assert_int_equal(kiln_build_cache_dir(NULL, out, sizeof out, &err), -1);
    assert_non_null(strstr(err.msg, "KILN_BUILD_CACHE"));
    unsetenv("KILN_BUILD_CACHE");
    setenv("XDG_CACHE_HOME", file, 1);
    assert_int_equal(kiln_build_cache_dir(NULL, out, sizeof out, &err), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_key),
        cmocka_unit_test(test_put_get),
        cmocka_unit_test(test_cap),
        cmocka_unit_test(test_entry_size),
        cmocka_unit_test(test_dir),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
