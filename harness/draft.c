/* draft.c - an iteration's candidates in memory (iteration.h): the drafts
 * propose.c hands over as it records them, or a resumed iteration's rows. */
#include <stdlib.h>
#include <string.h>

#include "iteration.h"

kiln_draft *kiln_iteration_grow(kiln_iteration *t)
{
    if (t->n == t->cap) {
        int cap = t->cap ? 2 * t->cap : 8;
        kiln_draft *p = realloc(t->d, (size_t)cap * sizeof *p);
        if (!p)
            return NULL;
        t->d = p;
        t->cap = cap;
    }
    kiln_draft *d = &t->d[t->n++];
    memset(d, 0, sizeof *d);
    return d;
}

int kiln_iteration_add(kiln_iteration *t, const kiln_cand *c, const char *source)
{
    kiln_draft *d = kiln_iteration_grow(t);
    if (!d)
        return -1;
    d->c = *c;
    if (source && !(d->text[KILN_TEXT_SOURCE] = strdup(source))) {
        t->n--;
        return -1;
    }
    return 0;
}

void kiln_iteration_free(kiln_iteration *t)
{
    for (int i = 0; i < t->n; i++)
        kiln_draft_free(&t->d[i]);
    free(t->d);
    free(t->parent_src);
    memset(t, 0, sizeof *t);
}

void kiln_draft_free(kiln_draft *d)
{
    for (int i = 0; i < KILN_NTEXTS; i++)
        free(d->text[i]);
    for (int k = 0; k < KILN_NJUDGEMENTS; k++)
        free(d->v[k]);
    free(d->vs_parent);
    free(d->vs_baseline);
    free(d->norm);
    memset(d, 0, sizeof *d);
}
