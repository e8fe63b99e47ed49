/* expr.c - recursive-descent evaluator for task-file expressions (expr.h).
 *
 * Cost, launch and shape fields in task files are expressions such as
 * `(2*rows*cols + cols) * sizeof(T)`.  This file parses and evaluates them in
 * one pass over the source, with no allocation.  The same parser, in
 * "collect" mode, lists the names an expression uses without evaluating it,
 * so a task can be checked for names that are not dims.
 *
 *   expr    := term (('+' | '-') term)*
 *   term    := unary (('*' | '/' | '%') unary)*
 *   unary   := ('-' | '+') unary | primary
 *   primary := number | name | func '(' args ')' | '(' expr ')'
 *
 * Every error names the problem, the 1-based column and quotes the source. */
#include "expr.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "c_lex.h"

#define QUOTE_MAX 256 /* longest part of the source quoted in a message */
#define SHOW_MAX 64   /* longest part of a name quoted in a message */

typedef struct parser {
    const char *src;
    size_t len;
    size_t pos;
    int depth;
    const kiln_expr_env *env;
    kiln_error *err;
    int collect;       /* 1: record names, skip evaluation */
    char (*names)[64]; /* collect mode: output array */
    int cap, count;
} parser;

typedef enum func_kind { FN_NONE, FN_MIN, FN_MAX, FN_CDIV, FN_SIZEOF } func_kind;

/* ---- values ---------------------------------------------------------- */

static kiln_value int_value(int64_t i)
{
    kiln_value v = {0, i, 0.0};
    return v;
}

static kiln_value float_value(double f)
{
    kiln_value v = {1, 0, f};
    return v;
}

double kiln_value_to_double(kiln_value v)
{
    return v.is_float ? v.f : (double)v.i;
}

/* ---- errors ---------------------------------------------------------- */

static int quote_fail(kiln_error *err, const char *src, size_t len,
                      const char *what)
{
    int shown = len > QUOTE_MAX ? QUOTE_MAX : (int)len;
    return kiln_fail(err, "%s in \"%.*s%s\"", what, shown, src,
                     len > QUOTE_MAX ? "..." : "");
}

__attribute__((format(printf, 3, 4)))
static int fail_at(parser *p, size_t at, const char *fmt, ...)
{
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n < sizeof what)
        snprintf(what + n, sizeof what - (size_t)n, " at column %zu", at + 1);
    return quote_fail(p->err, p->src, p->len, what);
}

static int show_len(size_t len)
{
    return len > SHOW_MAX ? SHOW_MAX : (int)len;
}

/* ---- lexing helpers -------------------------------------------------- */

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}


static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Skip whitespace; return the next character, or 0 at the end. */
static char peek(parser *p)
{
    while (p->pos < p->len && is_space(p->src[p->pos]))
        p->pos++;
    return p->pos < p->len ? p->src[p->pos] : 0;
}

static int accept(parser *p, char c)
{
    if (peek(p) != c)
        return 0;
    p->pos++;
    return 1;
}

static size_t scan_ident(parser *p)
{
    size_t start = p->pos;
    while (p->pos < p->len && kiln_is_ident_char(p->src[p->pos]))
        p->pos++;
    return p->pos - start;
}

static int unexpected(parser *p, const char *context)
{
    char c = peek(p);
    if (c == 0)
        return fail_at(p, p->pos, "unexpected end of expression, %s", context);
    if (c > ' ' && c < 127)
        return fail_at(p, p->pos, "unexpected character '%c', %s", c,
                       context);
    return fail_at(p, p->pos, "unexpected character '\\x%02x', %s",
                   (unsigned)(unsigned char)c, context);
}

static int expect_close(parser *p, size_t open_at)
{
    if (accept(p, ')'))
        return 0;
    if (peek(p) == 0) {
        char what[128];
        snprintf(what, sizeof what,
                 "missing ')' at column %zu (to close '(' at column %zu)",
                 p->pos + 1, open_at + 1);
        return quote_fail(p->err, p->src, p->len, what);
    }
    return unexpected(p, "expected ')'");
}

