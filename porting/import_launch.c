/* import_launch.c - one launch of the host function as manifest fields
 * (import_map.h): its kernel (extern "C" added, or a template instance to
 * copy out), grid and block (a dim3 local, dim3(...) or one number), shared
 * memory, stream (dropped when it is the caller's, a problem when made or
 * chosen here), and its arguments as task args, checked against the
 * kernel's parameter types (kiln passes buffers as device pointers, dims
 * as int, scalars by their dtype). A launch inside an if or a loop is a
 * problem: the manifest's launches are a fixed, unconditional list. */
#include "import_map.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "c_lex.h"


static void word(const imp_src *s, int tok, char *buf)
{
    imp_word(s, tok, buf, 64);
}

/* A manifest field that could not be translated: "TODO: <the C text>". */
static void todo(const imp_ctx *c, int from, int to, char *out)
{
    char text[KILN_EXPR_MAX - 8];
    imp_text(c->s, from, to, text, sizeof text);
    snprintf(out, KILN_EXPR_MAX, "TODO: %s", text);
}

/* ---- kernels and template instances ------------------------------------------ */

/* Is [decl, name) of a kernel "[extern "C"] __global__ void" with only
 * __launch_bounds__(...) around, as the manifest's check reads one? */
static int plain_kernel_decl(const imp_src *s, const imp_fn *fn)
{
    int i = fn->extern_c_direct ? fn->decl + 2 : fn->decl, want = 0;
    static const char *const words[] = {"__global__", "void"};
    for (; i < fn->name; i++) {
        if (imp_is(s, i, "__launch_bounds__") && imp_is(s, i + 1, "(")) {
            i = s->tok[i + 1].match;
            continue;
        }
        if (want == 2 || !imp_is(s, i, words[want]))
            return 0;
        want++;
    }
    return want == 2;
}

/* A template argument [from, to) as text: an integer value, or the
 * words as written (a type or a #define). */
static int template_arg(imp_ctx *c, int from, int to, int host, char *out, imp_why *why)
{
    imp_xval v;
    long long val;
    for (int k = 0; host && k < c->host->ntparams; k++)
        for (int i = from; i < to; i++)
            if (c->s->tok[i].len == c->s->tok[c->host->tparam[k]].len &&
                memcmp(c->s->text + c->s->tok[i].at, c->s->text + c->s->tok[c->host->tparam[k]].at,
                       c->s->tok[i].len) == 0)
                return imp_whyf(why, i, "it depends on the host function's template parameter; "
                            "import needs a concrete instance such as kernel<4>");
    if (host && c->dtype_name && to - from == 1 && imp_is(c->s, from, c->dtype_name)) {
        snprintf(out, 64, "kiln_t");   /* a dispatch's scalar_t: the run's dtype */
        c->uses_kiln_t = 1;
        return 0;
    }
    imp_why tmp = {0};
    if (imp_xlate(c, from, to, host, &v, &tmp) == 0 && imp_const_value(c, v.s, &val) == 0) {
        snprintf(out, 64, "%lld", val);
        return 0;
    }
    for (int i = from; i < to; i++)
        if (c->s->tok[i].kind != IMP_IDENT && !imp_is(c->s, i, "::") && !imp_is(c->s, i, "*"))
            return tmp.msg[0] ? (*why = tmp, -1)
                              : imp_whyf(why, from, "a template argument import cannot read");
    imp_text(c->s, from, to, out, 64);
    return 0;
}

/* out = kernel + "_" + args, as an identifier no token of the file is. */
static void instance_name(const imp_ctx *c, const char *kernel, const imp_inst *in, char *out)
{
    char n[KILN_KERNEL_NAME_MAX];
    size_t used = (size_t)snprintf(n, sizeof n, "%s", kernel);
    for (int k = 0; k < in->nargs && used + 2 < sizeof n; k++) {
        n[used++] = '_';
        for (const char *a = in->args[k]; *a && used + 1 < sizeof n; a++)
            if (kiln_is_ident_char(*a) || (*a == ' ' && n[used - 1] != '_'))
                n[used++] = kiln_is_ident_char(*a) ? *a : '_';
        n[used] = '\0';
    }
    for (int tries = 0;; tries++) {
        int clash = 0;
        for (int i = 0; i < c->s->ntok && !clash; i++)
            clash = imp_is(c->s, i, n);
        for (int i = 0; i < c->ninst && !clash; i++)
            clash = strcmp(c->inst[i].name, n) == 0;
        if (!clash || tries > 8)
            break;
        size_t l = strlen(n);
        snprintf(n + (l > sizeof n - 3 ? sizeof n - 3 : l), 3, "_%u", (unsigned)tries % 10u);
    }
    snprintf(out, KILN_KERNEL_NAME_MAX, "%s", n);
}

