/* judgement.h - the four judgements a candidate can get, as one table
 * (judgement.c): its verdict against its parent, the re-time of that in a
 * fresh worker, and two measurements against the task's baseline
 * (docs/search.md, "Pooled measurements"). Each has its own job id in the
 * candidate's row, its own verdict column and its own idempotency key. */
#ifndef KILN_JUDGEMENT_H
#define KILN_JUDGEMENT_H

typedef enum kiln_judgement {
    KILN_JUDGE_VERDICT = 0,     /* against its parent */
    KILN_JUDGE_CONFIRM,         /* against its parent again, in a fresh worker */
    KILN_JUDGE_RECORD,          /* against the task's baseline */
    KILN_JUDGE_RERECORD,        /* against the task's baseline again, in a fresh worker */
    KILN_NJUDGEMENTS
} kiln_judgement;

/* "verdict", "confirm", "record", "rerecord": the verdict column's name
 * (rundb.h) and the last part of the job's idempotency key. */
const char *kiln_judgement_name(kiln_judgement k);
/* The judgement of a name, or -1: an unknown name is no judgement. */
int kiln_judgement_parse(const char *name);
/* 1 when the candidate is timed against its parent, 0 against the task's
 * baseline. */
int kiln_judgement_vs_parent(kiln_judgement k);
/* What the progress line says while it is waited for. */
const char *kiln_judgement_doing(kiln_judgement k);

#endif
