/* expr_c.c - print kiln's expressions as C (expr_c.h).
 *
 * The grammar is verifier/expr.c's, parsed the same way (recursive descent,
 * C precedence, left associative):
 *
 *   expr    := term (('+' | '-') term)*
 *   term    := unary (('*' | '/' | '%') unary)*
 *   unary   := ('-' | '+') unary | primary
 *   primary := integer | name | func '(' args ')' | '(' expr ')'
 *
 * Each rule returns its C text in a malloc'd string; an operator wraps its
 * operands in a call of the matching checked helper, so no C precedence or
 * integer-promotion question arises in the output. */
#include "expr_c.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "c_lex.h"

#define MAX_DEPTH 64      /* as KILN_EXPR_MAX_DEPTH */
#define MAX_SRC 1024      /* as KILN_EXPR_MAX_LEN */
#define QUOTE_MAX 200

const char kiln_expr_c_helpers[] =
    "#ifndef KILN_EXPR_C_HELPERS\n"
    "#define KILN_EXPR_C_HELPERS\n"
    "/* kiln's expression arithmetic in int64: where kiln's evaluator fails\n"
    " * (overflow, division by zero) these set *bad and return 0. */\n"
    "static inline int64_t kiln_x_add(int64_t a, int64_t b, int *bad)\n"
    "{\n"
    "    if ((b > 0 && a > INT64_MAX - b) || (b < 0 && a < INT64_MIN - b)) {\n"
    "        *bad = 1;\n"
    "        return 0;\n"
    "    }\n"
    "    return a + b;\n"
    "}\n"
    "static inline int64_t kiln_x_sub(int64_t a, int64_t b, int *bad)\n"
    "{\n"
    "    if ((b < 0 && a > INT64_MAX + b) || (b > 0 && a < INT64_MIN + b)) {\n"
    "        *bad = 1;\n"
    "        return 0;\n"
    "    }\n"
    "    return a - b;\n"
    "}\n"
    "static inline int64_t kiln_x_mul(int64_t a, int64_t b, int *bad)\n"
    "{\n"
    "    if (a > 0 ? (b > 0 ? a > INT64_MAX / b : b < INT64_MIN / a)\n"
    "              : (b > 0 ? a < INT64_MIN / b : (a != 0 && b < INT64_MAX / a))) {\n"
    "        *bad = 1;\n"
    "        return 0;\n"
    "    }\n"
    "    return a * b;\n"
    "}\n"
    "static inline int64_t kiln_x_div(int64_t a, int64_t b, int *bad)\n"
    "{\n"
    "    if (b == 0 || (a == INT64_MIN && b == -1)) {\n"
    "        *bad = 1;\n"
    "        return 0;\n"
    "    }\n"
    "    return a / b;\n"
    "}\n"
    "static inline int64_t kiln_x_mod(int64_t a, int64_t b, int *bad)\n"
    "{\n"
    "    if (b == 0) {\n"
    "        *bad = 1;\n"
    "        return 0;\n"
    "    }\n"
    "    return b == -1 ? 0 : a % b;\n"
    "}\n"
    "static inline int64_t kiln_x_cdiv(int64_t a, int64_t b, int *bad)\n"
    "{\n"
    "    int64_t q = kiln_x_div(a, b, bad), r = b == 0 || b == -1 ? 0 : a % b;\n"
    "    return r != 0 && (r > 0) == (b > 0) ? q + 1 : q;\n"
    "}\n"
    "static inline int64_t kiln_x_min(int64_t a, int64_t b)\n"
    "{\n"
    "    return b < a ? b : a;\n"
    "}\n"
    "static inline int64_t kiln_x_max(int64_t a, int64_t b)\n"
    "{\n"
    "    return b > a ? b : a;\n"
    "}\n"
    "#endif\n";

typedef struct tr {
    const char *src;
    size_t len, pos;
    int depth;
    const kiln_expr_c_env *env;
    kiln_error *err;
} tr;

/* ---- strings and errors ------------------------------------------------ */

__attribute__((format(printf, 1, 2)))
static char *cat(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (!s)
        return NULL;
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return s;
}

/* Fill the error (what, column, the source quoted) and return NULL. */
__attribute__((format(printf, 3, 4)))
static char *fail_at(tr *t, size_t at, const char *fmt, ...)
{
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    int shown = t->len > QUOTE_MAX ? QUOTE_MAX : (int)t->len;
    kiln_fail(t->err, "%s at column %zu in \"%.*s%s\"", what, at + 1, shown, t->src,
              t->len > QUOTE_MAX ? "..." : "");
    return NULL;
}

