/* import.c - `kiln import`'s driver (import.h): read the project's
 * headers, expand host macros that launch, choose the host function,
 * translate its launches (import_map.c, import_launch.c) and checks
 * (import_torch.c), write the manifest, cut the host code out, and check
 * the result with kiln's own manifest parser and resolver, as the static
 * stage does.
 *
 * The candidate is the source with edits applied in order: a host
 * function, declaration or variable becomes a one-line comment, a host-only
 * #include a line comment, a project header its inlined text, a launched
 * kernel gains `extern "C" `, a template instance is copied out after its
 * template, and the manifest block goes at the end. Before the first line
 * of code go what import adds: the stand-ins for what dropped host headers
 * gave (imp_shim), new knob lines, the copy kernel an in-place parameter
 * needs. Nothing else changes, so a kernel's text stays recognisable. */
#include "import.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import_edit.h"
#include "import_include.h"
#include "import_macro.h"
#include "import_map.h"
#include "import_torch.h"

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

/* The launching host functions fn calls, for a dispatcher's message. */
static void callees(const imp_ctx *c, const imp_fn *fn, kiln_strbuf *b)
{
    for (int i = fn->body + 1; i < fn->last; i++) {
        char w[64];
        if (c->s->tok[i].kind != IMP_IDENT || !imp_is(c->s, i + 1, "("))
            continue;
        imp_word(c->s, i, w, sizeof w);
        for (int k = 0; k < c->f->nfn; k++)
            if (&c->f->fn[k] != fn && launching(c, &c->f->fn[k]) &&
                imp_is(c->s, c->f->fn[k].name, w) && (!b->p || !strstr(b->p, w))) {
                kiln_sb_printf(b, "%s%s (line %d)", b->len ? ", " : "", w,
                               line(c, c->f->fn[k].name));
                break;
            }
    }
}

