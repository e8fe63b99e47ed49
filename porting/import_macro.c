/* import_macro.c - host launch macros expanded in place (import_macro.h).
 *
 * The expansion is the preprocessor's for what such macros use: parameters
 * replaced by their arguments' text, __VA_ARGS__ by the rest, # made a
 * string and ## pasted. Macros inside it (a dispatch, a cast) are left for
 * import to read as written; one launch macro using another is expanded on
 * the next round, at most four. */
#include "import_macro.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import_edit.h"

typedef struct lmacro {
    const imp_pp *pp;
    const imp_src *s;          /* where it is defined */
    const char *file;
} lmacro;

static int launches(const imp_src *s, const imp_pp *p)
{
    return p->define && p->function_like && p->body_len >= 3 &&
           memmem(s->text + p->body_at, p->body_len, "<<<", 3);
}

static int collect(const imp_src *s, const imp_file *f, const imp_units *us, lmacro *m, int cap)
{
    int n = 0;
    for (int u = -1; u < (us ? us->n : 0); u++) {
        const imp_src *ss = u < 0 ? s : &us->u[u].s;
        const imp_file *ff = u < 0 ? f : &us->u[u].f;
        for (int i = 0; i < ff->npp && n < cap; i++)
            if (launches(ss, &ff->pp[i]))
                m[n++] = (lmacro){&ff->pp[i], ss, u < 0 ? NULL : us->u[u].name};
    }
    return n;
}

static const lmacro *macro_at(const imp_src *s, int i, const lmacro *m, int n)
{
    if (s->tok[i].kind != IMP_IDENT || !imp_is(s, i + 1, "("))
        return NULL;
    for (int k = 0; k < n; k++)
        if (imp_is(s, i, m[k].pp->name))
            return &m[k];
    return NULL;
}

/* The text of args [from, to) of s as written (VA: all from k on). */
static void arg_text(kiln_strbuf *b, const imp_src *s, const int *af, const int *at, int k,
                     int nargs, int va)
{
    for (int j = k; j < (va ? nargs : k + 1) && j < nargs; j++) {
        if (j > k)
            kiln_sb_addn(b, ", ", 2);
        if (af[j] < at[j])
            kiln_sb_addn(b, s->text + s->tok[af[j]].at,
                         s->tok[at[j] - 1].at + s->tok[at[j] - 1].len - s->tok[af[j]].at);
    }
}

/* Parameter k's index for the body token i, or -1 (-2: __VA_ARGS__). */
static int param_of(const imp_src *ps, const int *pf, int np, const imp_src *bs, int i)
{
    if (imp_is(bs, i, "__VA_ARGS__"))
        return -2;
    for (int k = 0; k < np; k++)
        if (bs->tok[i].len == ps->tok[pf[k]].len &&
            memcmp(bs->text + bs->tok[i].at, ps->text + ps->tok[pf[k]].at, bs->tok[i].len) == 0)
            return k;
    return -1;
}

/* The expansion of the use [i, close] of macro m into b (one line). */
static int expand(kiln_strbuf *b, const imp_src *s, int i, const lmacro *m)
{
    imp_src ps, bs;
    kiln_error e;
    int pf[16], pt[16], af[32], at[32];
    int close = s->tok[i + 1].match;
    if (imp_lex_macro(&ps, m->s->text + m->pp->params_at, m->pp->params_len, &e) < 0)
        return -1;
    if (imp_lex_macro(&bs, m->s->text + m->pp->body_at, m->pp->body_len, &e) < 0) {
        imp_src_free(&ps);
        return -1;
    }
    int np = imp_split(&ps, 0, ps.ntok, 0, pf, pt, 16);
    int na = imp_split(s, i + 2, close, 0, af, at, 32), nfixed = 0;
    for (int k = 0; k < np; k++)
        nfixed += !imp_is(&ps, pf[k], "...");
    for (int t = 0; t < bs.ntok; t++) {
        int paste = imp_is(&bs, t, "##"), str = imp_is(&bs, t, "#") && t + 1 < bs.ntok;
        if (paste)
            continue;
        if (t > 0 && !imp_is(&bs, t - 1, "##") && !imp_is(&bs, t - 1, "#") &&
            bs.tok[t - 1].at + bs.tok[t - 1].len < bs.tok[t].at)   /* blank as written */
            kiln_sb_addn(b, " ", 1);
        int k = param_of(&ps, pf, np, &bs, str ? t + 1 : t);
        if (str && k != -1) {
            kiln_strbuf q = {0};
            arg_text(&q, s, af, at, k < 0 ? nfixed : k, na, k < 0);
            kiln_sb_addn(b, "\"", 1);
            for (size_t c = 0; c < q.len; c++) {
                if (q.p[c] == '"' || q.p[c] == '\\')
                    kiln_sb_addn(b, "\\", 1);
                kiln_sb_addn(b, q.p + c, 1);
            }
            kiln_sb_addn(b, "\"", 1);
            free(q.p);
            t++;
        } else if (k != -1 && na >= 0) {
            arg_text(b, s, af, at, k < 0 ? nfixed : k, na, k < 0);
        } else {
            kiln_sb_addn(b, bs.text + bs.tok[t].at, bs.tok[t].len);
        }
    }
    imp_src_free(&ps);
    imp_src_free(&bs);
    return 0;
}

