/* test_expr_c.c - unit tests for the translation of kiln expressions to C
 * (harness/expr_c.h): the text it prints, what it refuses, and - where a C
 * compiler is at hand ($CC, else cc) - a differential check that the
 * translations, compiled with the helpers, compute exactly what kiln's own
 * evaluator (verifier/expr.h) computes, failing where it fails. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "expr.h"
#include "expr_c.h"

/* rows, cols and the knob BLOCK; big and small test overflow. */
static const struct { const char *name; int64_t v; } vars[] = {
    {"rows", 33}, {"cols", 1000}, {"BLOCK", 256}, {"zero", 0}, {"neg", -7},
    {"big", INT64_MAX}, {"small", INT64_MIN},
};

static int c_name(void *ctx, const char *name, size_t len, char *buf, size_t buflen)
{
    (void)ctx;
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++)
        if (strlen(vars[i].name) == len && memcmp(vars[i].name, name, len) == 0)
            return snprintf(buf, buflen, "v_%s", vars[i].name), 0;
    return -1;
}

static int c_sizeof(void *ctx, const char *type, size_t len, char *buf, size_t buflen)
{
    (void)ctx;
    if (len == 1 && type[0] == 'T')
        return snprintf(buf, buflen, "(int64_t)sizeof(uint16_t)"), 0;
    if (len == 3 && memcmp(type, "f32", 3) == 0)
        return snprintf(buf, buflen, "4"), 0;
    return -1;
}

static const kiln_expr_c_env env = {c_name, c_sizeof, NULL, "&bad"};

static int lookup(void *ctx, const char *name, size_t len, kiln_value *out)
{
    (void)ctx;
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++)
        if (strlen(vars[i].name) == len && memcmp(vars[i].name, name, len) == 0) {
            *out = (kiln_value){0, vars[i].v, 0.0};
            return 0;
        }
    return -1;
}

static int size_of(void *ctx, const char *type, size_t len, int64_t *bytes)
{
    (void)ctx;
    *bytes = len == 1 && type[0] == 'T' ? 2 : 4;
    return len == 1 || (len == 3 && memcmp(type, "f32", 3) == 0) ? 0 : -1;
}

static void expect_c(const char *src, const char *want)
{
    char out[2048];
    kiln_error err = {{0}};
    int rc = kiln_expr_to_c(src, &env, out, sizeof out, &err);
    if (rc != 0)
        fail_msg("%s: %s", src, err.msg);
    assert_string_equal(out, want);
}

static void expect_refused(const char *src, const char *msg)
{
    char out[2048];
    kiln_error err = {{0}};
    assert_int_equal(kiln_expr_to_c(src, &env, out, sizeof out, &err), -1);
    if (!strstr(err.msg, msg))
        fail_msg("%s: message '%s' lacks '%s'", src, err.msg, msg);
}

static void test_text(void **state)
{
    (void)state;
    expect_c("rows", "v_rows");
    expect_c(" 007 ", "7");                       /* C would read 007 as octal */
    expect_c("4294967296", "4294967296LL");
    expect_c("cdiv(cols, BLOCK*4)", "kiln_x_cdiv(v_cols, kiln_x_mul(v_BLOCK, 4, &bad), &bad)");
    expect_c("(2*rows*cols + cols) * sizeof(T)",
             "kiln_x_mul(kiln_x_add(kiln_x_mul(kiln_x_mul(2, v_rows, &bad), v_cols, &bad), v_cols, "
             "&bad), (int64_t)sizeof(uint16_t), &bad)");
    expect_c("min(rows, cols, 3)", "kiln_x_min(kiln_x_min(v_rows, v_cols), 3)");
    expect_c("max(rows, 1) * sizeof(f32)", "kiln_x_mul(kiln_x_max(v_rows, 1), 4, &bad)");
    expect_c("-rows % +3", "kiln_x_mod(kiln_x_sub(0, v_rows, &bad), 3, &bad)");
    expect_c("rows - cols - 1", "kiln_x_sub(kiln_x_sub(v_rows, v_cols, &bad), 1, &bad)");
    expect_c("rows / (cols - 1)", "kiln_x_div(v_rows, kiln_x_sub(v_cols, 1, &bad), &bad)");
}

static void test_refused(void **state)
{
    (void)state;
    expect_refused("rows * 1.5", "float literal");
    expect_refused("1e3", "float literal");
    expect_refused(".5 + rows", "float literal");
    expect_refused("rows + eps", "unknown name 'eps' at column 8");
    expect_refused("sizeof(f64)", "unknown type 'f64'");
    expect_refused("pow(rows, 2)", "unknown function 'pow'");
    expect_refused("cdiv(rows)", "cdiv() takes exactly 2, got 1");
    expect_refused("cdiv(rows, 2, 3)", "cdiv() takes exactly 2, got 3");
    expect_refused("min(rows)", "min() takes 2 or more, got 1");
    expect_refused("max", "expected '(' after function 'max'");
    expect_refused("(rows", "missing ')' at column 6");
    expect_refused("rows cols", "unexpected trailing input 'c' at column 6");
    expect_refused("", "empty expression");
    expect_refused("99999999999999999999", "out of range");
    char deep[300];
    memset(deep, '(', 100);
    snprintf(deep + 100, sizeof deep - 100, "rows");
    memset(deep + 104, ')', 100);
    deep[204] = '\0';
    expect_refused(deep, "deeper than 64");
    char out[16];
    kiln_error err;
    assert_int_equal(kiln_expr_to_c("rows * cols + BLOCK", &env, out, sizeof out, &err), -1);
    assert_non_null(strstr(err.msg, "longer than 15 bytes"));
}