/* ---- arithmetic ------------------------------------------------------ */

static int int_div(parser *p, char op, size_t at, int64_t a, int64_t b,
                   int64_t *r)
{
    if (b == 0)
        return fail_at(p, at, "%s by zero",
                       op == '%' ? "modulo" : "division");
    if (a == INT64_MIN && b == -1) {
        if (op == '%') {
            *r = 0;
            return 0;
        }
        return fail_at(p, at, "integer overflow in '%c'", op);
    }
    *r = op == '%' ? a % b : a / b;
    return 0;
}

static int apply_int(parser *p, char op, size_t at, int64_t a, int64_t b,
                     kiln_value *out)
{
    int64_t r = 0;
    int overflow = 0;
    switch (op) {
    case '+': overflow = __builtin_add_overflow(a, b, &r); break;
    case '-': overflow = __builtin_sub_overflow(a, b, &r); break;
    case '*': overflow = __builtin_mul_overflow(a, b, &r); break;
    default:
        if (int_div(p, op, at, a, b, &r))
            return -1;
    }
    if (overflow)
        return fail_at(p, at, "integer overflow in '%c'", op);
    *out = int_value(r);
    return 0;
}

static int check_float(parser *p, size_t at, double r, kiln_value *out)
{
    if (!isfinite(r))
        return fail_at(p, at, "floating-point overflow (result %g)", r);
    *out = float_value(r);
    return 0;
}

static int apply_float(parser *p, char op, size_t at, double a, double b,
                       kiln_value *out)
{
    switch (op) {
    case '+': return check_float(p, at, a + b, out);
    case '-': return check_float(p, at, a - b, out);
    case '*': return check_float(p, at, a * b, out);
    default:
        if (b == 0.0)
            return fail_at(p, at, "division by zero");
        return check_float(p, at, a / b, out);
    }
}

static int apply_binary(parser *p, char op, size_t at, kiln_value a,
                        kiln_value b, kiln_value *out)
{
    if (p->collect) {
        *out = int_value(0);
        return 0;
    }
    if (!a.is_float && !b.is_float)
        return apply_int(p, op, at, a.i, b.i, out);
    if (op == '%')
        return fail_at(p, at, "'%%' needs integer operands, got a float");
    return apply_float(p, op, at, kiln_value_to_double(a),
                       kiln_value_to_double(b), out);
}

static int negate(parser *p, size_t at, kiln_value v, kiln_value *out)
{
    if (p->collect) {
        *out = int_value(0);
        return 0;
    }
    if (v.is_float) {
        *out = float_value(-v.f);
        return 0;
    }
    int64_t r;
    if (__builtin_sub_overflow((int64_t)0, v.i, &r))
        return fail_at(p, at, "integer overflow in unary '-'");
    *out = int_value(r);
    return 0;
}

/* ---- functions ------------------------------------------------------- */

static func_kind func_lookup(const char *name, size_t len)
{
    static const struct { const char *name; func_kind kind; } table[] = {
        {"min", FN_MIN}, {"max", FN_MAX}, {"cdiv", FN_CDIV},
        {"sizeof", FN_SIZEOF},
    };
    for (size_t k = 0; k < sizeof table / sizeof table[0]; k++)
        if (strlen(table[k].name) == len && !memcmp(table[k].name, name, len))
            return table[k].kind;
    return FN_NONE;
}

static void min_max(func_kind fn, kiln_value a, kiln_value b, kiln_value *out)
{
    if (!a.is_float && !b.is_float) {
        int take_b = fn == FN_MIN ? b.i < a.i : b.i > a.i;
        *out = take_b ? b : a;
        return;
    }
    double x = kiln_value_to_double(a), y = kiln_value_to_double(b);
    *out = float_value(fn == FN_MIN ? fmin(x, y) : fmax(x, y));
}

