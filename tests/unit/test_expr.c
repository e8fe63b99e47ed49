/* test_expr.c - unit tests for the task-file expression evaluator (expr.h). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "expr.h"

/* ---- test environment ------------------------------------------------ */

static int name_is(const char *name, size_t len, const char *want)
{
    return strlen(want) == len && memcmp(name, want, len) == 0;
}

static int test_lookup(void *ctx, const char *name, size_t len,
                       kiln_value *out)
{
    int *calls = ctx;
    if (calls)
        ++*calls;
    static const struct { const char *name; int64_t v; } dims[] = {
        {"rows", 8}, {"cols", 100}, {"BLOCK", 32}, {"zero", 0},
        {"big", INT64_MAX}, {"small", INT64_MIN},
    };
    for (size_t k = 0; k < sizeof dims / sizeof dims[0]; k++) {
        if (name_is(name, len, dims[k].name)) {
            *out = (kiln_value){0, dims[k].v, 0.0};
            return 0;
        }
    }
    if (name_is(name, len, "eps")) {
        *out = (kiln_value){1, 0, 0.5};
        return 0;
    }
    return -1;
}

static int test_size_of(void *ctx, const char *type, size_t len,
                        int64_t *bytes)
{
    (void)ctx;
    if (name_is(type, len, "T") || name_is(type, len, "f32"))
        *bytes = 4;
    else if (name_is(type, len, "bf16"))
        *bytes = 2;
    else if (name_is(type, len, "f64"))
        *bytes = 8;
    else
        return -1;
    return 0;
}

static const kiln_expr_env ENV = {test_lookup, test_size_of, NULL};

/* ---- helpers --------------------------------------------------------- */

static int64_t eval_i(const char *src)
{
    kiln_value v;
    kiln_error err = {0};
    int rc = kiln_expr_eval(src, &ENV, &v, &err);
    if (rc != 0)
        print_error("%s: %s\n", src, err.msg);
    assert_int_equal(rc, 0);
    assert_false(v.is_float);
    return v.i;
}

static double eval_f(const char *src)
{
    kiln_value v;
    kiln_error err = {0};
    int rc = kiln_expr_eval(src, &ENV, &v, &err);
    if (rc != 0)
        print_error("%s: %s\n", src, err.msg);
    assert_int_equal(rc, 0);
    assert_true(v.is_float);
    return v.f;
}

#define assert_double_eq(a, b) assert_true(fabs((a) - (b)) < 1e-12)

/* Evaluate src with env and expect failure whose message contains each of
 * the NULL-terminated key words. */
static void expect_error_env(const char *src, const kiln_expr_env *env, ...)
{
    kiln_value v;
    kiln_error err = {0};
    assert_int_equal(kiln_expr_eval(src, env, &v, &err), -1);
    va_list ap;
    va_start(ap, env);
    for (const char *w; (w = va_arg(ap, const char *)) != NULL;) {
        if (!strstr(err.msg, w))
            print_error("'%s' not in message: %s\n", w, err.msg);
        assert_non_null(strstr(err.msg, w));
    }
    va_end(ap);
}

#define expect_error(src, ...) expect_error_env(src, &ENV, __VA_ARGS__, NULL)

/* ---- arithmetic ------------------------------------------------------ */

static void test_literals(void **state)
{
    (void)state;
    assert_int_equal(eval_i("42"), 42);
    assert_int_equal(eval_i("  7  "), 7);
    assert_int_equal(eval_i("9223372036854775807"), INT64_MAX);
    assert_double_eq(eval_f("2.5"), 2.5);
    assert_double_eq(eval_f("1e-6"), 1e-6);
    assert_double_eq(eval_f("1E3"), 1000.0);
    assert_double_eq(eval_f(".5"), 0.5);
    assert_double_eq(eval_f("3."), 3.0);
}

static void test_precedence(void **state)
{
    (void)state;
    assert_int_equal(eval_i("2+3*4"), 14);
    assert_int_equal(eval_i("(2+3)*4"), 20);
    assert_int_equal(eval_i("2*3+4*5"), 26);
    assert_int_equal(eval_i("10-6/2"), 7);
    assert_int_equal(eval_i("1 + 7 % 4 * 2"), 7);
    assert_int_equal(eval_i("((((1+2))))*3"), 9);
}

