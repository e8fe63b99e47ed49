/* import_maps.c - `kiln import --map PARAM=TARGET`: what a host function's
 * parameter stands for when its name does not say (import_map.h).
 *
 *   PARAM=ARG            a task arg: a buffer, a dim, a scalar
 *   PARAM=IN:OUT         a buffer the kernels update in place: kiln keeps
 *                        its input IN unchanged, so the candidate first
 *                        copies IN into the output OUT and passes OUT
 *   PARAM=scratch[:B]    an extra output the task lacks (llm.c's mean and
 *                        rstd): a scratch buffer of B bytes (a manifest
 *                        expression; default an upper bound, said so)
 *   PARAM=N              a constant (an integer, or a float for a float)
 *   PARAM=NAME[:V,...]   a knob: the file's, a #define constant of the file
 *                        or its headers, or a new knob line import writes
 *                        (an upper-case NAME; values V..., the first its
 *                        value, default 32 to 1024 starting at 256)
 *
 * A map that names no parameter, nothing of the task, or what its
 * parameter cannot be (a pointer to a dim, an int to a float) is bad
 * input, refused with the map and the reason; so is a parameter mapped
 * twice or a buffer two parameters claim. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import_map.h"
#include "knobs.h"

static const long long default_knob[] = {256, 32, 64, 128, 512, 1024};

static void word(const imp_src *s, int tok, char *buf)
{
    imp_word(s, tok, buf, 64);
}

static void arg_names(const kiln_task *t, char *buf, size_t cap)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < t->nargs && used < cap; i++)
        used += (size_t)snprintf(buf + used, cap - used, "%s%s", i ? ", " : "", t->args[i].name);
}

static int task_arg(const kiln_task *t, const char *n, size_t len)
{
    for (int i = 0; i < t->nargs; i++)
        if (strlen(t->args[i].name) == len && memcmp(t->args[i].name, n, len) == 0)
            return i;
    return -1;
}

static const char *kind_name(kiln_arg_kind k)
{
    return k == KILN_ARG_INPUT ? "input" : k == KILN_ARG_OUTPUT ? "output"
           : k == KILN_ARG_DIM ? "dim" : "scalar";
}

static int is_ptr(imp_cls c)
{
    return c == IMP_C_PTR || c == IMP_C_CPTR || c == IMP_C_TENSOR;
}

static int is_int(imp_cls c)
{
    return c == IMP_C_I32 || c == IMP_C_I64;
}

static int is_real(imp_cls c)
{
    return c == IMP_C_F32 || c == IMP_C_F64;
}

/* ---- scratch --------------------------------------------------------------------- */

/* The task's buffer with the most elements (its rank, then its place). */
static int largest_buffer(const kiln_task *t)
{
    int best = -1;
    for (int i = 0; i < t->nargs; i++)
        if ((t->args[i].kind == KILN_ARG_INPUT || t->args[i].kind == KILN_ARG_OUTPUT) &&
            (best < 0 || t->args[i].rank > t->args[best].rank))
            best = i;
    return best;
}

static int add_scratch(imp_ctx *c, int vi, const char *map, const char *bytes, kiln_error *err)
{
    const imp_var *v = &c->h.var[vi];
    char n[64], elems[KILN_EXPR_MAX], size[32];
    long long b = 0;
    word(c->s, v->name, n);
    if (c->nscratch == KILN_WORKER_MAX_SCRATCH)
        return kiln_fail(err, "--map %s: more than %d scratch buffers", map,
                         KILN_WORKER_MAX_SCRATCH);
    imp_scratch *sc = &c->scratch[c->nscratch];
    snprintf(sc->name, sizeof sc->name, "%.24s", n);
    for (int k = 2; task_arg(c->t, sc->name, strlen(sc->name)) >= 0 ||
                    kiln_task_dim(c->t, sc->name) >= 0; k++)
        snprintf(sc->name, sizeof sc->name, "%.20s_%d", n, k);
    if (bytes && !*bytes)
        return kiln_fail(err, "--map %s: scratch: needs a size in bytes after ':'", map);
    if (bytes) {
        snprintf(sc->bytes, sizeof sc->bytes, "%s", bytes);
    } else {
        int a = largest_buffer(c->t);
        const char *m = imp_sizeof_type(v->elem, &b);
        if (m)
            snprintf(size, sizeof size, "sizeof(%s)", m);
        else
            snprintf(size, sizeof size, "%lld", b > 0 ? b : 8);
        imp_elems(c, a, elems, sizeof elems);
        snprintf(sc->bytes, sizeof sc->bytes, "%.200s * %s", elems, size);
        imp_addf(&c->notes, "scratch %s: %s bytes, as many elements as the task's %s (an upper "
                 "bound; --map %s=scratch:BYTES gives the size)", sc->name, sc->bytes,
                 c->t->args[a].name, n);
    }
    c->pmap[vi].kind = IMP_M_SCRATCH;
    c->pmap[vi].scratch = c->nscratch++;
    return 0;
}

