/* import.c - `kiln import`'s driver (import.h): choose the host function,
 * translate its launches (import_map.c), write the manifest, cut the host
 * code out of the source, and check the result with kiln's own manifest
 * parser and resolver, as the static stage does.
 *
 * The candidate is the source with edits applied in order: a host
 * function or declaration becomes a one-line comment, a host-only
 * #include a line comment, a launched kernel gains `extern "C" `, a
 * template instance is copied out after its template, and the manifest
 * block goes at the end. Nothing else changes, so a kernel's text, and
 * its line in an error message, stays recognisable. */
#include "import.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import_map.h"

typedef struct edit {
    size_t at, end;        /* replace [at, end) (insert where at == end) */
    char *text;            /* malloc'd */
    int order;             /* ties at one offset keep the order added */
} edit;

typedef struct edits {
    edit *v;
    int n, cap, oom;
} edits;

static void add_edit(edits *e, size_t at, size_t end, char *text)
{
    if (text && e->n == e->cap) {
        int cap = e->cap ? 2 * e->cap : 32;
        edit *p = realloc(e->v, (size_t)cap * sizeof *p);
        if (p) {
            e->v = p;
            e->cap = cap;
        }
    }
    if (!text || e->n == e->cap) {
        e->oom = 1;
        free(text);
        return;
    }
    e->v[e->n] = (edit){at, end, text, e->n};
    e->n++;
}

static char *dupf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *dupf(const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return strdup(buf);
}

static int line(const imp_ctx *c, int tok)
{
    return c->s->tok[tok < c->s->ntok ? tok : c->s->ntok - 1].line;
}

static size_t tok_end(const imp_src *s, int i)
{
    return s->tok[i].at + s->tok[i].len;
}

/* ---- the host function ------------------------------------------------------ */

static int launching(const imp_ctx *c, const imp_fn *fn)
{
    return fn->kind == IMP_F_HOST && fn->body >= 0 && imp_has_launch(c->s, fn->body, fn->last);
}

/* The host function --function names, or NULL with a problem. */
static const imp_fn *named(imp_ctx *c)
{
    for (int i = 0; i < c->f->nfn; i++) {
        const imp_fn *fn = &c->f->fn[i];
        if (fn->kind != IMP_F_HOST || fn->body < 0 || !imp_is(c->s, fn->name, c->o->function))
            continue;
        if (launching(c, fn))
            return fn;
        imp_addf(&c->problems, "%s:%d: cannot translate %s: it launches no kernel itself",
                 c->o->file, line(c, fn->name), c->o->function);
        return NULL;
    }
    imp_addf(&c->problems, "%s:1: cannot translate the file: it has no host function named %s",
             c->o->file, c->o->function);
    return NULL;
}

/* The host function to read: --function's, or the only one that launches. */
static const imp_fn *choose(imp_ctx *c)
{
    const imp_fn *one = NULL;
    kiln_strbuf names = {0};
    int n = 0;
    if (c->o->function)
        return named(c);
    for (int i = 0; i < c->f->nfn; i++) {
        const imp_fn *fn = &c->f->fn[i];
        char w[64];
        if (!launching(c, fn))
            continue;
        imp_word(c->s, fn->name, w, sizeof w);
        kiln_sb_printf(&names, "%s%s (line %d)", n ? ", " : "", w, line(c, fn->name));
        one = fn;
        n++;
    }
    if (n == 0)
        imp_addf(&c->problems, "%s:1: cannot translate the file: no host function launches a "
                 "kernel with <<< >>>", c->o->file);
    else if (n > 1)
        imp_addf(&c->problems, "%s:%d: cannot translate the file: %d host functions launch "
                 "kernels (%s); choose one with --function NAME", c->o->file,
                 line(c, one->name), n, names.p ? names.p : "");
    free(names.p);
    return n == 1 ? one : NULL;
}

/* ---- the manifest ------------------------------------------------------------ */

