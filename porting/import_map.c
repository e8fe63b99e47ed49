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
#include "import_include.h"

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
static int x_method(void *p, const imp_src *s, int obj, int method, int nargs,
                    const imp_xval *args, imp_xval *out, imp_why *why);
static int x_product(void *p, const imp_xval *l, const imp_xval *r, int op, imp_why *why);
static int x_constant(void *p, const char *expr, long long *out);

/* The translator's view of the names of ctx x. */
static imp_xenv env_of(xctx *x)
{
    return (imp_xenv){.name = x_name, .member = x_member, .call = x_call, .method = x_method,
                      .product = x_product, .constant = x_constant,
                      .dtype_name = x->c->dtype_name, .ctx = x};
}

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
    imp_xenv env = env_of(&x);
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
    imp_def d;
    imp_src b;
    if (!imp_find_define(c, n, &d) || d.pp->function_like ||
        imp_lex_macro(&b, d.s->text + d.pp->body_at, d.pp->body_len, &e) < 0)
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
    for (int i = 0; i < c->t->nargs; i++)   /* a launch arg of this name is the task's */
        if (strcmp(c->t->args[i].name, n) == 0)
            return 1;
    for (int i = 0; i < c->nknob; i++)
        if (strcmp(c->knob[i].name, n) == 0)
            return 1;
    for (int i = 0; i < c->nscratch; i++)
        if (strcmp(c->scratch[i].name, n) == 0)
            return 1;
    if (strcmp(n, "i32") == 0 || strcmp(n, "i64") == 0 || strcmp(n, "f32") == 0 ||
        strcmp(n, "f64") == 0)
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
    snprintf(name, sizeof name, "%.*s", KILN_NAME_MAX - 1, base);
    for (unsigned k = 2; name_taken(c, name) && k < 1000; k++)
        snprintf(name, sizeof name, "%.*s_%u", KILN_NAME_MAX - 5, base, k % 1000u);
    imp_let *l = &c->lets[c->nlets++];
    snprintf(l->name, sizeof l->name, "%s", name);
    snprintf(l->expr, sizeof l->expr, "%s", v->s);
    l->var = var;
    l->cst = cst;
    l->uses = v->uses;
    *out = (imp_xval){.prec = IMP_P_PRIMARY, .uses = v->uses, .boolean = v->boolean};
    snprintf(out->s, sizeof out->s, "%s", name);
    return 0;
}

static int local_let(imp_ctx *c, const imp_var *v, int use, imp_xval *out, imp_why *why)
{
    int idx = (int)(v - c->h.var);
    char n[64];
    word(c->s, v->name, n);
    for (int i = 0; i < c->nlets && !c->inline_locals; i++)
        if (c->lets[i].var == idx) {
            *out = (imp_xval){.prec = IMP_P_PRIMARY, .uses = c->lets[i].uses};
            snprintf(out->s, sizeof out->s, "%s", c->lets[i].name);
            return 0;
        }
    if (v->init_from < 0)
        return imp_whyf(why, use, "'%s' (line %d) is declared without a value", n, imp_line(c, v->name));
    imp_xval val;
    if (xlate(c, v->init_from, v->init_to, &val, why) < 0)
        return -1;
    if (val.addr) {           /* a buffer's address: no let, only its alignment is known */
        *out = val;
        return 0;
    }
    if (c->inline_locals) {   /* a check, read with the values in place */
        *out = val;
        if (val.prec != IMP_P_PRIMARY) {
            snprintf(out->s, sizeof out->s, "(%.*s)", (int)sizeof out->s - 3, val.s);
            out->prec = IMP_P_PRIMARY;
        }
        return 0;
    }
    return add_let(c, n, &val, idx, -1, out, why, use);
}

/* ---- names ------------------------------------------------------------------ */

