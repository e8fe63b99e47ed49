/* import_map.c - a host function's launches as manifest fields
 * (import_map.h).
 *
 * Names in launch expressions resolve, innermost first, to a helper's
 * parameters (while a one-return function or function-like macro of the
 * file is inlined), the host function's locals (an integer local becomes a
 * "let", translated from its initializer, which must be its value at the
 * launch: nothing may assign it or take its address in between) and
 * parameters (a dim, when mapped to one), then file-scope integer
 * constants (lets too) and #defines (an integer one keeps its name, as the
 * manifest reads it; another is inlined). A dim3's .x/.y/.z is its
 * constructor's argument, or 1. Kernel call arguments map to task args by
 * name only: a pointer parameter to the buffer it stands for, a dim to the
 * dim; a computed value has no manifest form. Every failure becomes a
 * problem line naming the token's line. */
#include "import_map.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "c_lex.h"
#include "expr.h"

typedef struct imp_bind {
    char name[64];
    imp_xval val;
} imp_bind;

typedef struct xctx {
    imp_ctx *c;
    int host;                 /* the tokens are the host function's */
    const imp_bind *b;        /* an inlined helper's parameters */
    int nb;
} xctx;

static int x_name(void *p, const imp_src *s, int tok, imp_xval *out, imp_why *why);
static int x_member(void *p, const imp_src *s, int obj, int member, imp_xval *out, imp_why *why);
static int x_call(void *p, const imp_src *s, int fn, int nargs, const imp_xval *args,
                  imp_xval *out, imp_why *why);

/* ---- small helpers ---------------------------------------------------------- */

int imp_line(const imp_ctx *c, int tok)
{
    return c->s->tok[tok < c->s->ntok ? tok : c->s->ntok - 1].line;
}


void imp_problem(imp_ctx *c, int tok, const char *what, const char *why)
{
    imp_addf(&c->problems, "%s:%d: cannot translate %s: %s", c->o->file, imp_line(c, tok), what, why);
}

int imp_whyf(imp_why *why, int tok, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why->msg, sizeof why->msg, fmt, ap);
    va_end(ap);
    why->tok = tok;
    return -1;
}

static void word(const imp_src *s, int tok, char *buf)
{
    imp_word(s, tok, buf, 64);
}

static void list_kind(const kiln_task *t, kiln_arg_kind kind, char *buf, size_t cap)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < t->nargs && used < cap; i++)
        if (t->args[i].kind == kind)
            used += (size_t)snprintf(buf + used, cap - used, "%s%s", used ? ", " : "",
                                     t->args[i].name);
}

int imp_xlate(imp_ctx *c, int from, int to, int host, imp_xval *out, imp_why *why)
{
    xctx x = {c, host, NULL, 0};
    imp_xenv env = {x_name, x_member, x_call, &x};
    return imp_expr(c->s, from, to, &env, out, why);
}

static int xlate(imp_ctx *c, int from, int to, imp_xval *out, imp_why *why)
{
    return imp_xlate(c, from, to, 1, out, why);
}

static const char *const queries[] = {"cudaGetDevice", "cudaDeviceGetAttribute",
                                      "cudaOccupancy", "cudaFuncGetAttributes",
                                      "getCurrentDeviceProperties"};

static int control_word(const imp_src *s, int i)
{
    return imp_is(s, i, "for") || imp_is(s, i, "if") || imp_is(s, i, "while") ||
           imp_is(s, i, "switch");
}

/* The statement around token tok, for a message: back to a ';', a brace
 * or a for/if/while's '(', on to a ';' or a ')' opened before it. */
static void statement_at(const imp_ctx *c, int tok, int *from, int *to)
{
    const imp_src *s = c->s;
    int f = tok, t = tok;
    while (f > c->host->body + 1 && !imp_is(s, f - 1, ";") && !imp_is(s, f - 1, "{") &&
           !imp_is(s, f - 1, "}") && !(imp_is(s, f - 1, "(") && control_word(s, f - 2)) &&
           !(imp_is(s, f - 1, ")") && control_word(s, s->tok[f - 1].match - 1)) &&
           !imp_is(s, f - 1, "else"))
        f--;
    while (t < c->host->last && !imp_is(s, t, ";") &&
           !(imp_is(s, t, ")") && s->tok[t].match < f))
        t++;
    *from = f;
    *to = t;
}

