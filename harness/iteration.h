/* iteration.h - what the parts of the iteration's state machine share
 * (iteration.c names the states and the moves): an iteration's candidates
 * in memory, and the steps that move them. Internal to search/. */
#ifndef KILN_ITERATION_H
#define KILN_ITERATION_H

#include "decide.h"
#include "search_state.h"

/* One candidate of the iteration, in memory for the whole iteration: the
 * database is written as it moves, never read back. */
typedef struct kiln_draft {
    kiln_cand c;                        /* its row, as last written */
    char *text[KILN_NTEXTS];            /* its stored texts (malloc'd, NULL: none): the
                                           source, and each verdict as the encoder wrote it */
    kiln_verdict *v[KILN_NJUDGEMENTS];  /* its judgements, decoded once (NULL: none yet) */
    unsigned taken;                     /* bit k: what v[k] means is in the row (a
                                           verdict stored by a session that stopped
                                           before that is taken in on resume) */
    kiln_verdict *vs_parent;            /* the verdict and its re-time pooled */
    kiln_verdict *vs_baseline;          /* the record and its re-record pooled */
    char parent_note[160], baseline_note[160];   /* what those pools set aside */
    char *norm;                         /* its normalised source (duplicates.c), or NULL */
} kiln_draft;

typedef struct kiln_iteration {
    int it;
    char *parent_src;                   /* the parent's source (its baseline) */
    int parent_n;                       /* the parent's candidate number, -1: none */
    kiln_draft *d;
    int n, cap;
} kiln_iteration;

/* ---- draft.c: the iteration in memory --------------------------------------- */

/* A proposal just recorded (propose.c: its row and its source) joins the
 * iteration being proposed. 0, or -1 out of memory. */
int kiln_iteration_add(kiln_iteration *t, const kiln_cand *c, const char *source);
/* A new, empty draft at t's end; NULL out of memory. */
kiln_draft *kiln_iteration_grow(kiln_iteration *t);
void kiln_iteration_free(kiln_iteration *t);
void kiln_draft_free(kiln_draft *d);

/* ---- iteration.c ---------------------------------------------------------- */

/* Iteration it: 0 done, 1 interrupted, 2 the proposer has nothing left,
 * -1 error (s->past_deadline: the time budget ran out mid-judgement). */
int kiln_search_iteration(search *s, int it, kiln_error *err);
/* Candidate 0, the start kernel: measured against the task's baseline and
 * committed as the first commit of the run's branch. */
int kiln_search_start(search *s, kiln_error *err);

/* ---- cand_move.c: recording the moves --------------------------------------- */

/* Move d on (cand_state.c lists the moves; any other is a bug) and write
 * its row: every move is recorded before the next step. */
int kiln_cand_move(search *s, kiln_draft *d, kiln_cand_state to, kiln_error *err);
/* Decide d (keep or revert, why) and record it. A revert's why, less its
 * "reverted: ", is also its reason. */
int kiln_cand_decide(search *s, kiln_draft *d, kiln_step_kind what, const char *why,
                     kiln_error *err);

/* ---- cand_steps.c: judging one candidate ---------------------------------- */

/* The verifier's table: s->seam, or the real one over s->judge. */
kiln_judge_seam kiln_search_seam(search *s);
/* Through kilnd: hand judgement k of d over now, so kilnd compiles it
 * while it times the job before; collected later under the same key. */
void kiln_cand_hand_over(search *s, const kiln_iteration *t, kiln_draft *d, kiln_judgement k);
/* What rule r sees of d. */
void kiln_cand_evidence(const kiln_draft *d, kiln_evidence *e);
/* Take d through rule r's steps, judgement after judgement, until the
 * rule decides (1, the decision in *final, for the caller to record), or
 * (stop_at_contender) until d is verified and waits for its turn to go on
 * (0). -1 with err (s->verify_failed: the verifier gave no verdict;
 * s->past_deadline: the time budget ran out waiting). */
int kiln_cand_advance(search *s, const kiln_iteration *t, kiln_draft *d, const kiln_rule *r,
                      int stop_at_contender, kiln_step *final, kiln_error *err);
/* d's stored texts decoded into its verdicts and pools (a resumed
 * iteration's candidates). */
void kiln_cand_decode(kiln_draft *d);

/* ---- per_shape.c: --objective per-shape's state ------------------------------ */

/* Is the run's objective per-shape? */
int kiln_search_per_shape(const search *s);
/* in: every visible shape's incumbent, from the run's kept kernels in the
 * order they were kept and t's keeps not committed yet; *parent_pooled:
 * s->parent's pooled verdict against the baseline (NULL: none; free it). */
int kiln_per_shape_load(search *s, const kiln_iteration *t, kiln_incumbents *in,
                        kiln_verdict **parent_pooled, kiln_error *err);
/* The run's incumbents as they stand between iterations (malloc'd; NULL
 * with err). */
kiln_incumbents *kiln_per_shape_incumbents(search *s, kiln_error *err);
/* The parent for --parents best: the incumbent of the shape furthest from
 * its floor, into parent (left as it is when no incumbent knows its
 * floor), and what to improve into s->target. */
int kiln_per_shape_target(search *s, char parent[41], kiln_error *err);

/* ---- duplicates.c: no source verified twice -------------------------------- */

/* 1 when d repeats a source the run verified (it is then decided: a
 * duplicate, reverted), 0 when it is new, -1 on error. */
int kiln_dup_check(search *s, const kiln_iteration *t, kiln_draft *d, kiln_error *err);
/* Would draft i be verified: proposed, not handed over, and not a copy of a
 * source verified before, in the run or earlier in this batch? */
int kiln_dup_fresh(search *s, const kiln_iteration *t, int i);
/* d's new verdict joins the verified sources. */
int kiln_dup_add(search *s, kiln_draft *d, kiln_error *err);
void kiln_dup_free(search *s);

/* ---- cand_git.c: the workspace ----------------------------------------------- */

/* decided -> committed: d as a child of its parent, the verdicts in the message. */
int kiln_cand_commit(search *s, kiln_draft *d, kiln_error *err);
/* committed -> done: the notes; a keep into the archive and onto the
 * branch (or under refs/kiln/kept), a revert parked under refs/kiln/rejected. */
int kiln_cand_apply(search *s, kiln_draft *d, kiln_error *err);
/* Does kept candidate c move the run's branch? */
int kiln_cand_becomes_best(const search *s, const kiln_cand *c);

/* ---- loop_events.c: what the person watching and the lessons hear ------------ */

/* The run's width class (knowledge: kiln_lesson_width_class) of the widest
 * row its group's visible shapes measure; "" when not known. */
const char *kiln_run_width_class(const search *s);
/* The progress line and a "step" event: candidate c is doing what. */
void kiln_say(search *s, const kiln_cand *c, const char *what);
/* What verdict v teaches (knowledge/record.c decides): a failure's note,
 * or, pooled, a speed lesson. */
void kiln_learn(search *s, const kiln_cand *c, const kiln_verdict *v, double speedup,
                double noise, int pooled, double lo, double hi);
/* Candidate c's pooled figure against the task's baseline, beside its
 * parent's, into the lesson it earned. */
void kiln_learn_baseline(search *s, const kiln_cand *c);
/* A decided candidate: the lessons its prompt showed judged, its
 * "candidate" event and line. */
void kiln_report(search *s, const kiln_cand *c);

#endif
