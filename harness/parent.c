/* parent.c - which kernel an iteration starts from: the head of the run's
 * branch (--parents best; per-shape, the incumbent of the shape furthest
 * from its floor) or a seeded draw from the run's archive. Its own
 * file because the loop (search_loop.c) and the early model requests
 * (prefetch.c) both ask, and neither should depend on the other for it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "archive.h"
#include "iteration.h"
#include "search_state.h"

int kiln_search_draw_parent(search *s, int it, char parent[41], kiln_error *err)
{
    snprintf(parent, 41, "%s", s->run.head_commit);
    s->target[0] = '\0';
    if (strcmp(s->run.parents, "archive") != 0)
        return kiln_search_per_shape(s) && s->run.head_commit[0]
                   ? kiln_per_shape_target(s, parent, err)
                   : 0;
    kiln_elite *a;
    int na;
    if (kiln_db_archive(s->db, s->run.id, &a, &na, err) < 0)
        return -1;
    int pick = kiln_archive_pick(a, na, KILN_PARENT_BEST_P, (unsigned long long)s->run.seed, it);
    if (pick >= 0)
        snprintf(parent, 41, "%s", a[pick].commit);
    free(a);
    return 0;
}
