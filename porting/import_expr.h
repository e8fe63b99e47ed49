/* import_expr.h - a C or CUDA host expression translated into kiln's
 * manifest expression language (docs/cuda.md), or the reason it cannot be.
 *
 * The translator knows C's operators, integer literals, integer casts,
 * sizeof of the dtypes' C types, std::min/std::max and `true`/`false`; it
 * asks its caller (imp_xenv) what each name, `a.b` member and call of
 * another function means, so the host function's parameters, locals and
 * helpers are the caller's business (import.c). It prints with as few
 * parentheses as the manifest's precedence (C's) needs. */
#ifndef KILN_IMPORT_EXPR_H
#define KILN_IMPORT_EXPR_H

#include <stddef.h>

#include "import_lex.h"
#include "task.h"

/* Precedence of a translated expression, loosest first. */
enum {
    IMP_P_COND = 1, IMP_P_OR, IMP_P_AND, IMP_P_EQ, IMP_P_REL, IMP_P_SUM, IMP_P_TERM,
    IMP_P_UNARY, IMP_P_PRIMARY,
};

typedef struct imp_xval {
    char s[KILN_EXPR_MAX];
    int prec;
    unsigned long long uses;   /* the host parameters it draws on (bit k: the caller's
                                  k-th), for imp_xenv.product */
    int boolean;               /* a comparison, !, && or ||: 0 or 1 */
    int addr;                  /* a buffer's address (s says which): only its
                                  alignment, addr % N, has a value */
} imp_xval;

/* Why a translation failed: the token at fault and a sentence. */
typedef struct imp_why {
    int tok;
    char msg[320];
} imp_why;

typedef struct imp_xenv {
    /* The identifier at token tok (after any "ns::" qualifier): 0 with *out
     * set, or -1 with *why set. */
    int (*name)(void *ctx, const imp_src *s, int tok, imp_xval *out, imp_why *why);
    /* obj.member (tokens obj and member). */
    int (*member)(void *ctx, const imp_src *s, int obj, int member, imp_xval *out, imp_why *why);
    /* A call of fn (token) other than min/max, its arguments translated. */
    int (*call)(void *ctx, const imp_src *s, int fn, int nargs, const imp_xval *args,
                imp_xval *out, imp_why *why);
    /* obj.method(args) or obj.method<...>(args) (tokens obj and method). */
    int (*method)(void *ctx, const imp_src *s, int obj, int method, int nargs,
                  const imp_xval *args, imp_xval *out, imp_why *why);
    /* l * r at token op: -1 with *why when the product means nonsense (two
     * parameters mapped to one dim, squared). NULL: always allowed. */
    int (*product)(void *ctx, const imp_xval *l, const imp_xval *r, int op, imp_why *why);
    /* The value of a translated expression when it is a constant; -1 when not. */
    int (*constant)(void *ctx, const char *expr, long long *out);
    const char *dtype_name;    /* a C type name meaning the run's dtype (scalar_t
                                  in a dispatch): sizeof gives sizeof(T); or NULL */
    void *ctx;
} imp_xenv;

/* Translate tokens [from, to) of s. 0, or -1 with *why. */
int imp_expr(const imp_src *s, int from, int to, const imp_xenv *env, imp_xval *out,
             imp_why *why);

/* An integer literal's value (decimal, hex, octal, binary, ' separators,
 * u/l suffixes): 0, or -1 when tok is none or does not fit int64. */
int imp_int_literal(const imp_src *s, int tok, long long *out);

/* The manifest's name of a C type inside sizeof ("float" -> "f32",
 * "__nv_bfloat16" -> "bf16", "kiln_t" -> "T"), or NULL; *bytes is set
 * instead for vector types of fixed size (float4: 16). */
const char *imp_sizeof_type(const char *ctype, long long *bytes);

/* The alignment every buffer kiln passes has (docs/cuda.md, "Alignment"). */
#define IMP_BUFFER_ALIGN 256

/* Is the C type name an integer type import may drop a cast to? */
int imp_int_type(const char *name);

#endif