int imp_changed(const imp_ctx *c, const imp_var *v, int use, imp_why *why)
{
    char n[64], text[120];
    int from = v->changed, to = v->changed;
    if (v->changed < 0 || v->changed >= use)
        return 0;
    statement_at(c, v->changed, &from, &to);
    imp_text(c->s, from, to, text, sizeof text);
    word(c->s, v->name, n);
    int query = 0;
    for (size_t k = 0; k < sizeof queries / sizeof queries[0]; k++)
        query |= strstr(text, queries[k]) != NULL;
    if (query)
        return imp_whyf(why, use, "'%s' is set at line %d by a runtime query ('%s'); a manifest "
                        "computes from the task's dims, knobs and constants only", n,
                        imp_line(c, v->changed), text);
    return imp_whyf(why, use, "'%s' is changed at line %d ('%s') before this use, so its value "
                    "here is not the one it was given", n, imp_line(c, v->changed), text);
}

/* Dims, lets and plain #define constants, for imp_const_value. */
static int const_lookup(void *p, const char *name, size_t len, kiln_value *out)
{
    const imp_ctx *c = p;
    char n[64];
    kiln_error e;
    snprintf(n, sizeof n, "%.*s", (int)(len < 63 ? len : 63), name);
    for (int i = 0; i < c->nlets; i++)
        if (strcmp(c->lets[i].name, n) == 0) {
            kiln_expr_env env = {const_lookup, NULL, p};
            return kiln_expr_eval(c->lets[i].expr, &env, out, &e);
        }
    const imp_pp *d = imp_define(c->f, n);
    imp_src b;
    if (!d || d->function_like || imp_lex(&b, c->s->text + d->body_at, d->body_len, &e) < 0)
        return -1;
    long long v;
    int rc = b.ntok == 1 ? imp_int_literal(&b, 0, &v) : -1;
    imp_src_free(&b);
    *out = (kiln_value){0, v, 0.0};
    return rc;
}

int imp_const_value(const imp_ctx *c, const char *expr, long long *out)
{
    kiln_expr_env env = {const_lookup, NULL, (void *)c};
    kiln_value v;
    kiln_error e;
    if (kiln_expr_eval(expr, &env, &v, &e) < 0 || v.is_float)
        return -1;
    *out = (long long)v.i;
    return 0;
}

/* ---- lets ------------------------------------------------------------------- */

static int name_taken(const imp_ctx *c, const char *n)
{
    size_t len = strlen(n);
    if (kiln_task_dim(c->t, n) >= 0 || kiln_expr_is_function(n, len) || len >= KILN_NAME_MAX)
        return 1;
    for (int i = 0; i < c->f->npp; i++)
        if ((c->f->pp[i].define || c->f->pp[i].undef) && strcmp(c->f->pp[i].name, n) == 0)
            return 1;
    for (int i = 0; i < c->nlets; i++)
        if (strcmp(c->lets[i].name, n) == 0)
            return 1;
    return 0;
}

/* A new let for expr, named base or base_2, base_3...; its name in out. */
static int add_let(imp_ctx *c, const char *base, const imp_xval *v, int var, int cst,
                   imp_xval *out, imp_why *why, int tok)
{
    char name[KILN_NAME_MAX];
    if (c->nlets == KILN_MANIFEST_MAX_LETS)
        return imp_whyf(why, tok, "more than %d locals and constants would become lets",
                    KILN_MANIFEST_MAX_LETS);
    snprintf(name, sizeof name, "%.24s", base);
    for (unsigned k = 2; name_taken(c, name) && k < 1000; k++)
        snprintf(name, sizeof name, "%.19s_%u", base, k % 1000u);
    imp_let *l = &c->lets[c->nlets++];
    snprintf(l->name, sizeof l->name, "%s", name);
    snprintf(l->expr, sizeof l->expr, "%s", v->s);
    l->var = var;
    l->cst = cst;
    snprintf(out->s, sizeof out->s, "%s", name);
    out->prec = IMP_P_PRIMARY;
    return 0;
}