static void json_str(kiln_strbuf *b, const char *s)
{
    kiln_sb_addn(b, "\"", 1);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            kiln_sb_addn(b, "\\", 1);
        if ((unsigned char)*s >= 0x20)
            kiln_sb_addn(b, s, 1);
    }
    kiln_sb_addn(b, "\"", 1);
}

static void json_list(kiln_strbuf *b, const char (*v)[KILN_EXPR_MAX], int n)
{
    kiln_sb_addn(b, "[", 1);
    for (int i = 0; i < n; i++) {
        if (i)
            kiln_sb_addn(b, ", ", 2);
        json_str(b, v[i]);
    }
    kiln_sb_addn(b, "]", 1);
}

static void manifest_launch(kiln_strbuf *b, const imp_tlaunch *T, int last)
{
    kiln_sb_printf(b, "  {\"kernel\": ");
    json_str(b, T->kernel);
    kiln_sb_printf(b, ", \"grid\": ");
    json_list(b, (const char (*)[KILN_EXPR_MAX])T->grid, T->ngrid);
    kiln_sb_printf(b, ", \"block\": ");
    json_list(b, (const char (*)[KILN_EXPR_MAX])T->block, T->nblock);
    kiln_sb_printf(b, ", \"smem\": ");
    json_str(b, T->smem);
    kiln_sb_printf(b, ",\n   \"args\": [");
    for (int k = 0; k < T->nargs; k++) {
        if (k)
            kiln_sb_addn(b, ", ", 2);
        json_str(b, T->args[k]);
    }
    kiln_sb_printf(b, "]}%s\n", last ? "]," : ",");
}

/* The /\*@kiln launch ... @*\/ block; with problems (force), a "TODO"
 * list first, which kiln's check refuses until it is removed. */
static char *manifest_text(const imp_ctx *c)
{
    kiln_strbuf b = {0};
    kiln_sb_printf(&b, "/*@kiln launch\n{");
    if (c->problems.n) {
        kiln_sb_printf(&b, "\"TODO\": [");
        for (int i = 0; i < c->problems.n; i++) {
            kiln_sb_printf(&b, "%s\n   ", i ? "," : "");
            json_str(&b, c->problems.v[i]);
        }
        kiln_sb_printf(&b, "],\n ");
    }
    if (c->nlets) {
        kiln_sb_printf(&b, "\"let\": {");
        for (int i = 0; i < c->nlets; i++) {
            kiln_sb_printf(&b, "%s", i ? ", " : "");
            json_str(&b, c->lets[i].name);
            kiln_sb_printf(&b, ": ");
            json_str(&b, c->lets[i].expr);
        }
        kiln_sb_printf(&b, "},\n ");
    }
    kiln_sb_printf(&b, "\"launches\": [\n");
    for (int i = 0; i < c->nlaunch; i++)
        manifest_launch(&b, &c->launch[i], i == c->nlaunch - 1);
    kiln_sb_printf(&b, " \"scratch\": []}\n@*/\n");
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    return b.p;
}

/* ---- the candidate ---------------------------------------------------------- */

static int host_header(const char *h)
{
    static const char *const exact[] = {
        "cuda_runtime.h", "cuda_runtime_api.h", "cuda.h", "device_launch_parameters.h",
        "algorithm", "vector", "iostream", "cstdio", "stdio.h", "cstdlib", "stdlib.h",
        "string", "string.h", "cstring", "stdexcept", "memory", "cassert", "assert.h",
        "numeric", "utility", "functional", "map", "unordered_map", "chrono", "tuple",
        "sstream", "fstream", "iomanip", "random", "optional", "mutex", "thread",
    };
    static const char *const prefixes[] = {"torch/", "ATen/", "c10/", "pybind11/", "cublas"};
    for (size_t k = 0; k < sizeof exact / sizeof exact[0]; k++)
        if (strcmp(h, exact[k]) == 0)
            return 1;
    for (size_t k = 0; k < sizeof prefixes / sizeof prefixes[0]; k++)
        if (strncmp(h, prefixes[k], strlen(prefixes[k])) == 0)
            return 1;
    return 0;
}

