/* cand_state.c - the candidate state machine (see cand_state.h). Every move
 * a search makes is listed here; anything else is a bug the caller reports. */
#include "cand_state.h"

#include <string.h>

static const char *const names[KILN_CAND_NSTATES] = {
    "proposed", "verified", "confirmed", "decided", "committed", "done",
};

/* from -> to. The start kernel goes from proposed to decided (it is
 * measured against the task's baseline, not a parent); a draft that fails
 * or is slower goes from verified to decided (revert); one that held up in
 * a fresh worker from confirmed to decided (keep or revert). */
static const unsigned char moves[KILN_CAND_NSTATES][KILN_CAND_NSTATES] = {
    [KILN_CAND_PROPOSED] = {[KILN_CAND_VERIFIED] = 1, [KILN_CAND_DECIDED] = 1},
    [KILN_CAND_VERIFIED] = {[KILN_CAND_CONFIRMED] = 1, [KILN_CAND_DECIDED] = 1},
    [KILN_CAND_CONFIRMED] = {[KILN_CAND_DECIDED] = 1},
    [KILN_CAND_DECIDED] = {[KILN_CAND_COMMITTED] = 1},
    [KILN_CAND_COMMITTED] = {[KILN_CAND_DONE] = 1},
};

const char *kiln_cand_state_name(kiln_cand_state s)
{
    return s >= 0 && s < KILN_CAND_NSTATES ? names[s] : "?";
}

int kiln_cand_state_parse(const char *name)
{
    for (int i = 0; i < KILN_CAND_NSTATES; i++)
        if (name && strcmp(name, names[i]) == 0)
            return i;
    return -1;
}

int kiln_cand_state_allowed(kiln_cand_state from, kiln_cand_state to)
{
    return from >= 0 && from < KILN_CAND_NSTATES && to >= 0 && to < KILN_CAND_NSTATES &&
           moves[from][to];
}
