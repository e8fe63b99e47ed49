/* expr_c.h - kiln's small expressions (common/expr.h) printed as C.
 *
 * `kiln export --backend cuda` evaluates a manifest's grid, block, cluster,
 * shared memory and scratch expressions in the generated dispatch, at the
 * dims of each call, so each expression is translated to C once. It is
 * parsed by expr.h's kiln_expr_parse, the evaluator's own parser, and its
 * tree printed; every operation becomes a call of a checked int64 helper
 * (KILN_EXPR_C_HELPERS) that sets an error flag on overflow or division by
 * zero, as kiln's evaluator fails, instead of wrapping:
 *
 *   cdiv(cols, BLOCK*4)  ->  kiln_x_cdiv(cols_c, kiln_x_mul(256, 4, bad), bad)
 *
 * Comparisons, !, &&, || and ?: print as C's own operators, fully
 * parenthesized, so that C skips what kiln's evaluator skips:
 *
 *   cols > 0 ? rows / cols : 0  ->  (((cols_c) > (0)) != 0 ? (kiln_x_div(...)) : (0))
 *
 * where names and sizeof(TYPE) come out as the caller's environment says
 * (a dim as its parameter, a knob as its value). Float literals have no
 * int64 translation and are an error, as are unknown names and types. */
#ifndef KILN_EXPR_C_H
#define KILN_EXPR_C_H

#include <stddef.h>

#include "kiln_error.h"

typedef struct kiln_expr_c_env {
    /* The C text of a name, or -1 when the name is unknown. */
    int (*name)(void *ctx, const char *name, size_t len, char *buf, size_t buflen);
    /* The C text of sizeof(TYPE), or -1 when the type is unknown. */
    int (*size_of)(void *ctx, const char *type, size_t len, char *buf, size_t buflen);
    void *ctx;
    const char *flag;   /* the helpers' last argument, e.g. "&bad" */
} kiln_expr_c_env;

/* Translate src into out (len bytes). Returns 0, or -1 with err saying what
 * could not be translated and where (column, quoted source): a syntax error
 * as kiln_expr_eval words it, or what has no translation. */
int kiln_expr_to_c(const char *src, const kiln_expr_c_env *env, char *out, size_t len,
                   kiln_error *err);

/* The helpers the translations call: C99 and C++ alike, static inline,
 * guarded so that several generated headers can be included together. */
extern const char kiln_expr_c_helpers[];

#endif
