/* test_fileutil.c - kiln_read_file: what it returns at, under and over its
 * limit, for files fstat sizes and for a FIFO it cannot, and that its
 * buffer is sized to the file rather than to the limit (a 64 MiB buffer
 * per small file was most of a sanitizer kilnd's page faults). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <malloc.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "fileutil.h"

static char dir[] = "/tmp/kiln-test-fileutil-XXXXXX";

/* path in the test's directory, holding n bytes of a known pattern. */
static const char *file_of(const char *name, size_t n)
{
    static char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    for (size_t i = 0; i < n; i++)
        fputc('a' + (int)(i % 26), f);
    assert_int_equal(fclose(f), 0);
    return path;
}

static void expect_pattern(const char *buf, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (buf[i] != 'a' + (int)(i % 26))
            fail_msg("byte %zu is '%c'", i, buf[i]);
    assert_int_equal(buf[n], '\0');
}

static void test_sizes(void **state)
{
    (void)state;
    static const struct { size_t file, limit; int rc; } cases[] = {
        {0, 100, 0}, {10, 100, 0}, {99, 100, 0}, {100, 100, 0}, {101, 100, 1},
        {100000, 100, 1}, {100000, 1 << 20, 0}, {5000, 4096, 1}, {4097, 4096, 1},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        kiln_error err;
        char *buf = NULL;
        size_t len = 12345;
        int rc = kiln_read_file(file_of("f", cases[k].file), cases[k].limit, &buf, &len, &err);
        size_t want = cases[k].file < cases[k].limit ? cases[k].file : cases[k].limit;
        if (rc != cases[k].rc || len != want)
            fail_msg("file %zu, limit %zu: rc %d len %zu", cases[k].file, cases[k].limit, rc, len);
        expect_pattern(buf, want);
        free(buf);
    }
}

/* A small file read with a large limit gets a small buffer. */
static void test_sized_to_file(void **state)
{
    (void)state;
    kiln_error err;
    char *buf = NULL;
    size_t len = 0;
    assert_int_equal(kiln_read_file(file_of("small", 10), (size_t)64 << 20, &buf, &len, &err), 0);
    assert_int_equal(len, 10);
    assert_true(malloc_usable_size(buf) < 4096);
    free(buf);
}

/* A FIFO has no size to read: 100000 bytes come through it in chunks. */
static void test_fifo(void **state)
{
    (void)state;
    char path[256];
    snprintf(path, sizeof path, "%s/fifo", dir);
    assert_int_equal(mkfifo(path, 0600), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        FILE *f = fopen(path, "wb");
        for (size_t i = 0; f && i < 100000; i++)
            fputc('a' + (int)(i % 26), f);
        _exit(f && fclose(f) == 0 ? 0 : 1);
    }
    kiln_error err;
    char *buf = NULL;
    size_t len = 0;
    int rc = kiln_read_file(path, 1 << 20, &buf, &len, &err);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_int_equal(rc, 0);
    assert_int_equal(len, 100000);
    expect_pattern(buf, len);
    free(buf);
    unlink(path);
}

static void test_missing(void **state)
{
    (void)state;
    kiln_error err;
    char *buf = (char *)1, path[256];
    snprintf(path, sizeof path, "%s/none", dir);
    assert_int_equal(kiln_read_file(path, 100, &buf, NULL, &err), -1);
    assert_null(buf);
    assert_non_null(strstr(err.msg, path));
    assert_non_null(strstr(err.msg, "cannot open"));
}

int main(void)
{
    if (!mkdtemp(dir))
        return perror("mkdtemp"), 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_sized_to_file),
        cmocka_unit_test(test_fifo),
        cmocka_unit_test(test_missing),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    return rc;
}
