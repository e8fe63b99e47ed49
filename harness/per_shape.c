/* per_shape.c - the per-shape objective's state for one iteration
 * (iteration.h): every visible shape's incumbent, from the run's kept
 * kernels in the order they were kept, and the parent's pooled verdict
 * against the baseline, which the screen estimates through. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "iteration.h"

int kiln_search_per_shape(const search *s)
{
    return strcmp(s->keep.objective, KILN_OBJECTIVE_PER_SHAPE) == 0;
}

/* The pooled verdict against the baseline stored for commit (NULL: none,
 * or unreadable: that kernel then holds no shape). */
static kiln_verdict *pooled_at(search *s, const char *commit)
{
    char *text = kiln_db_record_verdict_at(s->db, s->run.id, commit);
    kiln_verdict *v = text ? malloc(sizeof *v) : NULL;
    kiln_error e;
    if (v && kiln_verdict_parse(text, v, &e) < 0) {
        free(v);
        v = NULL;
    }
    free(text);
    return v;
}

int kiln_per_shape_load(search *s, const kiln_iteration *t, kiln_incumbents *in,
                        kiln_verdict **parent_pooled, kiln_error *err)
{
    char (*commits)[41] = NULL;
    int n = 0;
    *in = (kiln_incumbents){0};
    if (kiln_db_kept_commits(s->db, s->run.id, &commits, &n, err) < 0)
        return -1;
    for (int i = 0; i < n; i++) {
        int cn = -1;
        kiln_verdict *v = pooled_at(s, commits[i]);
        if (v && kiln_db_cand_at(s->db, s->run.id, commits[i], &cn, err) == 0 && cn >= 0 &&
            kiln_incumbents_offer(in, cn, v) > 0)
            for (int k = 0; k < in->n; k++)
                if (in->s[k].n == cn)
                    snprintf(in->s[k].commit, sizeof in->s[k].commit, "%s", commits[i]);
        free(v);
    }
    free(commits);
    /* Kept by a session that stopped before committing them. */
    for (int i = 0; i < t->n; i++)
        if (strcmp(t->d[i].c.decision, "keep") == 0 && !t->d[i].c.commit[0])
            kiln_incumbents_offer(in, t->d[i].c.n, t->d[i].vs_baseline);
    *parent_pooled = pooled_at(s, s->parent);
    return 0;
}

kiln_incumbents *kiln_per_shape_incumbents(search *s, kiln_error *err)
{
    kiln_iteration none = {0};
    kiln_verdict *pp = NULL;
    kiln_incumbents *in = malloc(sizeof *in);
    if (!in)
        return kiln_fail(err, "out of memory"), NULL;
    if (kiln_per_shape_load(s, &none, in, &pp, err) < 0) {
        free(in);
        in = NULL;
    }
    free(pp);
    return in;
}

int kiln_per_shape_target(search *s, char parent[41], kiln_error *err)
{
    s->target[0] = '\0';
    kiln_incumbents *in = kiln_per_shape_incumbents(s, err);
    if (!in)
        return -1;
    const kiln_incumbent *w = kiln_incumbents_worst(in);
    if (w && w->commit[0]) {
        snprintf(parent, 41, "%s", w->commit);
        snprintf(s->target, sizeof s->target, "%s, now %.0f%% of its floor (held by #%d, the "
                 "parent)", w->id, 100 * w->roofline, w->n);
    }
    free(in);
    return 0;
}
