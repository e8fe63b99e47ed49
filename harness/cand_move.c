/* cand_move.c - a candidate's moves through its states (cand_state.c
 * lists them), each written to the run database before the next step
 * starts, and its decision (iteration.h). */
#include <stdio.h>
#include <string.h>

#include "iteration.h"

int kiln_cand_move(search *s, kiln_draft *d, kiln_cand_state to, kiln_error *err)
{
    kiln_cand *c = &d->c;
    if (!kiln_cand_state_allowed(c->state, to))
        return kiln_fail(err, "candidate %d: no move from %s to %s (a bug in kiln)", c->n,
                         kiln_cand_state_name(c->state), kiln_cand_state_name(to));
    c->state = to;
    if (kiln_db_cand_upsert(s->db, c, err) < 0)
        return -1;
    if (s->moved)
        s->moved(s->moved_ctx, c);
    return 0;
}

#define REVERTED "reverted: "

int kiln_cand_decide(search *s, kiln_draft *d, kiln_step_kind what, const char *why,
                     kiln_error *err)
{
    kiln_cand *c = &d->c;
    int keep = what == KILN_STEP_KEEP;
    snprintf(c->decision, sizeof c->decision, "%s", keep ? "keep" : "revert");
    if (!keep) {
        if (strncmp(why, REVERTED, strlen(REVERTED)) == 0)
            why += strlen(REVERTED);
        snprintf(c->reason, sizeof c->reason, "%.630s", why);
        snprintf(c->why, sizeof c->why, REVERTED "%.380s", why);
    } else {
        snprintf(c->why, sizeof c->why, "%.399s", why);
    }
    return kiln_cand_move(s, d, KILN_CAND_DECIDED, err);
}
