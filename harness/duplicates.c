/* duplicates.c - no source verified twice (docs/search.md): a candidate
 * whose normalised source (kiln_source_normalize: comments, whitespace and
 * knob lists set aside) this run has verified already is not verified
 * again: it reuses that verdict and is reverted. Were #k kept, the parent
 * now is #k or faster than it; were #k reverted, it failed or was no
 * faster than a parent the present one is at least as fast as.
 *
 * The run's verified sources are read from the database once a session
 * (a resumed run knows them too), each kept normalised in memory; the
 * iteration's own candidates are in memory already. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "iteration.h"
#include "normalize.h"   /* kiln_source_normalize */

typedef struct seen_source {
    int n;
    uint64_t hash;
    char *norm;                 /* the normalised text (malloc'd) */
    char status[12], stage[16], code[32];   /* the verdict a duplicate reuses */
} seen_source;

struct kiln_seen {
    seen_source *e;
    int n, cap;
};

static uint64_t fnv1a(const char *t)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *t; t++)
        h = (h ^ (unsigned char)*t) * 1099511628211ULL;
    return h;
}

/* A verdict of its own: not a proposal that failed, nor a duplicate. */
static int was_verified(const kiln_cand *c)
{
    return c->state != KILN_CAND_PROPOSED && c->status[0] && strcmp(c->stage, "propose") != 0;
}

/* d's normalised source, made once (NULL: it has no source). */
static const char *norm_of(kiln_draft *d)
{
    if (!d->norm && d->text[KILN_TEXT_SOURCE])
        d->norm = kiln_source_normalize(d->text[KILN_TEXT_SOURCE]);
    return d->norm;
}

/* c, with its normalised source norm (taken over), joins the verified. */
static int seen_push(struct kiln_seen *k, const kiln_cand *c, char *norm, kiln_error *err)
{
    if (k->n == k->cap) {
        int cap = k->cap ? 2 * k->cap : 64;
        seen_source *p = realloc(k->e, (size_t)cap * sizeof *p);
        if (!p) {
            free(norm);
            return kiln_fail(err, "out of memory");
        }
        k->e = p;
        k->cap = cap;
    }
    seen_source *e = &k->e[k->n++];
    *e = (seen_source){.n = c->n, .hash = fnv1a(norm), .norm = norm};
    snprintf(e->status, sizeof e->status, "%s", c->status);
    snprintf(e->stage, sizeof e->stage, "%s", c->stage);
    snprintf(e->code, sizeof e->code, "%s", c->code);
    return 0;
}

/* The run's verified sources, read once a session. */
static struct kiln_seen *seen_load(search *s, kiln_error *err)
{
    if (s->seen)
        return s->seen;
    struct kiln_seen *k = calloc(1, sizeof *k);
    kiln_cand *all;
    int n, rc = 0;
    if (!k)
        return kiln_fail(err, "out of memory"), NULL;
    if (kiln_db_cands(s->db, s->run.id, &all, &n, err) < 0) {
        free(k);
        return NULL;
    }
    for (int i = 0; i < n && rc == 0; i++) {
        if (!was_verified(&all[i]))
            continue;
        char *src = kiln_db_cand_text(s->db, s->run.id, all[i].n, KILN_TEXT_SOURCE);
        char *norm = src ? kiln_source_normalize(src) : NULL;
        free(src);
        if (norm)
            rc = seen_push(k, &all[i], norm, err);
    }
    free(all);
    s->seen = k;   /* what was read, even after an error: a later call adds to it */
    return rc == 0 ? k : NULL;
}

/* The verified source equal to norm, the parent's first (its number is
 * parent_n); the hash finds it, the text confirms it. NULL when none. */
static const seen_source *seen_find(const struct kiln_seen *k, const char *norm, int parent_n)
{
    uint64_t h = fnv1a(norm);
    const seen_source *found = NULL;
    for (int i = 0; i < k->n; i++) {
        const seen_source *e = &k->e[i];
        if (e->hash != h || (found && e->n != parent_n) || strcmp(e->norm, norm) != 0)
            continue;
        found = e;
        if (e->n == parent_n)
            break;
    }
    return found;
}

/* d repeats k: recorded with k's status, reverted, never judged. */
static int duplicate_step(search *s, kiln_draft *d, const seen_source *k, int parent_n,
                          kiln_error *err)
{
    char why[640];
    kiln_cand *c = &d->c;
    if (k->n == parent_n)
        snprintf(why, sizeof why, "same source as its parent (#%d), comments, whitespace and "
                 "knob lists aside: not verified again (a copy of the parent is never faster "
                 "than it)", k->n);
    else
        snprintf(why, sizeof why, "same source as candidate #%d, comments, whitespace and knob "
                 "lists aside: not verified again; #%d's verdict: %s at %s (%s)", k->n, k->n,
                 k->status, k->stage, k->code);
    snprintf(c->status, sizeof c->status, "%s", k->status);
    snprintf(c->stage, sizeof c->stage, "propose");
    snprintf(c->code, sizeof c->code, "duplicate");
    c->speedup = 0;
    kiln_say(s, c, "same source as an earlier candidate: not verified again");
    return kiln_cand_decide(s, d, KILN_STEP_REVERT, why, err);
}

int kiln_dup_check(search *s, const kiln_iteration *t, kiln_draft *d, kiln_error *err)
{
    const struct kiln_seen *k = seen_load(s, err);
    if (!k)
        return -1;
    const char *norm = norm_of(d);
    const seen_source *e = norm ? seen_find(k, norm, t->parent_n) : NULL;
    if (!e)
        return 0;   /* fresh, or no source: judging it reports a missing one */
    return duplicate_step(s, d, e, t->parent_n, err) < 0 ? -1 : 1;
}

int kiln_dup_fresh(search *s, const kiln_iteration *t, int i)
{
    kiln_draft *d = &t->d[i];
    kiln_error e = {0};
    const struct kiln_seen *k;
    if (d->c.state != KILN_CAND_PROPOSED || d->c.job[0] || !(k = seen_load(s, &e)))
        return 0;
    const char *norm = norm_of(d);
    int fresh = norm && !seen_find(k, norm, t->parent_n);
    for (int j = 0; j < i && fresh; j++) {
        const char *other = norm_of(&t->d[j]);
        fresh = !(other && strcmp(other, norm) == 0);
    }
    return fresh;
}

int kiln_dup_add(search *s, kiln_draft *d, kiln_error *err)
{
    struct kiln_seen *k = seen_load(s, err);
    if (!k)
        return -1;
    const char *norm = norm_of(d);
    if (!norm)
        return 0;   /* no source: nothing to match */
    char *copy = strdup(norm);
    return copy ? seen_push(k, &d->c, copy, err) : kiln_fail(err, "out of memory");
}

void kiln_dup_free(search *s)
{
    struct kiln_seen *k = s->seen;
    for (int i = 0; k && i < k->n; i++)
        free(k->e[i].norm);
    if (k)
        free(k->e);
    free(k);
    s->seen = NULL;
}