static void include_edits(imp_ctx *c, edits *e)
{
    for (int i = 0; i < c->f->npp; i++) {
        const imp_pp *p = &c->f->pp[i];
        int ln = line(c, p->tok);
        if (!p->include || strcmp(p->header, "kiln_cuda.h") == 0)
            continue;
        if (!p->system) {
            imp_addf(&c->problems, "%s:%d: cannot translate #include \"%s\": a candidate is "
                     "one file, compiled where only kiln_cuda.h and CUDA's device headers "
                     "are found; paste what the kernels need from it", c->o->file, ln,
                     p->header);
        } else if (host_header(p->header)) {
            add_edit(e, c->s->tok[p->tok].at, tok_end(c->s, p->tok),
                     dupf("// kiln import: removed #include <%s> (a host header)", p->header));
            imp_addf(&c->notes, "line %d: removed #include <%s> (a host header)", ln, p->header);
        }
    }
}

static void function_edits(imp_ctx *c, edits *e)
{
    for (int i = 0; i < c->f->nfn; i++) {
        const imp_fn *fn = &c->f->fn[i];
        char w[64];
        imp_word(c->s, fn->name, w, sizeof w);
        if (c->externc[i])
            add_edit(e, c->s->tok[fn->decl].at, c->s->tok[fn->decl].at, strdup("extern \"C\" "));
        if (fn->kind != IMP_F_HOST)
            continue;
        const char *what = fn->body >= 0 ? "host function" : "host declaration";
        add_edit(e, c->s->tok[fn->first].at, tok_end(c->s, fn->last),
                 dupf("/* kiln import: removed %s %s (lines %d-%d) */", what, w,
                      line(c, fn->first), line(c, fn->last)));
        if (line(c, fn->first) == line(c, fn->last))
            imp_addf(&c->notes, "line %d: removed %s %s", line(c, fn->first), what, w);
        else
            imp_addf(&c->notes, "lines %d-%d: removed %s %s", line(c, fn->first),
                     line(c, fn->last), what, w);
    }
    for (int k = 0; k < c->ninst; k++) {
        const imp_fn *fn = &c->f->fn[c->inst[k].fn];
        size_t at = tok_end(c->s, fn->last);
        add_edit(e, at, at, imp_instance_text(c, k));
    }
}

static int cmp_edit(const void *a, const void *b)
{
    const edit *x = a, *y = b;
    if (x->at != y->at)
        return x->at < y->at ? -1 : 1;
    return x->order - y->order;
}

static char *apply(const imp_ctx *c, edits *e, const char *manifest)
{
    kiln_strbuf b = {0};
    size_t pos = 0;
    qsort(e->v, (size_t)e->n, sizeof *e->v, cmp_edit);
    for (int i = 0; i < e->n; i++) {
        if (e->v[i].at < pos)
            continue;   /* inside an edit already made */
        kiln_sb_addn(&b, c->s->text + pos, e->v[i].at - pos);
        kiln_sb_addn(&b, e->v[i].text, strlen(e->v[i].text));
        pos = e->v[i].end;
    }
    kiln_sb_addn(&b, c->s->text + pos, c->s->len - pos);
    if (b.len && b.p[b.len - 1] != '\n')
        kiln_sb_addn(&b, "\n", 1);
    kiln_sb_printf(&b, "\n/* kiln import: from %s, host function ", c->o->file);
    kiln_sb_addn(&b, c->s->text + c->s->tok[c->host->name].at, c->s->tok[c->host->name].len);
    kiln_sb_printf(&b, " (line %d) */\n%s", line(c, c->host->name), manifest);
    if (b.oom || e->oom) {
        free(b.p);
        return NULL;
    }
    return b.p;
}

static void free_edits(edits *e)
{
    for (int i = 0; i < e->n; i++)
        free(e->v[i].text);
    free(e->v);
}

/* ---- kiln's own check ---------------------------------------------------------- */

