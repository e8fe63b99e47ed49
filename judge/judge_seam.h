/* judge_seam.h - how the search talks to the verifier: a small table of
 * operations, submit, collect and cancel, as verifier/backend/backend.h is
 * one table per backend. The search (iteration.c) asks for judgements
 * only through it and never asks which table it has.
 *
 *   table                    where the verdicts come from
 *   kiln_judge_seam_real     judge.c: in process (--no-daemon), through
 *                            kilnd, or over many kilnds (--verifiers,
 *                            --fleet), with judge.c's retry and timeout policy
 *   kiln_judge_script_seam   the verdicts a test hands it, in the order and
 *                            after the (virtual) delays it says
 *                            (judge_script.h): no verifier, no timing
 *
 * A judgement is asked for under the candidate's idempotency key: whoever
 * answers hands back the job it already has under that key, so a job
 * handed over ahead, or before a crash, is collected and never verified
 * twice. Job ids are recorded by the caller as on_accepted reports them. */
#ifndef KILN_JUDGE_SEAM_H
#define KILN_JUDGE_SEAM_H

#include "judge.h"
#include "judgement.h"
#include "kiln_error.h"
#include "verdict.h"

/* One judgement asked of the verifier. */
typedef struct kiln_judge_req {
    kiln_judgement kind;
    int n;                      /* the candidate */
    const char *source;
    const char *baseline;       /* its parent's source; NULL: the task's baseline */
    const char *key;            /* the idempotency key */
} kiln_judge_req;

/* Why a collect came back without a verdict. */
typedef struct kiln_judge_end {
    int job_failed;             /* the verifier ended the job with an error, not a verdict */
    int past_deadline;          /* the wait gave up at the deadline; the job goes on and a
                                   resumed run collects it */
} kiln_judge_end;

typedef struct kiln_judge_ops {
    /* 1 when a job can be handed over before it is waited for (kilnd: it
     * compiles one while it times another); 0 when a judgement runs only
     * when collected (in process). */
    int (*ahead)(void *self);
    /* Hand rq over without waiting for its verdict; job gets its id and
     * on_accepted is called with it. 0, or -1 with err (nothing is lost:
     * collect still judges it). */
    int (*submit)(void *self, const kiln_judge_req *rq, char job[32],
                  kiln_judge_accepted on_accepted, void *ctx, kiln_error *err);
    /* The verdict of rq: of job when it names one (handed over before, or
     * recorded by an earlier session), else of a job submitted now. NULL
     * with err and *end saying why. Free the verdict with free(). */
    kiln_verdict *(*collect)(void *self, const kiln_judge_req *rq, char job[32],
                             kiln_judge_accepted on_accepted, void *ctx, kiln_judge_end *end,
                             kiln_error *err);
    /* The search will not collect job (rq's): it may be dropped. */
    void (*cancel)(void *self, const kiln_judge_req *rq, const char *job);
    /* No verdict is waited for past seconds from now (< 0: no deadline). */
    void (*deadline)(void *self, double seconds);
} kiln_judge_ops;

typedef struct kiln_judge_seam {
    const kiln_judge_ops *ops;
    void *self;
} kiln_judge_seam;

/* The real table, over j (judge.h). */
kiln_judge_seam kiln_judge_seam_real(kiln_judge *j);

#endif