static int cdiv(parser *p, size_t at, kiln_value a, kiln_value b,
                kiln_value *out)
{
    if (a.is_float || b.is_float) {
        double y = kiln_value_to_double(b);
        if (y == 0.0)
            return fail_at(p, at, "division by zero in cdiv()");
        return check_float(p, at, ceil(kiln_value_to_double(a) / y), out);
    }
    if (b.i == 0)
        return fail_at(p, at, "division by zero in cdiv()");
    if (a.i == INT64_MIN && b.i == -1)
        return fail_at(p, at, "integer overflow in cdiv()");
    int64_t q = a.i / b.i, r = a.i % b.i;
    if (r != 0 && (r > 0) == (b.i > 0))
        q++; /* cannot overflow: |q| < |a| here */
    *out = int_value(q);
    return 0;
}

static int parse_expr(parser *p, kiln_value *out);

static int parse_sizeof(parser *p, kiln_value *out)
{
    size_t open_at = p->pos - 1;
    if (!kiln_is_ident_start(peek(p)))
        return unexpected(p, "expected a type name in sizeof()");
    size_t type_at = p->pos, len = scan_ident(p);
    if (expect_close(p, open_at))
        return -1;
    int64_t bytes = 0;
    if (p->collect) {
        *out = int_value(0);
        return 0;
    }
    const kiln_expr_env *env = p->env;
    if (!env || !env->size_of ||
        env->size_of(env->ctx, p->src + type_at, len, &bytes) != 0)
        return fail_at(p, type_at, "unknown type '%.*s' in sizeof()",
                       show_len(len), p->src + type_at);
    *out = int_value(bytes);
    return 0;
}

/* Parse the comma-separated arguments after '(' and fold them with fn. */
static int parse_args(parser *p, func_kind fn, kiln_value *out, int *argc,
                      kiln_value *first)
{
    size_t open_at = p->pos - 1;
    *argc = 0;
    if (peek(p) == ')') {
        p->pos++;
        return 0;
    }
    do {
        kiln_value v;
        if (parse_expr(p, &v))
            return -1;
        if (*argc == 0)
            *first = *out = v;
        else if (fn == FN_CDIV)
            *out = v; /* first holds a, out holds the last argument */
        else
            min_max(fn, *out, v, out);
        ++*argc;
    } while (accept(p, ','));
    return expect_close(p, open_at);
}

static int arg_count_error(parser *p, size_t at, func_kind fn,
                           const char *name, int argc)
{
    const char *want = fn == FN_CDIV ? "exactly 2" : "2 or more";
    return fail_at(p, at, "wrong number of arguments: %s() takes %s, got %d",
                   name, want, argc);
}

static int parse_call(parser *p, func_kind fn, const char *name, size_t at,
                      kiln_value *out)
{
    if (fn == FN_SIZEOF)
        return parse_sizeof(p, out);
    kiln_value first = int_value(0), last = int_value(0);
    int argc;
    if (parse_args(p, fn, &last, &argc, &first))
        return -1;
    if (argc < 2 || (fn == FN_CDIV && argc != 2))
        return arg_count_error(p, at, fn, name, argc);
    if (p->collect) {
        *out = int_value(0);
        return 0;
    }
    if (fn == FN_CDIV)
        return cdiv(p, at, first, last, out);
    *out = last;
    return 0;
}

/* ---- names ----------------------------------------------------------- */

static int record_name(parser *p, size_t at, size_t len)
{
    const char *name = p->src + at;
    if (len > KILN_EXPR_NAME_MAX)
        return fail_at(p, at, "name '%.*s...' longer than %d characters",
                       show_len(len), name, KILN_EXPR_NAME_MAX);
    for (int k = 0; k < p->count; k++)
        if (strlen(p->names[k]) == len && !memcmp(p->names[k], name, len))
            return 0;
    if (p->count >= p->cap)
        return fail_at(p, at, "too many names (more than %d)", p->cap);
    memcpy(p->names[p->count], name, len);
    p->names[p->count][len] = '\0';
    p->count++;
    return 0;
}

static int lookup_name(parser *p, size_t at, size_t len, kiln_value *out)
{
    if (p->collect) {
        *out = int_value(0);
        return record_name(p, at, len);
    }
    const kiln_expr_env *env = p->env;
    if (env && env->lookup &&
        env->lookup(env->ctx, p->src + at, len, out) == 0)
        return 0;
    return fail_at(p, at, "unknown name '%.*s'", show_len(len), p->src + at);
}