static int local_let(imp_ctx *c, const imp_var *v, int use, imp_xval *out, imp_why *why)
{
    int idx = (int)(v - c->h.var);
    char n[64];
    word(c->s, v->name, n);
    for (int i = 0; i < c->nlets; i++)
        if (c->lets[i].var == idx) {
            snprintf(out->s, sizeof out->s, "%s", c->lets[i].name);
            out->prec = IMP_P_PRIMARY;
            return 0;
        }
    if (v->init_from < 0)
        return imp_whyf(why, use, "'%s' (line %d) is declared without a value", n, imp_line(c, v->name));
    imp_xval val;
    if (xlate(c, v->init_from, v->init_to, &val, why) < 0)
        return -1;
    return add_let(c, n, &val, idx, -1, out, why, use);
}

/* ---- names ------------------------------------------------------------------ */

static int param_value(imp_ctx *c, const imp_var *v, int use, imp_xval *out, imp_why *why)
{
    char n[64], dims[128];
    int a = c->pmap[v - c->h.var].arg;
    word(c->s, v->name, n);
    if (a >= 0 && c->t->args[a].kind == KILN_ARG_DIM) {
        snprintf(out->s, sizeof out->s, "%s", c->t->args[a].name);
        out->prec = IMP_P_PRIMARY;
        return 0;
    }
    list_kind(c->t, KILN_ARG_DIM, dims, sizeof dims);
    if (a >= 0)
        return imp_whyf(why, use, "'%s' stands for the task's arg %s; launch sizes come from its "
                    "dims (%s)", n, c->t->args[a].name, dims);
    return imp_whyf(why, use, "the parameter '%s' has no counterpart among the task's dims (%s): "
                "name it as the dim it is, or pass --map %s=DIM", n, dims, n);
}

static int var_value(imp_ctx *c, const imp_var *v, int use, imp_xval *out, imp_why *why)
{
    char n[64], type[64];
    word(c->s, v->name, n);
    if (imp_changed(c, v, use, why) < 0)
        return -1;
    if (v->is_param)
        return param_value(c, v, use, out, why);
    if (v->cls == IMP_C_I32 || v->cls == IMP_C_I64 || v->cls == IMP_C_AUTO)
        return local_let(c, v, use, out, why);
    imp_text(c->s, v->type_from, v->type_to, type, sizeof type);
    if (v->cls == IMP_C_DIM3)
        return imp_whyf(why, use, "'%s' is a dim3; a size is one of its .x, .y or .z", n);
    return imp_whyf(why, use, "'%s' is a local of type '%s' (line %d), not an integer", n, type,
                imp_line(c, v->name));
}

/* A decimal integer as the manifest reads #define constants. */
static int plain_decimal(const imp_src *b)
{
    if (b->ntok != 1 || b->tok[0].kind != IMP_NUMBER)
        return 0;
    const char *t = b->text + b->tok[0].at;
    size_t n = b->tok[0].len;
    if (n > 1 && t[0] == '0')
        return 0;
    for (size_t i = 0; i < n; i++)
        if (t[i] < '0' || t[i] > '9')
            return 0;
    return 1;
}

static int define_count(const imp_ctx *c, const char *n)
{
    int k = 0;
    for (int i = 0; i < c->f->npp; i++)
        k += (c->f->pp[i].define || c->f->pp[i].undef) && strcmp(c->f->pp[i].name, n) == 0;
    return k;
}

/* An object-like #define: its name when it is a plain integer, else its
 * body translated. */