/* The arguments of template kernel fn at launch L into in; -1 with why. */
static int instance_args(imp_ctx *c, const imp_launch *L, const imp_fn *fn, imp_inst *in,
                         imp_why *why)
{
    int af[IMP_MAX_TPARAMS], at[IMP_MAX_TPARAMS], n = 0;
    if (fn->ntparams < 0)
        return imp_whyf(why, L->kernel, "import cannot read the template parameters (line %d)",
                    imp_line(c, fn->first));
    if (L->targ_from >= 0)
        n = imp_split(c->s, L->targ_from, L->targ_to, 1, af, at, IMP_MAX_TPARAMS);
    if (n < 0 || n > fn->ntparams)
        return imp_whyf(why, L->kernel, "more template arguments than the template has parameters");
    for (int k = 0; k < fn->ntparams; k++) {
        char tp[64];
        word(c->s, fn->tparam[k], tp);
        if (k >= n && fn->tdefault[k] < 0)
            return imp_whyf(why, L->kernel, "the kernel is a template (line %d) and the launch "
                        "leaves '%s' open: no concrete instance to make extern \"C\"",
                        imp_line(c, fn->first), tp);
        int f = k < n ? af[k] : fn->tdefault[k], t = k < n ? at[k] : fn->tdefault_end[k];
        int nlets = c->nlets;   /* lets made only to find the value are dropped */
        int rc = template_arg(c, f, t, k < n, in->args[k], why);
        c->nlets = nlets;
        if (rc < 0)
            return -1;
    }
    in->nargs = fn->ntparams;
    return 0;
}

/* Is template kernel k defined more than once (overloads picked by
 * enable_if, as vLLM's fused_add_rms_norm_kernel), or with a return type
 * other than void? Then a copy cannot be right: NVRTC picks it by name. */
static int overloaded(const imp_ctx *c, int k)
{
    char n[64];
    int defs = 0;
    word(c->s, c->f->fn[k].name, n);
    for (int i = imp_fn_find(c->f, c->s, n, IMP_F_KERNEL, 0); i >= 0;
         i = imp_fn_find(c->f, c->s, n, IMP_F_KERNEL, i + 1))
        defs += c->f->fn[i].body >= 0;
    return defs > 1 || !plain_kernel_decl(c->s, &c->f->fn[k]);
}

/* The instance of template kernel fn (index k) that launch L names: its
 * index in c->inst, or -1 with why. */
static int instance(imp_ctx *c, const imp_launch *L, int k, imp_why *why)
{
    const imp_fn *fn = &c->f->fn[k];
    imp_inst in = {.fn = k};
    char kn[64];
    word(c->s, fn->name, kn);
    if (instance_args(c, L, fn, &in, why) < 0)
        return -1;
    size_t used = (size_t)snprintf(in.label, sizeof in.label, "%s<", kn);
    for (int a = 0; a < in.nargs && used < sizeof in.label; a++)
        used += (size_t)snprintf(in.label + used, sizeof in.label - used, "%s%s", a ? ", " : "",
                                 in.args[a]);
    if (used < sizeof in.label - 1)
        snprintf(in.label + used, sizeof in.label - used, ">");
    for (int i = 0; i < c->ninst; i++)
        if (strcmp(c->inst[i].label, in.label) == 0)
            return i;
    if (c->ninst == IMP_MAX_INSTANCES)
        return imp_whyf(why, L->kernel, "more than %d template instances", IMP_MAX_INSTANCES);
    in.by_name = overloaded(c, k);
    if (in.by_name) {   /* the launch's own spelling, at global scope as the host's */
        char q[160];
        imp_text(c->s, L->qual, L->kernel, q, sizeof q);
        size_t n = (size_t)snprintf(in.name, sizeof in.name, "%s%s", q, in.label);
        for (char *p = in.name; *p; p++)   /* "vllm :: k" as written: no blanks */
            if (*p == ' ' && (p[1] == ':' || (p > in.name && p[-1] == ':')))
                memmove(p, p + 1, strlen(p)), p--;
        if (n >= sizeof in.name)
            return imp_whyf(why, L->kernel, "the kernel's name '%s%s' is longer than %d "
                            "characters", q, in.label, KILN_KERNEL_NAME_MAX - 1);
    } else {
        instance_name(c, kn, &in, in.name);
    }
    c->inst[c->ninst] = in;
    return c->ninst++;
}

/* Every declaration of kernel n, from index k on, gets extern "C" where
 * it has none; one written otherwise than the manifest's check reads a
 * kernel is a problem. */
static void mark_extern_c(imp_ctx *c, const char *n, int k)
{
    for (int i = k; i >= 0; i = imp_fn_find(c->f, c->s, n, IMP_F_KERNEL, i + 1)) {
        if (!plain_kernel_decl(c->s, &c->f->fn[i]))
            imp_problem(c, c->f->fn[i].decl, "the kernel's declaration", "a kernel must read "
                        "'extern \"C\" __global__ void NAME(...)' (with __launch_bounds__ if "
                        "any) to be launched by name; write it so by hand");
        else if (!c->f->fn[i].extern_c_direct)
            c->externc[i] = 1;
    }
}