/* A name, or a function call when followed by '('. */
static int parse_ident(parser *p, kiln_value *out)
{
    size_t at = p->pos, len = scan_ident(p);
    const char *name = p->src + at;
    func_kind fn = func_lookup(name, len);
    int call = accept(p, '(');
    if (!call && fn == FN_NONE)
        return lookup_name(p, at, len, out);
    if (!call)
        return fail_at(p, p->pos, "expected '(' after function '%.*s'",
                       (int)len, name);
    if (fn == FN_NONE)
        return fail_at(p, at, "unknown function '%.*s'", show_len(len), name);
    char fname[8];
    snprintf(fname, sizeof fname, "%.*s", (int)len, name);
    return parse_call(p, fn, fname, at, out);
}

/* ---- numbers --------------------------------------------------------- */

static size_t skip_digits(parser *p, size_t i)
{
    while (i < p->len && is_digit(p->src[i]))
        i++;
    return i;
}

static int int_literal(parser *p, size_t start, size_t end, kiln_value *out)
{
    int64_t v = 0;
    for (size_t i = start; i < end; i++) {
        if (__builtin_mul_overflow(v, (int64_t)10, &v) ||
            __builtin_add_overflow(v, (int64_t)(p->src[i] - '0'), &v))
            return fail_at(p, start, "integer literal '%.*s' out of range",
                           show_len(end - start), p->src + start);
    }
    *out = int_value(v);
    return 0;
}

static int float_literal(parser *p, size_t start, size_t end, kiln_value *out)
{
    char buf[KILN_EXPR_MAX_LEN + 1];
    size_t n = end - start;
    memcpy(buf, p->src + start, n);
    buf[n] = '\0';
    double f = strtod(buf, NULL);
    if (!isfinite(f))
        return fail_at(p, start, "float literal '%.*s' out of range",
                       show_len(n), buf);
    *out = float_value(f);
    return 0;
}

static int parse_number(parser *p, kiln_value *out)
{
    size_t start = p->pos, i = skip_digits(p, start);
    int is_float = 0;
    if (i < p->len && p->src[i] == '.') {
        is_float = 1;
        i = skip_digits(p, i + 1);
    }
    if (i < p->len && (p->src[i] == 'e' || p->src[i] == 'E')) {
        is_float = 1;
        i++;
        if (i < p->len && (p->src[i] == '+' || p->src[i] == '-'))
            i++;
        if (i >= p->len || !is_digit(p->src[i]))
            return fail_at(p, i, "malformed exponent in number");
        i = skip_digits(p, i);
    }
    p->pos = i;
    return is_float ? float_literal(p, start, i, out)
                    : int_literal(p, start, i, out);
}

/* ---- grammar --------------------------------------------------------- */

static int descend(parser *p, size_t at)
{
    if (p->depth >= KILN_EXPR_MAX_DEPTH)
        return fail_at(p, at, "expression nested deeper than %d levels",
                       KILN_EXPR_MAX_DEPTH);
    p->depth++;
    return 0;
}

static int parse_paren(parser *p, kiln_value *out)
{
    size_t open_at = p->pos++;
    if (descend(p, open_at) || parse_expr(p, out) || expect_close(p, open_at))
        return -1;
    p->depth--;
    return 0;
}

static int parse_primary(parser *p, kiln_value *out)
{
    char c = peek(p);
    char next = p->pos + 1 < p->len ? p->src[p->pos + 1] : 0;
    if (is_digit(c) || (c == '.' && is_digit(next)))
        return parse_number(p, out);
    if (kiln_is_ident_start(c)) {
        size_t at = p->pos;
        if (descend(p, at))
            return -1;
        int rc = parse_ident(p, out);
        p->depth--;
        return rc;
    }
    if (c == '(')
        return parse_paren(p, out);
    return unexpected(p, "expected a number, name or '('");
}

