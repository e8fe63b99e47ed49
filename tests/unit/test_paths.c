/* test_paths.c - kiln_remove_tree: a job directory goes whole, even when a
 * candidate left a directory it cannot be read or written through, and an
 * entry that will not go does not keep the rest (kilnd's sweep of a dead
 * daemon's job directories once stopped at the first). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "kiln_error.h"
#include "paths.h"

/* A plain tree goes whole. */
static void test_removes_a_tree(void **state)
{
    (void)state;
    char root[256], a[300];
    kiln_error err;
    assert_int_equal(kiln_make_tempdir(NULL, "kiln-paths-test", root, sizeof root, &err), 0);
    snprintf(a, sizeof a, "%s/a", root);
    assert_int_equal(mkdir(a, 0700), 0);
    FILE *f = fopen(strcat(a, "/f"), "w");
    assert_non_null(f);
    fclose(f);
    assert_int_equal(kiln_remove_tree(root), 0);
    assert_int_equal(access(root, F_OK), -1);
}

/* 0 when the locked tree went whole, else the step that failed. */
static int remove_locked_tree(void)
{
    char root[256], a[300], b[300], c[300], p[320];
    kiln_error err;
    if (kiln_make_tempdir("/tmp", "kiln-paths-test", root, sizeof root, &err) < 0)
        return 1;
    snprintf(a, sizeof a, "%s/a", root);
    snprintf(b, sizeof b, "%s/a/b", root);
    snprintf(c, sizeof c, "%s/c", root);
    if (mkdir(a, 0700) || mkdir(b, 0700) || mkdir(c, 0700))
        return 2;
    const char *dirs[2] = {b, c};
    for (int i = 0; i < 2; i++) {
        snprintf(p, sizeof p, "%s/f", dirs[i]);
        FILE *f = fopen(p, "w");
        if (!f)
            return 3;
        fclose(f);
    }
    if (chmod(b, 0500) || chmod(c, 0000))   /* b's file cannot be unlinked; c cannot be read */
        return 4;
    if (kiln_remove_tree(root) != 0)
        return 5;
    return access(root, F_OK) == 0 ? 6 : 0;
}

/* Directory permissions do not bind root: as root, the tree is made and
 * removed by a child that gave up root for nobody's ids. */
static void test_removes_locked_directories(void **state)
{
    (void)state;
    if (geteuid() != 0) {
        assert_int_equal(remove_locked_tree(), 0);
        return;
    }
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (setgroups(0, NULL) || setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
            _exit(100);
        _exit(remove_locked_tree());
    }
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_removes_a_tree),
        cmocka_unit_test(test_removes_locked_directories),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