static char *oom(tr *t)
{
    kiln_fail(t->err, "out of memory");
    return NULL;
}

/* ---- lexing -------------------------------------------------------------- */

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}


static char peek(tr *t)
{
    while (t->pos < t->len && (t->src[t->pos] == ' ' || t->src[t->pos] == '\t' ||
                               t->src[t->pos] == '\n' || t->src[t->pos] == '\r'))
        t->pos++;
    return t->pos < t->len ? t->src[t->pos] : 0;
}

static int accept(tr *t, char c)
{
    if (peek(t) != c)
        return 0;
    t->pos++;
    return 1;
}

static char *unexpected(tr *t, const char *context)
{
    char c = peek(t);
    if (c == 0)
        return fail_at(t, t->pos, "unexpected end of expression, %s", context);
    if (c > ' ' && c < 127)
        return fail_at(t, t->pos, "unexpected character '%c', %s", c, context);
    return fail_at(t, t->pos, "unexpected character '\\x%02x', %s", (unsigned)(unsigned char)c,
                   context);
}

static int expect_close(tr *t)
{
    if (accept(t, ')'))
        return 0;
    unexpected(t, "expected ')'");
    return -1;
}

/* ---- the grammar --------------------------------------------------------- */

static char *t_expr(tr *t);

/* "helper(a, b[, flag])", freeing a and b. */
static char *call2(tr *t, const char *helper, char *a, char *b, int flagged)
{
    char *s = NULL;
    if (a && b)
        s = flagged ? cat("%s(%s, %s, %s)", helper, a, b, t->env->flag)
                    : cat("%s(%s, %s)", helper, a, b);
    free(a);
    free(b);
    return s ? s : oom(t);
}

static char *t_number(tr *t)
{
    size_t at = t->pos, i = at;
    while (i < t->len && is_digit(t->src[i]))
        i++;
    if (i < t->len && (t->src[i] == '.' || t->src[i] == 'e' || t->src[i] == 'E'))
        return fail_at(t, at, "a float literal cannot be translated (the dispatch computes in "
                       "int64)");
    int64_t v = 0;
    for (size_t k = at; k < i; k++)
        if (__builtin_mul_overflow(v, (int64_t)10, &v) ||
            __builtin_add_overflow(v, (int64_t)(t->src[k] - '0'), &v))
            return fail_at(t, at, "integer literal out of range");
    t->pos = i;
    /* printed as parsed: a leading 0 would make C read octal */
    char *s = v > INT32_MAX ? cat("%lldLL", (long long)v) : cat("%lld", (long long)v);
    return s ? s : oom(t);
}

static char *t_sizeof(tr *t)
{
    if (!kiln_is_ident_start(peek(t)))
        return unexpected(t, "expected a type name in sizeof()");
    size_t at = t->pos;
    while (t->pos < t->len && kiln_is_ident_char(t->src[t->pos]))
        t->pos++;
    size_t n = t->pos - at;
    if (expect_close(t) < 0)
        return NULL;
    char buf[256];
    if (!t->env->size_of || t->env->size_of(t->env->ctx, t->src + at, n, buf, sizeof buf) < 0)
        return fail_at(t, at, "unknown type '%.*s' in sizeof()", (int)(n > 40 ? 40 : n),
                       t->src + at);
    char *s = cat("%s", buf);
    return s ? s : oom(t);
}

/* min/max fold left over 2 or more arguments; cdiv takes exactly 2. */
static char *t_call(tr *t, const char *fn, size_t at)
{
    char *acc = NULL;
    int argc = 0;
    if (peek(t) != ')') {
        do {
            char *a = t_expr(t);
            if (!a) {
                free(acc);
                return NULL;
            }
            argc++;
            if (argc == 1)
                acc = a;
            else if (strcmp(fn, "cdiv") == 0)
                acc = argc == 2 ? call2(t, "kiln_x_cdiv", acc, a, 1) : (free(a), acc);
            else
                acc = call2(t, strcmp(fn, "min") == 0 ? "kiln_x_min" : "kiln_x_max", acc, a, 0);
            if (!acc)
                return NULL;
        } while (accept(t, ','));
    }
    if (expect_close(t) < 0) {
        free(acc);
        return NULL;
    }
    int cdiv = strcmp(fn, "cdiv") == 0;
    if (argc < 2 || (cdiv && argc != 2)) {
        free(acc);
        return fail_at(t, at, "wrong number of arguments: %s() takes %s, got %d", fn,
                       cdiv ? "exactly 2" : "2 or more", argc);
    }
    return acc;
}

