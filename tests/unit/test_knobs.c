/* test_knobs.c - cmocka tests for the one knob parser (common/knobs.h),
 * which the tuner (agent/tune.c) and the CUDA manifest (verifier/manifest.c)
 * both use: what a knob line is, where its value lies, which lines are not
 * knobs, and every rule's error, reported without the line (given apart). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "knobs.h"

static kiln_knob K[KILN_KNOBS_MAX + 2];

static int scan(const char *src)
{
    kiln_error err = {0};
    int line = -1, n = kiln_knobs_scan(src, strlen(src), K, KILN_KNOBS_MAX + 2, &line, &err);
    if (n < 0)
        fail_msg("unexpected failure on line %d: %s\n--- source ---\n%s", line, err.msg, src);
    return n;
}

/* The scan fails on line `line` with a message containing msg. */
static void fails(const char *src, int line, const char *msg)
{
    kiln_error err = {0};
    int at = -1;
    assert_int_equal(kiln_knobs_scan(src, strlen(src), K, KILN_KNOBS_MAX + 2, &at, &err), -1);
    if (at != line || !strstr(err.msg, msg))
        fail_msg("line %d '%s', wanted line %d '%s'\n--- source ---\n%s", at, err.msg, line, msg,
                 src);
}

static void test_fields(void **state)
{
    (void)state;
    const char *src = "int a;\n#  define   UNROLL\t-1   //@kiln\ttune 0 -1 4  8 \r\n"
                      "#define BLOCK 256//@kiln tune 128 256\n";
    assert_int_equal(scan(src), 2);
    assert_string_equal(K[0].name, "UNROLL");
    assert_string_equal(K[0].value, "-1");
    assert_int_equal(K[0].line, 2);
    assert_int_equal(K[0].nvalues, 4);
    assert_string_equal(K[0].values[0], "0");
    assert_string_equal(K[0].values[3], "8");
    assert_int_equal(K[0].value_end - K[0].value_at, 2);
    assert_memory_equal(src + K[0].value_at, "-1", 2);
    assert_string_equal(K[1].name, "BLOCK");
    assert_int_equal(K[1].line, 3);
    assert_memory_equal(src + K[1].value_at, "256//", 5);
    assert_int_equal(K[1].value_end - K[1].value_at, 3);
    assert_int_equal(scan(""), 0);
}

/* Comments and literals are lexed: only a line comment that starts
 * "//@kiln" is a directive; lines are still counted inside them. */
static void test_not_knobs(void **state)
{
    (void)state;
    assert_int_equal(scan("// #define A 1 //@kiln tune 1 2\n"
                          "/* #define B 1 //@kiln tune 1 2\n"
                          "   #define C x //@kiln tune x */\n"
                          "const char *s = \"#define D 1 //@kiln tune 1 2\";\n"
                          "#define E 1 // a plain comment: @kiln tune 1 2\n"
                          "#define F 4 //@kiln tune 2 4\n"),
                     1);
    assert_string_equal(K[0].name, "F");
    assert_int_equal(K[0].line, 6);
}

static void test_directive_errors(void **state)
{
    (void)state;
    fails("\n#define A 1 //@kiln tunes 1 2\n", 2, "unknown directive '//@kiln tunes'");
    fails("#define A 1 //@kilntune 1 2\n", 1, "unknown directive '//@kilntune'");
    fails("#define A 1 //@kiln\n", 1, "unknown directive '//@kiln'");
    fails("//@kiln launch\n", 1, "only '//@kiln tune' is known");
    fails("#define A 1 // @kiln tune 1 2\n", 1, "with no space between '//' and '@kiln'");
    fails("#define A 1 //\t@kiln tune 1 2\n", 1, "with no space");
}

static void test_define_errors(void **state)
{
    (void)state;
    const char *form = "a knob line must read '#define NAME VALUE //@kiln tune V1 V2 ...'";
    fails("int a = 1; //@kiln tune 1 2\n", 1, form);
    fails("#define A //@kiln tune 1 2\n", 1, form);
    fails("#define //@kiln tune 1 2\n", 1, form);
    fails("#define A 4 5 //@kiln tune 1 2\n", 1, form);
    fails("#define 9A 4 //@kiln tune 1 2\n", 1, form);
    fails("#undef A 4 //@kiln tune 1 2\n", 1, form);
    fails("/* x\n */ #define A 4 //@kiln tune 1 2\n", 2, form);
    fails("#define A (1+2) //@kiln tune 1 2\n", 1, "knob 'A': value '(1+2)' is not an integer");
    char src[128], name[40];
    memset(name, 'N', 32);
    name[32] = '\0';
    snprintf(src, sizeof src, "#define %s 1 //@kiln tune 1 2\n", name);
    fails(src, 1, "is longer than 31 characters");
    snprintf(src, sizeof src, "#define %s 1 //@kiln tune 1 2\n", name + 1);
    assert_int_equal(scan(src), 1);
}

