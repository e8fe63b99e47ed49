/* import_edit.c - edits to a carried source and the host parts it loses
 * (import_edit.h). A cut part becomes a one-line comment saying what it
 * was, so a kernel's neighbourhood stays recognisable. */
#include "import_edit.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void imp_edit_add(imp_edits *e, size_t at, size_t end, char *text)
{
    if (text && e->n == e->cap) {
        int cap = e->cap ? 2 * e->cap : 32;
        imp_edit *p = realloc(e->v, (size_t)cap * sizeof *p);
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
    e->v[e->n] = (imp_edit){at, end, text, e->n};
    e->n++;
}

char *imp_dupf(const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return strdup(buf);
}

static int cmp_edit(const void *a, const void *b)
{
    const imp_edit *x = a, *y = b;
    if (x->at != y->at)
        return x->at < y->at ? -1 : 1;
    return x->order - y->order;
}

void imp_edits_apply(imp_edits *e, const char *text, size_t len, kiln_strbuf *b)
{
    size_t pos = 0;
    qsort(e->v, (size_t)e->n, sizeof *e->v, cmp_edit);
    for (int i = 0; i < e->n; i++) {
        if (e->v[i].at < pos)
            continue;   /* inside an edit already made */
        kiln_sb_addn(b, text + pos, e->v[i].at - pos);
        kiln_sb_addn(b, e->v[i].text, strlen(e->v[i].text));
        pos = e->v[i].end;
    }
    kiln_sb_addn(b, text + pos, len - pos);
    if (e->oom)
        b->oom = 1;
}

void imp_edits_free(imp_edits *e)
{
    for (int i = 0; i < e->n; i++)
        free(e->v[i].text);
    free(e->v);
    *e = (imp_edits){0};
}

int imp_host_header(const char *h)
{
    static const char *const exact[] = {
        "cuda_runtime.h", "cuda_runtime_api.h", "cuda.h", "device_launch_parameters.h",
        "algorithm", "vector", "iostream", "cstdio", "stdio.h", "cstdlib", "stdlib.h",
        "string", "string.h", "cstring", "stdexcept", "memory", "cassert", "assert.h",
        "numeric", "utility", "functional", "map", "unordered_map", "chrono", "tuple",
        "sstream", "fstream", "iomanip", "random", "optional", "mutex", "thread",
        "type_traits", "array", "cublasLt.h", "cusparse.h", "curand.h",
    };
    static const char *const prefixes[] = {"torch/", "ATen/", "c10/", "pybind11/", "cublas",
                                           "Python.h", "thrust/"};
    for (size_t k = 0; k < sizeof exact / sizeof exact[0]; k++)
        if (strcmp(h, exact[k]) == 0)
            return 1;
    for (size_t k = 0; k < sizeof prefixes / sizeof prefixes[0]; k++)
        if (strncmp(h, prefixes[k], strlen(prefixes[k])) == 0)
            return 1;
    return 0;
}

static int line(const imp_src *s, int tok)
{
    return s->tok[tok < s->ntok ? tok : s->ntok - 1].line;
}

static size_t tok_end(const imp_src *s, int i)
{
    return s->tok[i].at + s->tok[i].len;
}

/* "line 3" for the source, "common.h:3" for a header. */
static void where(const char *fname, int ln, char *buf, size_t cap)
{
    if (fname)
        snprintf(buf, cap, "%s:%d", fname, ln);
    else
        snprintf(buf, cap, "line %d", ln);
}

static void cut_pp(const imp_src *s, const imp_file *f, const char *fname, imp_edits *e,
                   imp_lines *notes)
{
    for (int i = 0; i < f->npp; i++) {
        const imp_pp *p = &f->pp[i];
        char at[160], what[200] = "";
        where(fname, line(s, p->tok), at, sizeof at);
        if (p->include && p->system && imp_host_header(p->header))
            snprintf(what, sizeof what, "#include <%s> (a host header)", p->header);
        else if (p->pragma_once && fname)
            snprintf(what, sizeof what, "#pragma once (the header is inlined once)");
        else if (p->define && p->function_like && p->body_len >= 3 &&
                 memmem(s->text + p->body_at, p->body_len, "<<<", 3))
            snprintf(what, sizeof what, "#define %s (a macro that launches kernels: host code)",
                     p->name);
        else
            continue;
        imp_edit_add(e, s->tok[p->tok].at, tok_end(s, p->tok),
                     imp_dupf("// kiln import: removed %s", what));
        imp_addf(notes, "%s: removed %s", at, what);
    }
}

void imp_cut_host(const imp_src *s, const imp_file *f, const char *fname, imp_edits *e,
                  imp_lines *notes)
{
    char at[160];
    cut_pp(s, f, fname, e, notes);
    for (int i = 0; i < f->nfn; i++) {
        const imp_fn *fn = &f->fn[i];
        char w[64];
        if (fn->kind != IMP_F_HOST)
            continue;
        imp_word(s, fn->name, w, sizeof w);
        const char *what = fn->body >= 0 ? "host function" : "host declaration";
        int a = line(s, fn->first), b = line(s, fn->last);
        imp_edit_add(e, s->tok[fn->first].at, tok_end(s, fn->last),
                     imp_dupf("/* kiln import: removed %s %s (lines %d-%d) */", what, w, a, b));
        if (fname)
            snprintf(at, sizeof at, "%s:%d%s", fname, a, "");
        else if (a == b)
            snprintf(at, sizeof at, "line %d", a);
        else
            snprintf(at, sizeof at, "lines %d-%d", a, b);
        imp_addf(notes, "%s: removed %s %s", at, what, w);
    }
    for (int i = 0; i < f->ngvar; i++) {
        const imp_gvar *g = &f->gvar[i];
        char w[64];
        imp_word(s, g->name, w, sizeof w);
        where(fname, line(s, g->first), at, sizeof at);
        imp_edit_add(e, s->tok[g->first].at, tok_end(s, g->last),
                     imp_dupf("/* kiln import: removed host variable %s */", w));
        imp_addf(notes, "%s: removed host variable %s (device code cannot use it)", at, w);
    }
}