static void test_associativity(void **state)
{
    (void)state;
    assert_int_equal(eval_i("10-3-2"), 5);
    assert_int_equal(eval_i("100/10/5"), 2);
    assert_int_equal(eval_i("100/(10/5)"), 50);
    assert_int_equal(eval_i("17%10%4"), 3);
    assert_int_equal(eval_i("2*3%4"), 2);
    assert_int_equal(eval_i("8/2*4"), 16);
}

static void test_unary(void **state)
{
    (void)state;
    assert_int_equal(eval_i("-3"), -3);
    assert_int_equal(eval_i("--3"), 3);
    assert_int_equal(eval_i("+3"), 3);
    assert_int_equal(eval_i("-3*-2"), 6);
    assert_int_equal(eval_i("2--1"), 3);
    assert_int_equal(eval_i("-(2+3)"), -5);
    assert_int_equal(eval_i("-2*3"), -6);
    assert_double_eq(eval_f("-3 + 4.5"), 1.5);
    assert_double_eq(eval_f("-eps"), -0.5);
}

static void test_promotion(void **state)
{
    (void)state;
    assert_double_eq(eval_f("1 + 0.5"), 1.5);
    assert_double_eq(eval_f("2 * 1.5"), 3.0);
    assert_double_eq(eval_f("7 / 2.0"), 3.5);
    assert_double_eq(eval_f("1e-6 * cols"), 1e-4);
    assert_double_eq(eval_f("eps * rows"), 4.0);
    assert_int_equal(eval_i("7 / 2"), 3);
}

static void test_division(void **state)
{
    (void)state;
    assert_int_equal(eval_i("7/2"), 3);
    assert_int_equal(eval_i("-7/2"), -3);
    assert_int_equal(eval_i("7/-2"), -3);
    assert_int_equal(eval_i("7%3"), 1);
    assert_int_equal(eval_i("-7%3"), -1);
    assert_int_equal(eval_i("7%-3"), 1);
    assert_int_equal(eval_i("6%3"), 0);
    assert_int_equal(eval_i("small % -1"), 0);
}

/* ---- functions ------------------------------------------------------- */

static void test_min_max(void **state)
{
    (void)state;
    assert_int_equal(eval_i("min(3, 5)"), 3);
    assert_int_equal(eval_i("max(3, 5)"), 5);
    assert_int_equal(eval_i("min(9, 4, 7, 6)"), 4);
    assert_int_equal(eval_i("max(1, 8, 3)"), 8);
    assert_int_equal(eval_i("max(1, rows/2) % 7"), 4);
    assert_int_equal(eval_i("max(-1, -5)"), -1);
    assert_double_eq(eval_f("max(1, 2.5)"), 2.5);
    assert_double_eq(eval_f("min(1, 2.5)"), 1.0);
    assert_int_equal(eval_i("min(max(1, 2), 3)"), 2);
}

static void test_cdiv(void **state)
{
    (void)state;
    assert_int_equal(eval_i("cdiv(8, 4)"), 2);
    assert_int_equal(eval_i("cdiv(9, 4)"), 3);
    assert_int_equal(eval_i("cdiv(1, 4)"), 1);
    assert_int_equal(eval_i("cdiv(0, 4)"), 0);
    assert_int_equal(eval_i("cdiv(cols, BLOCK*4)"), 1);
    assert_int_equal(eval_i("cdiv(cols, BLOCK)"), 4);
    assert_int_equal(eval_i("cdiv(-7, 2)"), -3);
    assert_double_eq(eval_f("cdiv(7.0, 2)"), 4.0);
    assert_double_eq(eval_f("cdiv(6, 1.5)"), 4.0);
}

static void test_sizeof(void **state)
{
    (void)state;
    assert_int_equal(eval_i("sizeof(T)"), 4);
    assert_int_equal(eval_i("sizeof( bf16 )"), 2);
    assert_int_equal(eval_i("(2*rows*cols + cols) * sizeof(T)"), 6800);
    assert_int_equal(eval_i("rows * sizeof(bf16) + sizeof(f64)"), 24);
}

static void test_lookup_env(void **state)
{
    (void)state;
    int calls = 0;
    kiln_expr_env env = {test_lookup, NULL, &calls};
    kiln_value v;
    kiln_error err = {0};
    assert_int_equal(kiln_expr_eval("rows*cols + BLOCK", &env, &v, &err), 0);
    assert_false(v.is_float);
    assert_int_equal(v.i, 832);
    assert_int_equal(calls, 3);
    assert_int_equal(eval_i("rows"), 8);
    expect_error("rows_1", "unknown name", "'rows_1'");
}