/* ---- differential: the translation compiled against kiln's evaluator ---- */

static const char *const cases[] = {
    "rows", "cdiv(cols, BLOCK)", "cdiv(cols, 2 * BLOCK) * 2", "cdiv(neg, 2)", "cdiv(neg, -2)",
    "cdiv(7, neg)", "cdiv(0, 3)", "(2*rows*cols + cols) * sizeof(T)", "max(rows, 1) * sizeof(f32)",
    "min(rows, cols, BLOCK, 3)", "max(neg, zero, -100)", "neg / 2", "neg % 4", "7 % neg",
    "rows - cols * 2", "-(rows - cols)", "--rows", "+-+neg", "cols / rows * rows + cols % rows",
    "big + 0", "big + 1", "small - 1", "-small", "big * 2", "small * -1", "small / -1",
    "small % -1", "rows / zero", "rows % zero", "cdiv(rows, zero)", "cdiv(small, -1)",
    "big * big", "small * small", "big - small", "small + big", "big / neg * 2",
    "max(big, 1) + 1", "min(small, 0) - 1", "3 * (rows + (cols - (BLOCK * 2)))",
};

/* One line per case: the value, or "error". */
static void kiln_results(FILE *f)
{
    kiln_expr_env kenv = {lookup, size_of, NULL};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        kiln_value v;
        kiln_error err;
        if (kiln_expr_eval(cases[i], &kenv, &v, &err) < 0)
            fprintf(f, "error\n");
        else
            fprintf(f, "%lld\n", (long long)v.i);
    }
}

static void write_program(FILE *f)
{
    fprintf(f, "#include <stdint.h>\n#include <stdio.h>\n%s\nint main(void)\n{\n",
            kiln_expr_c_helpers);
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++)   /* volatile: no folding */
        if (vars[i].v == INT64_MIN)
            fprintf(f, "    volatile int64_t v_%s = INT64_MIN;\n", vars[i].name);
        else
            fprintf(f, "    volatile int64_t v_%s = %lldLL;\n", vars[i].name, (long long)vars[i].v);
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char c[4096];
        kiln_error err;
        assert_int_equal(kiln_expr_to_c(cases[i], &env, c, sizeof c, &err), 0);
        fprintf(f, "    {\n        int bad = 0;\n        int64_t r = %s;\n"
                   "        if (bad)\n            printf(\"error\\n\");\n"
                   "        else\n            printf(\"%%lld\\n\", (long long)r);\n    }\n", c);
    }
    fprintf(f, "    return 0;\n}\n");
}

static int differential_skipped;

static void test_differential(void **state)
{
    (void)state;
    const char *cc = getenv("CC") ? getenv("CC") : "cc";
    char dir[] = "/tmp/kiln-expr-c-XXXXXX", cmd[1024], path[128];
    snprintf(cmd, sizeof cmd, "%s --version >/dev/null 2>&1", cc);
    if (system(cmd) != 0) {   /* no C compiler here: the text tests stand, ctest counts a skip */
        differential_skipped = 1;
        skip();
    }
    if (!mkdtemp(dir))
        fail_msg("mkdtemp");
    snprintf(path, sizeof path, "%s/t.c", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    write_program(f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "%s -std=c99 -Wall -Wextra -Werror -O2 -o %s/t %s/t.c 2>%s/cc.txt",
             cc, dir, dir, dir);
    if (system(cmd) != 0) {   /* a compiler that refuses the translation: a failure */
        snprintf(cmd, sizeof cmd, "cat %s/cc.txt; rm -rf %s", dir, dir);
        if (system(cmd) != 0) { /* nothing more to say */ }
        fail_msg("the translated expressions do not compile with %s (its output above)", cc);
    }
    snprintf(path, sizeof path, "%s/want.txt", dir);
    f = fopen(path, "w");
    assert_non_null(f);
    kiln_results(f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "%s/t > %s/got.txt && diff %s/want.txt %s/got.txt", dir, dir, dir, dir);
    int rc = system(cmd);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) { /* leaves a temporary directory */ }
    assert_int_equal(rc, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_text),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_differential),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    if (!failed && differential_skipped) {
        printf("skipped: no C compiler for the differential test\n");
        return 77;
    }
    return failed;
}
