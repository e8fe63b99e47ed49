/* shares.h - where a search's wall time went: waiting on the model for
 * proposals, waiting on the verifier for verdicts, and kiln itself (all
 * the rest); and candidates per hour (docs/search.md, "Where the time
 * goes"). Plain arithmetic on the run row, for the summary and `kiln
 * status`. */
#ifndef KILN_SHARES_H
#define KILN_SHARES_H

#include <stddef.h>

#include "rundb.h"

typedef struct kiln_shares {
    double seconds;             /* the run's wall time, all sessions */
    int candidates;             /* decided, the start kernel aside */
    double per_hour;            /* candidates per hour of that time (0: no time) */
    double model, verify, kiln; /* shares of it, each in [0, 1], adding up to 1 */
    double lanes_busy;          /* the share of the verifiers' lane time that was busy
                                   (lane_busy.h), or -1: not measured (in process, or a
                                   run from before kiln measured it) */
} kiln_shares;

/* The shares of run r, with `candidates` decided candidates. */
void kiln_shares_of(const kiln_run *r, int candidates, kiln_shares *out);

/* "12.0 candidates an hour; of the wall time, model 80.1%, verification
 * 18.2%, kiln 1.7%; verifier lanes busy 93.0%" (the last part when
 * measured) */
void kiln_shares_text(const kiln_shares *sh, char *buf, size_t len);

/* "pipelined: 3 batches of drafts asked for while the iteration before was
 * verified, 1 answer not used" (then tail, e.g. " (the run stopped
 * first)") */
void kiln_pipelined_text(int asked, int dropped, const char *tail, char *buf, size_t len);

#endif
