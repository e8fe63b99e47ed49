/* decide.c - the decision functions (see decide.h). The reasons are what
 * the run records in candidates.why and .reason, the commit message and
 * the notes, so their words are kept as they are. */
#include "decide.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "pooled.h"

#define BASELINE_FAILED "failed its measurement against the task's baseline"

static void judge(kiln_step *out, kiln_judgement k, const char *why)
{
    out->what = KILN_STEP_JUDGE;
    out->judge = k;
    snprintf(out->why, sizeof out->why, "%s", why ? why : "");
}

static void __attribute__((format(printf, 3, 4))) decide(kiln_step *out, kiln_step_kind what,
                                                        const char *fmt, ...)
{
    out->what = what;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out->why, sizeof out->why, fmt, ap);
    va_end(ap);
}

static int passed(const kiln_verdict *v)
{
    return v && strcmp(v->status, "pass") == 0;
}

/* The record and its re-record: judged in turn; NULL once both passed. */
static int baseline_steps(const kiln_evidence *e, const char *why, kiln_step *out)
{
    const kiln_verdict *rec = e->v[KILN_JUDGE_RECORD];
    if (!rec)
        return judge(out, KILN_JUDGE_RECORD, why), 1;
    if (!passed(rec))
        return decide(out, KILN_STEP_REVERT, BASELINE_FAILED), 1;
    if (!e->v[KILN_JUDGE_RERECORD])
        return judge(out, KILN_JUDGE_RERECORD, why), 1;
    if (!passed(e->vs_baseline))   /* a re-record that failed is the pool */
        return decide(out, KILN_STEP_REVERT, BASELINE_FAILED), 1;
    return 0;
}

/* The first verdict against the parent: a contender clears the keep rule
 * (why: the rule's words, which stand until the re-time); 0 when it is
 * reverted (out says why). */
static int screened(const kiln_rule *r, const kiln_evidence *e, char *why, size_t len,
                    kiln_step *out)
{
    const kiln_verdict *v = e->v[KILN_JUDGE_VERDICT];
    if (!v && e->verified)
        return decide(out, KILN_STEP_REVERT, "its verdict against the parent cannot be read "
                      "back"), 0;
    if (!passed(v))
        return decide(out, KILN_STEP_REVERT, "%s at %s (%s): %.500s", v->status, v->stage,
                      v->code, v->reason), 0;
    char rule[KILN_WHY_MAX];
    if (!kiln_keep_rule(v, &r->keep, rule, sizeof rule))
        return decide(out, KILN_STEP_REVERT, "%s", rule), 0;
    snprintf(why, len, "%.399s", rule);
    return 1;
}

/* The re-time: the keep rule again, and the two pooled; 0 when reverted. */
static int retimed(const kiln_rule *r, const kiln_evidence *e, char *why, size_t len,
                   kiln_step *out)
{
    const kiln_verdict *again = e->v[KILN_JUDGE_CONFIRM];
    if (!again)
        return decide(out, KILN_STEP_REVERT, "its re-time cannot be read back"), 0;
    char rule[400], full[480];
    int ok = kiln_keep_rule(again, &r->keep, rule, sizeof rule);
    double point = 0, lo = 0, hi = 0;
    if (e->vs_parent)
        kiln_pool_geomean(e->vs_parent, &point, &lo, &hi);
    const char *note = e->parent_note ? e->parent_note : "";
    snprintf(full, sizeof full, "%.240s (re-timed in a fresh worker; pooled %.3fx [%.3f, "
             "%.3f]%s%.100s)", rule, point, lo, hi, note[0] ? ": " : "", note);
    if (!ok)
        return decide(out, KILN_STEP_REVERT, "%s", full), 0;
    snprintf(why, len, "%.399s", full);
    return 1;
}

/* A kept candidate's why: the re-time's, with the baseline pool's caveat. */
static void kept_why(const char *why, const kiln_evidence *e, kiln_step *out)
{
    char kept[400];
    snprintf(kept, sizeof kept, "%.399s", why);
    size_t used = strlen(kept);
    const char *note = e->baseline_note ? e->baseline_note : "";
    if (note[0] && used + 1 < sizeof kept)
        snprintf(kept + used, sizeof kept - used, "; vs baseline: %s", note);
    decide(out, KILN_STEP_KEEP, "%s", kept);
}