/* ---- in place -------------------------------------------------------------------- */

static int same_shape(const kiln_arg *a, const kiln_arg *b)
{
    if (a->rank != b->rank || a->dtype_is_var != b->dtype_is_var ||
        (!a->dtype_is_var && a->dtype != b->dtype))
        return 0;
    for (int k = 0; k < a->rank; k++)
        if (a->shape[k] != b->shape[k] || a->shape_mul[k] != b->shape_mul[k])
            return 0;
    return 1;
}

static int in_place(imp_ctx *c, int vi, const char *map, const char *t, const char *colon,
                    int *used, kiln_error *err)
{
    char names[256];
    int in = task_arg(c->t, t, (size_t)(colon - t)), out = task_arg(c->t, colon + 1,
                                                                   strlen(colon + 1));
    arg_names(c->t, names, sizeof names);
    if (in < 0 || out < 0)
        return kiln_fail(err, "--map %s: IN:OUT names two args of the task (%s)", map, names);
    if (c->t->args[in].kind != KILN_ARG_INPUT || c->t->args[out].kind != KILN_ARG_OUTPUT)
        return kiln_fail(err, "--map %s: IN:OUT is an input the kernels update in place and "
                         "the output it becomes; %s is an %s and %s an %s", map,
                         c->t->args[in].name, kind_name(c->t->args[in].kind),
                         c->t->args[out].name, kind_name(c->t->args[out].kind));
    if (!same_shape(&c->t->args[in], &c->t->args[out]))
        return kiln_fail(err, "--map %s: %s and %s differ in shape or dtype, so one cannot be "
                         "copied into the other", map, c->t->args[in].name,
                         c->t->args[out].name);
    if (used[in] || used[out])
        return kiln_fail(err, "--map %s: the task's %s is mapped already", map,
                         c->t->args[used[in] ? in : out].name);
    if (c->ncopy == IMP_MAX_COPIES)
        return kiln_fail(err, "--map %s: more than %d buffers updated in place", map,
                         IMP_MAX_COPIES);
    c->copy[c->ncopy++] = (imp_copy){in, out};
    c->pmap[vi].kind = IMP_M_INPLACE;
    c->pmap[vi].arg = in;
    c->pmap[vi].out = out;
    used[in] = used[out] = 1;
    return 0;
}

/* ---- constants and knobs ---------------------------------------------------------- */

/* An integer (decimal, optional '-') or a float literal (1e-5, 0.5f): 1
 * integer, 2 float, 0 neither. */
static int number_kind(const char *t)
{
    char *end;
    errno = 0;
    (void)strtoll(t, &end, 10);
    if (*t && !*end && errno == 0 && kiln_knob_int(t, strlen(t), NULL) == 0)
        return 1;
    (void)strtod(t, &end);
    if (end != t && (*end == '\0' || ((*end == 'f' || *end == 'F') && end[1] == '\0')) &&
        strpbrk(t, ".eE") && strspn(t, "0123456789.eE+-fF") == strlen(t))
        return 2;
    return 0;
}

static int constant(imp_ctx *c, int vi, const char *map, const char *t, int kind,
                    kiln_error *err)
{
    const imp_var *v = &c->h.var[vi];
    char n[64];
    word(c->s, v->name, n);
    if (!is_int(v->cls) && !is_real(v->cls))
        return kiln_fail(err, "--map %s: '%s' (%s) is no number; a constant stands for an "
                         "integer or floating-point parameter", map, n, imp_cls_name(v->cls));
    if (kind == 2 && !is_real(v->cls))
        return kiln_fail(err, "--map %s: '%s' is an integer; give it an integer", map, n);
    imp_pmap *pm = &c->pmap[vi];
    pm->kind = IMP_M_CONST;
    pm->is_float = kind == 2;
    snprintf(pm->text, sizeof pm->text, "%.*s", (int)strcspn(t, "fF"), t);
    return 0;
}

