/* expr_c.c - print kiln's expressions as C (expr_c.h).
 *
 * There is no grammar here: common/expr.c parses the expression into its
 * tree (kiln_expr_parse), the one the evaluator walks, and this file walks
 * the same tree. Each node returns its C text in a malloc'd string; an
 * arithmetic operator or function wraps its operands in a call of the
 * matching checked helper, so no C precedence or integer-promotion question
 * arises in the output. Comparisons, !, &&, || and ?: stay C's own
 * operators, every operand parenthesized, because && || ?: must not
 * evaluate the operand kiln's evaluator skips (a helper call would: a
 * function's arguments are all evaluated) and a comparison cannot fail.
 * Logic compares with 0 explicitly (`(a) != 0 && (b) != 0`), which keeps
 * gcc's -Wint-in-bool-context quiet when an operand is itself a ?: of
 * constants. Errors are the parser's, or name what has no C form at the
 * node's column (kiln_expr_fail_at, as the evaluator reports). */
#include "expr_c.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "expr.h"

#define SHOW 64   /* longest name or type quoted in a message */

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
    "/* gcd and lcm of the magnitudes: gcd(a, 0) = |a|, lcm(a, 0) = 0; a result\n"
    " * of 2^63 or more (gcd(INT64_MIN, 0)) is an overflow. */\n"
    "static inline uint64_t kiln_x_mag(int64_t a)\n"
    "{\n"
    "    return a < 0 ? (uint64_t)0 - (uint64_t)a : (uint64_t)a;\n"
    "}\n"
    "static inline uint64_t kiln_x_ugcd(uint64_t a, uint64_t b)\n"
    "{\n"
    "    while (b != 0) {\n"
    "        uint64_t t = a % b;\n"
    "        a = b;\n"
    "        b = t;\n"
    "    }\n"
    "    return a;\n"
    "}\n"
    "static inline int64_t kiln_x_gcd(int64_t a, int64_t b, int *bad)\n"
    "{\n"
    "    uint64_t g = kiln_x_ugcd(kiln_x_mag(a), kiln_x_mag(b));\n"
    "    if (g > (uint64_t)INT64_MAX) {\n"
    "        *bad = 1;\n"
    "        return 0;\n"
    "    }\n"
    "    return (int64_t)g;\n"
    "}\n"
    "static inline int64_t kiln_x_lcm(int64_t a, int64_t b, int *bad)\n"
    "{\n"
    "    uint64_t x = kiln_x_mag(a), y = kiln_x_mag(b), g = kiln_x_ugcd(x, y);\n"
    "    if (x == 0 || y == 0)\n"
    "        return 0;\n"
    "    if (x / g > (uint64_t)INT64_MAX / y) {\n"
    "        *bad = 1;\n"
    "        return 0;\n"
    "    }\n"
    "    return (int64_t)(x / g * y);\n"
    "}\n"
    "#endif\n";