/* Launch L's kernel: its name in the manifest into T->kernel; *fnidx the
 * kernel (-1 when unknown), *inst its instance (-1 when none). */
static void kernel_of(imp_ctx *c, const imp_launch *L, imp_tlaunch *T, int *fnidx, int *inst)
{
    char n[64];
    imp_why why = {0};
    word(c->s, L->kernel, n);
    snprintf(T->kernel, sizeof T->kernel, "%s", n);
    *inst = -1;
    int k = imp_fn_find(c->f, c->s, n, IMP_F_KERNEL, 0), def = k, first = k;
    while (def >= 0 && c->f->fn[def].body < 0)
        def = imp_fn_find(c->f, c->s, n, IMP_F_KERNEL, def + 1);
    *fnidx = k = def >= 0 ? def : k;
    const imp_var *v = imp_host_var(&c->h, L->kernel);
    if (v) {
        char msg[200];
        snprintf(msg, sizeof msg, "its kernel is the variable '%s' (line %d), chosen at run "
                 "time; the manifest names one kernel per launch", n, imp_line(c, v->name));
        imp_problem(c, L->kernel, "the launch", msg);
        *fnidx = -1;
        return;
    }
    if (k < 0) {
        imp_problem(c, L->kernel, "the launch",
                imp_fn_find(c->f, c->s, n, -1, 0) >= 0
                    ? "its kernel is no __global__ function of this file"
                    : "its kernel is not defined in this file; a candidate is one file");
        return;
    }
    const imp_fn *fn = &c->f->fn[k];
    if (fn->tpl_open >= 0) {
        if ((*inst = instance(c, L, k, &why)) < 0)
            imp_problem(c, why.tok, "the kernel's template instance", why.msg);
        else
            memcpy(T->kernel, c->inst[*inst].name, sizeof T->kernel);
        return;
    }
    if (L->targ_from >= 0)
        imp_problem(c, L->kernel, "the launch", "it gives template arguments to a kernel that is "
                    "no template");
    mark_extern_c(c, n, first);
}

/* ---- kernel parameters ------------------------------------------------------- */

typedef struct kparam {
    imp_cls cls;
    char elem[32];
    char text[96];
} kparam;

/* Copy [from, to) of the file with instance in's template parameters
 * replaced by its arguments (fn the template). */
static void copy_subst(kiln_strbuf *b, const imp_ctx *c, const imp_fn *fn, const imp_inst *in,
                       int from, int to)
{
    const imp_src *s = c->s;
    for (int i = from; i < to; i++) {
        const imp_tok *k = &s->tok[i];
        if (i > from)
            kiln_sb_addn(b, s->text + s->tok[i - 1].at + s->tok[i - 1].len,
                        k->at - (s->tok[i - 1].at + s->tok[i - 1].len));
        int p = -1;
        for (int j = 0; in && j < fn->ntparams && p < 0 && k->kind == IMP_IDENT; j++)
            if (s->tok[fn->tparam[j]].len == k->len &&
                memcmp(s->text + s->tok[fn->tparam[j]].at, s->text + k->at, k->len) == 0 &&
                !imp_is(s, i - 1, ".") && !imp_is(s, i - 1, "->") && !imp_is(s, i - 1, "::"))
                p = j;
        if (p >= 0)
            kiln_sb_printf(b, "%s", in->args[p]);
        else
            kiln_sb_addn(b, s->text + k->at, k->len);
    }
}

/* The parameters of kernel fn (instance in, or NULL): their number, or -1. */
static int kernel_params(const imp_ctx *c, const imp_fn *fn, const imp_inst *in, kparam *out,
                         int cap)
{
    kiln_strbuf b = {0};
    imp_src ps;
    kiln_error e;
    int tf[IMP_MAX_ARGS], tt[IMP_MAX_ARGS], nm[IMP_MAX_ARGS];
    copy_subst(&b, c, fn, in, fn->params, c->s->tok[fn->params].match + 1);
    if (b.oom || !b.p || imp_lex(&ps, b.p, b.len, &e) < 0) {
        free(b.p);
        return -1;
    }
    int n = imp_params(&ps, 0, tf, tt, nm, cap < IMP_MAX_ARGS ? cap : IMP_MAX_ARGS);
    for (int k = 0; k < n; k++) {
        out[k].cls = imp_type_class(&ps, tf[k], tt[k], out[k].elem, sizeof out[k].elem);
        imp_text(&ps, tf[k], nm[k] >= 0 ? nm[k] + 1 : tt[k], out[k].text, sizeof out[k].text);
    }
    imp_src_free(&ps);
    free(b.p);
    return n;
}

