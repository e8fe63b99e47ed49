/* judge_script.h - the judge seam's scripted table (judge_seam.h): the
 * verdicts a test hands it, in the order and after the delays the test
 * says, with no verifier and no clock. A step answers the first request
 * for its candidate and judgement that is not answered yet; the steps of
 * one candidate and judgement are used in their order. Delays run on a
 * virtual clock: a step whose delay would take the clock past the
 * deadline (the seam's deadline operation) is not answered: the wait ends
 * at the deadline with the job still running, as kilnd's does, and a later
 * session collects it by its job id. Every operation is logged, so a test
 * can check what was handed over, collected, submitted again or
 * cancelled, and in which order. */
#ifndef KILN_JUDGE_SCRIPT_H
#define KILN_JUDGE_SCRIPT_H

#include "judge_seam.h"

#define KILN_SCRIPT_MAX 128

typedef struct kiln_script_step {
    int n;                      /* the candidate */
    kiln_judgement kind;
    const kiln_verdict *verdict;   /* what it answers (copied); NULL: the job ends in an
                                      error instead of a verdict */
    double delay_s;             /* virtual seconds from the collect to the answer */
} kiln_script_step;

typedef enum kiln_script_op { KILN_SCRIPT_SUBMIT, KILN_SCRIPT_COLLECT, KILN_SCRIPT_CANCEL }
    kiln_script_op;

typedef struct kiln_script_call {
    kiln_script_op op;
    int n;
    kiln_judgement kind;
    char job[32];               /* the job id it was asked with ("" none; for a submit, the
                                   one it got) */
    char key[320];
    int baseline_is_task;       /* no baseline source came with it */
    int answered;               /* a collect that returned a verdict */
} kiln_script_call;

typedef struct kiln_judge_script {
    kiln_script_step step[KILN_SCRIPT_MAX];
    int nsteps;
    int used[KILN_SCRIPT_MAX];  /* 1: answered */
    int ahead;                  /* 1: submit hands jobs over (as kilnd), 0: in process */
    double clock, deadline;     /* virtual seconds; deadline < 0: none */
    int next_job;               /* job ids are "s<next_job>", counting up */
    char job_of[KILN_SCRIPT_MAX][32];   /* the job a step was handed over or collected as */
    kiln_script_call log[4 * KILN_SCRIPT_MAX];
    int nlog;
} kiln_judge_script;

/* An empty script: in process (ahead 0), no deadline, job ids from first. */
void kiln_judge_script_init(kiln_judge_script *s, int ahead, int first_job);
/* Add a step; returns its index. */
int kiln_judge_script_add(kiln_judge_script *s, int n, kiln_judgement kind,
                          const kiln_verdict *v, double delay_s);
kiln_judge_seam kiln_judge_script_seam(kiln_judge_script *s);
/* How many logged calls have op for candidate n's judgement kind. */
int kiln_judge_script_count(const kiln_judge_script *s, kiln_script_op op, int n,
                            kiln_judgement kind);

#endif