typedef struct tr {
    const kiln_expr *e;
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

static char *oom(tr *t)
{
    kiln_fail(t->err, "out of memory");
    return NULL;
}

static int show(size_t len)
{
    return len > SHOW ? SHOW : (int)len;
}

/* ---- the walk ------------------------------------------------------------ */

static char *t_node(tr *t, int k);

/* "helper(a, b[, flag])", freeing a and b; NULL when either is (the walk
 * that made it NULL has said why). */
static char *call2(tr *t, const char *helper, char *a, char *b, int flagged)
{
    char *s = NULL;
    if (a && b)
        s = flagged ? cat("%s(%s, %s, %s)", helper, a, b, t->env->flag)
                    : cat("%s(%s, %s)", helper, a, b);
    int failed = a && b && !s;
    free(a);
    free(b);
    return failed ? oom(t) : s;
}

/* A name or sizeof(TYPE) as the environment prints it. */
static char *t_leaf(tr *t, const kiln_expr_node *nd)
{
    char buf[256];
    const char *text = t->e->src + nd->at;
    const kiln_expr_c_env *env = t->env;
    if (nd->kind == KILN_EXPR_NAME &&
        (!env->name || env->name(env->ctx, text, nd->len, buf, sizeof buf) < 0))
        return kiln_expr_fail_at(t->e, nd->at, t->err, "unknown name '%.*s'", show(nd->len),
                                 text), NULL;
    if (nd->kind == KILN_EXPR_SIZEOF &&
        (!env->size_of || env->size_of(env->ctx, text, nd->len, buf, sizeof buf) < 0))
        return kiln_expr_fail_at(t->e, nd->at, t->err, "unknown type '%.*s' in sizeof()",
                                 show(nd->len), text), NULL;
    char *s = cat("%s", buf);
    return s ? s : oom(t);
}

static char *t_number(tr *t, const kiln_expr_node *nd)
{
    if (nd->kind == KILN_EXPR_FLOAT)
        return kiln_expr_fail_at(t->e, nd->at, t->err, "a float literal cannot be translated "
                                 "(the dispatch computes in int64)"), NULL;
    /* printed as parsed: a leading 0 would make C read octal */
    long long v = (long long)nd->value.i;
    char *s = v > INT32_MAX ? cat("%lldLL", v) : cat("%lld", v);
    return s ? s : oom(t);
}

/* min/max fold left over their arguments; the others take their two and
 * can fail (the flag). */
static char *t_call(tr *t, const kiln_expr_node *nd)
{
    static const char *const helper[] = {
        [KILN_EXPR_FN_MIN] = "kiln_x_min", [KILN_EXPR_FN_MAX] = "kiln_x_max",
        [KILN_EXPR_FN_CDIV] = "kiln_x_cdiv", [KILN_EXPR_FN_GCD] = "kiln_x_gcd",
        [KILN_EXPR_FN_LCM] = "kiln_x_lcm",
    };
    int flagged = nd->fn != KILN_EXPR_FN_MIN && nd->fn != KILN_EXPR_FN_MAX;
    char *acc = t_node(t, nd->a);
    for (int arg = t->e->nodes[nd->a].next; acc && arg >= 0; arg = t->e->nodes[arg].next)
        acc = call2(t, helper[nd->fn], acc, t_node(t, arg), flagged);
    return acc;
}

static const char *helper_of(kiln_expr_op op)
{
    switch (op) {
    case KILN_EXPR_ADD: return "kiln_x_add";
    case KILN_EXPR_SUB: return "kiln_x_sub";
    case KILN_EXPR_MUL: return "kiln_x_mul";
    case KILN_EXPR_DIV: return "kiln_x_div";
    case KILN_EXPR_MOD: return "kiln_x_mod";
    default: return NULL;   /* C's own operator */
    }
}

/* "((a) OP (b))" for a comparison, "((a) != 0 OP (b) != 0)" for && and ||;
 * frees a and b. */
static char *t_operator(tr *t, kiln_expr_op op, char *a, char *b)
{
    char *s = NULL;
    const char *text = kiln_expr_op_text(op);
    if (a && b)
        s = op == KILN_EXPR_AND || op == KILN_EXPR_OR
                ? cat("((%s) != 0 %s (%s) != 0)", a, text, b)
                : cat("((%s) %s (%s))", a, text, b);
    int failed = a && b && !s;
    free(a);
    free(b);
    return failed ? oom(t) : s;
}

static char *t_binary(tr *t, const kiln_expr_node *nd)
{
    char *a = t_node(t, nd->a);
    if (!a)
        return NULL;
    const char *helper = helper_of(nd->op);
    if (helper)
        return call2(t, helper, a, t_node(t, nd->b), 1);
    return t_operator(t, nd->op, a, t_node(t, nd->b));
}

/* "((c) != 0 ? (a) : (b))": C's ?: evaluates only the operand it picks, as
 * kiln's evaluator does. */
static char *t_cond(tr *t, const kiln_expr_node *nd)
{
    char *c = t_node(t, nd->a);
    char *a = c ? t_node(t, nd->b) : NULL;
    char *b = a ? t_node(t, nd->c) : NULL;
    char *s = b ? cat("((%s) != 0 ? (%s) : (%s))", c, a, b) : NULL;
    int failed = b && !s;
    free(c);
    free(a);
    free(b);
    return failed ? oom(t) : s;
}

static char *t_not(tr *t, const kiln_expr_node *nd)
{
    char *a = t_node(t, nd->a);
    char *s = a ? cat("((%s) == 0)", a) : NULL;
    int failed = a && !s;
    free(a);
    return failed ? oom(t) : s;
}

static char *t_node(tr *t, int k)
{
    const kiln_expr_node *nd = &t->e->nodes[k];
    char *a;
    switch (nd->kind) {
    case KILN_EXPR_INT:
    case KILN_EXPR_FLOAT:
        return t_number(t, nd);
    case KILN_EXPR_NAME:
    case KILN_EXPR_SIZEOF:
        return t_leaf(t, nd);
    case KILN_EXPR_NEG:
        a = cat("0");
        return a ? call2(t, "kiln_x_sub", a, t_node(t, nd->a), 1) : oom(t);
    case KILN_EXPR_NOT:
        return t_not(t, nd);
    case KILN_EXPR_BINARY:
        return t_binary(t, nd);
    case KILN_EXPR_COND:
        return t_cond(t, nd);
    default:
        return t_call(t, nd);
    }
}

int kiln_expr_to_c(const char *src, const kiln_expr_c_env *env, char *out, size_t len,
                   kiln_error *err)
{
    if (!src || !env || !env->flag)
        return kiln_fail(err, "kiln_expr_to_c: no expression or environment");
    kiln_expr e;
    int rc = kiln_expr_parse(src, &e, err);
    tr t = {&e, env, err};
    char *s = rc == 0 ? t_node(&t, e.root) : NULL;
    if (rc == 0 && !s)
        rc = -1;
    else if (s && strlen(s) >= len)
        rc = kiln_fail(err, "the C translation of \"%.200s\" is longer than %zu bytes", src,
                       len - 1);
    else if (s)
        memcpy(out, s, strlen(s) + 1);
    free(s);
    kiln_expr_free(&e);
    return rc;
}