static void test_value_to_double(void **state)
{
    (void)state;
    assert_double_eq(kiln_value_to_double((kiln_value){0, 7, 99.0}), 7.0);
    assert_double_eq(kiln_value_to_double((kiln_value){1, 99, 2.5}), 2.5);
}


/* ---- comparisons, logic and the conditional ------------------------- */

static void test_comparisons(void **state)
{
    (void)state;
    assert_int_equal(eval_i("1 < 2"), 1);
    assert_int_equal(eval_i("2 < 2"), 0);
    assert_int_equal(eval_i("2 <= 2"), 1);
    assert_int_equal(eval_i("3 > 2"), 1);
    assert_int_equal(eval_i("2 >= 3"), 0);
    assert_int_equal(eval_i("rows == 8"), 1);
    assert_int_equal(eval_i("rows != 8"), 0);
    assert_int_equal(eval_i("small < big"), 1);
    assert_int_equal(eval_i("-1 < 0"), 1);
    /* C's precedence: arithmetic, then < <= > >=, then == != */
    assert_int_equal(eval_i("1 + 2 < 4"), 1);
    assert_int_equal(eval_i("2 * 3 > 5 + 1"), 0);
    assert_int_equal(eval_i("1 < 2 == 2 < 3"), 1);     /* (1<2) == (2<3) */
    assert_int_equal(eval_i("0 == 1 < 2"), 0);         /* 0 == (1<2) */
    /* left associative, as in C: (3 > 2) > 1 is 1 > 1 */
    assert_int_equal(eval_i("3 > 2 > 1"), 0);
    assert_int_equal(eval_i("1 < 2 < 3"), 1);
    assert_int_equal(eval_i("5 == 5 == 1"), 1);
    assert_int_equal(eval_i("(rows < cols) * 10"), 10);
}

static void test_logic(void **state)
{
    (void)state;
    assert_int_equal(eval_i("1 && 0"), 0);
    assert_int_equal(eval_i("2 && 3"), 1);        /* 0 or 1, not the operand */
    assert_int_equal(eval_i("0 || -5"), 1);
    assert_int_equal(eval_i("0 || 0"), 0);
    assert_int_equal(eval_i("!0"), 1);
    assert_int_equal(eval_i("!7"), 0);
    assert_int_equal(eval_i("!!7"), 1);
    assert_int_equal(eval_i("-!0"), -1);
    assert_int_equal(eval_i("!0 * 5"), 5);        /* unary binds tighter */
    assert_int_equal(eval_i("!(0 * 5)"), 1);
    /* && binds tighter than ||, both looser than == */
    assert_int_equal(eval_i("1 || 0 && 0"), 1);
    assert_int_equal(eval_i("(1 || 0) && 0"), 0);
    assert_int_equal(eval_i("rows == 8 && cols == 100"), 1);
    assert_int_equal(eval_i("rows == 8 && cols == 99 || BLOCK == 32"), 1);
    /* the right operand only when needed: no division by zero here */
    assert_int_equal(eval_i("zero != 0 && rows / zero > 1"), 0);
    assert_int_equal(eval_i("zero == 0 || rows / zero > 1"), 1);
    assert_int_equal(eval_i("0 && big + 1"), 0);
    expect_error("zero == 0 && rows / zero > 1", "division by zero");
    expect_error("rows / zero > 1 || 1", "division by zero");
}