/* The dtype a kernel's buffer element type fixes, or NULL (kiln_t, T). */
static const char *elem_dtype(const char *elem)
{
    static const char *const m[][2] = {
        {"float", "f32"}, {"float2", "f32"}, {"float4", "f32"}, {"half", "f16"},
        {"__half", "f16"}, {"half2", "f16"}, {"__half2", "f16"}, {"__nv_bfloat16", "bf16"},
        {"nv_bfloat16", "bf16"}, {"__nv_bfloat162", "bf16"}, {"double", "f64"},
    };
    for (size_t k = 0; k < sizeof m / sizeof m[0]; k++)
        if (strcmp(elem, m[k][0]) == 0)
            return m[k][1];
    return NULL;
}

/* A buffer parameter of a fixed element type: right for that dtype only. */
static void check_dtype(imp_ctx *c, const kparam *p, const kiln_arg *a, int tok)
{
    const char *d = elem_dtype(p->elem);
    char msg[320];
    if (!d)
        return;
    kiln_dtype dt = kiln_dtype_parse(d);
    int ok = 0;
    for (int i = 0; i < c->t->ncuda_dtypes; i++)
        ok |= c->t->cuda_dtypes[i] == dt;
    if (!a->dtype_is_var && a->dtype != dt) {
        snprintf(msg, sizeof msg, "the kernel's '%s' takes %s, but the task's %s is %s",
                 p->text, d, a->name, kiln_dtype_name(a->dtype));
        imp_problem(c, tok, "the kernel's parameter types", msg);
    } else if (a->dtype_is_var && !ok) {
        snprintf(msg, sizeof msg, "the kernel's '%s' takes %s, a dtype task %s does not run "
                 "on CUDA", p->text, d, c->t->name);
        imp_problem(c, tok, "the kernel's parameter types", msg);
    } else if (a->dtype_is_var && c->dtype_only[0] && strcmp(c->dtype_only, d) != 0) {
        imp_problem(c, tok, "the kernel's parameter types", "buffers of different fixed types "
                "(kiln gives every T buffer the run's dtype)");
    } else if (a->dtype_is_var) {
        snprintf(c->dtype_only, sizeof c->dtype_only, "%s", d);
    }
}

static imp_cls expected_cls(const kiln_arg *a)
{
    const char *t = kiln_arg_cuda_type(a);
    if (a->kind == KILN_ARG_INPUT || a->kind == KILN_ARG_OUTPUT)
        return IMP_C_PTR;
    return strcmp(t, "int") == 0 ? IMP_C_I32 : strcmp(t, "long long") == 0 ? IMP_C_I64
           : strcmp(t, "float") == 0 ? IMP_C_F32 : strcmp(t, "double") == 0 ? IMP_C_F64
                                                                          : IMP_C_OTHER;
}

/* The kernel's parameters against the task args the launch passes by
 * name (args[k] >= 0; a computed value was cast to its type already). */
static void check_params(imp_ctx *c, const imp_launch *L, const kparam *p, const int *args)
{
    char msg[320];
    for (int k = 0; k < L->nargs; k++) {
        if (args[k] < 0)
            continue;
        const kiln_arg *a = &c->t->args[args[k]];
        imp_cls want = expected_cls(a), got = p[k].cls == IMP_C_CPTR ? IMP_C_PTR : p[k].cls;
        if (want != IMP_C_OTHER && want != got) {
            snprintf(msg, sizeof msg, "the kernel's parameter '%s' is a %s, and kiln passes "
                     "the task's %s as %s", p[k].text, imp_cls_name(p[k].cls), a->name,
                     kiln_arg_cuda_type(a));
            imp_problem(c, L->arg_from[k], "the kernel's parameter types", msg);
        } else if (want == IMP_C_PTR) {
            check_dtype(c, &p[k], a, L->arg_from[k]);
            if (a->kind == KILN_ARG_INPUT && p[k].cls == IMP_C_PTR)
                imp_addf(&c->notes, "line %d: the kernel's '%s' is not const and gets the "
                         "task's input %s: kiln fails a kernel that changes an input "
                         "(input-modified); if it updates %s in place, map it as IN:OUT",
                         imp_line(c, L->arg_from[k]), p[k].text, a->name, a->name);
        }
    }
}

/* ---- kernel arguments ---------------------------------------------------------- */

/* A computed value e for a kernel parameter of class cls: "e" for an int
 * (unless e reads as a task arg's name), "i64(e)" and the like for the
 * others; -1 with why when kiln cannot pass such a value there. */
