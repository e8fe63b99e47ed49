/* import_include.c - the project headers a CUDA file includes, found,
 * read and inlined into the candidate (import_include.h).
 *
 * A quoted include is looked up as the compiler would: in the including
 * file's directory, then in each --include DIR in order. Each header is
 * read once (the same path twice is one unit) and lexed and scanned as
 * the source is, so its helpers, macros and cut host parts are found the
 * same way. Inlined, a header loses its include guard or #pragma once
 * (it is there once) and its host parts. */
#include "import_include.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileutil.h"
#include "import_edit.h"

#define HEADER_LIMIT (4u << 20)

/* The directory part of path ("." when none). */
static void dir_of(const char *path, char *out, size_t cap)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(out, cap, ".");
    else if (slash == path)
        snprintf(out, cap, "/");
    else
        snprintf(out, cap, "%.*s", (int)(slash - path), path);
}

static int readable(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f)
        fclose(f);
    return f != NULL;
}

/* name looked up from dir, then the --include dirs: the path in out. */
static int locate(const char *name, const char *dir, const kiln_import_opts *o, char *out,
                  size_t cap, kiln_strbuf *tried)
{
    if (name[0] == '/') {
        snprintf(out, cap, "%s", name);
        return readable(out);
    }
    for (int i = -1; i < o->nincludes; i++) {
        const char *d = i < 0 ? dir : o->includes[i];
        if (!d)
            continue;
        snprintf(out, cap, "%s/%s", d, name);
        if (readable(out))
            return 1;
        kiln_sb_printf(tried, "%s%s", tried->len ? ", " : "", d);
    }
    return 0;
}

static int same_file(const char *a, const char *b)
{
    char ra[PATH_MAX], rb[PATH_MAX];
    if (realpath(a, ra) && realpath(b, rb))
        return strcmp(ra, rb) == 0;
    return strcmp(a, b) == 0;
}

static int add_ref(imp_units *us, int parent, int pp, int unit)
{
    if (us->nref == (int)(sizeof us->ref / sizeof us->ref[0]))
        return -1;
    us->ref[us->nref++] = (imp_incref){parent, pp, unit};
    return 0;
}

static int load_from(imp_units *us, int parent, const imp_src *s, const imp_file *f,
                     const char *fname, const char *dir, const kiln_import_opts *o,
                     imp_lines *problems, kiln_error *err);

/* Read the header at path as unit us->n; its index, or -1 (a problem told). */
static int read_unit(imp_units *us, const char *name, const char *path, const char *at,
                     imp_lines *problems)
{
    kiln_error e;
    imp_unit *u = &us->u[us->n];
    *u = (imp_unit){0};
    snprintf(u->name, sizeof u->name, "%s", name);
    snprintf(u->path, sizeof u->path, "%s", path);
    int rd = kiln_read_file(path, HEADER_LIMIT, &u->text, &u->len, &e);
    if (rd != 0) {
        imp_addf(problems, "%s: cannot translate #include \"%s\": %s", at, name,
                 rd > 0 ? "the header is larger than 4 MiB" : e.msg);
        free(u->text);
        return -1;
    }
    if (imp_lex(&u->s, u->text, u->len, &e) < 0) {
        imp_addf(problems, "%s: cannot translate #include \"%s\" (%s): %s", at, name, path, e.msg);
        free(u->text);
        return -1;
    }
    if (imp_scan(&u->s, &u->f, &e) < 0) {
        imp_addf(problems, "%s: cannot translate #include \"%s\": %s", at, name, e.msg);
        imp_src_free(&u->s);
        free(u->text);
        return -1;
    }
    return us->n++;
}