static void test_conditional(void **state)
{
    (void)state;
    assert_int_equal(eval_i("rows > 4 ? 1 : 2"), 1);
    assert_int_equal(eval_i("rows > 40 ? 1 : 2"), 2);
    assert_int_equal(eval_i("zero ? rows / zero : 7"), 7);   /* only the chosen one */
    assert_int_equal(eval_i("1 ? 7 : rows / zero"), 7);
    assert_int_equal(eval_i("1 ? 7 : big + 1"), 7);
    /* right associative, and the middle operand may be another ?: */
    assert_int_equal(eval_i("0 ? 1 : 0 ? 2 : 3"), 3);
    assert_int_equal(eval_i("0 ? 1 : 1 ? 2 : 3"), 2);
    assert_int_equal(eval_i("1 ? 0 ? 4 : 5 : 6"), 5);
    /* the loosest operator */
    assert_int_equal(eval_i("1 + 1 ? 2 : 3"), 2);
    assert_int_equal(eval_i("0 || 1 ? 10 : 20"), 10);
    assert_int_equal(eval_i("1 ? 2 : 3 + 4"), 2);
    assert_int_equal(eval_i("(1 ? 2 : 3) + 4"), 6);
    assert_int_equal(eval_i("min(rows > 4 ? 100 : 200, 150)"), 100);
    assert_int_equal(eval_i("cols % 8 == 0 ? cols / 8 : cols"), 100);
    assert_int_equal(eval_i("cols % 3 == 0 ? cols / 3 : cols"), 100);
    /* the chosen operand's value, float or not */
    assert_double_eq(eval_f("1 ? eps : 2"), 0.5);
    assert_int_equal(eval_i("0 ? eps : 2"), 2);
    expect_error("1 ? rows / zero : 2", "division by zero", "column 10");
}

static void test_error_new_operators(void **state)
{
    (void)state;
    expect_error("eps < 1", "'<' needs integer operands, got a float", "column 5");
    expect_error("1 <= 2.0", "'<='", "integer operands");
    expect_error("eps == eps", "'=='", "integer operands");
    expect_error("!eps", "'!' needs an integer, got a float", "column 1");
    expect_error("eps && 1", "'&&' needs an integer");
    expect_error("0 || eps", "'||' needs an integer");
    expect_error("eps ? 1 : 2", "the condition of '?' needs an integer", "column 5");
    expect_error("1 ? 2", "expected ':' for the '?' at column 3", "column 6");
    expect_error("1 ? 2 , 3", "expected ':' for the '?' at column 3", "','");
    expect_error("1 ? 2 :", "unexpected end of expression");
    expect_error("? 1 : 2", "unexpected character '?'", "column 1");
    expect_error("rows = 1", "trailing input '='", "compare with '=='", "column 6");
    expect_error("rows =< 1", "trailing input '='");
    expect_error("rows & 1", "trailing input '&'", "no bitwise operators");
    expect_error("rows | 1", "trailing input '|'", "no bitwise operators");
    expect_error("rows << 2", "unexpected character '<'", "column 7");
    expect_error("rows < ", "unexpected end of expression");
    expect_error("!", "unexpected end of expression");
    expect_error("1 && && 2", "unexpected character '&'", "column 6");
}

/* ---- gcd and lcm ------------------------------------------------------ */

static void test_gcd_lcm(void **state)
{
    (void)state;
    assert_int_equal(eval_i("gcd(12, 18)"), 6);
    assert_int_equal(eval_i("gcd(cols, 8)"), 4);
    assert_int_equal(eval_i("gcd(7, 13)"), 1);
    assert_int_equal(eval_i("gcd(-12, 18)"), 6);       /* of the magnitudes */
    assert_int_equal(eval_i("gcd(12, -18)"), 6);
    assert_int_equal(eval_i("gcd(0, 5)"), 5);
    assert_int_equal(eval_i("gcd(-5, 0)"), 5);
    assert_int_equal(eval_i("gcd(0, 0)"), 0);
    assert_int_equal(eval_i("gcd(small, 6)"), 2);
    assert_int_equal(eval_i("gcd(big, big)"), INT64_MAX);
    assert_int_equal(eval_i("lcm(4, 6)"), 12);
    assert_int_equal(eval_i("lcm(-4, 6)"), 12);
    assert_int_equal(eval_i("lcm(0, 5)"), 0);
    assert_int_equal(eval_i("lcm(5, 0)"), 0);
    assert_int_equal(eval_i("lcm(0, 0)"), 0);
    assert_int_equal(eval_i("lcm(big, 1)"), INT64_MAX);
    assert_int_equal(eval_i("lcm(big, big)"), INT64_MAX);
    assert_int_equal(eval_i("cols / gcd(cols, BLOCK) * BLOCK"), 800);
    /* 2^63 and beyond do not fit */
    expect_error("gcd(small, 0)", "integer overflow in gcd()", "column 1");
    expect_error("gcd(small, small)", "integer overflow in gcd()");
    expect_error("lcm(small, 1)", "integer overflow in lcm()");
    expect_error("lcm(big, 2)", "integer overflow in lcm()");
    expect_error("1 + lcm(big - 1, big)", "integer overflow in lcm()", "column 5");
    expect_error("gcd(1)", "wrong number of arguments", "gcd() takes exactly 2, got 1");
    expect_error("lcm(1, 2, 3)", "lcm() takes exactly 2, got 3");
    expect_error("gcd(2.0, 4)", "gcd() needs integer arguments, got a float");
    expect_error("lcm(4, eps)", "lcm() needs integer arguments");
    expect_error("gcd + 1", "expected '(' after function 'gcd'");
    assert_int_equal(kiln_expr_is_function("gcd", 3), 1);
    assert_int_equal(kiln_expr_is_function("lcm", 3), 1);
    assert_int_equal(kiln_expr_is_function("sizeof", 6), 1);
    assert_int_equal(kiln_expr_is_function("min", 3), 1);
    assert_int_equal(kiln_expr_is_function("mins", 3), 1);      /* the first 3 bytes */
    assert_int_equal(kiln_expr_is_function("mins", 4), 0);
    assert_int_equal(kiln_expr_is_function("vec", 3), 0);
}

