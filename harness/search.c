/* search.c - `kiln search`: interrupts caught, the run set up, the loop run
 * and torn down (see search.h and docs/search.md).
 *
 * One iteration: propose (drafts) -> verify each against its parent ->
 * re-time the best passing one in a fresh worker -> measure the winner
 * against the task's baseline -> commit every candidate with its verdict
 * -> move the branch to the winner, park the others under
 * refs/kiln/rejected. Each step is written to the database before the next
 * starts, so an interrupted run resumes where it stopped. */
#include "search.h"

#include <stdio.h>
#include <stdlib.h>

#include "kiln_exit.h"
#include "judge.h"
#include "progress.h"
#include "rundb.h"
#include "search_state.h"
#include "kilnd_pool.h"
#include "workspace.h"

/* ---- entry -------------------------------------------------------------- */

int kiln_search(const kiln_search_opts *o)
{
    search *s = calloc(1, sizeof *s);
    if (!s)
        return KILN_EXIT_INTERNAL;
    s->o = o;
    s->ws.lock_fd = -1;
    s->hold.fd = -1;
    kiln_search_catch_interrupts();
    kiln_error err = {0};
    int rc = kiln_search_setup(s, &err);
    const char *bad = rc == 0 && s->judge.verifiers ? kiln_verifiers_news(s->judge.verifiers) : NULL;
    if (bad && *bad)   /* the search goes on with the endpoints that are good */
        fprintf(stderr, "kiln search: --fleet: skipping what is not an endpoint file: %s\n", bad);
    if (rc == 0)
        rc = kiln_search_loop(s, &err);
    if (rc != 0 && err.msg[0]) {
        kiln_progress_error(&s->progress, err.msg);
        fprintf(stderr, "kiln search: %s\n", err.msg);
    }
    kiln_search_teardown(s);
    free(s);
    return rc < 0 ? kiln_exit_status(&err) : rc;
}