static int load_one(imp_units *us, int parent, int pp, const imp_pp *p, const char *at,
                    const char *dir, const kiln_import_opts *o, imp_lines *problems,
                    kiln_error *err)
{
    char path[1024], udir[1024];
    kiln_strbuf tried = {0};
    int found = locate(p->header, dir, o, path, sizeof path, &tried), k = -1;
    if (!found) {
        imp_addf(problems, "%s: cannot translate #include \"%s\": not found in %s; a candidate "
                 "is one file, so import inlines the project's headers: pass the directory that "
                 "holds it with --include DIR", at, p->header,
                 tried.p ? tried.p : "the file's directory");
        free(tried.p);
        return 0;
    }
    free(tried.p);
    for (int i = 0; i < us->n && k < 0; i++)
        if (same_file(us->u[i].path, path))
            k = i;
    int fresh = k < 0;
    if (fresh && us->n == IMP_MAX_UNITS) {
        imp_addf(problems, "%s: cannot translate #include \"%s\": more than %d project headers",
                 at, p->header, IMP_MAX_UNITS);
        return 0;
    }
    if (fresh && (k = read_unit(us, p->header, path, at, problems)) < 0)
        return 0;
    if (add_ref(us, parent, pp, k) < 0)
        return kiln_fail(err, "too many #include lines");
    if (!fresh)
        return 0;
    dir_of(path, udir, sizeof udir);
    return load_from(us, k, &us->u[k].s, &us->u[k].f, us->u[k].name, udir, o, problems, err);
}

static int load_from(imp_units *us, int parent, const imp_src *s, const imp_file *f,
                     const char *fname, const char *dir, const kiln_import_opts *o,
                     imp_lines *problems, kiln_error *err)
{
    for (int i = 0; i < f->npp; i++) {
        const imp_pp *p = &f->pp[i];
        char at[192];
        if (!p->include || p->system || strcmp(p->header, "kiln_cuda.h") == 0)
            continue;
        snprintf(at, sizeof at, "%s:%d", fname, s->tok[p->tok].line);
        int rc = load_one(us, parent, i, p, at, dir, o, problems, err);
        if (rc < 0)
            return -1;
    }
    return 0;
}

int imp_units_load(imp_units *us, const imp_src *s, const imp_file *f, const kiln_import_opts *o,
                   imp_lines *problems, kiln_error *err)
{
    us->n = us->nref = 0;
    if (load_from(us, -1, s, f, o->file, o->dir, o, problems, err) < 0)
        return -1;
    return problems->oom ? kiln_fail(err, "out of memory") : 0;
}

void imp_units_free(imp_units *us)
{
    for (int i = 0; i < us->n; i++) {
        imp_file_free(&us->u[i].f);
        imp_src_free(&us->u[i].s);
        free(us->u[i].text);
    }
    us->n = us->nref = 0;
}

int imp_unit_of(const imp_units *us, int parent, int pp)
{
    for (int i = 0; i < us->nref; i++)
        if (us->ref[i].parent == parent && us->ref[i].pp == pp)
            return us->ref[i].unit;
    return -1;
}

static size_t tok_end(const imp_src *s, int i)
{
    return s->tok[i].at + s->tok[i].len;
}

char *imp_unit_inline(imp_units *us, int k, imp_lines *notes)
{
    imp_unit *u = &us->u[k];
    imp_edits e = {0};
    kiln_strbuf b = {0};
    if (u->inlined)
        return imp_dupf("// kiln import: #include \"%s\": inlined above", u->name);
    u->inlined = 1;
    imp_cut_host(&u->s, &u->f, u->name, &e, notes);
    if (u->f.guard) {   /* inlined once: the guard has nothing left to do */
        const imp_pp *g[3] = {&u->f.pp[0], &u->f.pp[1], &u->f.pp[u->f.npp - 1]};
        for (int i = 0; i < 3; i++)
            imp_edit_add(&e, u->s.tok[g[i]->tok].at, tok_end(&u->s, g[i]->tok),
                         strdup("// kiln import: the include guard, cut (inlined once)"));
    }
    for (int i = 0; i < u->f.npp; i++) {
        const imp_pp *p = &u->f.pp[i];
        int sub = p->include && !p->system ? imp_unit_of(us, k, i) : -1;
        if (sub >= 0)
            imp_edit_add(&e, u->s.tok[p->tok].at, tok_end(&u->s, p->tok),
                         imp_unit_inline(us, sub, notes));
    }
    kiln_sb_printf(&b, "// kiln import: \"%s\" (%s), inlined: a candidate is one file\n",
                   u->name, u->path);
    imp_edits_apply(&e, u->text, u->len, &b);
    kiln_sb_printf(&b, "%s// kiln import: end of \"%s\"", b.len && b.p[b.len - 1] == '\n' ? "" : "\n",
                   u->name);
    imp_edits_free(&e);
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    return b.p;
}
