/* test_tunable.c - cmocka tests of the tunable CPU kernels
 * (kernels/<task>/cpu/tunable.c): each parses with kiln_knobs_parse, has
 * several knobs and at least 200 settings, starts at a point of its own
 * space, and every setting the tuner makes of it parses back to the same
 * knobs.  Whether the settings are correct is kiln verify's business (the
 * commit that added the kernels lists the ones checked).
 *
 * Usage: test_tunable SOURCE_DIR (the repository root). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tune.h"

static const char *root = ".";

static char *read_kernel(const char *task)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/kernels/%s/cpu/tunable.c", root, task);
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot open %s", path);
    char *buf = calloc(1, 1 << 20);
    assert_non_null(buf);
    size_t n = fread(buf, 1, (1 << 20) - 1, f);
    fclose(f);
    assert_true(n > 0);
    return buf;
}

/* The number of settings of the knobs' lists. */
static long long space(const kiln_knob *k, int n)
{
    long long total = 1;
    for (int i = 0; i < n; i++)
        total *= k[i].nvalues;
    return total;
}

/* Tuner proposals from the kernel's start, each kept: they parse back to
 * the same knobs, with the values proposed. */
static void tune_a_while(const char *src0, int rounds)
{
    kiln_knob k[KILN_KNOBS_MAX], k2[KILN_KNOBS_MAX];
    kiln_error err;
    int n = kiln_knobs_parse(src0, k, KILN_KNOBS_MAX, &err);
    char *src = strdup(src0), vals[KILN_KNOBS_MAX][64], h[512];
    kiln_tuner t;
    kiln_tuner_init(&t, 3);
    for (int r = 0; r < rounds; r++) {
        assert_int_equal(kiln_tuner_propose(&t, k, n, NULL, 0, vals, h, sizeof h), 1);
        char *child = kiln_knobs_apply(src, k, n, (const char (*)[64])vals);
        assert_non_null(child);
        assert_int_equal(kiln_knobs_parse(child, k2, KILN_KNOBS_MAX, &err), n);
        for (int i = 0; i < n; i++) {
            assert_string_equal(k2[i].name, k[i].name);
            assert_string_equal(k2[i].value, vals[i]);
        }
        free(src);
        src = child;
        memcpy(k, k2, sizeof k);
    }
    free(src);
}

static void check_kernel(const char *task)
{
    char *src = read_kernel(task);
    kiln_knob k[KILN_KNOBS_MAX];
    kiln_error err = {0};
    int n = kiln_knobs_parse(src, k, KILN_KNOBS_MAX, &err);
    if (n < 0)
        fail_msg("%s: %s", task, err.msg);
    assert_true(n >= 5);
    long long total = space(k, n);
    if (total < 200)
        fail_msg("%s: %lld settings, expected at least 200", task, total);
    for (int i = 0; i < n; i++) {   /* the start is in the space */
        int listed = 0;
        for (int j = 0; j < k[i].nvalues; j++)
            listed |= strcmp(k[i].values[j], k[i].value) == 0;
        if (!listed)
            fail_msg("%s: knob %s starts at %s, not in its list", task, k[i].name, k[i].value);
    }
    assert_true(kiln_tuner_explore_count(k, n) > 0);
    tune_a_while(src, 20);
    free(src);
}

static void test_rmsnorm(void **state)
{
    (void)state;
    check_kernel("rmsnorm");
}

static void test_softmax(void **state)
{
    (void)state;
    check_kernel("softmax");
}

static void test_layernorm(void **state)
{
    (void)state;
    check_kernel("layernorm");
}

int main(int argc, char **argv)
{
    if (argc > 1)
        root = argv[1];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rmsnorm),
        cmocka_unit_test(test_softmax),
        cmocka_unit_test(test_layernorm),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