/* The manifest resolves at every visible shape of group g, every dtype. */
static int resolve_group(imp_ctx *c, const kiln_manifest *m, int g, imp_lines *to)
{
    kiln_device_limits lim;
    kiln_call_req *rq = malloc(sizeof *rq);
    kiln_error e;
    const kiln_group *grp = &c->t->groups[g];
    kiln_device_limits_default(&lim);
    for (int d = 0; rq && d < c->t->ncuda_dtypes; d++)
        for (int i = 0; i < grp->nvisible; i++) {
            char dims[128];
            if (kiln_manifest_resolve(m, c->t, c->t->cuda_dtypes[d], &grp->visible[i], &lim, rq,
                                      &e) == 0)
                continue;
            kiln_shape_format(c->t, &grp->visible[i], dims, sizeof dims);
            imp_addf(to, "%s:%d: cannot translate the launches at visible shape v%d (%s) of "
                     "group %s, dtype %s: %s", c->o->file, line(c, c->host->name), i + 1, dims,
                     grp->name, kiln_dtype_name(c->t->cuda_dtypes[d]), e.msg);
            free(rq);
            return -1;
        }
    free(rq);
    return 0;
}

static void check(imp_ctx *c, const char *cand)
{
    kiln_manifest *m = malloc(sizeof *m);
    kiln_error e;
    int def = kiln_task_default_group_for(c->t, "cuda");
    if (!m) {
        c->problems.oom = 1;
        return;
    }
    if (kiln_manifest_parse(cand, strlen(cand), c->t, m, &e) < 0) {
        imp_addf(&c->problems, "%s:%d: cannot translate the launches: kiln's check refuses "
                 "the manifest proposed: %s", c->o->file, line(c, c->host->name), e.msg);
    } else {
        for (int g = 0; g < c->t->ngroups; g++) {
            if (!(c->t->groups[g].backends & KILN_GROUP_CUDA))
                continue;
            if (g == def)
                resolve_group(c, m, g, &c->problems);
            else if (resolve_group(c, m, g, &c->notes) < 0)
                imp_addf(&c->notes, "(so verifying with --group %s would fail at the static "
                         "stage)", c->t->groups[g].name);
        }
    }
    free(m);
}

/* ---- the account -------------------------------------------------------------- */

static void account_lets(imp_ctx *c)
{
    for (int i = 0; i < c->nlets; i++) {
        const imp_let *l = &c->lets[i];
        char src[120] = "";
        if (l->var >= 0) {
            const imp_var *v = &c->h.var[l->var];
            imp_text(c->s, v->stmt_from, v->stmt_to, src, sizeof src);
            imp_addf(&c->account, "let %s = %s    (line %d: %s)", l->name, l->expr,
                     line(c, v->name), src);
        } else {
            imp_addf(&c->account, "let %s = %s    (the constant on line %d)", l->name, l->expr,
                     line(c, c->f->cst[l->cst].name));
        }
    }
}

static void account_notes(imp_ctx *c)
{
    if (c->dtype_only[0])
        imp_addf(&c->notes, "the kernels take %s buffers: the candidate is right for --dtype "
                 "%s only (kiln_t, from kiln_cuda.h, follows the run's dtype)", c->dtype_only,
                 c->dtype_only);
    for (int k = 0; k < c->ninst; k++)
        imp_addf(&c->notes, "added %s, a copy of %s with its template parameters set",
                 c->inst[k].name, c->inst[k].label);
    for (int i = 0; i < c->f->nfn; i++)
        if (c->externc[i]) {
            char w[64];
            imp_word(c->s, c->f->fn[i].name, w, sizeof w);
            imp_addf(&c->notes, "line %d: added extern \"C\" to kernel %s", line(c, c->f->fn[i].decl), w);
        }
    if (c->h.notes.n || c->notes.n)
        imp_addf(&c->account, "notes:");
    for (int i = 0; i < c->h.notes.n; i++)
        imp_addf(&c->account, "  %s", c->h.notes.v[i]);
    for (int i = 0; i < c->notes.n; i++)
        imp_addf(&c->account, "  %s", c->notes.v[i]);
}

/* ---- the whole ----------------------------------------------------------------- */

/* The manifest and candidate as the problems now stand; NULL when out
 * of memory. */