/* ---- errors ---------------------------------------------------------- */

static void test_error_unknown_name(void **state)
{
    (void)state;
    kiln_value v;
    kiln_error err = {0};
    assert_int_equal(kiln_expr_eval("rows*colz", &ENV, &v, &err), -1);
    assert_string_equal(err.msg,
                        "unknown name 'colz' at column 6 in \"rows*colz\"");
    expect_error("1 + nope", "unknown name", "'nope'", "column 5",
                 "\"1 + nope\"");
    /* NULL env and NULL callbacks: every name is unknown. */
    expect_error_env("rows", NULL, "unknown name", "column 1", NULL);
    kiln_expr_env empty = {NULL, NULL, NULL};
    expect_error_env("rows", &empty, "unknown name", NULL);
    expect_error_env("sizeof(T)", &empty, "unknown type", NULL);
}

static void test_error_div_zero(void **state)
{
    (void)state;
    expect_error("1/0", "division by zero", "column 2", "\"1/0\"");
    expect_error("rows / zero", "division by zero", "column 6");
    expect_error("5 % 0", "modulo by zero", "column 3");
    expect_error("1.0/0", "division by zero");
    expect_error("1/0.0", "division by zero");
    expect_error("cdiv(4, 0)", "division by zero", "cdiv", "column 1");
    expect_error("cdiv(4.0, 0)", "division by zero");
}

static void test_error_overflow(void **state)
{
    (void)state;
    expect_error("big + 1", "integer overflow", "column 5");
    expect_error("small - 1", "integer overflow");
    expect_error("big * 2", "integer overflow");
    expect_error("-small", "integer overflow", "column 1");
    expect_error("small / -1", "integer overflow");
    expect_error("9223372036854775808", "out of range", "column 1");
    expect_error("1e999", "out of range");
    expect_error("1e300 * 1e300", "overflow");
}

static void test_error_float_mod(void **state)
{
    (void)state;
    expect_error("5.0 % 2", "'%'", "integer", "column 5");
    expect_error("5 % eps", "'%'", "integer");
}

static void test_error_syntax(void **state)
{
    (void)state;
    expect_error("", "empty expression", "column 1");
    expect_error("   ", "empty expression");
    expect_error("2 $ 3", "unexpected", "'$'", "column 3");
    expect_error("rows @", "unexpected", "column 6");
    expect_error("(2+3", "missing ')'", "column 5");
    expect_error("max(1, 2", "missing ')'");
    expect_error("2 3", "trailing input", "column 3");
    expect_error("2)", "trailing input", "column 2");
    expect_error("2 +", "unexpected end", "column 4");
    expect_error("*2", "unexpected", "column 1");
    expect_error("()", "unexpected", "column 2");
    expect_error("1e", "exponent", "column 3");
    expect_error("1e+", "exponent");
    expect_error("sizeof(4)", "type name", "column 8");
    expect_error("min + 1", "expected '('", "min");
    expect_error("(1,2)", "unexpected", "column 3");
    expect_error("2\x01", "trailing input", "\\x01");
    kiln_value v;
    assert_int_equal(kiln_expr_eval(NULL, &ENV, &v, NULL), -1);
    assert_int_equal(kiln_expr_eval("1/0", &ENV, &v, NULL), -1);
}