static int parse_unary(parser *p, kiln_value *out)
{
    char c = peek(p);
    if (c != '-' && c != '+')
        return parse_primary(p, out);
    size_t at = p->pos++;
    kiln_value v;
    if (descend(p, at) || parse_unary(p, &v))
        return -1;
    p->depth--;
    if (c == '+') {
        *out = v;
        return 0;
    }
    return negate(p, at, v, out);
}

static int parse_term(parser *p, kiln_value *out)
{
    if (parse_unary(p, out))
        return -1;
    for (;;) {
        char op = peek(p);
        if (op != '*' && op != '/' && op != '%')
            return 0;
        size_t at = p->pos++;
        kiln_value rhs;
        if (parse_unary(p, &rhs) || apply_binary(p, op, at, *out, rhs, out))
            return -1;
    }
}

static int parse_expr(parser *p, kiln_value *out)
{
    if (parse_term(p, out))
        return -1;
    for (;;) {
        char op = peek(p);
        if (op != '+' && op != '-')
            return 0;
        size_t at = p->pos++;
        kiln_value rhs;
        if (parse_term(p, &rhs) || apply_binary(p, op, at, *out, rhs, out))
            return -1;
    }
}

/* ---- entry points ---------------------------------------------------- */

/* Length of src, or KILN_EXPR_MAX_LEN + 1 when it is longer than allowed. */
static size_t bounded_len(const char *src)
{
    size_t n = 0;
    while (n <= KILN_EXPR_MAX_LEN && src[n])
        n++;
    return n;
}

static int parse_all(parser *p, const char *src, kiln_value *out)
{
    if (!src)
        return kiln_fail(p->err, "empty expression (NULL)");
    p->src = src;
    p->len = bounded_len(src);
    if (p->len > KILN_EXPR_MAX_LEN)
        return quote_fail(p->err, src, p->len,
                          "expression longer than 1024 characters");
    if (peek(p) == 0)
        return fail_at(p, 0, "empty expression");
    if (parse_expr(p, out))
        return -1;
    char c = peek(p);
    if (c == 0)
        return 0;
    if (c > ' ' && c < 127)
        return fail_at(p, p->pos, "unexpected trailing input '%c'", c);
    return fail_at(p, p->pos, "unexpected trailing input '\\x%02x'",
                   (unsigned)(unsigned char)c);
}

int kiln_expr_eval(const char *src, const kiln_expr_env *env, kiln_value *out,
                   kiln_error *err)
{
    parser p = {0};
    p.env = env;
    p.err = err;
    kiln_value v;
    if (parse_all(&p, src, &v))
        return -1;
    if (out)
        *out = v;
    return 0;
}

static int check_int(const char *src, kiln_value v, int64_t *out,
                     kiln_error *err)
{
    size_t len = bounded_len(src);
    char what[128];
    if (!v.is_float) {
        *out = v.i;
        if (v.i >= 0)
            return 0;
        snprintf(what, sizeof what, "value %lld is negative", (long long)v.i);
    } else if (!isfinite(v.f) || v.f != floor(v.f)) {
        snprintf(what, sizeof what, "value %.17g is not an integer", v.f);
    } else if (v.f < 0) {
        snprintf(what, sizeof what, "value %.17g is negative", v.f);
    } else if (v.f >= 9223372036854775808.0) {
        snprintf(what, sizeof what, "value %.17g does not fit in int64", v.f);
    } else {
        *out = (int64_t)v.f;
        return 0;
    }
    return quote_fail(err, src, len, what);
}

int kiln_expr_eval_int(const char *src, const kiln_expr_env *env, int64_t *out,
                       kiln_error *err)
{
    kiln_value v;
    int64_t r = 0;
    if (kiln_expr_eval(src, env, &v, err) || check_int(src, v, &r, err))
        return -1;
    if (out)
        *out = r;
    return 0;
}

int kiln_expr_names(const char *src, char names[][64], int cap,
                    kiln_error *err)
{
    parser p = {0};
    p.err = err;
    p.collect = 1;
    p.names = names;
    p.cap = cap < 0 ? 0 : cap;
    kiln_value v;
    if (parse_all(&p, src, &v))
        return -1;
    return p.count;
}