/* The host function --function names, or NULL with a problem. */
static const imp_fn *named(imp_ctx *c)
{
    for (int i = 0; i < c->f->nfn; i++) {
        const imp_fn *fn = &c->f->fn[i];
        kiln_strbuf b = {0};
        if (fn->kind != IMP_F_HOST || fn->body < 0 || !imp_is(c->s, fn->name, c->o->function))
            continue;
        if (launching(c, fn))
            return fn;
        callees(c, fn, &b);
        if (b.len)
            imp_addf(&c->problems, "%s:%d: cannot translate %s: it launches no kernel itself; "
                     "it calls %s, which do: choose one of them with --function", c->o->file,
                     line(c, fn->name), c->o->function, b.p);
        else
            imp_addf(&c->problems, "%s:%d: cannot translate %s: it launches no kernel itself",
                     c->o->file, line(c, fn->name), c->o->function);
        free(b.p);
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

static void manifest_launch(kiln_strbuf *b, const imp_tlaunch *T, int first)
{
    kiln_sb_printf(b, "%s  {\"kernel\": ", first ? "" : ",\n");
    json_str(b, T->kernel);
    if (T->when[0]) {
        kiln_sb_printf(b, ", \"when\": ");
        json_str(b, T->when);
    }
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
    kiln_sb_printf(b, "]}");
}

/* The bytes of task buffer a, as a manifest expression. */
static void buffer_bytes(const imp_ctx *c, int a, char *out, size_t cap)
{
    char elems[KILN_EXPR_MAX];
    const kiln_arg *g = &c->t->args[a];
    imp_elems(c, a, elems, sizeof elems);
    snprintf(out, cap, "%.*s * sizeof(%s)", (int)(cap > 24 ? cap - 24 : 0), elems,
             g->dtype_is_var ? "T" : kiln_dtype_name(g->dtype));
}

/* The copy launch of in-place parameter k: the input into the output. */
static void copy_launch(const imp_ctx *c, int k, imp_tlaunch *T)
{
    char bytes[KILN_EXPR_MAX / 2];
    const imp_copy *cp = &c->copy[k];
    buffer_bytes(c, cp->in, bytes, sizeof bytes);
    memset(T, 0, sizeof *T);
    snprintf(T->kernel, sizeof T->kernel, "kiln_import_copy");
    T->ngrid = T->nblock = 1;
    snprintf(T->grid[0], sizeof T->grid[0], "min(cdiv(%s, 4096), 4096)", bytes);
    snprintf(T->block[0], sizeof T->block[0], "256");
    snprintf(T->smem, sizeof T->smem, "0");
    T->nargs = 3;
    snprintf(T->args[0], sizeof T->args[0], "%s", c->t->args[cp->in].name);
    snprintf(T->args[1], sizeof T->args[1], "%s", c->t->args[cp->out].name);
    snprintf(T->args[2], sizeof T->args[2], "i64(%s)", bytes);
}

static void manifest_lists(const imp_ctx *c, kiln_strbuf *b)
{
    if (c->nlets) {
        kiln_sb_printf(b, "\"let\": {");
        for (int i = 0; i < c->nlets; i++) {
            kiln_sb_printf(b, "%s", i ? ", " : "");
            json_str(b, c->lets[i].name);
            kiln_sb_printf(b, ": ");
            json_str(b, c->lets[i].expr);
        }
        kiln_sb_printf(b, "},\n ");
    }
    if (c->nrequire) {
        kiln_sb_printf(b, "\"require\": [");
        for (int i = 0; i < c->nrequire; i++) {
            kiln_sb_printf(b, "%s", i ? ", " : "");
            json_str(b, c->require[i]);
        }
        kiln_sb_printf(b, "],\n ");
    }
}

/* The /\*@kiln launch ... @*\/ block: valid JSON always; with problems
 * (force), a "TODO" list first, which kiln's check refuses until it is
 * removed. */
static char *manifest_text(const imp_ctx *c)
{
    kiln_strbuf b = {0};
    imp_tlaunch *cp = malloc(sizeof *cp);
    if (!cp)
        return NULL;
    kiln_sb_printf(&b, "/*@kiln launch\n{");
    if (c->problems.n) {
        kiln_sb_printf(&b, "\"TODO\": [");
        for (int i = 0; i < c->problems.n; i++) {
            kiln_sb_printf(&b, "%s\n   ", i ? "," : "");
            json_str(&b, c->problems.v[i]);
        }
        kiln_sb_printf(&b, "],\n ");
    }
    manifest_lists(c, &b);
    kiln_sb_printf(&b, "\"launches\": [\n");
    for (int i = 0; i < c->ncopy; i++) {
        copy_launch(c, i, cp);
        manifest_launch(&b, cp, i == 0);
    }
    for (int i = 0; i < c->nlaunch; i++)
        manifest_launch(&b, &c->launch[i], i == 0 && c->ncopy == 0);
    kiln_sb_printf(&b, "],\n \"scratch\": [");
    for (int i = 0; i < c->nscratch; i++) {
        kiln_sb_printf(&b, "%s{\"name\": ", i ? ", " : "");
        json_str(&b, c->scratch[i].name);
        kiln_sb_printf(&b, ", \"bytes\": ");
        json_str(&b, c->scratch[i].bytes);
        kiln_sb_printf(&b, ", \"init\": \"none\"}");
    }
    kiln_sb_printf(&b, "]}\n@*/\n");
    free(cp);
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    return b.p;
}

/* ---- the candidate ---------------------------------------------------------- */

static void include_edits(imp_ctx *c, imp_units *us, imp_edits *e)
{
    for (int i = 0; i < c->f->npp; i++) {
        const imp_pp *p = &c->f->pp[i];
        int ln = line(c, p->tok), k;
        if (!p->include || p->system || strcmp(p->header, "kiln_cuda.h") == 0)
            continue;
        if ((k = imp_unit_of(us, -1, i)) < 0)
            continue;   /* not found: a problem already */
        imp_edit_add(e, c->s->tok[p->tok].at, tok_end(c->s, p->tok),
                     imp_unit_inline(us, k, &c->notes));
        imp_addf(&c->notes, "line %d: inlined \"%s\" (%s)", ln, p->header, us->u[k].path);
    }
}

static void function_edits(imp_ctx *c, imp_edits *e)
{
    for (int i = 0; i < c->f->nfn; i++)
        if (c->externc[i])
            imp_edit_add(e, c->s->tok[c->f->fn[i].decl].at, c->s->tok[c->f->fn[i].decl].at,
                         strdup("extern \"C\" "));
    for (int k = 0; k < c->ninst; k++) {
        if (c->inst[k].by_name)
            continue;
        const imp_fn *fn = &c->f->fn[c->inst[k].fn];
        size_t at = tok_end(c->s, fn->last);
        imp_edit_add(e, at, at, imp_instance_text(c, k));
    }
}

/* The copy kernel an in-place parameter needs (kiln keeps its inputs). */
static const char COPY_KERNEL[] =
    "// kiln import: the copy that makes an in-place kernel's output start as its input\n"
    "// (--map P=IN:OUT): kiln keeps every input unchanged, so the kernel updates OUT\n"
    "extern \"C\" __global__ void kiln_import_copy(const void* __restrict__ src,\n"
    "                                            void* __restrict__ dst, long long bytes)\n"
    "{\n"
    "    const long long step = (long long)gridDim.x * blockDim.x;\n"
    "    const long long first = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    const long long n16 = bytes / 16;   /* kiln's buffers are 256-byte aligned */\n"
    "    for (long long i = first; i < n16; i += step)\n"
    "        ((uint4*)dst)[i] = ((const uint4*)src)[i];\n"
    "    for (long long i = n16 * 16 + first; i < bytes; i += step)\n"
    "        ((unsigned char*)dst)[i] = ((const unsigned char*)src)[i];\n"
    "}\n";

/* Knob lines and the copy kernel, for the top of the candidate. */
static void additions(const imp_ctx *c, kiln_strbuf *b)
{
    for (int k = 0; k < c->nknob; k++) {
        const imp_knob *kb = &c->knob[k];
        long long sorted[KILN_KNOB_VALUES];
        memcpy(sorted, kb->vals, sizeof sorted);
        for (int i = 1; i < kb->nvals; i++)   /* listed in order, as a tuner reads them */
            for (int j = i; j > 0 && sorted[j - 1] > sorted[j]; j--) {
                long long t = sorted[j];
                sorted[j] = sorted[j - 1];
                sorted[j - 1] = t;
            }
        kiln_sb_printf(b, "// kiln import: a knob for the host's parameter (--map)\n"
                       "#define %s %lld //@kiln tune", kb->name, kb->vals[0]);
        for (int i = 0; i < kb->nvals; i++)
            kiln_sb_printf(b, " %lld", sorted[i]);
        kiln_sb_printf(b, "\n");
    }
    if (c->ncopy)
        kiln_sb_printf(b, "%s", COPY_KERNEL);
}

/* The candidate: what import adds at the top (before the first token),
 * the edited source, the manifest. */
static char *apply(imp_ctx *c, imp_edits *e, const char *manifest)
{
    kiln_strbuf body = {0}, b = {0};
    size_t top = c->s->ntok > 0 ? c->s->tok[0].at : 0;
    imp_edits_apply(e, c->s->text, c->s->len, &body);
    if (body.oom || !body.p) {
        free(body.p);
        return NULL;
    }
    char *shim = imp_shim(body.p, body.len, c->uses_kiln_t, &c->notes);
    kiln_sb_addn(&b, body.p, top);
    if (shim && *shim)
        kiln_sb_printf(&b, "%s", shim);
    additions(c, &b);
    kiln_sb_addn(&b, body.p + top, body.len - top);
    if (b.len && b.p[b.len - 1] != '\n')
        kiln_sb_addn(&b, "\n", 1);
    kiln_sb_printf(&b, "\n/* kiln import: from %s, host function ", c->o->file);
    kiln_sb_addn(&b, c->s->text + c->s->tok[c->host->name].at, c->s->tok[c->host->name].len);
    kiln_sb_printf(&b, " (line %d) */\n%s", line(c, c->host->name), manifest);
    free(body.p);
    if (!shim)
        b.oom = 1;
    free(shim);
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    return b.p;
}

/* ---- kiln's own check ---------------------------------------------------------- */

/* The manifest resolves at every visible shape of group g its
 * preconditions keep, every dtype. */
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
            if (!kiln_precond_holds(&m->require, &grp->visible[i]) ||
                kiln_manifest_resolve(m, c->t, c->t->cuda_dtypes[d], &grp->visible[i], &lim, rq,
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
    for (int i = 0; i < c->nrequire; i++)
        imp_addf(&c->account, "require %s", c->require[i]);
    for (int i = 0; i < c->ncopy; i++)
        imp_addf(&c->account, "launch kiln_import_copy: %s into %s before the kernels (the "
                 "timing includes it)", c->t->args[c->copy[i].in].name,
                 c->t->args[c->copy[i].out].name);
}

static void account_notes(imp_ctx *c, const imp_lines *pre)
{
    if (c->dtype_only[0])
        imp_addf(&c->notes, "the kernels take %s buffers: the candidate is right for --dtype "
                 "%s only (kiln_t, from kiln_cuda.h, follows the run's dtype)", c->dtype_only,
                 c->dtype_only);
    for (int k = 0; k < c->ninst; k++)
        imp_addf(&c->notes, c->inst[k].by_name ? "launches %s as the NVRTC name expression %s "
                 "(an overloaded or enable_if'd template: the compiler picks the definition)"
                 : "added %s, a copy of %s with its template parameters set",
                 c->inst[k].by_name ? c->inst[k].label : c->inst[k].name,
                 c->inst[k].by_name ? c->inst[k].name : c->inst[k].label);
    for (int i = 0; i < c->f->nfn; i++)
        if (c->externc[i]) {
            char w[64];
            imp_word(c->s, c->f->fn[i].name, w, sizeof w);
            imp_addf(&c->notes, "line %d: added extern \"C\" to kernel %s", line(c, c->f->fn[i].decl), w);
        }
    if (pre->n || c->h.notes.n || c->notes.n)
        imp_addf(&c->account, "notes:");
    for (int i = 0; i < pre->n; i++)
        imp_addf(&c->account, "  %s", pre->v[i]);
    for (int i = 0; i < c->h.notes.n; i++)
        imp_addf(&c->account, "  %s", c->h.notes.v[i]);
    for (int i = 0; i < c->notes.n; i++)
        imp_addf(&c->account, "  %s", c->notes.v[i]);
}

/* ---- the whole ----------------------------------------------------------------- */

/* The edits of the source: its host parts cut, headers inlined, kernels
 * made extern "C", instances copied out. */
static void source_edits(imp_ctx *c, imp_units *us, imp_edits *e)
{
    for (int k = 0; k < us->n; k++)
        us->u[k].inlined = 0;
    imp_cut_host(c->s, c->f, NULL, e, &c->notes);
    include_edits(c, us, e);
    function_edits(c, e);
}

/* The manifest and candidate as the problems now stand; NULL when out
 * of memory. */
static char *write_out(imp_ctx *c, imp_units *us, char **manifest)
{
    imp_edits e = {0};
    int nnotes = c->notes.n;
    char *cand = NULL;
    source_edits(c, us, &e);
    free(*manifest);
    *manifest = manifest_text(c);
    if (*manifest && !e.oom)
        cand = apply(c, &e, *manifest);
    imp_edits_free(&e);
    if (c->notes_written) {   /* the second writing says nothing new */
        while (c->notes.n > nnotes)
            free(c->notes.v[--c->notes.n]);
    }
    c->notes_written = 1;
    return cand;
}

static void translate(imp_ctx *c, imp_units *us, const imp_lines *pre_problems,
                      kiln_import_result *r)
{
    char *manifest = NULL, *cand = NULL;
    for (int i = 0; i < pre_problems->n; i++)
        imp_addf(&c->problems, "%s", pre_problems->v[i]);
    for (int i = 0; i < c->h.problems.n; i++)
        imp_addf(&c->problems, "%s", c->h.problems.v[i]);
    imp_checks(c);
    for (int i = 0; i < c->h.nlaunch; i++)
        if (imp_map_launch(c, i) < 0)
            break;
    if (c->h.nlaunch == 0)
        imp_addf(&c->problems, "%s:%d: cannot translate the launches: import reads none",
                 c->o->file, line(c, c->host->name));
    if (c->ncopy + c->nlaunch > KILN_WORKER_MAX_LAUNCHES)
        imp_addf(&c->problems, "%s:%d: cannot translate the launches: with the %d copies an "
                 "in-place parameter needs, more than %d launches", c->o->file,
                 line(c, c->host->name), c->ncopy, KILN_WORKER_MAX_LAUNCHES);
    if (c->problems.n == 0 && (cand = write_out(c, us, &manifest)) != NULL)
        check(c, cand);
    if (c->problems.n) {   /* with the TODO list, which kiln's check refuses */
        free(cand);
        cand = write_out(c, us, &manifest);
    }
    account_lets(c);
    if (!manifest || !cand)
        c->problems.oom = 1;
    r->manifest = manifest;
    r->candidate = c->problems.n && !c->o->force ? (free(cand), NULL) : cand;
}

static void whole_file_problem(kiln_import_result *r, const kiln_import_opts *o, const char *why)
{
    imp_addf(&r->problems, "%s: cannot translate the file: %s", o->file, why);
}

static int run(const imp_src *s, const imp_file *f, imp_units *us, const kiln_task *t,
               const kiln_import_opts *o, const imp_lines *pre_problems, imp_lines *pre_notes,
               kiln_import_result *r, kiln_error *err)
{
    imp_ctx *c = calloc(1, sizeof *c);
    imp_lines dispatch = {0};
    kiln_manifest_span sp;
    int rc = 0;
    if (!c)
        return kiln_fail(err, "out of memory");
    *c = (imp_ctx){.s = s, .f = f, .t = t, .o = o, .units = us};
    if (kiln_manifest_locate(s->text, s->len, &sp)) {
        whole_file_problem(r, o, "it already has a /*@kiln launch ... @*/ manifest");
        free(c);
        return 0;
    }
    imp_dispatch_macros(s, f, us, &dispatch);
    c->h.dispatch = &dispatch;
    c->externc = calloc((size_t)f->nfn + 1, sizeof *c->externc);
    c->host = c->externc ? choose(c) : NULL;
    if (!c->externc)
        rc = kiln_fail(err, "out of memory");
    else if (c->host && (rc = imp_host_read(&c->h, s, f, c->host, o->file, err)) == 0) {
        imp_addf(&c->account, "host function %.*s, lines %d-%d", (int)s->tok[c->host->name].len,
                 s->text + s->tok[c->host->name].at, line(c, c->host->first),
                 line(c, c->host->last));
        if ((rc = imp_map_params(c, err)) == 0) {
            translate(c, us, pre_problems, r);
            account_notes(c, pre_notes);
        }
        imp_host_free(&c->h);
    } else if (!c->host) {
        for (int i = 0; i < pre_problems->n; i++)
            imp_addf(&c->problems, "%s", pre_problems->v[i]);
    }
    if (rc == 0 && (c->problems.oom || c->account.oom || c->notes.oom || dispatch.oom))
        rc = kiln_fail(err, "out of memory");
    r->problems = c->problems;
    r->account = c->account;
    snprintf(r->dtype_only, sizeof r->dtype_only, "%s", c->dtype_only);
    imp_lines_free(&c->notes);
    imp_lines_free(&dispatch);
    free(c->pmap);
    free(c->externc);
    free(c);
    return rc;
}

/* The source as import reads it: its host launch macros expanded (then
 * lexed and scanned again). 0, or -1 when out of memory. */
static int expanded(imp_src *s, imp_file *f, const imp_units *us, char **text, imp_lines *notes,
                    kiln_error *err)
{
    size_t n;
    int count;
    kiln_error e;
    *text = NULL;
    if (imp_expand_launch_macros(s, f, us, text, &n, &count, notes) < 0)
        return kiln_fail(err, "out of memory");
    if (count == 0)
        return 0;
    imp_src s2;
    imp_file f2;
    if (imp_lex(&s2, *text, n, &e) < 0) {
        imp_addf(notes, "the expanded host macros do not read as code (%s): read as written",
                 e.msg);
        free(*text);
        *text = NULL;
        return 0;
    }
    if (imp_scan(&s2, &f2, err) < 0) {
        imp_src_free(&s2);
        return -1;
    }
    imp_file_free(f);
    imp_src_free(s);
    *s = s2;
    *f = f2;
    return 0;
}

int kiln_import(const char *src, size_t len, const kiln_task *t, const kiln_import_opts *o,
                kiln_import_result *r, kiln_error *err)
{
    imp_src s;
    imp_file f;
    kiln_error e;
    imp_lines pre_problems = {0}, pre_notes = {0};
    char *text = NULL;
    memset(r, 0, sizeof *r);
    if (imp_lex(&s, src, len, &e) < 0) {
        whole_file_problem(r, o, e.msg);
        return 0;
    }
    imp_units *us = calloc(1, sizeof *us);
    int rc = us ? imp_scan(&s, &f, err) : kiln_fail(err, "out of memory");
    if (rc == 0) {
        rc = imp_units_load(us, &s, &f, o, &pre_problems, err);
        if (rc == 0)
            rc = expanded(&s, &f, us, &text, &pre_notes, err);
        if (rc == 0)
            rc = run(&s, &f, us, t, o, &pre_problems, &pre_notes, r, err);
        imp_file_free(&f);
    }
    if (us)
        imp_units_free(us);
    free(us);
    imp_src_free(&s);
    free(text);
    imp_lines_free(&pre_problems);
    imp_lines_free(&pre_notes);
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
