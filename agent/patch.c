/* patch.c - applying a unified diff to the parent (see patch.h).  Written
 * for kiln: no library, so the rules (no fuzz, loose line numbers) are ours
 * and short. */
#include "patch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct span {
    const char *p;
    size_t n;   /* without the LF */
} span;

typedef struct lines {
    span *v;
    int n, cap;
} lines;

static int push(lines *l, const char *p, size_t n)
{
    if (l->n == l->cap) {
        int cap = l->cap ? l->cap * 2 : 64;
        span *v = realloc(l->v, (size_t)cap * sizeof *v);
        if (!v)
            return -1;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = (span){p, n};
    return 0;
}

/* Split text into lines (a last line without LF counts). */
static int split(const char *text, lines *l)
{
    memset(l, 0, sizeof *l);
    for (const char *p = text; *p;) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        if (push(l, p, n) < 0)
            return -1;
        p += n + (nl != NULL);
    }
    return 0;
}

static size_t trimmed(span s)
{
    while (s.n > 0 && (s.p[s.n - 1] == ' ' || s.p[s.n - 1] == '\t' || s.p[s.n - 1] == '\r'))
        s.n--;
    return s.n;
}

static int same(span a, span b)
{
    size_t na = trimmed(a), nb = trimmed(b);
    return na == nb && memcmp(a.p, b.p, na) == 0;
}

int kiln_patch_looks_like(const char *text)
{
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (strncmp(p, "@@ -", 4) == 0)
            return 1;
    return 0;
}

/* One hunk: the old lines (context and removed) and the new ones. */
typedef struct hunk {
    long old_at, old_n, new_n;
    lines old, add;   /* add: the new side, context included */
    int *ctx;         /* per add line: its index in old when context, else -1 */
    char head[64];
} hunk;

static int parse_head(span s, hunk *h)
{
    char buf[128];
    snprintf(buf, sizeof buf, "%.*s", (int)(s.n < 127 ? s.n : 127), s.p);
    long a, b = 1, c, d = 1;
    if (sscanf(buf, "@@ -%ld,%ld +%ld,%ld @@", &a, &b, &c, &d) != 4) {
        b = d = 1;
        if (sscanf(buf, "@@ -%ld +%ld,%ld @@", &a, &c, &d) != 3 &&
            sscanf(buf, "@@ -%ld,%ld +%ld @@", &a, &b, &c) != 3 &&
            sscanf(buf, "@@ -%ld +%ld @@", &a, &c) != 2)
            return -1;
    }
    h->old_at = a;
    h->old_n = b;
    h->new_n = d;
    const char *end = strstr(buf + 2, "@@");
    snprintf(h->head, sizeof h->head, "%.*s", end ? (int)(end + 2 - buf) : 40, buf);
    return 0;
}

/* Read hunk lines from d[*i] on, until its header's counts are met. */
static int read_hunk(const lines *d, int *i, hunk *h, char *err, size_t cap, int no)
{
    long o = 0, nw = 0;
    while (o < h->old_n || nw < h->new_n) {
        if (*i >= d->n) {
            snprintf(err, cap, "hunk %d (%s) is cut short: %ld of %ld old and %ld of %ld new "
                     "lines", no, h->head, o, h->old_n, nw, h->new_n);
            return -1;
        }
        span s = d->v[(*i)++];
        char c = s.n ? s.p[0] : ' ';   /* a blank line: context whose space was dropped */
        span body = {s.n ? s.p + 1 : s.p, s.n ? s.n - 1 : 0};
        if (c == '\\')
            continue;   /* "\ No newline at end of file" */
        if (c != ' ' && c != '-' && c != '+') {
            snprintf(err, cap, "hunk %d (%s) has %ld old and %ld new lines where its header "
                     "says %ld and %ld", no, h->head, o, nw, h->old_n, h->new_n);
            return -1;
        }
        if ((c != '+' && push(&h->old, body.p, body.n) < 0) ||
            (c != '-' && push(&h->add, body.p, body.n) < 0))
            return snprintf(err, cap, "out of memory"), -1;
        if (c != '-') {
            int *v = realloc(h->ctx, (size_t)h->add.n * sizeof *v);
            if (!v)
                return snprintf(err, cap, "out of memory"), -1;
            h->ctx = v;
            v[h->add.n - 1] = c == ' ' ? h->old.n - 1 : -1;
        }
        o += c != '+';
        nw += c != '-';
    }
    return 0;
}

static int matches_at(const lines *par, long at, const lines *old)
{
    if (at < 0 || at + old->n > par->n)
        return 0;
    for (int k = 0; k < old->n; k++)
        if (!same(par->v[at + k], old->v[k]))
            return 0;
    return 1;
}

/* Where the hunk's old lines are in the parent, at or after from; -1 if not. */
static long locate(const lines *par, long from, const hunk *h)
{
    long said = h->old_n == 0 ? h->old_at : h->old_at - 1;
    if (said >= from && matches_at(par, said, &h->old))
        return said;
    for (long at = from; at + h->old.n <= par->n; at++)
        if (matches_at(par, at, &h->old))
            return at;
    return -1;
}

static void emit(FILE *f, span s)
{
    fwrite(s.p, 1, s.n, f);
    fputc('\n', f);
}

static int apply_hunks(const lines *par, const lines *d, FILE *f, char *err, size_t cap)
{
    long pos = 0;
    int no = 0, i = 0;
    while (i < d->n) {
        span s = d->v[i++];
        if (s.n < 4 || strncmp(s.p, "@@ -", 4) != 0)
            continue;   /* headers, and prose between hunks */
        hunk h = {0};
        int rc = parse_head(s, &h);
        no++;
        if (rc < 0)
            snprintf(err, cap, "hunk %d: the header \"%.60s\" is not @@ -a,b +c,d @@", no,
                     s.p);
        else
            rc = read_hunk(d, &i, &h, err, cap, no);
        long at = rc == 0 ? locate(par, pos, &h) : -1;
        if (rc == 0 && at < 0) {
            snprintf(err, cap, "hunk %d (%s) does not apply: its context and removed lines "
                     "are not in the parent, in order, after line %ld", no, h.head, pos);
            rc = -1;
        }
        for (long k = pos; rc == 0 && k < at; k++)
            emit(f, par->v[k]);
        /* context lines are the parent's own (its blanks kept) */
        for (int k = 0; rc == 0 && k < h.add.n; k++)
            emit(f, h.ctx[k] >= 0 ? par->v[at + h.ctx[k]] : h.add.v[k]);
        if (rc == 0)
            pos = at + h.old.n;
        free(h.old.v);
        free(h.add.v);
        free(h.ctx);
        if (rc < 0)
            return -1;
    }
    if (no == 0)
        return snprintf(err, cap, "the diff has no hunk (@@ -a,b +c,d @@)"), -1;
    for (long k = pos; k < par->n; k++)
        emit(f, par->v[k]);
    return 0;
}

int kiln_patch_apply(const char *parent, const char *diff, char **out, char *err, size_t errcap)
{
    *out = NULL;
    lines par, d;
    if (split(parent, &par) < 0 || split(diff, &d) < 0) {
        free(par.v);
        return snprintf(err, errcap, "out of memory"), -1;
    }
    size_t len = 0;
    FILE *f = open_memstream(out, &len);
    int rc = f ? apply_hunks(&par, &d, f, err, errcap) : -1;
    if (!f)
        snprintf(err, errcap, "out of memory");
    if (f)
        fclose(f);
    if (rc < 0) {
        free(*out);
        *out = NULL;
    }
    free(par.v);
    free(d.v);
    return rc;
}
