/* test_expr_c.c - unit tests for the translation of kiln expressions to C
 * (porting/expr_c.h): the text it prints, what it refuses, and - where a C
 * compiler is at hand ($CC, else cc) - a differential check that the
 * translations, compiled with the helpers, compute exactly what kiln's own
 * evaluator (common/expr.h) computes, failing where it fails. The
 * differential also runs cases over a manifest's lets, declared as the CUDA
 * export declares them (porting/export_cuda.c): a local per let, in order,
 * each translated with the lets before it as names; a let that fails fails
 * every case after it, as kiln's resolver fails the shape. */
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

/* Two sets of lets (as a manifest's "let" field) with the same names: the
 * first evaluates at the vars above, the second fails at its second let
 * (division by zero, after a ?: whose skipped operand would fail too). */
typedef struct let { const char *name, *expr; } let;
static const let lets_ok[] = {
    {"vec", "gcd(cols, 8)"},
    {"threads", "min(1024, cols / vec)"},
    {"fits", "threads * vec == cols"},
    {"rows_per", "fits && rows > 32 ? 2 : 1"},
    {"grid", "cdiv(rows, rows_per) * (neg < 0 ? 3 : 5)"},
    {"wide", "lcm(BLOCK, 96) > 512 || !fits"},
};
static const let lets_bad[] = {
    {"vec", "gcd(cols, 8)"},
    {"threads", "zero != 0 && cols / zero > 1 ? 1 : cols / (vec - 8)"},
    {"fits", "threads * vec == cols"},
    {"rows_per", "fits && rows > 32 ? 2 : 1"},
    {"grid", "cdiv(rows, rows_per) * (neg < 0 ? 3 : 5)"},
    {"wide", "lcm(BLOCK, 96) > 512 || !fits"},
};

/* The lets names may use (NULL: none): the first nlets of lets. */
static const let *lets;
static int nlets;

static int let_index(const char *name, size_t len)
{
    for (int i = 0; i < nlets; i++)
        if (strlen(lets[i].name) == len && memcmp(lets[i].name, name, len) == 0)
            return i;
    return -1;
}

static int c_name(void *ctx, const char *name, size_t len, char *buf, size_t buflen)
{
    (void)ctx;
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++)
        if (strlen(vars[i].name) == len && memcmp(vars[i].name, name, len) == 0)
            return snprintf(buf, buflen, "v_%s", vars[i].name), 0;
    int l = let_index(name, len);
    if (l >= 0)
        return snprintf(buf, buflen, "l_%s", lets[l].name), 0;
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

/* The values of the lets evaluated so far (the first nlets). */
static int64_t let_value[16];

static int lookup(void *ctx, const char *name, size_t len, kiln_value *out)
{
    (void)ctx;
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++)
        if (strlen(vars[i].name) == len && memcmp(vars[i].name, name, len) == 0) {
            *out = (kiln_value){0, vars[i].v, 0.0};
            return 0;
        }
    int l = let_index(name, len);
    if (l >= 0) {
        *out = (kiln_value){0, let_value[l], 0.0};
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
    kiln_error err = {0};
    int rc = kiln_expr_to_c(src, &env, out, sizeof out, &err);
    if (rc != 0)
        fail_msg("%s: %s", src, err.msg);
    assert_string_equal(out, want);
}

static void expect_refused(const char *src, const char *msg)
{
    char out[2048];
    kiln_error err = {0};
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
    /* comparisons, logic and ?: stay C's operators, every operand parenthesized */
    expect_c("rows < cols", "((v_rows) < (v_cols))");
    expect_c("rows <= 2 == 1", "((((v_rows) <= (2))) == (1))");
    expect_c("rows != cols", "((v_rows) != (v_cols))");
    expect_c("rows >= 1 && cols > 2",
             "((((v_rows) >= (1))) != 0 && (((v_cols) > (2))) != 0)");
    expect_c("rows || cols && BLOCK",
             "((v_rows) != 0 || (((v_cols) != 0 && (v_BLOCK) != 0)) != 0)");
    expect_c("!rows", "((v_rows) == 0)");
    expect_c("!!rows", "((((v_rows) == 0)) == 0)");
    expect_c("zero ? rows / zero : 7",
             "((v_zero) != 0 ? (kiln_x_div(v_rows, v_zero, &bad)) : (7))");
    expect_c("0 ? 1 : rows ? 2 : 3", "((0) != 0 ? (1) : (((v_rows) != 0 ? (2) : (3))))");
    expect_c("-(rows < 3)", "kiln_x_sub(0, ((v_rows) < (3)), &bad)");
    expect_c("sizeof(T) > 2", "(((int64_t)sizeof(uint16_t)) > (2))");
    /* gcd and lcm are checked helpers, as cdiv */
    expect_c("gcd(cols, 8)", "kiln_x_gcd(v_cols, 8, &bad)");
    expect_c("lcm(rows, gcd(cols, 8))", "kiln_x_lcm(v_rows, kiln_x_gcd(v_cols, 8, &bad), &bad)");
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
    expect_refused("gcd(rows)", "gcd() takes exactly 2, got 1");
    expect_refused("rows < 1.5", "float literal");
    expect_refused("rows ? 2.0 : 1", "float literal");   /* even where not chosen */
    expect_refused("rows = 1", "compare with '=='");
    expect_refused("1 ? 2", "expected ':'");
    expect_refused("vec + 1", "unknown name 'vec'");      /* no lets in scope here */
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
    /* comparisons, logic, ?: */
    "rows < cols", "rows > cols", "rows <= 33", "rows >= 34", "neg == -7", "neg != -7",
    "small < big", "big > small", "3 > 2 > 1", "1 < 2 == 2 < 3", "rows + 1 < cols * 2",
    "rows && cols", "zero && cols", "zero || neg", "zero || zero", "!zero", "!neg", "!!big",
    "-!zero", "!zero * 5", "1 || 0 && 0", "(1 || 0) && 0",
    "zero != 0 && rows / zero > 1", "zero == 0 || rows / zero > 1", "zero && big + 1",
    "rows / zero > 1 && 0", "big + 1 > 0 || 1", "zero == 0 && rows / zero",
    "rows > 4 ? 1 : 2", "zero ? rows / zero : 7", "rows ? 7 : rows / zero",
    "rows ? rows / zero : 7", "zero ? 1 : zero ? 2 : 3", "1 ? zero ? 4 : 5 : 6",
    "1 + 1 ? 2 : 3", "(rows > 32 ? cols : BLOCK) * 2", "min(rows > 4 ? 100 : 200, 150)",
    "cols % 8 == 0 ? cols / 8 : cols", "(big > 0 ? big : small) + 1", "(zero ? 2 : 3) && rows",
    "!(rows ? 2 : 3)", "sizeof(T) > 1 ? sizeof(f32) : 0",
    /* gcd and lcm, overflow included */
    "gcd(cols, 8)", "gcd(neg, 21)", "gcd(-12, 18)", "gcd(zero, neg)", "gcd(zero, zero)",
    "gcd(small, 6)", "gcd(small, zero)", "gcd(small, small)", "gcd(big, big)", "gcd(big, small)",
    "lcm(4, 6)", "lcm(neg, 6)", "lcm(zero, 5)", "lcm(5, zero)", "lcm(zero, zero)",
    "lcm(big, 1)", "lcm(big, big)", "lcm(big, 2)", "lcm(small, 1)", "lcm(small, zero)",
    "lcm(big - 1, big)", "cols / gcd(cols, BLOCK) * BLOCK", "lcm(rows, cols) / gcd(rows, cols)",
};