static char *write_out(imp_ctx *c, edits *e, char **manifest)
{
    free(*manifest);
    *manifest = manifest_text(c);
    return *manifest && !e->oom ? apply(c, e, *manifest) : NULL;
}

static void translate(imp_ctx *c, kiln_import_result *r)
{
    edits e = {0};
    char *manifest = NULL, *cand = NULL;
    for (int i = 0; i < c->h.problems.n; i++)
        imp_addf(&c->problems, "%s", c->h.problems.v[i]);
    for (int i = 0; i < c->h.nlaunch; i++)
        if (imp_map_launch(c, i) < 0)
            break;
    if (c->h.nlaunch == 0)
        imp_addf(&c->problems, "%s:%d: cannot translate the launches: import reads none",
                 c->o->file, line(c, c->host->name));
    include_edits(c, &e);
    function_edits(c, &e);
    if (c->problems.n == 0 && (cand = write_out(c, &e, &manifest)) != NULL)
        check(c, cand);
    if (c->problems.n) {   /* with the TODO list, which kiln's check refuses */
        free(cand);
        cand = write_out(c, &e, &manifest);
    }
    free_edits(&e);
    account_lets(c);
    account_notes(c);
    if (!manifest || !cand)
        c->problems.oom = 1;
    r->manifest = manifest;
    r->candidate = c->problems.n && !c->o->force ? (free(cand), NULL) : cand;
}

static void whole_file_problem(kiln_import_result *r, const kiln_import_opts *o, const char *why)
{
    imp_addf(&r->problems, "%s: cannot translate the file: %s", o->file, why);
}

static int run(const imp_src *s, const imp_file *f, const kiln_task *t,
               const kiln_import_opts *o, kiln_import_result *r, kiln_error *err)
{
    imp_ctx c = {.s = s, .f = f, .t = t, .o = o};
    kiln_manifest_span sp;
    int rc = 0;
    if (kiln_manifest_locate(s->text, s->len, &sp)) {
        whole_file_problem(r, o, "it already has a /*@kiln launch ... @*/ manifest");
        return 0;
    }
    c.externc = calloc((size_t)f->nfn + 1, sizeof *c.externc);
    c.host = c.externc ? choose(&c) : NULL;
    if (!c.externc)
        rc = kiln_fail(err, "out of memory");
    else if (c.host && (rc = imp_host_read(&c.h, s, f, c.host, o->file, err)) == 0) {
        imp_addf(&c.account, "host function %.*s, lines %d-%d", (int)s->tok[c.host->name].len,
                 s->text + s->tok[c.host->name].at, line(&c, c.host->first), line(&c, c.host->last));
        if ((rc = imp_map_params(&c, err)) == 0)
            translate(&c, r);
        imp_host_free(&c.h);
    }
    if (rc == 0 && (c.problems.oom || c.account.oom || c.notes.oom))
        rc = kiln_fail(err, "out of memory");
    r->problems = c.problems;
    r->account = c.account;
    snprintf(r->dtype_only, sizeof r->dtype_only, "%s", c.dtype_only);
    imp_lines_free(&c.notes);
    free(c.pmap);
    free(c.externc);
    return rc;
}

int kiln_import(const char *src, size_t len, const kiln_task *t, const kiln_import_opts *o,
                kiln_import_result *r, kiln_error *err)
{
    imp_src s;
    imp_file f;
    kiln_error e;
    memset(r, 0, sizeof *r);
    if (imp_lex(&s, src, len, &e) < 0) {
        whole_file_problem(r, o, e.msg);
        return 0;
    }
    int rc = imp_scan(&s, &f, err);
    if (rc == 0) {
        rc = run(&s, &f, t, o, r, err);
        imp_file_free(&f);
    }
    imp_src_free(&s);
    return rc;
}

void kiln_import_result_free(kiln_import_result *r)
{
    free(r->candidate);
    free(r->manifest);
    imp_lines_free(&r->problems);
    imp_lines_free(&r->account);
    memset(r, 0, sizeof *r);
}