static void objective_next(const kiln_rule *r, const kiln_evidence *e, kiln_step *out)
{
    char why[400];
    if (!e->v[KILN_JUDGE_VERDICT] && !e->verified)
        return judge(out, KILN_JUDGE_VERDICT, NULL);
    if (!screened(r, e, why, sizeof why, out))
        return;
    if (!e->v[KILN_JUDGE_CONFIRM] && !e->confirmed)
        return judge(out, KILN_JUDGE_CONFIRM, why);
    if (!retimed(r, e, why, sizeof why, out))
        return;
    if (baseline_steps(e, why, out))
        return;
    kept_why(why, e, out);
}

void kiln_rule_objective(kiln_rule *r, const kiln_keep_opts *k)
{
    *r = (kiln_rule){.name = "objective", .next = objective_next, .keep = *k, .one_winner = 1};
}

static void start_next(const kiln_rule *r, const kiln_evidence *e, kiln_step *out)
{
    (void)r;
    if (baseline_steps(e, NULL, out))
        return;
    const char *note = e->baseline_note ? e->baseline_note : "";
    decide(out, KILN_STEP_KEEP, "kept: the start kernel%s%.160s", note[0] ? "; vs baseline: " : "",
           note);
}

void kiln_rule_start(kiln_rule *r)
{
    static const char *const doing[KILN_NJUDGEMENTS] = {
        [KILN_JUDGE_RECORD] = "measuring the start kernel",
    };
    *r = (kiln_rule){.name = "start", .next = start_next, .one_winner = 1, .doing = doing};
}

/* ---- --objective per-shape ------------------------------------------------------ */

/* The screen on the verdict against the parent: 0 when it is reverted. A
 * candidate past it (confirmed: measured against the baseline) was
 * screened by the session that measured it. */
static int per_shape_screened(const kiln_rule *r, const kiln_evidence *e, char *why, size_t len,
                              kiln_step *out)
{
    const kiln_per_shape_ctx *c = r->ctx;
    const kiln_verdict *v = e->v[KILN_JUDGE_VERDICT];
    if (!v && !e->confirmed)
        return decide(out, KILN_STEP_REVERT, "its verdict against the parent cannot be read "
                      "back"), 0;
    if (v && !passed(v))
        return decide(out, KILN_STEP_REVERT, "%s at %s (%s): %.500s", v->status, v->stage,
                      v->code, v->reason), 0;
    if (e->confirmed || !v)
        return snprintf(why, len, "contender"), 1;
    char list[300];
    if (kiln_incumbents_may_win(c->in, v, c->parent_pooled, r->keep.margin, list,
                                sizeof list) == 0)
        return decide(out, KILN_STEP_REVERT, "reverted: no shape where it may beat the "
                      "incumbent by %.0f%% (%s)", r->keep.margin * 100, list), 0;
    snprintf(why, len, "contender: %.300s", list);
    return 1;
}

static void per_shape_next(const kiln_rule *r, const kiln_evidence *e, kiln_step *out)
{
    const kiln_per_shape_ctx *c = r->ctx;
    char why[400], list[420];
    if (!e->v[KILN_JUDGE_VERDICT] && !e->verified)
        return judge(out, KILN_JUDGE_VERDICT, NULL);
    if (!per_shape_screened(r, e, why, sizeof why, out))
        return;
    if (baseline_steps(e, why, out))
        return;
    int wins = kiln_incumbents_wins(c->in, e->vs_baseline, list, sizeof list);
    if (wins == 0)
        return decide(out, KILN_STEP_REVERT, "reverted: surely fastest at no shape (closest: "
                      "%.420s)", list);
    snprintf(why, sizeof why, "kept: surely fastest at %d shape%s: %.340s", wins,
             wins > 1 ? "s" : "", list);
    kept_why(why, e, out);
}

void kiln_rule_per_shape(kiln_rule *r, const kiln_keep_opts *k, const kiln_per_shape_ctx *ctx)
{
    *r = (kiln_rule){.name = "per-shape", .next = per_shape_next, .keep = *k, .one_winner = 0,
                     .ctx = ctx};
}