/* Values are decimal integers as C reads them: no octal, hex or suffix. */
static void test_integers(void **state)
{
    (void)state;
    static const char *const bad[] = {"010", "-0", "+5", "0x40", "8u", "1.5", "-", "x",
                                      "99999999999999999999", "1,"};
    char src[128];
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char want[64];
        snprintf(src, sizeof src, "#define A %s //@kiln tune 1 2\n", bad[i]);
        snprintf(want, sizeof want, "knob 'A': value '%s' is not an integer", bad[i]);
        fails(src, 1, want);
        snprintf(src, sizeof src, "#define A 1 //@kiln tune 1 %s\n", bad[i]);
        snprintf(want, sizeof want, "knob 'A': tune value '%s' is not an integer", bad[i]);
        fails(src, 1, want);
    }
    long long v = 0;
    assert_int_equal(kiln_knob_int("-9223372036854775808", 20, &v), 0);
    assert_true(v == INT64_MIN);
    assert_int_equal(kiln_knob_int("0", 1, &v), 0);
    assert_int_equal(v, 0);
    assert_int_equal(kiln_knob_int("", 0, NULL), -1);
}

static void test_value_list_errors(void **state)
{
    (void)state;
    fails("#define A 1 //@kiln tune\n", 1, "knob 'A': lists 0 values; a knob needs at least 2");
    fails("#define A 1 //@kiln tune 4\n", 1, "knob 'A': lists 1 value; a knob needs at least 2");
    fails("#define A 1 //@kiln tune 1 2 1\n", 1, "knob 'A': value 1 is listed twice");
    fails("#define A 1 //@kiln tune 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17\n", 1,
          "knob 'A': more than 16 values");
    assert_int_equal(scan("#define A 1 //@kiln tune 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16\n"), 1);
    assert_int_equal(K[0].nvalues, 16);
}

static void test_knob_count(void **state)
{
    (void)state;
    fails("#define A 1 //@kiln tune 1 2\nint x;\n#define A 2 //@kiln tune 1 2\n", 3,
          "knob 'A' is declared twice (first on line 1)");
    char many[2048] = "";
    for (int i = 0; i < KILN_KNOBS_MAX; i++)
        snprintf(many + strlen(many), sizeof many - strlen(many), "#define K%d 1 //@kiln tune 1 2\n",
                 i);
    assert_int_equal(scan(many), KILN_KNOBS_MAX);
    strcat(many, "#define LAST 1 //@kiln tune 1 2\n");
    fails(many, KILN_KNOBS_MAX + 1, "more than 16 knobs");
    /* the caller's cap, when smaller */
    kiln_error err;
    int line;
    assert_int_equal(kiln_knobs_scan(many, strlen(many), K, 3, &line, &err), -1);
    assert_int_equal(line, 4);
    assert_string_equal(err.msg, "more than 3 knobs");
}

static void test_parse_wrapper(void **state)
{
    (void)state;
    kiln_error err = {0};
    assert_int_equal(kiln_knobs_parse("int a;\n#define A 1 //@kiln tune 4\n", K, 4, &err), -1);
    assert_string_equal(err.msg, "line 2: knob 'A': lists 1 value; a knob needs at least 2");
    assert_int_equal(kiln_knobs_parse(NULL, K, 4, &err), -1);
    assert_int_equal(kiln_knobs_parse("#define A 1 //@kiln tune 1 2", K, 4, &err), 1);
    /* len bounds the source: no NUL needed */
    const char src[] = "#define A 1 //@kiln tune 1 2\n#define B 1 //@kiln tune 1";
    assert_int_equal(kiln_knobs_scan(src, 29, K, 4, NULL, &err), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fields),
        cmocka_unit_test(test_not_knobs),
        cmocka_unit_test(test_directive_errors),
        cmocka_unit_test(test_define_errors),
        cmocka_unit_test(test_integers),
        cmocka_unit_test(test_value_list_errors),
        cmocka_unit_test(test_knob_count),
        cmocka_unit_test(test_parse_wrapper),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
