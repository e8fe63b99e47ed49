/* expr.h - the small arithmetic expressions in task files and manifests:
 * their one parser, the evaluator, and the parse tree other walkers use.
 *
 * Cost, launch and shape fields are written as expressions over the task's
 * dims, e.g. `(2*rows*cols + cols) * sizeof(T)` or `cdiv(cols, BLOCK*4)`.
 * Grammar (docs/cuda.md has the table): integer and float literals, names,
 * `+ - * / %`, the comparisons `< <= > >= == !=`, logical `&& || !` and the
 * conditional `c ? a : b`, with C's precedence and associativity; unary
 * `-`/`+`/`!`, parentheses, and the functions min(a,b,...), max(a,b,...),
 * cdiv(a,b), gcd(a,b), lcm(a,b) and sizeof(TYPE). Integer arithmetic stays
 * integer (checked for overflow); a float operand of + - * / min max cdiv
 * makes a float. Comparisons, logic, a conditional's condition, % and
 * gcd/lcm take integers only. The language has no loops, no recursion and
 * no assignment: every expression ends, and every fault (overflow, division
 * by zero) is an error, never a wrapped value. */
#ifndef KILN_EXPR_H
#define KILN_EXPR_H

#include <stddef.h>
#include <stdint.h>

#include "kiln_error.h"

#define KILN_EXPR_MAX_LEN 1024  /* longest accepted expression, in bytes */
#define KILN_EXPR_MAX_DEPTH 64  /* deepest nesting of (), calls, unary ops, ?: */
#define KILN_EXPR_NAME_MAX 63   /* longest name kiln_expr_names can return */

typedef struct kiln_value {
    int is_float; /* selects i or f */
    int64_t i;
    double f;
} kiln_value;

typedef struct kiln_expr_env {
    /* name lookup: return 0 and set *out when known, -1 when unknown */
    int (*lookup)(void *ctx, const char *name, size_t len, kiln_value *out);
    /* sizeof(TYPE): return 0 and set *bytes when known, -1 when unknown.
     * TYPE is an identifier like T, f32, bf16 */
    int (*size_of)(void *ctx, const char *type, size_t len, int64_t *bytes);
    void *ctx;
} kiln_expr_env;

/* Evaluate src. env may be NULL or have NULL callbacks (then every name is
 * unknown). Returns 0 or -1 with err filled. */
int kiln_expr_eval(const char *src, const kiln_expr_env *env, kiln_value *out,
                   kiln_error *err);

/* Evaluate and require a non-negative integer result that fits int64 (a float
 * result with an integral value is accepted). */
int kiln_expr_eval_int(const char *src, const kiln_expr_env *env, int64_t *out,
                       kiln_error *err);

double kiln_value_to_double(kiln_value v);

/* Collect the distinct identifiers used by src (not the function names
 * min/max/cdiv/gcd/lcm/sizeof nor the type inside sizeof) into names[] (each
 * NUL-terminated, at most 63 chars), in order of first use.  Returns the
 * count, or -1 with err filled on a syntax error, a name longer than 63
 * chars, or more than cap distinct names. */
int kiln_expr_names(const char *src, char names[][64], int cap,
                    kiln_error *err);

/* ---- the parse tree, for other walkers --------------------------------
 *
 * kiln_expr_eval and kiln_expr_names parse into this tree and walk it;
 * porting/expr_c.c walks the same tree to print an expression as C, so the
 * language has one grammar. Nodes live in one array and refer to each other
 * by index; unary '+' and parentheses leave no node. */

typedef enum kiln_expr_kind {
    KILN_EXPR_INT,    /* value.i */
    KILN_EXPR_FLOAT,  /* value.f */
    KILN_EXPR_NAME,   /* the name at src[at, at + len) */
    KILN_EXPR_SIZEOF, /* sizeof(TYPE): the type at src[at, at + len) */
    KILN_EXPR_NEG,    /* -a */
    KILN_EXPR_NOT,    /* !a: 1 when a is 0, else 0 */
    KILN_EXPR_BINARY, /* a op b (&& and || evaluate b only when a does not decide) */
    KILN_EXPR_COND,   /* a ? b : c, only the chosen one of b and c evaluated */
    KILN_EXPR_CALL,   /* fn(args): the first in a, each one's next in next */
} kiln_expr_kind;

typedef enum kiln_expr_op {
    KILN_EXPR_ADD, KILN_EXPR_SUB, KILN_EXPR_MUL, KILN_EXPR_DIV, KILN_EXPR_MOD,
    KILN_EXPR_LT, KILN_EXPR_LE, KILN_EXPR_GT, KILN_EXPR_GE, KILN_EXPR_EQ, KILN_EXPR_NE,
    KILN_EXPR_AND, KILN_EXPR_OR
} kiln_expr_op;

typedef enum kiln_expr_fn {
    KILN_EXPR_FN_MIN,  /* 2 or more arguments */
    KILN_EXPR_FN_MAX,  /* 2 or more arguments */
    KILN_EXPR_FN_CDIV, /* exactly 2 */
    KILN_EXPR_FN_GCD,  /* exactly 2, integers: gcd(|a|, |b|); gcd(0, 0) = 0 */
    KILN_EXPR_FN_LCM   /* exactly 2, integers: lcm(|a|, |b|); 0 when either is 0 */
} kiln_expr_fn;

typedef struct kiln_expr_node {
    kiln_expr_kind kind;
    kiln_expr_op op;  /* BINARY */
    kiln_expr_fn fn;  /* CALL */
    int argc;         /* CALL */
    int a, b, c;      /* operands (node indices); -1 when none; c: COND's else */
    int next;         /* the next argument of a call; -1 after the last */
    size_t at, len;   /* the token in src: literal, name, type, operator or function */
    kiln_value value; /* INT, FLOAT */
} kiln_expr_node;

typedef struct kiln_expr {
    const char *src;         /* a copy of the source, NUL-terminated */
    size_t len;
    int root, n;
    kiln_expr_node *nodes;   /* n of them */
} kiln_expr;

/* Parse src (the grammar above; literals are checked, names are not looked
 * up) into e. Returns 0, or -1 with err filled as kiln_expr_eval fills it
 * for a syntax error. Free e with kiln_expr_free (also after a failure). */
int kiln_expr_parse(const char *src, kiln_expr *e, kiln_error *err);
void kiln_expr_free(kiln_expr *e);

/* The operator as written: "+", "<=", "&&", ... */
const char *kiln_expr_op_text(kiln_expr_op op);

/* Is name[0, len) one of the functions (min max cdiv gcd lcm sizeof)? A
 * name the manifest defines (a let) may not be one. */
int kiln_expr_is_function(const char *name, size_t len);

/* Fill err as the evaluator does for a fault at offset `at` of e's source:
 * the message, "at column N" and the source quoted. Returns -1. */
int kiln_expr_fail_at(const kiln_expr *e, size_t at, kiln_error *err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