static int is_identifier(const char *t, size_t n)
{
    if (n == 0 || !(isalpha((unsigned char)t[0]) || t[0] == '_'))
        return 0;
    for (size_t i = 1; i < n; i++)
        if (!(isalnum((unsigned char)t[i]) || t[i] == '_'))
            return 0;
    return 1;
}

static int upper_case(const char *t, size_t n)
{
    int letters = 0;
    for (size_t i = 0; i < n; i++) {
        if (islower((unsigned char)t[i]))
            return 0;
        letters += isupper((unsigned char)t[i]) != 0;
    }
    return letters > 0;
}

/* Is NAME a knob line of the source already? */
static int source_knob(const imp_ctx *c, const char *name)
{
    kiln_knob *k = malloc(KILN_KNOBS_MAX * sizeof *k);
    kiln_error e;
    int n = k ? kiln_knobs_scan(c->s->text, c->s->len, k, KILN_KNOBS_MAX, NULL, &e) : -1, found = 0;
    for (int i = 0; i < n; i++)
        found |= strcmp(k[i].name, name) == 0;
    free(k);
    return found;
}

/* "V1,V2,..." into the knob's values; the first is its value. */
static int knob_values(imp_knob *kb, const char *map, const char *vals, kiln_error *err)
{
    kb->nvals = 0;
    for (const char *p = vals; *p;) {
        size_t n = strcspn(p, ",");
        long long v;
        if (kiln_knob_int(p, n, &v) < 0)
            return kiln_fail(err, "--map %s: '%.*s' is not a decimal integer (a knob's values "
                             "are, separated by commas)", map, (int)n, p);
        for (int k = 0; k < kb->nvals; k++)
            if (kb->vals[k] == v)
                return kiln_fail(err, "--map %s: %lld is listed twice", map, v);
        if (kb->nvals == KILN_KNOB_VALUES)
            return kiln_fail(err, "--map %s: more than %d values", map, KILN_KNOB_VALUES);
        kb->vals[kb->nvals++] = v;
        p += n + (p[n] == ',');
    }
    if (kb->nvals < 2)
        return kiln_fail(err, "--map %s: a knob lists 2 to %d values", map, KILN_KNOB_VALUES);
    return 0;
}

static int knob(imp_ctx *c, int vi, const char *map, const char *t, kiln_error *err)
{
    const imp_var *v = &c->h.var[vi];
    char n[64], names[256], name[KILN_NAME_MAX];
    const char *colon = strchr(t, ':');
    size_t len = colon ? (size_t)(colon - t) : strlen(t);
    imp_def d;
    word(c->s, v->name, n);
    arg_names(c->t, names, sizeof names);
    if (!is_identifier(t, len) || len > KILN_KNOB_NAME_MAX)
        return kiln_fail(err, "--map %s: '%s' is no arg of the task (%s), IN:OUT, scratch, "
                         "number or knob name", map, t, names);
    snprintf(name, sizeof name, "%.*s", (int)len, t);
    int existing = source_knob(c, name), defined = imp_find_define(c, name, &d);
    if (!existing && !defined && !upper_case(t, len))
        return kiln_fail(err, "--map %s: no arg of that name in the task (%s)%s", map, names,
                         is_ptr(v->cls) ? "; a buffer maps to an input or output, IN:OUT, or "
                                          "scratch"
                                        : "; a new knob's name is upper-case (BLOCK)");
    if (!is_int(v->cls))
        return kiln_fail(err, "--map %s: '%s' (%s) is no integer; a knob stands for one", map,
                         n, imp_cls_name(v->cls));
    if (kiln_task_dim(c->t, name) >= 0)
        return kiln_fail(err, "--map %s: '%s' is a dim of the task", map, name);
    if ((existing || defined) && colon)
        return kiln_fail(err, "--map %s: %s is %s already; its values are the file's", map,
                         name, existing ? "a knob" : "#defined");
    imp_pmap *pm = &c->pmap[vi];
    pm->kind = IMP_M_KNOB;
    snprintf(pm->text, sizeof pm->text, "%s", name);
    if (existing || defined)
        return 0;
    for (int k = 0; k < c->nknob; k++)
        if (strcmp(c->knob[k].name, name) == 0)
            return 0;   /* two parameters, one new knob */
    if (c->nknob == IMP_MAX_KNOBS)
        return kiln_fail(err, "--map %s: more than %d new knobs", map, IMP_MAX_KNOBS);
    imp_knob *kb = &c->knob[c->nknob];
    snprintf(kb->name, sizeof kb->name, "%s", name);
    if (colon) {
        if (knob_values(kb, map, colon + 1, err) < 0)
            return -1;
    } else {
        kb->nvals = (int)(sizeof default_knob / sizeof default_knob[0]);
        memcpy(kb->vals, default_knob, sizeof default_knob);
    }
    c->nknob++;
    return 0;
}