static int define_value(imp_ctx *c, const imp_pp *d, int tok, imp_xval *out, imp_why *why)
{
    imp_src b;
    kiln_error e;
    if (d->function_like)
        return imp_whyf(why, tok, "'%s' is a function-like macro used without arguments", d->name);
    if (d->conditional || define_count(c, d->name) > 1)
        return imp_whyf(why, tok, "'%s' is #defined inside #if or more than once (line %d), so its "
                    "value is not known", d->name, c->s->tok[d->tok].line);
    if (imp_lex(&b, c->s->text + d->body_at, d->body_len, &e) < 0)
        return imp_whyf(why, tok, "the #define of '%s' (line %d): %s", d->name,
                    c->s->tok[d->tok].line, e.msg);
    int rc = 0;
    if (plain_decimal(&b)) {
        snprintf(out->s, sizeof out->s, "%s", d->name);
        out->prec = IMP_P_PRIMARY;
    } else {
        xctx x = {c, 0, NULL, 0};
        imp_xenv env = {x_name, x_member, x_call, &x};
        if ((rc = imp_expr(&b, 0, b.ntok, &env, out, why)) < 0) {
            char msg[sizeof why->msg];
            snprintf(msg, sizeof msg, "%s", why->msg);
            imp_whyf(why, tok, "in the #define of %s (line %d): %s", d->name,
                 c->s->tok[d->tok].line, msg);
        }
    }
    imp_src_free(&b);
    return rc;
}

/* A file-scope name: an integer constant (a let) or a #define. */
static int file_name(imp_ctx *c, const char *n, int tok, imp_xval *out, imp_why *why)
{
    for (int k = 0; k < c->f->ncst; k++) {
        char cn[64];
        word(c->s, c->f->cst[k].name, cn);
        if (strcmp(cn, n) != 0)
            continue;
        for (int i = 0; i < c->nlets; i++)
            if (c->lets[i].cst == k) {
                snprintf(out->s, sizeof out->s, "%s", c->lets[i].name);
                out->prec = IMP_P_PRIMARY;
                return 0;
            }
        imp_xval v = {.prec = IMP_P_PRIMARY};
        snprintf(v.s, sizeof v.s, "%lld", c->f->cst[k].value);
        return add_let(c, n, &v, -1, k, out, why, tok);
    }
    const imp_pp *d = imp_define(c->f, n);
    if (d)
        return define_value(c, d, tok, out, why);
    return imp_whyf(why, tok, "'%s' is no parameter, local, integer constant or #define this "
                "function can see", n);
}

static int x_name(void *p, const imp_src *s, int tok, imp_xval *out, imp_why *why)
{
    xctx *x = p;
    char n[64];
    word(s, tok, n);
    for (int k = x->nb - 1; k >= 0; k--)
        if (strcmp(x->b[k].name, n) == 0) {
            *out = x->b[k].val;
            return 0;
        }
    const imp_var *v = x->host ? imp_host_var(&x->c->h, tok) : NULL;
    if (v)
        return var_value(x->c, v, tok, out, why);
    if (x->host)
        for (int k = 0; k < x->c->host->ntparams; k++)
            if (imp_is(s, x->c->host->tparam[k], n))
                return imp_whyf(why, tok, "'%s' is a template parameter of the host function", n);
    return file_name(x->c, n, tok, out, why);
}

/* Component k (x, y, z) of the dim3 v at use. */
static int component(imp_ctx *c, const imp_var *v, int k, int use, imp_xval *out, imp_why *why)
{
    if (imp_changed(c, v, use, why) < 0)
        return -1;
    if (k >= v->ncomp) {
        snprintf(out->s, sizeof out->s, "1");
        out->prec = IMP_P_PRIMARY;
        return 0;
    }
    return xlate(c, v->comp_from[k], v->comp_to[k], out, why);
}