static void test_error_functions(void **state)
{
    (void)state;
    expect_error("min(1)", "wrong number of arguments", "min()", "got 1",
                 "column 1");
    expect_error("max()", "wrong number of arguments", "got 0");
    expect_error("cdiv(1)", "wrong number of arguments", "cdiv()",
                 "exactly 2");
    expect_error("cdiv(1, 2, 3)", "wrong number of arguments", "got 3");
    expect_error("2 * foo(3)", "unknown function", "'foo'", "column 5");
    expect_error("sizeof(f8)", "unknown type", "'f8'", "sizeof", "column 8");
}

static void test_error_limits(void **state)
{
    (void)state;
    char src[2200];
    /* 1024 characters is accepted, 1025 is not. */
    memset(src, ' ', 1024);
    src[0] = '1';
    src[1024] = '\0';
    assert_int_equal(eval_i(src), 1);
    src[1024] = ' ';
    src[1025] = '\0';
    expect_error(src, "longer than 1024");

    /* 64 levels of parentheses are accepted, 65 are not. */
    int n = 0;
    for (int k = 0; k < 64; k++)
        src[n++] = '(';
    src[n++] = '1';
    for (int k = 0; k < 64; k++)
        src[n++] = ')';
    src[n] = '\0';
    assert_int_equal(eval_i(src), 1);
    memmove(src + 1, src, (size_t)n + 1);
    src[0] = '(';
    strcat(src, ")");
    expect_error(src, "nested deeper than 64", "column 65");

    /* Unary chains, function calls and ?: count too. */
    memset(src, '-', 100);
    strcpy(src + 100, "1");
    expect_error(src, "nested deeper than 64");
    memset(src, '!', 100);
    strcpy(src + 100, "1");
    expect_error(src, "nested deeper than 64");
    src[0] = '\0';
    for (int k = 0; k < 64; k++)
        strcat(src, "0?1:");
    strcat(src, "7");
    assert_int_equal(eval_i(src), 7);
    src[0] = '\0';
    for (int k = 0; k < 65; k++)
        strcat(src, "0?1:");
    strcat(src, "7");
    expect_error(src, "nested deeper than 64");
    src[0] = '\0';
    for (int k = 0; k < 70; k++)
        strcat(src, "max(1,");
    strcat(src, "1");
    for (int k = 0; k < 70; k++)
        strcat(src, ")");
    expect_error(src, "nested deeper than 64");
}

static void test_error_message_quotes_long_source(void **state)
{
    (void)state;
    char src[1001];
    memset(src, 'a', 999);
    src[999] = '\0';
    kiln_value v;
    kiln_error err = {0};
    assert_int_equal(kiln_expr_eval(src, &ENV, &v, &err), -1);
    assert_non_null(strstr(err.msg, "unknown name"));
    assert_non_null(strstr(err.msg, "column 1"));
    assert_non_null(strstr(err.msg, "...\""));
    assert_true(strlen(err.msg) < sizeof err.msg - 1);
}

/* ---- kiln_expr_eval_int ---------------------------------------------- */

static void test_eval_int(void **state)
{
    (void)state;
    int64_t r = -1;
    kiln_error err = {0};
    assert_int_equal(kiln_expr_eval_int("cdiv(cols, BLOCK)", &ENV, &r, &err),
                     0);
    assert_int_equal(r, 4);
    assert_int_equal(kiln_expr_eval_int("0", &ENV, &r, &err), 0);
    assert_int_equal(r, 0);
    assert_int_equal(kiln_expr_eval_int("2.0 * rows", &ENV, &r, &err), 0);
    assert_int_equal(r, 16);
    assert_int_equal(kiln_expr_eval_int("1e3", &ENV, &r, &err), 0);
    assert_int_equal(r, 1000);

    r = 77;
    assert_int_equal(kiln_expr_eval_int("rows - cols", &ENV, &r, &err), -1);
    assert_non_null(strstr(err.msg, "negative"));
    assert_non_null(strstr(err.msg, "-92"));
    assert_int_equal(r, 77);
    assert_int_equal(kiln_expr_eval_int("-1.0", &ENV, &r, &err), -1);
    assert_non_null(strstr(err.msg, "negative"));
    assert_int_equal(kiln_expr_eval_int("2.5", &ENV, &r, &err), -1);
    assert_non_null(strstr(err.msg, "not an integer"));
    assert_non_null(strstr(err.msg, "\"2.5\""));
    assert_int_equal(kiln_expr_eval_int("1e19", &ENV, &r, &err), -1);
    assert_non_null(strstr(err.msg, "does not fit"));
    assert_int_equal(kiln_expr_eval_int("1/zero", &ENV, &r, &err), -1);
    assert_non_null(strstr(err.msg, "division by zero"));
}