/* ---- one map ------------------------------------------------------------------------ */

static int target(imp_ctx *c, int vi, const char *map, const char *t, int *used,
                  kiln_error *err)
{
    const imp_var *v = &c->h.var[vi];
    char n[64];
    const char *colon = strchr(t, ':');
    int a = task_arg(c->t, t, strlen(t)), num = number_kind(t);
    word(c->s, v->name, n);
    if (strcmp(t, "scratch") == 0 || strncmp(t, "scratch:", 8) == 0) {
        if (!is_ptr(v->cls))
            return kiln_fail(err, "--map %s: '%s' (%s) is no buffer; scratch is for a pointer "
                             "or tensor", map, n, imp_cls_name(v->cls));
        return add_scratch(c, vi, map, t[7] ? t + 8 : NULL, err);
    }
    if (a >= 0) {
        const kiln_arg *g = &c->t->args[a];
        int buffer = g->kind == KILN_ARG_INPUT || g->kind == KILN_ARG_OUTPUT;
        if (!imp_fits(v->cls, g->kind))
            return kiln_fail(err, "--map %s: '%s' (%s) cannot stand for the task's %s, %s %s",
                             map, n, imp_cls_name(v->cls), g->name,
                             g->kind == KILN_ARG_INPUT || g->kind == KILN_ARG_OUTPUT ? "an" : "a",
                             kind_name(g->kind));
        if (buffer && used[a])
            return kiln_fail(err, "--map %s: the task's %s is mapped already", map, g->name);
        c->pmap[vi].kind = IMP_M_ARG;
        c->pmap[vi].arg = a;
        used[a] = 1;
        return 0;
    }
    if (colon && task_arg(c->t, t, (size_t)(colon - t)) >= 0) {
        if (!is_ptr(v->cls))
            return kiln_fail(err, "--map %s: '%s' (%s) is no buffer; IN:OUT is for a pointer or "
                             "tensor", map, n, imp_cls_name(v->cls));
        return in_place(c, vi, map, t, colon, used, err);
    }
    if (num)
        return constant(c, vi, map, t, num, err);
    return knob(c, vi, map, t, err);
}

int imp_apply_maps(imp_ctx *c, int *used, kiln_error *err)
{
    for (int m = 0; m < c->o->nmaps; m++) {
        const char *map = c->o->maps[m], *eq = strchr(map, '=');
        int v = -1;
        for (int i = 0; eq && i < c->h.nvar; i++)
            if (c->h.var[i].is_param && c->s->tok[c->h.var[i].name].len == (size_t)(eq - map) &&
                memcmp(c->s->text + c->s->tok[c->h.var[i].name].at, map, (size_t)(eq - map)) == 0)
                v = i;
        if (!eq || !eq[1])
            return kiln_fail(err, "--map %s: expected PARAM=TARGET (a task arg, IN:OUT, scratch, "
                             "a number or a knob)", map);
        if (v < 0) {
            kiln_strbuf b = {0};
            for (int i = 0; i < c->h.nvar; i++)
                if (c->h.var[i].is_param) {
                    char n[64];
                    word(c->s, c->h.var[i].name, n);
                    kiln_sb_printf(&b, "%s%s", b.len ? ", " : "", n);
                }
            int rc = kiln_fail(err, "--map %s: no parameter of that name in the host function "
                               "(its parameters: %s)", map, b.p ? b.p : "none");
            free(b.p);
            return rc;
        }
        if (c->pmap[v].kind != IMP_M_NONE)
            return kiln_fail(err, "--map %s: '%.*s' is mapped twice", map, (int)(eq - map), map);
        if (target(c, v, map, eq + 1, used, err) < 0)
            return -1;
        c->pmap[v].how = "--map";
    }
    return 0;
}

int imp_map_params(imp_ctx *c, kiln_error *err)
{
    int used[KILN_MAX_ARGS] = {0};
    if (imp_map_begin(c, err) < 0 || imp_apply_maps(c, used, err) < 0)
        return -1;
    return imp_map_rest(c, used);
}