static int x_member(void *p, const imp_src *s, int obj, int member, imp_xval *out, imp_why *why)
{
    xctx *x = p;
    char o[64], m[64], type[64];
    word(s, obj, o);
    word(s, member, m);
    const imp_var *v = x->host ? imp_host_var(&x->c->h, obj) : NULL;
    int k = strcmp(m, "x") == 0 ? 0 : strcmp(m, "y") == 0 ? 1 : strcmp(m, "z") == 0 ? 2 : -1;
    if (v && v->cls == IMP_C_DIM3 && !v->is_param && k >= 0)
        return component(x->c, v, k, obj, out, why);
    if (!v)
        return imp_whyf(why, obj, "'%s.%s': '%s' is no variable of this function (a runtime "
                    "value?)", o, m, o);
    imp_text(x->c->s, v->type_from, v->type_to, type, sizeof type);
    return imp_whyf(why, obj, "'%s.%s': '%s' is a %s (line %d), known only at run time%s", o, m, o,
                type, imp_line(x->c, v->name),
                strstr(type, "cudaDeviceProp") ? " (a runtime query)" : "");
}

/* ---- helpers: one-return functions and function-like macros -------------- */

/* Inline [from, to) of src with the parameters bound. */
static int inline_body(imp_ctx *c, const imp_src *src, int from, int to, const imp_bind *b,
                       int nb, imp_xval *out, imp_why *why)
{
    xctx x = {c, 0, b, nb};
    imp_xenv env = {x_name, x_member, x_call, &x};
    if (++c->depth > 8)
        return c->depth--, imp_whyf(why, from, "helpers nested deeper than 8");
    int rc = imp_expr(src, from, to, &env, out, why);
    c->depth--;
    return rc;
}

/* A function of the file whose body is `return EXPR;`. */
static int call_function(imp_ctx *c, const imp_fn *fn, int nargs, const imp_xval *args,
                         imp_xval *out, imp_why *why)
{
    const imp_src *s = c->s;
    int tf[8], tt[8], nm[8];
    imp_bind b[8];
    int n = imp_params(s, fn->params, tf, tt, nm, 8);
    if (fn->body < 0 || !imp_is(s, fn->body + 1, "return") ||
        imp_find(s, fn->body + 1, fn->last, ";") != fn->last - 1)
        return imp_whyf(why, fn->name, "its body is more than one return statement");
    if (n != nargs)
        return imp_whyf(why, fn->name, "it takes %d arguments, not %d", n, nargs);
    for (int k = 0; k < n; k++) {
        if (nm[k] < 0)
            return imp_whyf(why, fn->name, "parameter %d has no name", k + 1);
        imp_word(s, nm[k], b[k].name, sizeof b[k].name);
        b[k].val = args[k];
    }
    return inline_body(c, s, fn->body + 2, fn->last - 1, b, n, out, why);
}

/* A function-like #define. */
static int call_macro(imp_ctx *c, const imp_pp *d, int nargs, const imp_xval *args,
                      imp_xval *out, imp_why *why)
{
    imp_src ps, bs;
    kiln_error e;
    imp_bind b[8];
    int pf[8], pt[8], rc = -1;
    if (imp_lex(&ps, c->s->text + d->params_at, d->params_len, &e) < 0)
        return imp_whyf(why, d->tok, "its parameters: %s", e.msg);
    int n = imp_split(&ps, 0, ps.ntok, 0, pf, pt, 8);
    for (int k = 0; k < n && k < nargs; k++) {
        imp_word(&ps, pf[k], b[k].name, sizeof b[k].name);
        b[k].val = args[k];
    }
    if (n != nargs)
        imp_whyf(why, d->tok, "it takes %d arguments, not %d", n, nargs);
    else if (imp_lex(&bs, c->s->text + d->body_at, d->body_len, &e) < 0)
        imp_whyf(why, d->tok, "its body: %s", e.msg);
    else {
        rc = inline_body(c, &bs, 0, bs.ntok, b, n, out, why);
        why->tok = d->tok;   /* the body's tokens are not the file's */
        imp_src_free(&bs);
    }
    imp_src_free(&ps);
    return rc;
}

