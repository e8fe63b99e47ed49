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
 * verified, 1 answer not used" (then tail), from the run row: all
 * sessions (kiln status) */
void kiln_asked_ahead_text(int asked, int dropped, const char *tail, char *buf, size_t len);

/* Pipelining saves at most min(M, V) an iteration of the M + V a sequential
 * one waits (M, V the mean model and verification times); it is used while
 * that is at least this share: below it, the saving is small next to the
 * cost, prompts that lack the verdicts of a whole iteration. */
#define KILN_PIPELINE_MIN_SAVING 0.2

/* 1 when asking the next iteration's drafts ahead pays by the rule above,
 * with min_saving in its place (0: KILN_PIPELINE_MIN_SAVING), or when the
 * model or the verification has not been measured yet (the first batch
 * ahead is how they are). */
int kiln_pipeline_pays(const kiln_pipe_times *p, double min_saving);

/* "pipelined 2 of 3 iterations: saved 4 s (model 1.6 s, verification 1.1 s
 * an iteration), 0 answers not used", or "pipelined 0 of 3 iterations: not
 * worth it (model 0.1 s, verification 1.2 s an iteration): the model was
 * asked after the verdicts" (then tail, e.g. " (the run stopped first)");
 * with none pipelined but dropped answers not used, those are named
 * instead of the last clause. */
void kiln_pipelined_text(const kiln_pipe_times *p, int dropped, const char *tail, char *buf,
                         size_t len);

#endif