static int param_value(imp_ctx *c, const imp_var *v, int use, imp_xval *out, imp_why *why)
{
    char n[64], dims[128];
    int idx = (int)(v - c->h.var), a = c->pmap[idx].arg;
    const imp_pmap *pm = &c->pmap[idx];
    word(c->s, v->name, n);
    if (pm->kind == IMP_M_ARG && c->t->args[a].kind == KILN_ARG_DIM) {
        *out = (imp_xval){.prec = IMP_P_PRIMARY, .uses = idx < 64 ? 1ULL << idx : 0};
        snprintf(out->s, sizeof out->s, "%s", c->t->args[a].name);
        return 0;
    }
    if (pm->kind == IMP_M_CONST || pm->kind == IMP_M_KNOB) {
        *out = (imp_xval){.prec = pm->text[0] == '-' ? IMP_P_UNARY : IMP_P_PRIMARY};
        snprintf(out->s, sizeof out->s, "%s", pm->text);
        return 0;
    }
    if (v->cls == IMP_C_TENSOR)
        return imp_whyf(why, use, "'%s' is a tensor; launch sizes come from its size(), "
                        "numel() or stride()", n);
    list_kind(c->t, KILN_ARG_DIM, dims, sizeof dims);
    if (a >= 0)
        return imp_whyf(why, use, "'%s' stands for the task's arg %s; launch sizes come from its "
                    "dims (%s)", n, c->t->args[a].name, dims);
    return imp_whyf(why, use, "the parameter '%s' has no counterpart among the task's dims (%s): "
                "name it as the dim it is, or pass --map %s=DIM (a constant or knob: =1, "
                "=BLOCK)", n, dims, n);
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

static int define_count(const imp_file *f, const char *n)
{
    int k = 0;
    for (int i = 0; i < f->npp; i++)
        k += (f->pp[i].define || f->pp[i].undef) && strcmp(f->pp[i].name, n) == 0;
    return k;
}

int imp_find_define(const imp_ctx *c, const char *n, imp_def *out)
{
    const imp_pp *d = imp_define(c->f, n);
    *out = (imp_def){d, c->s, c->f, c->o->file};
    for (int k = 0; !d && c->units && k < c->units->n; k++)
        if ((d = imp_define(&c->units->u[k].f, n)) != NULL)
            *out = (imp_def){d, &c->units->u[k].s, &c->units->u[k].f, c->units->u[k].name};
    return d != NULL;
}

/* An object-like #define: its name when it is a plain integer, else its
 * body translated. */
static int define_value(imp_ctx *c, const imp_def *dd, int tok, imp_xval *out, imp_why *why)
{
    imp_src b;
    kiln_error e;
    const imp_pp *d = dd->pp;
    int dl = dd->s->tok[d->tok].line;
    if (d->function_like)
        return imp_whyf(why, tok, "'%s' is a function-like macro used without arguments", d->name);
    if (d->conditional || define_count(dd->f, d->name) > 1)
        return imp_whyf(why, tok, "'%s' is #defined inside #if or more than once (%s:%d), so its "
                    "value is not known", d->name, dd->file, dl);
    if (imp_lex_macro(&b, dd->s->text + d->body_at, d->body_len, &e) < 0)
        return imp_whyf(why, tok, "the #define of '%s' (%s:%d): %s", d->name, dd->file, dl,
                        e.msg);
    int rc = 0;
    if (plain_decimal(&b)) {
        snprintf(out->s, sizeof out->s, "%s", d->name);
        out->prec = IMP_P_PRIMARY;
    } else {
        xctx x = {c, 0, NULL, 0};
        imp_xenv env = env_of(&x);
        if ((rc = imp_expr(&b, 0, b.ntok, &env, out, why)) < 0) {
            char msg[sizeof why->msg];
            snprintf(msg, sizeof msg, "%s", why->msg);
            imp_whyf(why, tok, "in the #define of %s (%s:%d): %s", d->name, dd->file, dl, msg);
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
    imp_def d;
    if (imp_find_define(c, n, &d))
        return define_value(c, &d, tok, out, why);
    for (int k = 0; k < c->nknob; k++)
        if (strcmp(c->knob[k].name, n) == 0) {
            *out = (imp_xval){.prec = IMP_P_PRIMARY};
            snprintf(out->s, sizeof out->s, "%s", n);
            return 0;
        }
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

/* ---- tensors ------------------------------------------------------------------ */

void imp_shape_dim(const imp_ctx *c, int a, int k, char *out, size_t cap)
{
    const kiln_arg *g = &c->t->args[a];
    const char *d = c->t->dims[g->shape[k]];
    if (g->shape_mul[k] > 1)
        snprintf(out, cap, "%d * %s", g->shape_mul[k], d);
    else
        snprintf(out, cap, "%s", d);
}

/* Elements [from, rank) of arg a's shape multiplied, as manifest text ("1"
 * for none); prec its precedence. */
static void shape_product(const imp_ctx *c, int a, int from, char *out, size_t cap, int *prec)
{
    size_t used = 0;
    int n = 0;
    out[0] = '\0';
    for (int k = from; k < c->t->args[a].rank && used < cap; k++, n++) {
        char d[64];
        imp_shape_dim(c, a, k, d, sizeof d);
        used += (size_t)snprintf(out + used, cap - used, "%s%s", n ? " * " : "", d);
    }
    if (n == 0)
        snprintf(out, cap, "1");
    *prec = n > 1 || (n == 1 && c->t->args[a].shape_mul[from] > 1) ? IMP_P_TERM : IMP_P_PRIMARY;
}

void imp_elems(const imp_ctx *c, int a, char *out, size_t cap)
{
    int prec;
    shape_product(c, a, 0, out, cap, &prec);
}

/* The task buffer tensor v stands for (its input when in place), or -1. */
static int tensor_arg(const imp_ctx *c, const imp_var *v)
{
    const imp_pmap *pm = &c->pmap[v - c->h.var];
    return pm->kind == IMP_M_ARG || pm->kind == IMP_M_INPLACE ? pm->arg : -1;
}

/* Dimension index i (negative from the end) of a rank-r shape, or -1. */
static int dim_index(const imp_xval *i, int rank)
{
    long long k;
    char *end;
    k = strtoll(i->s, &end, 10);
    if (*end || end == i->s)
        return -1;
    k = k < 0 ? k + rank : k;
    return k >= 0 && k < rank ? (int)k : -1;
}

static int x_method(void *p, const imp_src *s, int obj, int method, int nargs,
                    const imp_xval *args, imp_xval *out, imp_why *why)
{
    xctx *x = p;
    imp_ctx *c = x->c;
    char o[64], m[64], buf[KILN_EXPR_MAX];
    word(s, obj, o);
    word(s, method, m);
    const imp_var *v = x->host ? imp_host_var(&c->h, obj) : NULL;
    if (!v || v->cls != IMP_C_TENSOR)
        return imp_whyf(why, obj, "'%s.%s()': %s", o, m, v ? "a method of no tensor"
                        : "'%s' is no parameter or local of this function");
    if (!v->is_param)
        return imp_whyf(why, obj, "'%s' is a tensor made here (line %d); kiln passes the task's "
                        "buffers only", o, imp_line(c, v->name));
    int a = tensor_arg(c, v), rank = a >= 0 ? c->t->args[a].rank : 0, prec = IMP_P_PRIMARY;
    if (a < 0)
        return imp_whyf(why, obj, "the tensor '%s' stands for no buffer of the task; pass "
                        "--map %s=ARG", o, o);
    *out = (imp_xval){.prec = IMP_P_PRIMARY};
    if ((strcmp(m, "size") == 0 || strcmp(m, "stride") == 0) && nargs == 1) {
        int k = dim_index(&args[0], rank);
        if (k < 0)
            return imp_whyf(why, obj, "'%s.%s(%s)': %s has %d dimensions in the task (%s)", o, m,
                            args[0].s, c->t->args[a].name, rank, c->t->args[a].name);
        if (m[1] == 'i')
            imp_shape_dim(c, a, k, buf, sizeof buf), prec = c->t->args[a].shape_mul[k] > 1
                                                               ? IMP_P_TERM : IMP_P_PRIMARY;
        else   /* kiln's buffers are contiguous: the product of the dims after k */
            shape_product(c, a, k + 1, buf, sizeof buf, &prec);
    } else if ((strcmp(m, "numel") == 0 || strcmp(m, "size") == 0) && nargs == 0) {
        shape_product(c, a, 0, buf, sizeof buf, &prec);
    } else if ((strcmp(m, "dim") == 0 || strcmp(m, "ndimension") == 0) && nargs == 0) {
        snprintf(buf, sizeof buf, "%d", rank);
    } else if ((strcmp(m, "is_contiguous") == 0 || strcmp(m, "is_cuda") == 0 ||
                strcmp(m, "defined") == 0) && nargs <= 1) {
        snprintf(buf, sizeof buf, "1");   /* kiln's buffers are dense device memory */
        out->boolean = 1;
    } else if ((strcmp(m, "element_size") == 0 || strcmp(m, "itemsize") == 0) && nargs == 0) {
        const kiln_arg *g = &c->t->args[a];
        if (g->dtype_is_var)
            snprintf(buf, sizeof buf, "sizeof(T)");
        else
            snprintf(buf, sizeof buf, "sizeof(%s)", kiln_dtype_name(g->dtype));
    } else if (strstr(m, "data_ptr") && nargs == 0) {
        snprintf(buf, sizeof buf, "%s.%s()", o, m);
        out->addr = 1;
    } else {
        return imp_whyf(why, obj, "'%s.%s()' is known only at run time (kiln passes each buffer "
                        "in the task's dtype, contiguous, on its device)", o, m);
    }
    snprintf(out->s, sizeof out->s, "%s", buf);
    out->prec = prec;
    return 0;
}

/* Two parameters mapped to one dim, multiplied: that dim squared, which
 * no host code means (B * T with --map B=rows --map T=rows). */
static int x_product(void *p, const imp_xval *l, const imp_xval *r, int op, imp_why *why)
{
    xctx *x = p;
    imp_ctx *c = x->c;
    for (int i = 0; i < 64 && i < c->h.nvar; i++) {
        if (!(l->uses >> i & 1))
            continue;
        for (int j = 0; j < 64 && j < c->h.nvar; j++) {
            int a = c->pmap[i].arg;
            if (i == j || !(r->uses >> j & 1) || c->pmap[j].kind != IMP_M_ARG ||
                c->pmap[i].kind != IMP_M_ARG || c->pmap[j].arg != a)
                continue;
            char pi[64], pj[64], hi[96], hj[96];
            const char *d = c->t->args[a].name;
            word(c->s, c->h.var[i].name, pi);
            word(c->s, c->h.var[j].name, pj);
            snprintf(hi, sizeof hi, strcmp(c->pmap[i].how, "--map") == 0 ? "--map %s=%s"
                     : "%s by %s", pi, strcmp(c->pmap[i].how, "--map") == 0 ? d : c->pmap[i].how);
            snprintf(hj, sizeof hj, strcmp(c->pmap[j].how, "--map") == 0 ? "--map %s=%s"
                     : "%s by %s", pj, strcmp(c->pmap[j].how, "--map") == 0 ? d : c->pmap[j].how);
            return imp_whyf(why, op, "'%s * %s' squares the task's %s: both parameters stand for "
                            "it (%s, %s); map each to what it is (another dim, or a constant: "
                            "--map %s=1)", l->s, r->s, d, hi, hj, pj);
        }
    }
    return 0;
}

static int x_constant(void *p, const char *expr, long long *out)
{
    xctx *x = p;
    return imp_const_value(x->c, expr, out);
}

/* data_ptr, const_data_ptr, mutable_data_ptr: a tensor's data. */
static int data_ptr_word(const imp_src *s, int tok)
{
    size_t n = s->tok[tok].len;
    return s->tok[tok].kind == IMP_IDENT && n >= 8 &&
           memcmp(s->text + s->tok[tok].at + n - 8, "data_ptr", 8) == 0;
}

void imp_strip_casts(const imp_src *s, int *from, int *to)
{
    for (int again = 1; again && *to - *from > 1;) {
        int f = *from, close = s->tok[f].match;
        again = 0;
        if ((imp_is(s, f, "reinterpret_cast") || imp_is(s, f, "static_cast") ||
             imp_is(s, f, "const_cast")) && imp_is(s, *to - 1, ")")) {
            int open = s->tok[*to - 1].match;
            *from = open + 1, *to -= 1, again = 1;
        } else if (imp_is(s, f, "(") && close == *to - 1) {
            *from += 1, *to -= 1, again = 1;
        } else if (imp_is(s, f, "(") && close < *to - 1) {
            int type = 1;
            for (int i = f + 1; i < close; i++)
                type &= s->tok[i].kind == IMP_IDENT || imp_is(s, i, "*") || imp_is(s, i, "::");
            if (type)
                *from = close + 1, again = 1;
        }
    }
}

const imp_var *imp_buffer_source(const imp_ctx *c, int from, int to)
{
    const imp_src *s = c->s;
    for (int depth = 0; depth < 8; depth++) {
        int f = from, t = to;
        imp_strip_casts(s, &f, &t);
        /* T.data_ptr<X>(), T.const_data_ptr(), ...: the tensor T */
        if (t - f >= 5 && s->tok[f].kind == IMP_IDENT && imp_is(s, f + 1, ".") &&
            data_ptr_word(s, f + 2) && imp_is(s, t - 1, ")") && imp_is(s, t - 2, "("))
            t = f + 1;
        if (t - f != 1 || s->tok[f].kind != IMP_IDENT)
            return NULL;
        const imp_var *v = imp_host_var(&c->h, f);
        if (!v || v->is_param)
            return v;
        if (v->init_from < 0)
            return NULL;
        from = v->init_from;
        to = v->init_to;
    }
    return NULL;
}

/* ---- helpers: one-return functions and function-like macros -------------- */

/* Inline [from, to) of src with the parameters bound. */
static int inline_body(imp_ctx *c, const imp_src *src, int from, int to, const imp_bind *b,
                       int nb, imp_xval *out, imp_why *why)
{
    xctx x = {c, 0, b, nb};
    imp_xenv env = env_of(&x);
    if (++c->depth > 8)
        return c->depth--, imp_whyf(why, from, "helpers nested deeper than 8");
    int rc = imp_expr(src, from, to, &env, out, why);
    c->depth--;
    return rc;
}

/* A function whose body is `return EXPR;`, in src (the file or a header). */
static int call_function(imp_ctx *c, const imp_src *s, const imp_fn *fn, int nargs,
                         const imp_xval *args, imp_xval *out, imp_why *why)
{
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

/* A function-like #define (of the file or a header). */
static int call_macro(imp_ctx *c, const imp_def *dd, int nargs, const imp_xval *args,
                      imp_xval *out, imp_why *why)
{
    imp_src ps, bs;
    kiln_error e;
    imp_bind b[8];
    const imp_pp *d = dd->pp;
    int pf[8], pt[8], rc = -1;
    if (imp_lex_macro(&ps, dd->s->text + d->params_at, d->params_len, &e) < 0)
        return imp_whyf(why, 0, "its parameters: %s", e.msg);
    int n = imp_split(&ps, 0, ps.ntok, 0, pf, pt, 8);
    for (int k = 0; k < n && k < nargs; k++) {
        imp_word(&ps, pf[k], b[k].name, sizeof b[k].name);
        b[k].val = args[k];
    }
    if (n != nargs)
        imp_whyf(why, 0, "it takes %d arguments, not %d", n, nargs);
    else if (imp_lex_macro(&bs, dd->s->text + d->body_at, d->body_len, &e) < 0)
        imp_whyf(why, 0, "its body: %s", e.msg);
    else {
        rc = inline_body(c, &bs, 0, bs.ntok, b, n, out, why);
        imp_src_free(&bs);
    }
    imp_src_free(&ps);
    return rc;
}

/* The one-return function named n with a body: in the file, else a header. */
static const imp_fn *find_helper(const imp_ctx *c, const char *n, const imp_src **src,
                                 const char **file)
{
    for (int u = -1; u < (c->units ? c->units->n : 0); u++) {
        const imp_file *f = u < 0 ? c->f : &c->units->u[u].f;
        const imp_src *s = u < 0 ? c->s : &c->units->u[u].s;
        for (int k = imp_fn_find(f, s, n, -1, 0); k >= 0; k = imp_fn_find(f, s, n, -1, k + 1))
            if (f->fn[k].body >= 0) {
                *src = s;
                *file = u < 0 ? c->o->file : c->units->u[u].name;
                return &f->fn[k];
            }
    }
    return NULL;
}

static int x_call(void *p, const imp_src *s, int fn, int nargs, const imp_xval *args,
                  imp_xval *out, imp_why *why)
{
    xctx *x = p;
    imp_ctx *c = x->c;
    char n[64], msg[sizeof why->msg];
    const imp_src *hs = NULL;
    const char *file = NULL;
    word(s, fn, n);
    const imp_fn *h = find_helper(c, n, &hs, &file);
    imp_def d;
    int rc, where;
    if (h)
        rc = call_function(c, hs, h, nargs, args, out, why), where = hs->tok[h->name].line;
    else if (imp_find_define(c, n, &d) && d.pp->function_like)
        rc = call_macro(c, &d, nargs, args, out, why), where = d.s->tok[d.pp->tok].line,
        file = d.file;
    else
        return imp_whyf(why, fn, "'%s' is no function import can translate: min, max, and the "
                    "functions of this file and its headers whose body is one return statement "
                    "(and function-like macros) are; is it a runtime query?", n);
    if (rc < 0) {
        snprintf(msg, sizeof msg, "%s", why->msg);
        imp_whyf(why, fn, "in %s (%s:%d): %s", n, file, where, msg);
    }
    return rc;
}

/* ---- parameters to task args --------------------------------------------------- */

int imp_fits(imp_cls cls, kiln_arg_kind kind)
{
    int ptr = cls == IMP_C_PTR || cls == IMP_C_CPTR || cls == IMP_C_TENSOR;
    int num = cls == IMP_C_I32 || cls == IMP_C_I64;
    int real = cls == IMP_C_F32 || cls == IMP_C_F64;
    return kind == KILN_ARG_INPUT || kind == KILN_ARG_OUTPUT ? ptr
           : kind == KILN_ARG_DIM                           ? num
                                                            : num || real;
}

static int unmapped(const imp_ctx *c, int i)
{
    return c->h.var[i].is_param && c->pmap[i].kind == IMP_M_NONE;
}

static void set_arg(imp_ctx *c, int i, int a, const char *how, int *used)
{
    c->pmap[i].kind = IMP_M_ARG;
    c->pmap[i].arg = a;
    c->pmap[i].how = how;
    used[a] = 1;
}

static void by_name(imp_ctx *c, int *used)
{
    for (int i = 0; i < c->h.nvar; i++) {
        char n[64];
        const imp_var *v = &c->h.var[i];
        if (!unmapped(c, i))
            continue;
        word(c->s, v->name, n);
        for (int a = 0; a < c->t->nargs; a++)
            if (!used[a] && strcmp(c->t->args[a].name, n) == 0 && imp_fits(v->cls, c->t->args[a].kind))
                set_arg(c, i, a, "name", used);
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
        if (!unmapped(c, i))
            continue;
        word(c->s, v->name, n);
        for (int a = 0; a < c->t->nargs; a++)
            if (!used[a] && imp_fits(v->cls, c->t->args[a].kind) && similar(n, c->t->args[a].name))
                found = a, count++;
        if (count == 1)
            set_arg(c, i, found, "similar name", used);
    }
}

/* What position among the task's args a parameter takes: 1 an input (a
 * const pointer, a tensor the kernels only read), 2 an output (a pointer,
 * a tensor they write), 3 a dim, 4 a scalar; 0 none. */
static int group_of(const imp_ctx *c, int i)
{
    const imp_var *v = &c->h.var[i];
    switch (v->cls) {
    case IMP_C_CPTR: return 1;
    case IMP_C_PTR: return 2;
    case IMP_C_TENSOR: return c->pmap[i].role == 1 ? 1 : c->pmap[i].role & 2 ? 2 : 0;
    case IMP_C_I32: case IMP_C_I64: return 3;
    case IMP_C_F32: case IMP_C_F64: return 4;
    default: return 0;
    }
}

static const char *position_how(const imp_ctx *c, int i)
{
    switch (group_of(c, i)) {
    case 1: return c->h.var[i].cls == IMP_C_TENSOR ? "a tensor the kernels read, by position"
                                                   : "const pointer, by position";
    case 2: return c->h.var[i].cls == IMP_C_TENSOR ? "a tensor the kernels write, by position"
                                                   : "non-const pointer, by position";
    case 3: return "integer, by position";
    default: return "floating point, by position";
    }
}

/* The parameters of group g still unmapped, paired in order with the
 * task's unmapped args of kind, when both are equally many. */
static void by_position(imp_ctx *c, int *used, int g, kiln_arg_kind kind)
{
    int vp[KILN_MAX_ARGS], ap[KILN_MAX_ARGS], nv = 0, na = 0;
    for (int i = 0; i < c->h.nvar && nv < KILN_MAX_ARGS; i++)
        if (unmapped(c, i) && group_of(c, i) == g)
            vp[nv++] = i;
    for (int a = 0; a < c->t->nargs; a++)
        if (!used[a] && c->t->args[a].kind == kind)
            ap[na++] = a;
    if (nv != na)
        return;
    for (int k = 0; k < nv; k++)
        set_arg(c, vp[k], ap[k], position_how(c, vp[k]), used);
}

/* Which tensor parameters the kernels read and which they write: the
 * const-ness of the kernel parameter each one's data_ptr() is passed to. */
static void tensor_roles(imp_ctx *c)
{
    for (int l = 0; l < c->h.nlaunch; l++) {
        const imp_launch *L = &c->h.launch[l];
        char n[64];
        int tf[IMP_MAX_ARGS], tt[IMP_MAX_ARGS], nm[IMP_MAX_ARGS];
        word(c->s, L->kernel, n);
        int k = imp_fn_find(c->f, c->s, n, IMP_F_KERNEL, 0);
        int np = k >= 0 ? imp_params(c->s, c->f->fn[k].params, tf, tt, nm, IMP_MAX_ARGS) : -1;
        for (int a = 0; a < L->nargs && a < np; a++) {
            const imp_var *v = imp_buffer_source(c, L->arg_from[a], L->arg_to[a]);
            char elem[32];
            if (!v || !v->is_param || v->cls != IMP_C_TENSOR)
                continue;
            imp_cls kc = imp_type_class(c->s, tf[a], tt[a], elem, sizeof elem);
            c->pmap[v - c->h.var].role |= kc == IMP_C_CPTR ? 1 : kc == IMP_C_PTR ? 2 : 0;
        }
    }
}

static void account_params(imp_ctx *c)
{
    kiln_strbuf b = {0};
    for (int i = 0; i < c->h.nvar; i++) {
        char n[64];
        const imp_var *v = &c->h.var[i];
        const imp_pmap *pm = &c->pmap[i];
        if (!v->is_param)
            continue;
        word(c->s, v->name, n);
        kiln_sb_printf(&b, "%s%s", b.len ? ", " : "", n);
        switch (pm->kind) {
        case IMP_M_ARG:
            kiln_sb_printf(&b, " -> %s (%s)", c->t->args[pm->arg].name, pm->how);
            break;
        case IMP_M_INPLACE:
            kiln_sb_printf(&b, " -> %s, updated in place as %s (%s)", c->t->args[pm->arg].name,
                           c->t->args[pm->out].name, pm->how);
            break;
        case IMP_M_SCRATCH:
            kiln_sb_printf(&b, " -> scratch %s (%s)", c->scratch[pm->scratch].name, pm->how);
            break;
        case IMP_M_CONST:
            kiln_sb_printf(&b, " -> %s (%s)", pm->text, pm->how);
            break;
        case IMP_M_KNOB:
            kiln_sb_printf(&b, " -> knob %s (%s)", pm->text, pm->how);
            break;
        default:
            kiln_sb_printf(&b, ": %s", v->cls == IMP_C_STREAM ? "a stream" : "no counterpart");
        }
    }
    imp_addf(&c->account, "parameters: %s", b.p ? b.p : "(none)");
    free(b.p);
    for (int i = 0; i < c->h.nvar; i++)
        if (c->pmap[i].kind == IMP_M_ARG && strcmp(c->pmap[i].how, "name") != 0 &&
            strcmp(c->pmap[i].how, "--map") != 0) {
            imp_addf(&c->account, "  (not mapped by name: check those, or pass --map PARAM=ARG)");
            break;
        }
}

int imp_map_begin(imp_ctx *c, kiln_error *err)
{
    c->pmap = malloc(((size_t)c->h.nvar + 1) * sizeof *c->pmap);
    if (!c->pmap)
        return kiln_fail(err, "out of memory");
    for (int i = 0; i < c->h.nvar; i++)
        c->pmap[i] = (imp_pmap){.kind = IMP_M_NONE, .arg = -1, .out = -1, .scratch = -1};
    tensor_roles(c);
    return 0;
}

int imp_map_rest(imp_ctx *c, int *used)
{
    by_name(c, used);
    by_similar_name(c, used);
    by_position(c, used, 1, KILN_ARG_INPUT);
    by_position(c, used, 2, KILN_ARG_OUTPUT);
    by_position(c, used, 3, KILN_ARG_DIM);
    by_position(c, used, 4, KILN_ARG_SCALAR);
    account_params(c);
    return 0;
}