/* One round over the host functions: the expanded text, or NULL when
 * nothing was expanded. */
static char *round_once(const imp_src *s, const imp_file *f, const imp_units *us, int *n,
                        imp_lines *notes, int *oom)
{
    lmacro m[32];
    int nm = collect(s, f, us, m, 32);
    imp_edits e = {0};
    if (nm == 0)
        return NULL;
    for (int k = 0; k < f->nfn; k++) {
        const imp_fn *fn = &f->fn[k];
        if (fn->kind != IMP_F_HOST || fn->body < 0)
            continue;
        for (int i = fn->body + 1; i < fn->last; i++) {
            const lmacro *mac = macro_at(s, i, m, nm);
            if (!mac)
                continue;
            int close = s->tok[i + 1].match, lines = 0;
            kiln_strbuf b = {0};
            char use[120];
            imp_text(s, i, close + 1, use, sizeof use);
            if (expand(&b, s, i, mac) < 0)
                b.oom = 1;
            for (size_t c = s->tok[i].at; c < s->tok[close].at; c++)
                lines += s->text[c] == '\n';
            for (int l = 0; l < lines; l++)
                kiln_sb_addn(&b, "\n", 1);
            if (b.oom) {
                free(b.p);
                *oom = 1;
                continue;
            }
            imp_edit_add(&e, s->tok[i].at, s->tok[close].at + 1, b.p ? b.p : strdup(""));
            if (mac->file)
                imp_addf(notes, "line %d: expanded '%s', a macro that launches (%s:%d)",
                         s->tok[i].line, use, mac->file, mac->s->tok[mac->pp->tok].line);
            else
                imp_addf(notes, "line %d: expanded '%s', a macro that launches (line %d)",
                         s->tok[i].line, use, mac->s->tok[mac->pp->tok].line);
            ++*n;
            i = close;
        }
    }
    if (e.n == 0) {
        imp_edits_free(&e);
        return NULL;
    }
    kiln_strbuf out = {0};
    imp_edits_apply(&e, s->text, s->len, &out);
    imp_edits_free(&e);
    if (out.oom) {
        free(out.p);
        *oom = 1;
        return NULL;
    }
    return out.p;
}

int imp_expand_launch_macros(const imp_src *s, const imp_file *f, const imp_units *us,
                             char **out, size_t *outlen, int *n, imp_lines *notes)
{
    int oom = 0;
    *out = NULL;
    *n = 0;
    char *text = round_once(s, f, us, n, notes, &oom);
    for (int r = 1; text && r < 4 && !oom; r++) {
        imp_src s2;
        imp_file f2;
        kiln_error e;
        if (imp_lex(&s2, text, strlen(text), &e) < 0)
            break;   /* the expansion does not lex: import says so when it reads it */
        if (imp_scan(&s2, &f2, &e) < 0) {
            imp_src_free(&s2);
            oom = 1;
            break;
        }
        int before = *n;
        char *next = round_once(&s2, &f2, us, n, notes, &oom);
        imp_file_free(&f2);
        imp_src_free(&s2);
        if (!next || *n == before)
            break;
        free(text);
        text = next;
    }
    if (oom) {
        free(text);
        return -1;
    }
    *out = text;
    *outlen = text ? strlen(text) : 0;
    return 0;
}