/* ---- kiln_expr_names ------------------------------------------------- */

static void test_names(void **state)
{
    (void)state;
    char names[8][64];
    kiln_error err = {0};
    int n = kiln_expr_names("(2*rows*cols + cols) * sizeof(T)", names, 8,
                            &err);
    assert_int_equal(n, 2);
    assert_string_equal(names[0], "rows");
    assert_string_equal(names[1], "cols");

    n = kiln_expr_names("max(1, rows/2) % 7 + cdiv(N, BLOCK*4) + min(a, 0)",
                        names, 8, &err);
    assert_int_equal(n, 4);
    assert_string_equal(names[0], "rows");
    assert_string_equal(names[1], "N");
    assert_string_equal(names[2], "BLOCK");
    assert_string_equal(names[3], "a");

    n = kiln_expr_names("a < b ? gcd(c, lcm(d, 2)) : !e && a || f", names, 8, &err);
    assert_int_equal(n, 6);
    assert_string_equal(names[0], "a");
    assert_string_equal(names[4], "e");
    assert_string_equal(names[5], "f");

    /* No evaluation: division by zero and unknown types are not errors. */
    assert_int_equal(kiln_expr_names("x / 0 + sizeof(zz) + 1.5 % y", names,
                                     8, &err), 2);
    assert_int_equal(kiln_expr_names("42", names, 8, &err), 0);
}

static void test_names_errors(void **state)
{
    (void)state;
    char names[2][64];
    kiln_error err = {0};
    assert_int_equal(kiln_expr_names("rows *", names, 2, &err), -1);
    assert_non_null(strstr(err.msg, "column"));
    assert_int_equal(kiln_expr_names("(a", names, 2, &err), -1);
    assert_non_null(strstr(err.msg, "missing ')'"));
    assert_int_equal(kiln_expr_names("foo(a)", names, 2, &err), -1);
    assert_non_null(strstr(err.msg, "unknown function"));
    assert_int_equal(kiln_expr_names("a + b + c", names, 2, &err), -1);
    assert_non_null(strstr(err.msg, "too many names"));
    assert_int_equal(kiln_expr_names("a + b + a", names, 2, &err), 2);

    char longname[80];
    memset(longname, 'x', 64);
    longname[64] = '\0';
    assert_int_equal(kiln_expr_names(longname, names, 2, &err), -1);
    assert_non_null(strstr(err.msg, "longer than 63"));
    longname[63] = '\0';
    assert_int_equal(kiln_expr_names(longname, names, 2, &err), 1);
    assert_string_equal(names[0], longname);
}

/* ---- the parse tree --------------------------------------------------- */