static char *t_ident(tr *t)
{
    size_t at = t->pos;
    while (t->pos < t->len && kiln_is_ident_char(t->src[t->pos]))
        t->pos++;
    size_t n = t->pos - at;
    const char *name = t->src + at;
    char fn[8] = "";
    if (n < sizeof fn)
        snprintf(fn, sizeof fn, "%.*s", (int)n, name);
    int known = !strcmp(fn, "min") || !strcmp(fn, "max") || !strcmp(fn, "cdiv") ||
                !strcmp(fn, "sizeof");
    if (accept(t, '(')) {
        if (!known)
            return fail_at(t, at, "unknown function '%.*s'", (int)(n > 40 ? 40 : n), name);
        return strcmp(fn, "sizeof") == 0 ? t_sizeof(t) : t_call(t, fn, at);
    }
    if (known)
        return fail_at(t, t->pos, "expected '(' after function '%s'", fn);
    char buf[256];
    if (!t->env->name || t->env->name(t->env->ctx, name, n, buf, sizeof buf) < 0)
        return fail_at(t, at, "unknown name '%.*s'", (int)(n > 40 ? 40 : n), name);
    char *s = cat("%s", buf);
    return s ? s : oom(t);
}

static char *t_primary(tr *t)
{
    char c = peek(t);
    if (is_digit(c) || c == '.')
        return c == '.' ? fail_at(t, t->pos, "a float literal cannot be translated (the "
                                  "dispatch computes in int64)")
                        : t_number(t);
    if (kiln_is_ident_start(c))
        return t_ident(t);
    if (c != '(')
        return unexpected(t, "expected a number, name or '('");
    t->pos++;
    char *s = t_expr(t);
    if (s && expect_close(t) < 0) {
        free(s);
        return NULL;
    }
    return s;
}

static char *t_unary(tr *t)
{
    char c = peek(t);
    if (t->depth >= MAX_DEPTH)
        return fail_at(t, t->pos, "expression nested deeper than %d levels", MAX_DEPTH);
    t->depth++;
    char *s;
    if (c == '-' || c == '+') {
        t->pos++;
        s = t_unary(t);
        if (s && c == '-') {
            char *zero = cat("0");
            s = zero ? call2(t, "kiln_x_sub", zero, s, 1) : (free(s), oom(t));
        }
    } else {
        s = t_primary(t);
    }
    t->depth--;
    return s;
}

static const char *helper_of(char op)
{
    switch (op) {
    case '+': return "kiln_x_add";
    case '-': return "kiln_x_sub";
    case '*': return "kiln_x_mul";
    case '/': return "kiln_x_div";
    default: return "kiln_x_mod";
    }
}

/* One level of left-associative binary operators (ops), over next. */
static char *binary(tr *t, const char *ops, char *(*next)(tr *))
{
    char *acc = next(t);
    while (acc) {
        char op = peek(t);
        if (!op || !strchr(ops, op))
            return acc;
        t->pos++;
        char *rhs = next(t);
        if (!rhs) {
            free(acc);
            return NULL;
        }
        acc = call2(t, helper_of(op), acc, rhs, 1);
    }
    return NULL;
}

static char *t_term(tr *t)
{
    return binary(t, "*/%", t_unary);
}

static char *t_expr(tr *t)
{
    return binary(t, "+-", t_term);
}

int kiln_expr_to_c(const char *src, const kiln_expr_c_env *env, char *out, size_t len,
                   kiln_error *err)
{
    if (!src || !env || !env->flag)
        return kiln_fail(err, "kiln_expr_to_c: no expression or environment");
    size_t n = 0;
    while (n <= MAX_SRC && src[n])
        n++;
    tr t = {src, n, 0, 0, env, err};
    if (t.len > MAX_SRC)
        return kiln_fail(err, "expression longer than %d characters", MAX_SRC);
    if (peek(&t) == 0)
        return kiln_fail(err, "empty expression");
    char *s = t_expr(&t);
    if (!s)
        return -1;
    int rc = 0;
    if (peek(&t) != 0)
        rc = (unexpected(&t, "expected an operator or the end"), -1);
    else if (strlen(s) >= len)
        rc = kiln_fail(err, "the C translation of \"%.200s\" is longer than %zu bytes", src, len - 1);
    else
        memcpy(out, s, strlen(s) + 1);
    free(s);
    return rc;
}
