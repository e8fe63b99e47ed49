/* expr.h - evaluator for the small arithmetic expressions in task files.
 *
 * Cost, launch and shape fields are written as expressions over the task's
 * dims, e.g. `(2*rows*cols + cols) * sizeof(T)` or `cdiv(cols, BLOCK*4)`.
 * Grammar: integer and float literals, names, `+ - * / %` (C precedence,
 * left associative), unary `-`/`+`, parentheses, and the functions
 * min(a,b,...), max(a,b,...), cdiv(a,b) and sizeof(TYPE).  Integer arithmetic
 * stays integer (checked for overflow); any float operand makes a float. */
#ifndef KILN_EXPR_H
#define KILN_EXPR_H

#include <stddef.h>
#include <stdint.h>

#include "kiln_error.h"

#define KILN_EXPR_MAX_LEN 1024  /* longest accepted expression, in bytes */
#define KILN_EXPR_MAX_DEPTH 64  /* deepest nesting of (), calls, unary ops */
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
 * min/max/cdiv/sizeof nor the type inside sizeof) into names[] (each
 * NUL-terminated, at most 63 chars), in order of first use.  Returns the
 * count, or -1 with err filled on a syntax error, a name longer than 63
 * chars, or more than cap distinct names. */
int kiln_expr_names(const char *src, char names[][64], int cap,
                    kiln_error *err);

#endif