static int x_call(void *p, const imp_src *s, int fn, int nargs, const imp_xval *args,
                  imp_xval *out, imp_why *why)
{
    xctx *x = p;
    imp_ctx *c = x->c;
    char n[64], msg[sizeof why->msg];
    word(s, fn, n);
    int k = imp_fn_find(c->f, c->s, n, -1, 0);
    while (k >= 0 && c->f->fn[k].body < 0)
        k = imp_fn_find(c->f, c->s, n, -1, k + 1);
    const imp_pp *d = imp_define(c->f, n);
    int rc, where;
    if (k >= 0)
        rc = call_function(c, &c->f->fn[k], nargs, args, out, why), where = c->f->fn[k].name;
    else if (d && d->function_like)
        rc = call_macro(c, d, nargs, args, out, why), where = d->tok;
    else
        return imp_whyf(why, fn, "'%s' is no function import can translate: min, max, and the "
                    "functions of this file whose body is one return statement (and "
                    "function-like macros) are; is it a runtime query?", n);
    if (rc < 0) {
        snprintf(msg, sizeof msg, "%s", why->msg);
        imp_whyf(why, fn, "in %s (line %d): %s", n, imp_line(c, where), msg);
    }
    return rc;
}

/* ---- parameters to task args --------------------------------------------------- */

static int fits(imp_cls cls, kiln_arg_kind kind)
{
    int ptr = cls == IMP_C_PTR || cls == IMP_C_CPTR;
    int num = cls == IMP_C_I32 || cls == IMP_C_I64;
    int real = cls == IMP_C_F32 || cls == IMP_C_F64;
    return kind == KILN_ARG_INPUT || kind == KILN_ARG_OUTPUT ? ptr
           : kind == KILN_ARG_DIM                           ? num
                                                            : num || real;
}

static int apply_maps(imp_ctx *c, int *used, kiln_error *err)
{
    for (int m = 0; m < c->o->nmaps; m++) {
        const char *eq = strchr(c->o->maps[m], '=');
        int a = -1, v = -1;
        for (int i = 0; eq && i < c->t->nargs; i++)
            if (strcmp(c->t->args[i].name, eq + 1) == 0)
                a = i;
        for (int i = 0; eq && i < c->h.nvar; i++)
            if (c->h.var[i].is_param && c->s->tok[c->h.var[i].name].len == (size_t)(eq - c->o->maps[m]) &&
                memcmp(c->s->text + c->s->tok[c->h.var[i].name].at, c->o->maps[m],
                       (size_t)(eq - c->o->maps[m])) == 0)
                v = i;
        if (a < 0 || v < 0)
            return kiln_fail(err, "--map %s: %s", c->o->maps[m],
                             !eq ? "expected PARAM=ARG"
                             : v < 0 ? "no parameter of that name in the host function"
                                     : "no arg of that name in the task");
        c->pmap[v] = (imp_pmap){a, "--map"};
        used[a] = 1;
    }
    return 0;
}

static void by_name(imp_ctx *c, int *used)
{
    for (int i = 0; i < c->h.nvar; i++) {
        char n[64];
        const imp_var *v = &c->h.var[i];
        if (!v->is_param || c->pmap[i].arg >= 0)
            continue;
        word(c->s, v->name, n);
        for (int a = 0; a < c->t->nargs; a++)
            if (!used[a] && strcmp(c->t->args[a].name, n) == 0 && fits(v->cls, c->t->args[a].kind)) {
                c->pmap[i] = (imp_pmap){a, "name"};
                used[a] = 1;
            }
    }
}

static void lower(const char *in, char *out, size_t cap)
{
    size_t i = 0;
    for (; in[i] && i + 1 < cap; i++)
        out[i] = (char)(in[i] >= 'A' && in[i] <= 'Z' ? in[i] - 'A' + 'a' : in[i]);
    out[i] = '\0';
}

/* Does one name hold the other (3 characters or more), case aside? */
static int similar(const char *a, const char *b)
{
    char x[64], y[64];
    lower(a, x, sizeof x);
    lower(b, y, sizeof y);
    return (strlen(y) >= 3 && strstr(x, y)) || (strlen(x) >= 3 && strstr(y, x));
}