static void test_tree(void **state)
{
    (void)state;
    kiln_expr e;
    kiln_error err = {0};
    const char *src = "-rows + min(2, +c, 1.5) * sizeof(T)";
    assert_int_equal(kiln_expr_parse(src, &e, &err), 0);
    assert_string_equal(e.src, src);
    const kiln_expr_node *root = &e.nodes[e.root], *n;
    assert_int_equal(root->kind, KILN_EXPR_BINARY);
    assert_int_equal(root->op, KILN_EXPR_ADD);
    assert_int_equal(root->at, 6);
    n = &e.nodes[root->a];                        /* -rows */
    assert_int_equal(n->kind, KILN_EXPR_NEG);
    assert_int_equal(e.nodes[n->a].kind, KILN_EXPR_NAME);
    assert_int_equal(e.nodes[n->a].at, 1);
    assert_int_equal(e.nodes[n->a].len, 4);
    n = &e.nodes[root->b];                        /* min(...) * sizeof(T) */
    assert_int_equal(n->op, KILN_EXPR_MUL);
    assert_int_equal(e.nodes[n->b].kind, KILN_EXPR_SIZEOF);
    assert_memory_equal(src + e.nodes[n->b].at, "T)", 2);
    n = &e.nodes[n->a];                           /* min(2, +c, 1.5) */
    assert_int_equal(n->kind, KILN_EXPR_CALL);
    assert_int_equal(n->fn, KILN_EXPR_FN_MIN);
    assert_int_equal(n->argc, 3);
    const kiln_expr_node *a1 = &e.nodes[n->a], *a2 = &e.nodes[a1->next];
    const kiln_expr_node *a3 = &e.nodes[a2->next];
    assert_int_equal(a1->kind, KILN_EXPR_INT);
    assert_int_equal(a1->value.i, 2);
    assert_int_equal(a2->kind, KILN_EXPR_NAME);   /* unary '+' leaves no node */
    assert_int_equal(a3->kind, KILN_EXPR_FLOAT);
    assert_double_eq(a3->value.f, 1.5);
    assert_int_equal(a3->next, -1);
    assert_int_equal(kiln_expr_fail_at(&e, a2->at, &err, "no '%s'", "c"), -1);
    assert_string_equal(err.msg, "no 'c' at column 17 in \"-rows + min(2, +c, 1.5) * sizeof(T)\"");
    kiln_expr_free(&e);

    /* the new nodes: a ? b : c keeps all three, ! and two-character operators */
    src = "rows <= 2 ? !c : gcd(a, b) && d";
    assert_int_equal(kiln_expr_parse(src, &e, &err), 0);
    root = &e.nodes[e.root];
    assert_int_equal(root->kind, KILN_EXPR_COND);
    assert_int_equal(root->at, 10);
    n = &e.nodes[root->a];
    assert_int_equal(n->kind, KILN_EXPR_BINARY);
    assert_int_equal(n->op, KILN_EXPR_LE);
    assert_int_equal(n->at, 5);
    assert_int_equal(n->len, 2);
    assert_string_equal(kiln_expr_op_text(n->op), "<=");
    n = &e.nodes[root->b];
    assert_int_equal(n->kind, KILN_EXPR_NOT);
    assert_int_equal(e.nodes[n->a].kind, KILN_EXPR_NAME);
    n = &e.nodes[root->c];
    assert_int_equal(n->op, KILN_EXPR_AND);
    assert_string_equal(kiln_expr_op_text(n->op), "&&");
    assert_int_equal(e.nodes[n->a].kind, KILN_EXPR_CALL);
    assert_int_equal(e.nodes[n->a].fn, KILN_EXPR_FN_GCD);
    assert_int_equal(e.nodes[n->a].argc, 2);
    assert_int_equal(n->b >= 0, 1);
    kiln_expr_free(&e);
    assert_string_equal(kiln_expr_op_text(KILN_EXPR_NE), "!=");
    assert_string_equal(kiln_expr_op_text(KILN_EXPR_OR), "||");
    assert_string_equal(kiln_expr_op_text(KILN_EXPR_MOD), "%");

    /* a syntax error: the evaluator's message, and the tree frees */
    assert_int_equal(kiln_expr_parse("cdiv(1)", &e, &err), -1);
    assert_non_null(strstr(err.msg, "cdiv() takes exactly 2, got 1"));
    kiln_expr_free(&e);
    assert_int_equal(kiln_expr_parse(NULL, &e, &err), -1);
    kiln_expr_free(&e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_literals),
        cmocka_unit_test(test_precedence),
        cmocka_unit_test(test_associativity),
        cmocka_unit_test(test_unary),
        cmocka_unit_test(test_promotion),
        cmocka_unit_test(test_division),
        cmocka_unit_test(test_min_max),
        cmocka_unit_test(test_cdiv),
        cmocka_unit_test(test_sizeof),
        cmocka_unit_test(test_comparisons),
        cmocka_unit_test(test_logic),
        cmocka_unit_test(test_conditional),
        cmocka_unit_test(test_gcd_lcm),
        cmocka_unit_test(test_error_new_operators),
        cmocka_unit_test(test_lookup_env),
        cmocka_unit_test(test_value_to_double),
        cmocka_unit_test(test_error_unknown_name),
        cmocka_unit_test(test_error_div_zero),
        cmocka_unit_test(test_error_overflow),
        cmocka_unit_test(test_error_float_mod),
        cmocka_unit_test(test_error_syntax),
        cmocka_unit_test(test_error_functions),
        cmocka_unit_test(test_error_limits),
        cmocka_unit_test(test_error_message_quotes_long_source),
        cmocka_unit_test(test_eval_int),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_names_errors),
        cmocka_unit_test(test_tree),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
