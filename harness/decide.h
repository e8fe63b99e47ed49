/* decide.h - the search's decisions about one candidate, as pure
 * functions: from what the candidate has so far (its verdicts, decoded,
 * and their pools) to its next step: a judgement to ask for, or keep, or
 * revert, each with its reason. No database, no git, no verifier:
 * iteration.c performs the steps, in the order a rule asks for them.
 *
 * A rule is one decision function and what it needs. The objective rules
 * (--objective geomean, min or a shape: keep_rule.h) are one; the start
 * kernel's, which only measures it against the task's baseline, another.
 * A rule with another order of judgements, or other evidence (a per-shape
 * rule: every visible shape's incumbent, through ctx), is one more
 * function of the same shape, tested the same way (tests/unit/
 * test_decide.c on built verdicts, test_search_loop.c through the whole
 * loop with scripted ones). */
#ifndef KILN_DECIDE_H
#define KILN_DECIDE_H

#include <stddef.h>

#include "incumbents.h"
#include "judgement.h"
#include "keep_rule.h"
#include "verdict.h"

typedef enum kiln_step_kind {
    KILN_STEP_JUDGE,            /* ask for judgement `judge` */
    KILN_STEP_KEEP,
    KILN_STEP_REVERT,
} kiln_step_kind;

#define KILN_WHY_MAX 700

typedef struct kiln_step {
    kiln_step_kind what;
    kiln_judgement judge;       /* KILN_STEP_JUDGE */
    /* The decision's reason; for a judgement, the standing one ("kept:
     * geomean ... clears 2%" for a contender not re-timed yet). */
    char why[KILN_WHY_MAX];
} kiln_step;

/* What a rule sees of a candidate. */
typedef struct kiln_evidence {
    int verified;               /* it was judged against its parent (its state is past
                                   proposed): no verdict then means it cannot be read back */
    int confirmed;              /* it held up in a fresh worker (state confirmed) */
    const kiln_verdict *v[KILN_NJUDGEMENTS];   /* NULL: not judged yet */
    const kiln_verdict *vs_parent;     /* the verdict and its re-time pooled, NULL: not re-timed */
    const kiln_verdict *vs_baseline;   /* the record and its re-record pooled (the record
                                          alone when it did not pass), NULL: not recorded */
    const char *parent_note, *baseline_note;   /* what those pools set aside ("" or NULL: nothing) */
} kiln_evidence;

typedef struct kiln_rule kiln_rule;
struct kiln_rule {
    const char *name;
    void (*next)(const kiln_rule *r, const kiln_evidence *e, kiln_step *out);
    kiln_keep_opts keep;        /* the run's keep rule (margin, regression, objective) */
    /* 1: once a contender of an iteration is kept, the others are
     * reverted ("another draft of this iteration was kept"). */
    int one_winner;
    const void *ctx;            /* what else the rule reads (none for these) */
    /* What the progress line says while each judgement is waited for
     * (NULL, or a NULL entry: the judgement's own words, judgement.h). */
    const char *const *doing;
};

/* --objective geomean, min or a visible shape, by the run's settings: the
 * verdict against the parent must pass and clear the keep rule; then a
 * re-time in a fresh worker must clear it again (the claim is the two
 * pooled); then the record and re-record against the task's baseline must
 * pass. One winner an iteration. */
void kiln_rule_objective(kiln_rule *r, const kiln_keep_opts *k);
/* The start kernel: measured against the task's baseline, twice; kept
 * when both pass. */
void kiln_rule_start(kiln_rule *r);

/* --objective per-shape (incumbents.h): what the rule reads besides the
 * candidate's own evidence. */
typedef struct kiln_per_shape_ctx {
    const kiln_incumbents *in;          /* every visible shape's incumbent */
    const kiln_verdict *parent_pooled;  /* the parent's pooled verdict against the
                                           baseline (NULL: unknown) */
} kiln_per_shape_ctx;

/* The verdict against the parent must pass and, estimated against the
 * baseline through the parent's pooled figures, may beat the incumbent at
 * one shape or more (the screen, by the run's margin); then the record and
 * re-record against the task's baseline are pooled, and it is kept when
 * it surely beats the incumbent at one shape or more (no re-time against
 * the parent: the claim is the pool against the baseline). Any number of
 * drafts of an iteration may be kept; ctx must outlive the rule, and the
 * caller offers each keep to ctx->in before the next draft is decided. */
void kiln_rule_per_shape(kiln_rule *r, const kiln_keep_opts *k, const kiln_per_shape_ctx *ctx);

#endif