/* A parameter whose name holds exactly one fitting arg's (n_rows: rows). */
static void by_similar_name(imp_ctx *c, int *used)
{
    for (int i = 0; i < c->h.nvar; i++) {
        char n[64];
        const imp_var *v = &c->h.var[i];
        int found = -1, count = 0;
        if (!v->is_param || c->pmap[i].arg >= 0)
            continue;
        word(c->s, v->name, n);
        for (int a = 0; a < c->t->nargs; a++)
            if (!used[a] && fits(v->cls, c->t->args[a].kind) && similar(n, c->t->args[a].name))
                found = a, count++;
        if (count == 1) {
            c->pmap[i] = (imp_pmap){found, "similar name"};
            used[found] = 1;
        }
    }
}

/* The parameters of classes lo..hi still unmapped, paired in order with the
 * task's unmapped args of kind, when both are equally many. */
static void by_position(imp_ctx *c, int *used, imp_cls lo, imp_cls hi, kiln_arg_kind kind,
                        const char *how)
{
    int vp[KILN_MAX_ARGS], ap[KILN_MAX_ARGS], nv = 0, na = 0;
    for (int i = 0; i < c->h.nvar && nv < KILN_MAX_ARGS; i++)
        if (c->h.var[i].is_param && c->pmap[i].arg < 0 && c->h.var[i].cls >= lo &&
            c->h.var[i].cls <= hi)
            vp[nv++] = i;
    for (int a = 0; a < c->t->nargs; a++)
        if (!used[a] && c->t->args[a].kind == kind)
            ap[na++] = a;
    if (nv != na)
        return;
    for (int k = 0; k < nv; k++) {
        c->pmap[vp[k]] = (imp_pmap){ap[k], how};
        used[ap[k]] = 1;
    }
}

static void account_params(imp_ctx *c)
{
    kiln_strbuf b = {0};
    for (int i = 0; i < c->h.nvar; i++) {
        char n[64];
        const imp_var *v = &c->h.var[i];
        if (!v->is_param)
            continue;
        word(c->s, v->name, n);
        if (c->pmap[i].arg >= 0)
            kiln_sb_printf(&b, "%s%s -> %s (%s)", b.len ? ", " : "", n,
                         c->t->args[c->pmap[i].arg].name, c->pmap[i].how);
        else
            kiln_sb_printf(&b, "%s%s: %s", b.len ? ", " : "", n,
                         v->cls == IMP_C_STREAM ? "a stream" : "no counterpart");
    }
    imp_addf(&c->account, "parameters: %s", b.p ? b.p : "(none)");
    free(b.p);
    for (int i = 0; i < c->h.nvar; i++)
        if (c->pmap[i].arg >= 0 && strcmp(c->pmap[i].how, "name") != 0 &&
            strcmp(c->pmap[i].how, "--map") != 0) {
            imp_addf(&c->account, "  (not mapped by name: check those, or pass --map PARAM=ARG)");
            break;
        }
}

int imp_map_params(imp_ctx *c, kiln_error *err)
{
    int used[KILN_MAX_ARGS] = {0};
    c->pmap = malloc(((size_t)c->h.nvar + 1) * sizeof *c->pmap);
    if (!c->pmap)
        return kiln_fail(err, "out of memory");
    for (int i = 0; i < c->h.nvar; i++)
        c->pmap[i] = (imp_pmap){-1, NULL};
    if (apply_maps(c, used, err) < 0)
        return -1;
    by_name(c, used);
    by_similar_name(c, used);
    by_position(c, used, IMP_C_CPTR, IMP_C_CPTR, KILN_ARG_INPUT, "const pointer, by position");
    by_position(c, used, IMP_C_PTR, IMP_C_PTR, KILN_ARG_OUTPUT, "non-const pointer, by position");
    by_position(c, used, IMP_C_I32, IMP_C_I64, KILN_ARG_DIM, "integer, by position");
    by_position(c, used, IMP_C_F32, IMP_C_F64, KILN_ARG_SCALAR, "floating point, by position");
    account_params(c);
    return 0;
}