/* Cases over the lets (both sets). */
static const char *const let_cases[] = {
    "vec", "threads", "fits", "rows_per", "grid", "wide", "cdiv(rows, rows_per) * threads",
    "threads > 512 ? threads / 2 : threads", "vec * threads * sizeof(T)",
};

/* The lets named here and their count: ok == 1 the first set, else the second. */
static void use_lets(int ok)
{
    lets = ok ? lets_ok : lets_bad;
    nlets = ok ? (int)(sizeof lets_ok / sizeof *lets_ok) : (int)(sizeof lets_bad / sizeof *lets_bad);
}

/* The lets in order, as kiln's resolver does: 0, or -1 when one fails. */
static int kiln_lets(const kiln_expr_env *kenv, int n)
{
    for (nlets = 0; nlets < n; nlets++) {
        kiln_value v;
        kiln_error err;
        if (kiln_expr_eval(lets[nlets].expr, kenv, &v, &err) < 0)
            return -1;
        let_value[nlets] = v.i;
    }
    return 0;
}

static void kiln_case(FILE *f, const kiln_expr_env *kenv, const char *src, int lets_failed)
{
    kiln_value v;
    kiln_error err;
    if (lets_failed || kiln_expr_eval(src, kenv, &v, &err) < 0)
        fprintf(f, "error\n");
    else
        fprintf(f, "%lld\n", (long long)v.i);
}

/* One line per case: the value, or "error"; then the let cases, per set. */
static void kiln_results(FILE *f)
{
    kiln_expr_env kenv = {lookup, size_of, NULL};
    nlets = 0;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        kiln_case(f, &kenv, cases[i], 0);
    for (int ok = 1; ok >= 0; ok--) {
        use_lets(ok);
        int failed = kiln_lets(&kenv, nlets);
        use_lets(ok);
        for (size_t i = 0; i < sizeof let_cases / sizeof *let_cases; i++)
            kiln_case(f, &kenv, let_cases[i], failed);
    }
    nlets = 0;
}

static void print_case(FILE *f, const char *src, const char *indent, const char *init)
{
    char c[4096];
    kiln_error err = {0};
    if (kiln_expr_to_c(src, &env, c, sizeof c, &err) != 0)
        fail_msg("%s: %s", src, err.msg);
    fprintf(f, "%s{\n%s    int bad = %s;\n%s    int64_t r = %s;\n"
               "%s    if (bad)\n%s        printf(\"error\\n\");\n"
               "%s    else\n%s        printf(\"%%lld\\n\", (long long)r);\n%s}\n",
            indent, indent, init, indent, c, indent, indent, indent, indent, indent);
}

/* A block declaring the lets as export_cuda.c's print_lets does (const
 * int64_t locals in order, flagged through lbad), then the let cases. */
static void print_let_block(FILE *f, int ok)
{
    kiln_expr_c_env lenv = env;
    lenv.flag = "&lbad";
    use_lets(ok);
    int n = nlets;
    fprintf(f, "    {\n        int lbad = 0;\n");
    for (nlets = 0; nlets < n; nlets++) {
        char c[4096];
        kiln_error err = {0};
        if (kiln_expr_to_c(lets[nlets].expr, &lenv, c, sizeof c, &err) != 0)
            fail_msg("let %s: %s", lets[nlets].name, err.msg);
        fprintf(f, "        const int64_t l_%s = %s;\n        (void)l_%s;\n", lets[nlets].name, c,
                lets[nlets].name);
    }
    for (size_t i = 0; i < sizeof let_cases / sizeof *let_cases; i++)
        print_case(f, let_cases[i], "        ", "lbad");
    fprintf(f, "    }\n");
    nlets = 0;
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
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        print_case(f, cases[i], "    ", "0");
    print_let_block(f, 1);
    print_let_block(f, 0);
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