static int cast_for(imp_ctx *c, imp_cls cls, const char *text, const char *e, char *out,
                    int tok, imp_why *why)
{
    static const struct { imp_cls c; const char *w; } casts[] = {
        {IMP_C_I64, "i64"}, {IMP_C_F32, "f32"}, {IMP_C_F64, "f64"},
    };
    int named = 0;
    for (int i = 0; i < c->t->nargs; i++)
        named |= strcmp(c->t->args[i].name, e) == 0;
    for (int i = 0; i < c->nscratch; i++)
        named |= strcmp(c->scratch[i].name, e) == 0;
    if (cls == IMP_C_I32 && !named) {
        snprintf(out, KILN_EXPR_MAX, "%s", e);
        return 0;
    }
    if (cls == IMP_C_I32) {
        if (snprintf(out, KILN_EXPR_MAX, "i32(%s)", e) >= KILN_EXPR_MAX)
            return imp_whyf(why, tok, "'%s' grows longer than %d characters", text,
                            KILN_EXPR_MAX - 1);
        return 0;
    }
    for (size_t k = 0; k < sizeof casts / sizeof casts[0]; k++)
        if (casts[k].c == cls) {
            if (snprintf(out, KILN_EXPR_MAX, "%s(%s)", casts[k].w, e) >= KILN_EXPR_MAX)
                return imp_whyf(why, tok, "'%s' grows longer than %d characters", text,
                                KILN_EXPR_MAX - 1);
            return 0;
        }
    return imp_whyf(why, tok, "'%s' is a value the host computes, and the kernel's parameter "
                    "is a %s: kiln passes computed values as int, 64-bit int, float or double",
                    text, imp_cls_name(cls));
}

static void arg_list(const kiln_task *t, char *buf, size_t cap)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < t->nargs && used < cap; i++)
        used += (size_t)snprintf(buf + used, cap - used, "%s%s", i ? ", " : "", t->args[i].name);
}

/* A buffer argument: the parameter v (a pointer or tensor) as the name
 * kiln passes; the task arg's index in *arg (-1 for scratch). */
static int buffer_arg(imp_ctx *c, const imp_var *v, int use, char *out, int *arg, imp_why *why)
{
    const imp_pmap *pm = &c->pmap[v - c->h.var];
    char n[64], names[160];
    word(c->s, v->name, n);
    switch (pm->kind) {
    case IMP_M_ARG:
        *arg = pm->arg;
        snprintf(out, KILN_EXPR_MAX, "%s", c->t->args[pm->arg].name);
        return 0;
    case IMP_M_INPLACE:   /* kiln copies the input into the output first */
        *arg = pm->out;
        snprintf(out, KILN_EXPR_MAX, "%s", c->t->args[pm->out].name);
        return 0;
    case IMP_M_SCRATCH:
        snprintf(out, KILN_EXPR_MAX, "%s", c->scratch[pm->scratch].name);
        return 0;
    default:
        arg_list(c->t, names, sizeof names);
        return imp_whyf(why, use, "the parameter '%s' has no counterpart among the task's args "
                        "(%s): name it as the arg it is, or pass --map %s=ARG%s", n, names, n,
                        v->cls == IMP_C_PTR || v->cls == IMP_C_TENSOR
                            ? " (=scratch for an output the task lacks)"
                        : v->cls == IMP_C_I32 || v->cls == IMP_C_I64
                            ? " (a constant or knob: =1, =BLOCK)" : "");
    }
}

/* The manifest's argument for [from, to) of launch L, given to a kernel
 * parameter of class cls (IMP_C_OTHER when unknown): a task arg or scratch
 * buffer by name, else a value it computes; *arg the task arg passed by
 * name, else -1. -1 with why. */
