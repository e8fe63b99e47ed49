/* test_workspace_dir.c - which directories kiln takes for a workspace and
 * which files in one are kiln's (harness/workspace_dir.c); why its lock
 * could not be taken (harness/workspace.c, kiln_ws_lock_error). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileutil.h"
#include "paths.h"
#include "workspace.h"
#include "workspace_dir.h"

static void test_own_paths(void **state)
{
    (void)state;
    static const char *ours[] = {"README.md", ".gitignore", "rmsnorm/cpu/kernel.c",
                                 "gemm/cuda/kernel.cu", "my_task/cpu/kernel.c"};
    static const char *theirs[] = {"notes.txt", "rmsnorm/cpu/kernel.cu", "rmsnorm/cuda/kernel.c",
                                   "rmsnorm/cpu/other.c", "a/b/cpu/kernel.c", "/cpu/kernel.c",
                                   "../cpu/kernel.c", "./cpu/kernel.c", "rmsnorm/cpu/kernel.c.orig",
                                   "docs/README.md", "README.md.bak", ".kiln/kiln.db", ""};
    for (size_t i = 0; i < sizeof ours / sizeof *ours; i++)
        assert_true(kiln_ws_own_path(ours[i]));
    for (size_t i = 0; i < sizeof theirs / sizeof *theirs; i++)
        assert_false(kiln_ws_own_path(theirs[i]));
}

static void put(const char *dir, const char *rel, const char *text)
{
    char path[4200];
    kiln_error err;
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    assert_int_equal(kiln_write_text(path, text, &err), 0);
}

static kiln_ws_dir_kind kind_of(const char *dir, char *what, size_t len)
{
    kiln_ws_dir_kind k;
    kiln_error err;
    assert_int_equal(kiln_ws_dir_classify(dir, &k, what, len, &err), 0);
    return k;
}

static void test_classify(void **state)
{
    (void)state;
    char d[4096], sub[4200], what[512];
    kiln_error err;
    assert_int_equal(kiln_make_tempdir(NULL, "ws-dir-test", d, sizeof d, &err), 0);
    assert_int_equal(kind_of(d, what, sizeof what), KILN_WS_DIR_EMPTY);
    assert_string_equal(what, "0 entries:");
    /* only kiln's own .kiln/ files (kiln lessons import leaves a database) */
    snprintf(sub, sizeof sub, "%s/.kiln", d);
    assert_int_equal(kiln_mkdirs(sub, &err), 0);
    put(d, ".kiln/kiln.db", "");
    put(d, ".kiln/lock", "");
    assert_true(kiln_ws_kiln_dir_ours(d));
    assert_int_equal(kind_of(d, what, sizeof what), KILN_WS_DIR_EMPTY);
    /* a file of someone else's in .kiln/ */
    put(d, ".kiln/mine.txt", "x");
    assert_false(kiln_ws_kiln_dir_ours(d));
    assert_int_equal(kind_of(d, what, sizeof what), KILN_WS_DIR_OTHER);
    snprintf(sub, sizeof sub, "%s/.kiln/mine.txt", d);
    unlink(sub);
    /* a user's file beside it: named in what */
    put(d, "notes.txt", "mine");
    snprintf(sub, sizeof sub, "%s/src", d);
    assert_int_equal(kiln_mkdirs(sub, &err), 0);
    assert_int_equal(kind_of(d, what, sizeof what), KILN_WS_DIR_OTHER);
    assert_string_equal(what, "3 entries: .kiln/, notes.txt, src/");
    assert_false(kiln_ws_dir_only_git(d));
    /* the marker makes it a workspace whatever else is there */
    assert_int_equal(kiln_ws_mark(d, &err), 0);
    assert_int_equal(kind_of(d, what, sizeof what), KILN_WS_DIR_MARKED);
    kiln_remove_tree(d);
    assert_int_not_equal(kiln_ws_dir_classify(d, &(kiln_ws_dir_kind){0}, what, sizeof what, &err), 0);
}

static void test_only_git(void **state)
{
    (void)state;
    char d[4096], sub[4200];
    kiln_error err;
    assert_int_equal(kiln_make_tempdir(NULL, "ws-git-test", d, sizeof d, &err), 0);
    assert_false(kiln_ws_dir_only_git(d));   /* no .git */
    snprintf(sub, sizeof sub, "%s/.git", d);
    assert_int_equal(kiln_mkdirs(sub, &err), 0);
    assert_true(kiln_ws_dir_only_git(d));
    snprintf(sub, sizeof sub, "%s/.kiln", d);
    assert_int_equal(kiln_mkdirs(sub, &err), 0);
    put(d, ".kiln/kiln.db", "");
    assert_true(kiln_ws_dir_only_git(d));
    put(d, "README.md", "a user's README");
    assert_false(kiln_ws_dir_only_git(d));
    kiln_remove_tree(d);
}

/* A lock that cannot be opened (not writable) is not one another search
 * holds: only a refused flock says that. */
static void test_lock_error(void **state)
{
    (void)state;
    kiln_error e;
    const int ro[] = {EACCES, EPERM, EROFS};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(kiln_ws_lock_error(&e, "/w", "/w/.kiln/lock", 0, ro[i]), -2);
        assert_int_equal(kiln_exit_status(&e), 2);
        assert_non_null(strstr(e.msg, "the workspace /w is not writable (/w/.kiln/lock: "));
        assert_non_null(strstr(e.msg, strerror(ro[i])));
        assert_non_null(strstr(e.msg, "make it writable or choose another --workspace"));
    }
    assert_int_equal(kiln_ws_lock_error(&e, "/w", "/w/.kiln/lock", 1, EWOULDBLOCK), -1);
    assert_string_equal(e.msg, "another kiln search is using the workspace /w");
    assert_int_equal(kiln_ws_lock_error(&e, "/w", "/w/.kiln/lock", 0, EIO), -1);
    assert_null(strstr(e.msg, "another kiln search"));
    assert_int_equal(kiln_ws_lock_error(&e, "/w", "/w/.kiln/lock", 1, ENOLCK), -1);
    assert_null(strstr(e.msg, "another kiln search"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_own_paths),
        cmocka_unit_test(test_classify),
        cmocka_unit_test(test_only_git),
        cmocka_unit_test(test_lock_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
