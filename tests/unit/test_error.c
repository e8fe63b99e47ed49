/* test_error.c - kiln_error's kinds (common/kiln_error.c): each failing
 * function sets its kind, a prefix keeps it, and the exit status follows
 * from the kind alone (the one map, kiln_exit_status). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "kiln_error.h"
#include "kiln_exit.h"

static void kinds_and_codes(void **state)
{
    (void)state;
    kiln_error e = {0};
    assert_int_equal(e.kind, KILN_ERR_INTERNAL);
    assert_int_equal(kiln_bad_input(&e, "--flag %s", "x"), -2);
    assert_int_equal(e.kind, KILN_ERR_BAD_INPUT);
    assert_string_equal(e.msg, "--flag x");
    assert_int_equal(kiln_error_prefix(&e, "run %d", 3), -1);
    assert_string_equal(e.msg, "run 3: --flag x");
    assert_int_equal(e.kind, KILN_ERR_BAD_INPUT);   /* context does not change whose fault */
    assert_int_equal(kiln_fail(&e, "broke"), -1);
    assert_int_equal(e.kind, KILN_ERR_INTERNAL);    /* a new error is a new kind */
    assert_int_equal(kiln_error_as(&e, KILN_ERR_BAD_INPUT), -2);
    assert_string_equal(e.msg, "broke");
    assert_int_equal(kiln_fail_as(&e, KILN_ERR_RESOURCE, "disk %s", "full"), -1);
    assert_int_equal(e.kind, KILN_ERR_RESOURCE);
    assert_int_equal(kiln_fail_as(NULL, KILN_ERR_BAD_INPUT, "x"), -2);
    assert_int_equal(kiln_bad_input(NULL, "x"), -2);
    assert_int_equal(kiln_error_as(NULL, KILN_ERR_INTERRUPTED), -1);
}

static void exit_statuses(void **state)
{
    (void)state;
    kiln_error e = {0};
    assert_int_equal(kiln_exit_status(&e), KILN_EXIT_INTERNAL);
    assert_int_equal(kiln_exit_status(NULL), KILN_EXIT_INTERNAL);
    e.kind = KILN_ERR_BAD_INPUT;
    assert_int_equal(kiln_exit_status(&e), KILN_EXIT_BAD_INPUT);
    e.kind = KILN_ERR_RESOURCE;
    assert_int_equal(kiln_exit_status(&e), KILN_EXIT_INTERNAL);
    e.kind = KILN_ERR_INTERRUPTED;
    assert_int_equal(kiln_exit_status(&e), KILN_EXIT_INTERRUPTED);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(kinds_and_codes),
        cmocka_unit_test(exit_statuses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