static int arg_of(imp_ctx *c, int from, int to, imp_cls cls, char *out, int *arg, imp_why *why)
{
    char text[96], n[64];
    int f = from, t = to;
    *arg = -1;
    imp_strip_casts(c->s, &f, &t);
    imp_text(c->s, f, t, text, sizeof text);
    int ptr = cls == IMP_C_PTR || cls == IMP_C_CPTR;
    const imp_var *v = imp_buffer_source(c, from, to);
    if (v && (v->cls == IMP_C_PTR || v->cls == IMP_C_CPTR || v->cls == IMP_C_TENSOR)) {
        if (imp_changed(c, v, from, why) < 0)
            return -1;
        return buffer_arg(c, v, f, out, arg, why);
    }
    const imp_var *lv = t - f == 1 ? imp_host_var(&c->h, f) : NULL;
    if (!v && t - f >= 5 && imp_is(c->s, f + 1, ".") && (lv = imp_host_var(&c->h, f)) != NULL &&
        !lv->is_param)
        return imp_whyf(why, f, "'%s' is a tensor made here (line %d); kiln passes the task's "
                        "buffers only (a temporary buffer is scratch: declare it in the manifest "
                        "by hand)", text, imp_line(c, lv->name));
    if (t - f != 1)
        lv = NULL;
    if (ptr && lv && !lv->is_param)
        return imp_whyf(why, f, "'%s' is computed at line %d; kiln passes task args and scratch "
                        "buffers by name, so compute it inside the kernel", text,
                        imp_line(c, lv->name));
    if (ptr || (v && v->cls == IMP_C_TENSOR))
        return imp_whyf(why, f, "'%s' is %s; kiln passes task args and scratch buffers by name, "
                        "so compute it inside the kernel", text,
                        t - f == 1 ? "no buffer of this function" : "an expression");
    if (t - f == 1 && (v = imp_host_var(&c->h, f)) != NULL && v->is_param) {
        const imp_pmap *pm = &c->pmap[v - c->h.var];
        word(c->s, v->name, n);
        if (imp_changed(c, v, f, why) < 0)
            return -1;
        if (pm->kind == IMP_M_ARG && c->t->args[pm->arg].kind != KILN_ARG_DIM) {
            *arg = pm->arg;   /* a scalar: by name, its type checked after */
            snprintf(out, KILN_EXPR_MAX, "%s", c->t->args[pm->arg].name);
            return 0;
        }
        if (pm->kind == IMP_M_ARG && (cls == IMP_C_OTHER || cls == expected_cls(&c->t->args[pm->arg]))) {
            *arg = pm->arg;
            snprintf(out, KILN_EXPR_MAX, "%s", c->t->args[pm->arg].name);
            return 0;
        }
        if (pm->kind == IMP_M_NONE)
            return buffer_arg(c, v, f, out, arg, why);
    }
    imp_xval x;   /* a dim widened, a constant, a knob, a local: a computed value */
    if (imp_xlate(c, from, to, 1, &x, why) < 0)
        return -1;
    if (x.addr)
        return imp_whyf(why, f, "'%s' is a buffer's address; kiln passes buffers by name", text);
    return cast_for(c, cls == IMP_C_OTHER ? IMP_C_I32 : cls, text, x.s, out, f, why);
}

static void map_args(imp_ctx *c, const imp_launch *L, imp_tlaunch *T, const kparam *p, int np,
                     int *args)
{
    kiln_strbuf acc = {0};
    T->nargs = L->nargs;
    for (int k = 0; k < L->nargs; k++) {
        imp_why why = {0};
        char text[64];
        imp_text(c->s, L->arg_from[k], L->arg_to[k], text, sizeof text);
        if (arg_of(c, L->arg_from[k], L->arg_to[k], k < np ? p[k].cls : IMP_C_OTHER, T->args[k],
                   &args[k], &why) < 0) {
            imp_problem(c, why.tok, "a kernel argument", why.msg);
            snprintf(T->args[k], sizeof T->args[k], "TODO: %.24s", text);
            args[k] = -1;
        }
        kiln_sb_printf(&acc, "%s%s -> %s", k ? ", " : "", text, T->args[k]);
    }
    imp_addf(&c->account, "  args    %s", acc.p ? acc.p : "(none)");
    free(acc.p);
}

/* ---- grid, block, shared memory, stream ------------------------------------ */

static void field(imp_ctx *c, int from, int to, const char *what, char *out)
{
    imp_xval v;
    imp_why why = {0};
    if (imp_xlate(c, from, to, 1, &v, &why) < 0) {
        imp_problem(c, why.tok, what, why.msg);
        todo(c, from, to, out);
    } else {
        snprintf(out, KILN_EXPR_MAX, "%s", v.s);
    }
}

/* grid or block (cfg k): a dim3 local, dim3(...), or one number. */
static void cfg_dims(imp_ctx *c, const imp_launch *L, int k, const char *what,
                     char out[3][KILN_EXPR_MAX], int *n)
{
    int f = L->cfg_from[k], t = L->cfg_to[k], cf[3], ct[3];
    const imp_var *v = t - f == 1 ? imp_host_var(&c->h, f) : NULL;
    int open = imp_is(c->s, f, "dim3") ? f + 1 : -1;
    *n = 1;
    if (v && v->cls == IMP_C_DIM3 && !v->is_param) {
        imp_why why = {0};
        if (imp_changed(c, v, f, &why) < 0) {
            imp_problem(c, f, what, why.msg);
            todo(c, f, t, out[0]);
            return;
        }
        *n = v->ncomp > 0 ? v->ncomp : 1;
        for (int d = 0; d < *n; d++)
            if (v->ncomp == 0)
                snprintf(out[d], KILN_EXPR_MAX, "1");
            else
                field(c, v->comp_from[d], v->comp_to[d], what, out[d]);
    } else if (open > 0 && (imp_is(c->s, open, "(") || imp_is(c->s, open, "{")) &&
               c->s->tok[open].match == t - 1 &&
               (*n = imp_split(c->s, open + 1, t - 1, 0, cf, ct, 3)) > 0) {
        for (int d = 0; d < *n; d++)
            field(c, cf[d], ct[d], what, out[d]);
    } else {
        *n = 1;
        field(c, f, t, what, out[0]);
    }
}

