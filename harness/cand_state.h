/* cand_state.h - a candidate's steps through an iteration, and the only
 * moves between them (cand_state.c). The run database stores the names. */
#ifndef KILN_CAND_STATE_H
#define KILN_CAND_STATE_H

typedef enum kiln_cand_state {
    KILN_CAND_PROPOSED = 0,     /* source stored, not verified yet */
    KILN_CAND_VERIFIED,         /* verdict against its parent recorded */
    KILN_CAND_CONFIRMED,        /* faster again in a fresh worker */
    KILN_CAND_DECIDED,          /* keep or revert chosen (decision, reason) */
    KILN_CAND_COMMITTED,        /* committed with its verdict notes */
    KILN_CAND_DONE,             /* the branch moved, or the candidate parked */
    KILN_CAND_NSTATES
} kiln_cand_state;

/* "proposed" ... "done". */
const char *kiln_cand_state_name(kiln_cand_state s);
/* The state of a name, or -1. */
int kiln_cand_state_parse(const char *name);
/* 1 when a candidate may move from one state to the other. */
int kiln_cand_state_allowed(kiln_cand_state from, kiln_cand_state to);

#endif
