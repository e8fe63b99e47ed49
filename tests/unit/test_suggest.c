/* test_suggest.c - "did you mean" (common/suggest.c): the edit distance on
 * known pairs (a swap of neighbours is one edit), which names are close
 * enough to offer, the first of equally close names, and the flags found
 * in a usage text. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "suggest.h"

static void test_distance(void **state)
{
    (void)state;
    assert_int_equal(kiln_edit_distance("rmsnorm", "rmsnorm", 2), 0);
    assert_int_equal(kiln_edit_distance("rmsnrom", "rmsnorm", 2), 1);   /* a swap */
    assert_int_equal(kiln_edit_distance("rmsnor", "rmsnorm", 2), 1);
    assert_int_equal(kiln_edit_distance("kitten", "sitting", 5), 3);
    assert_int_equal(kiln_edit_distance("", "abc", 5), 3);
    assert_int_equal(kiln_edit_distance("abc", "xyz", 1), 2);          /* capped at cap + 1 */
    assert_int_equal(kiln_edit_distance("a", "abcdef", 2), 3);         /* lengths alone */
}

static const char *best_of(const char *word, const char *const *names, int n)
{
    static kiln_suggestion s;
    kiln_suggest_init(&s, word);
    for (int i = 0; i < n; i++)
        kiln_suggest_try(&s, names[i]);
    return kiln_suggest_best(&s);
}

static void test_close_enough(void **state)
{
    (void)state;
    const char *tasks[] = {"gemm", "layernorm", "rmsnorm", "softmax", "add_rmsnorm"};
    assert_string_equal(best_of("rmsnrom", tasks, 5), "rmsnorm");
    assert_string_equal(best_of("layernrom", tasks, 5), "layernorm");
    assert_string_equal(best_of("softmx", tasks, 5), "softmax");
    assert_null(best_of("conv2d", tasks, 5));
    assert_null(best_of("gem", (const char *[]){"geglu"}, 1));   /* 2 edits in 3 letters */
    assert_string_equal(best_of("gem", (const char *[]){"gemm"}, 1), "gemm");
    assert_null(best_of("rmsnorm", tasks, 5));   /* add_rmsnorm is 4 edits away */
    /* an exact name is never its own suggestion */
    assert_string_equal(best_of("rmsnorm", (const char *[]){"rmsnorm", "rmsnorx"}, 2), "rmsnorx");
}

static void test_first_of_equals(void **state)
{
    (void)state;
    const char *names[] = {"abcx", "abcy"};
    assert_string_equal(best_of("abcz", names, 2), "abcx");
}

static void test_flags_of_usage(void **state)
{
    (void)state;
    const char *usage = "usage: kiln search TASK [--iterations N] [--budget D]\n"
                        "  --timing-ms N   the timing budget (--no-daemon: in process)\n"
                        "  --json          one JSON event a line; not-a--flag\n";
    kiln_suggestion s;
    kiln_suggest_init(&s, "--iteratons");
    kiln_suggest_flags(&s, usage);
    assert_string_equal(kiln_suggest_best(&s), "--iterations");
    kiln_suggest_init(&s, "--no-deamon");
    kiln_suggest_flags(&s, usage);
    assert_string_equal(kiln_suggest_best(&s), "--no-daemon");
    kiln_suggest_init(&s, "--flag");   /* "a--flag" is inside a word: not a flag */
    kiln_suggest_flags(&s, usage);
    assert_null(kiln_suggest_best(&s));
    kiln_suggest_init(&s, "--bogus");
    kiln_suggest_flags(&s, usage);
    assert_null(kiln_suggest_best(&s));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_distance),
        cmocka_unit_test(test_close_enough),
        cmocka_unit_test(test_first_of_equals),
        cmocka_unit_test(test_flags_of_usage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