static int known_stream(imp_ctx *c, int from, int to)
{
    static const char *const ok[] = {"0", "nullptr", "NULL", "cudaStreamDefault",
                                     "cudaStreamLegacy", "cudaStreamPerThread"};
    const imp_var *v = to - from == 1 ? imp_host_var(&c->h, from) : NULL;
    for (size_t k = 0; k < sizeof ok / sizeof ok[0] && to - from == 1; k++)
        if (imp_is(c->s, from, ok[k]))
            return 1;
    if (v && v->is_param && v->cls == IMP_C_STREAM && (v->changed < 0 || v->changed > from))
        return 1;
    int f = v && !v->is_param && v->changed < 0 ? v->init_from : from;
    int t = v && !v->is_param && v->changed < 0 ? v->init_to : to;
    for (int i = f; i >= 0 && i < t; i++)
        if (imp_is(c->s, i, "getCurrentCUDAStream") || imp_is(c->s, i, "getCurrentStream"))
            return 1;
    return 0;
}

static void stream_of(imp_ctx *c, const imp_launch *L)
{
    char text[128];
    if (L->ncfg < 4) {
        snprintf(text, sizeof text, "0");
    } else {
        imp_text(c->s, L->cfg_from[3], L->cfg_to[3], text, sizeof text);
        if (!known_stream(c, L->cfg_from[3], L->cfg_to[3]))
            imp_problem(c, L->cfg_from[3], "the stream", "it is made here or chosen at run time; "
                    "kiln launches on a stream of its own");
    }
    if (c->nlaunch > 1 && strcmp(c->stream, text) != 0) {
        char msg[512];
        snprintf(msg, sizeof msg, "the launches use different streams (%s, %s); kiln runs "
                 "them one after another on its own stream", c->stream, text);
        imp_problem(c, L->from, "the stream", msg);
    }
    if (c->nlaunch == 1)
        snprintf(c->stream, sizeof c->stream, "%s", text);
    imp_addf(&c->account, "  stream  %s -> dropped: kiln launches on its own stream, in order",
             text);
}

/* ---- one launch ---------------------------------------------------------------- */

static void account_dims(imp_ctx *c, const char *label, int from, int to, char out[][KILN_EXPR_MAX],
                         int n)
{
    char text[96];
    kiln_strbuf b = {0};
    imp_text(c->s, from, to, text, sizeof text);
    for (int d = 0; d < n; d++)
        kiln_sb_printf(&b, "%s\"%s\"", d ? ", " : "", out[d]);
    imp_addf(&c->account, "  %-7s %s -> [%s]", label, text, b.p ? b.p : "");
    free(b.p);
}

static void control_problem(imp_ctx *c, const imp_launch *L)
{
    char head[96], msg[320];
    const imp_src *s = c->s;
    int ctl = L->ctl, paren = ctl + 1;
    if (imp_is(s, paren, "("))
        imp_text(s, ctl, s->tok[paren].match + 1, head, sizeof head);
    else
        imp_word(s, ctl, head, sizeof head);
    int loop = imp_is(s, ctl, "for") || imp_is(s, ctl, "while") || imp_is(s, ctl, "do");
    snprintf(msg, sizeof msg, "it is inside '%s' (line %d); %s", head, imp_line(c, ctl),
             loop ? "a loop of launches has no manifest form: the manifest lists a fixed "
                    "sequence of launches"
                  : "the manifest's launches are a fixed list, each run where its \"when\" "
                    "holds: pick the case by hand (a knob cannot choose a kernel), or make one "
                    "kernel that branches on the dims");
    imp_problem(c, L->kernel, "the launch", msg);
}

/* The launch's "when": the conditions of the ifs around it, an else's
 * negated, joined by &&. A condition with no manifest form is a problem. */
static void when_of(imp_ctx *c, const imp_launch *L, imp_tlaunch *T)
{
    const imp_src *s = c->s;
    kiln_strbuf b = {0};
    for (int k = 0; k < L->nifs; k++) {
        int paren = L->ifs[k] + 1, close = s->tok[paren].match;
        imp_xval v;
        imp_why why = {0};
        char head[96], msg[640];
        if (imp_xlate(c, paren + 1, close, 1, &v, &why) < 0) {
            imp_text(s, L->ifs[k], close + 1, head, sizeof head);
            snprintf(msg, sizeof msg, "it is inside %s'%s' (line %d), whose condition has no "
                     "manifest form for its \"when\": %s", L->if_else[k] ? "the else of " : "",
                     head, imp_line(c, L->ifs[k]), why.msg);
            imp_problem(c, why.tok, "the launch", msg);
            free(b.p);
            snprintf(T->when, sizeof T->when, "TODO: %.200s", head);
            return;
        }
        int wrap = b.len > 0 && v.prec < IMP_P_EQ;
        if (L->if_else[k])
            kiln_sb_printf(&b, "%s!%s%s%s", b.len ? " && " : "", v.prec < IMP_P_UNARY ? "(" : "",
                           v.s, v.prec < IMP_P_UNARY ? ")" : "");
        else
            kiln_sb_printf(&b, "%s%s%s%s", b.len ? " && " : "", wrap || (L->nifs > 1 && v.prec < IMP_P_EQ) ? "(" : "",
                           v.s, wrap || (L->nifs > 1 && v.prec < IMP_P_EQ) ? ")" : "");
    }
    if (b.len >= sizeof T->when)
        imp_problem(c, L->kernel, "the launch", "its \"when\" is longer than a manifest field");
    snprintf(T->when, sizeof T->when, "%s", b.p ? b.p : "");
    if (T->when[0])
        imp_addf(&c->account, "  when    %s", T->when);
    free(b.p);
}

/* Grid, block, shared memory and stream of launch L into T. */
static void launch_config(imp_ctx *c, const imp_launch *L, imp_tlaunch *T)
{
    char text[96];
    cfg_dims(c, L, 0, "the grid", T->grid, &T->ngrid);
    account_dims(c, "grid", L->cfg_from[0], L->cfg_to[0], T->grid, T->ngrid);
    cfg_dims(c, L, 1, "the block", T->block, &T->nblock);
    account_dims(c, "block", L->cfg_from[1], L->cfg_to[1], T->block, T->nblock);
    snprintf(T->smem, sizeof T->smem, "0");
    if (L->ncfg > 2) {
        field(c, L->cfg_from[2], L->cfg_to[2], "the shared memory size", T->smem);
        imp_text(c->s, L->cfg_from[2], L->cfg_to[2], text, sizeof text);
        imp_addf(&c->account, "  smem    %s -> \"%s\"", text, T->smem);
    }
    stream_of(c, L);
}

int imp_map_launch(imp_ctx *c, int i)
{
    const imp_launch *L = &c->h.launch[i];
    char text[160];
    int args[IMP_MAX_ARGS], fnidx, inst, np = -1;
    kparam p[IMP_MAX_ARGS];
    if (c->nlaunch == KILN_WORKER_MAX_LAUNCHES) {
        imp_problem(c, L->from, "the launch", "more launches than kiln's manifest holds");
        return -1;
    }
    imp_tlaunch *T = &c->launch[c->nlaunch++];
    memset(T, 0, sizeof *T);
    c->dtype_name = L->dispatch >= 0 ? "scalar_t" : NULL;
    imp_text(c->s, L->from, L->to, text, sizeof text);
    imp_addf(&c->account, "launch %d, line %d: %s", c->nlaunch, imp_line(c, L->from), text);
    if (L->ctl >= 0)
        control_problem(c, L);
    kernel_of(c, L, T, &fnidx, &inst);
    imp_addf(&c->account, "  kernel  %s%s", inst >= 0 ? c->inst[inst].label : T->kernel,
             inst < 0 ? "" : c->inst[inst].by_name ? " -> named for NVRTC"
                                                   : " -> its extern \"C\" copy");
    if (inst >= 0)
        imp_addf(&c->account, "          %s", c->inst[inst].name);
    if (fnidx >= 0 && (inst >= 0 || c->f->fn[fnidx].tpl_open < 0)) {
        const imp_fn *fn = &c->f->fn[fnidx];
        np = kernel_params(c, fn, inst >= 0 ? &c->inst[inst] : NULL, p, IMP_MAX_ARGS);
        if (np != L->nargs) {
            char msg[160];
            snprintf(msg, sizeof msg, "the kernel (line %d) takes %d parameters and the launch "
                     "passes %d", imp_line(c, fn->name), np, L->nargs);
            imp_problem(c, L->kernel, "the launch's arguments", msg);
            np = -1;
        }
    }
    when_of(c, L, T);
    launch_config(c, L, T);
    map_args(c, L, T, p, np < 0 ? 0 : np, args);
    if (np >= 0)
        check_params(c, L, p, args);
    c->dtype_name = NULL;
    return 0;
}

char *imp_instance_text(const imp_ctx *c, int k)
{
    const imp_inst *in = &c->inst[k];
    const imp_fn *fn = &c->f->fn[in->fn];
    const imp_src *s = c->s;
    kiln_strbuf b = {0};
    kiln_sb_printf(&b, "\n\n/* kiln import: %s (the template on line %d) as an extern \"C\" "
                 "kernel */\nextern \"C\" __global__ ", in->label, imp_line(c, fn->first));
    for (int i = fn->decl; i < fn->name; i++)
        if (imp_is(s, i, "__launch_bounds__") && imp_is(s, i + 1, "(")) {
            copy_subst(&b, c, fn, in, i, s->tok[i + 1].match + 1);
            kiln_sb_addn(&b, " ", 1);
        }
    kiln_sb_printf(&b, "void %s", in->name);
    copy_subst(&b, c, fn, in, fn->params, fn->last + 1);
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    return b.p;
}
