/* test_decide.c - the search's decision functions (harness/decide.c) on
 * built verdicts: every step the objective rule and the start kernel's
 * rule can take, in the order they take them, with the reasons the run
 * records, and the per-shape rule on its incumbents. No database, no
 * verifier, no timing. The whole loop with
 * scripted verdicts is test_search_loop.c. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decide.h"
#include "pooled.h"

static const kiln_keep_opts defaults = {0.02, 0.03, "geomean"};

/* Shapes at the speedups given, each with the interval [sp*(1-w), sp*(1+w)]. */
static kiln_verdict *verdict(const char *status, double w, int n, ...)
{
    kiln_verdict *v = calloc(1, sizeof *v);
    assert_non_null(v);
    snprintf(v->status, sizeof v->status, "%s", status);
    snprintf(v->stage, sizeof v->stage, "plausibility");
    snprintf(v->code, sizeof v->code, "%s", strcmp(status, "pass") ? "timer-disagreement" : "ok");
    va_list ap;
    va_start(ap, n);
    double logsum = 0;
    for (int i = 0; i < n; i++) {
        double sp = va_arg(ap, double);
        kiln_shape_result *r = &v->results[v->nresults];
        snprintf(r->id, sizeof r->id, "v%d", ++v->nresults);
        r->visible = r->timed = 1;
        r->speedup = sp;
        r->speedup_lo = sp * (1 - w);
        r->speedup_hi = sp * (1 + w);
        r->cand = (kiln_time_stats){1000, 990, 1010, 40};
        r->base = (kiln_time_stats){1000 * sp, 990 * sp, 1010 * sp, 40};
        logsum += log(sp);
    }
    va_end(ap);
    v->geomean_speedup = n ? exp(logsum / n) : 0;
    return v;
}

static kiln_verdict *failed(const char *stage, const char *code)
{
    kiln_verdict *v = verdict("fail", 0, 0);
    snprintf(v->stage, sizeof v->stage, "%s", stage);
    snprintf(v->code, sizeof v->code, "%s", code);
    snprintf(v->reason, sizeof v->reason, "it went wrong at %s", stage);
    return v;
}

typedef struct fixture {
    kiln_rule rule;
    kiln_evidence e;
    kiln_verdict *v[KILN_NJUDGEMENTS], *vs_parent, *vs_baseline;
    char parent_note[160], baseline_note[160];
    kiln_step step;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    kiln_rule_objective(&f->rule, &defaults);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    for (int k = 0; k < KILN_NJUDGEMENTS; k++)
        free(f->v[k]);
    free(f->vs_parent);
    free(f->vs_baseline);
    free(f);
    return 0;
}

/* Judgement k's verdict in, the pools made as the loop makes them, and
 * the rule's next step. */
static const kiln_step *after(fixture *f, kiln_judgement k, kiln_verdict *v)
{
    if (k < KILN_NJUDGEMENTS) {
        free(f->v[k]);
        f->v[k] = v;
    }
    if (f->v[KILN_JUDGE_VERDICT] && f->v[KILN_JUDGE_CONFIRM] && !f->vs_parent) {
        f->vs_parent = calloc(1, sizeof *f->vs_parent);
        kiln_pool_verdicts(f->v[0], f->v[1], f->vs_parent, f->parent_note, sizeof f->parent_note);
    }
    const kiln_verdict *rec = f->v[KILN_JUDGE_RECORD];
    if (rec && !f->vs_baseline && (strcmp(rec->status, "pass") || f->v[KILN_JUDGE_RERECORD])) {
        f->vs_baseline = calloc(1, sizeof *f->vs_baseline);
        if (strcmp(rec->status, "pass"))
            memcpy(f->vs_baseline, rec, sizeof *rec);
        else
            kiln_pool_verdicts(rec, f->v[KILN_JUDGE_RERECORD], f->vs_baseline, f->baseline_note,
                               sizeof f->baseline_note);
    }
    for (int j = 0; j < KILN_NJUDGEMENTS; j++)
        f->e.v[j] = f->v[j];
    f->e.vs_parent = f->vs_parent;
    f->e.vs_baseline = f->vs_baseline;
    f->e.parent_note = f->parent_note;
    f->e.baseline_note = f->baseline_note;
    f->rule.next(&f->rule, &f->e, &f->step);
    return &f->step;
}

static void assert_judge(const kiln_step *s, kiln_judgement k)
{
    assert_int_equal(s->what, KILN_STEP_JUDGE);
    assert_int_equal(s->judge, k);
}

static void assert_revert(const kiln_step *s, const char *words)
{
    assert_int_equal(s->what, KILN_STEP_REVERT);
    if (!strstr(s->why, words))
        fail_msg("why '%s' does not say '%s'", s->why, words);
}

static void keep_takes_four_judgements(void **state)
{
    fixture *f = *state;
    assert_judge(after(f, KILN_NJUDGEMENTS, NULL), KILN_JUDGE_VERDICT);
    const kiln_step *s = after(f, KILN_JUDGE_VERDICT, verdict("pass", 0.01, 3, 1.5, 1.4, 1.6));
    assert_judge(s, KILN_JUDGE_CONFIRM);
    assert_non_null(strstr(s->why, "kept: geomean"));   /* a contender's standing reason */
    s = after(f, KILN_JUDGE_CONFIRM, verdict("pass", 0.01, 3, 1.5, 1.4, 1.6));
    assert_judge(s, KILN_JUDGE_RECORD);
    assert_non_null(strstr(s->why, "(re-timed in a fresh worker; pooled 1.49"));
    assert_judge(after(f, KILN_JUDGE_RECORD, verdict("pass", 0.01, 3, 2.0, 2.0, 2.0)),
                 KILN_JUDGE_RERECORD);
    s = after(f, KILN_JUDGE_RERECORD, verdict("pass", 0.01, 3, 2.0, 2.0, 2.0));
    assert_int_equal(s->what, KILN_STEP_KEEP);
    assert_true(strncmp(s->why, "kept: geomean 1.49", 18) == 0);
    assert_null(strstr(s->why, "vs baseline"));   /* the records agreed: no caveat */
}

static void failure_is_reverted_at_once(void **state)
{
    fixture *f = *state;
    const kiln_step *s = after(f, KILN_JUDGE_VERDICT, failed("compile", "compile-error"));
    assert_revert(s, "fail at compile (compile-error): it went wrong at compile");
}

static void not_clear_of_the_margin(void **state)
{
    fixture *f = *state;
    const kiln_step *s = after(f, KILN_JUDGE_VERDICT, verdict("pass", 0.02, 3, 1.01, 1.01, 1.01));
    assert_revert(s, "reverted: geomean 1.010x");
    assert_non_null(strstr(s->why, "does not clear 2%"));
}

static void a_regression_reverts(void **state)
{
    fixture *f = *state;
    const kiln_step *s = after(f, KILN_JUDGE_VERDICT, verdict("pass", 0.01, 3, 1.5, 1.5, 0.8));
    assert_revert(s, "v3 0.800x [0.792, 0.808] regresses by more than 3%");
}

static void suspect_retime_reverts(void **state)
{
    fixture *f = *state;
    after(f, KILN_JUDGE_VERDICT, verdict("pass", 0.01, 3, 1.5, 1.5, 1.5));
    const kiln_step *s = after(f, KILN_JUDGE_CONFIRM, verdict("suspect", 0.01, 3, 1.5, 1.5, 1.5));
    assert_revert(s, "reverted: suspect at plausibility (timer-disagreement) (re-timed in a fresh "
                     "worker");
}

static void retime_short_of_the_margin(void **state)
{
    fixture *f = *state;
    after(f, KILN_JUDGE_VERDICT, verdict("pass", 0.01, 3, 1.5, 1.5, 1.5));
    const kiln_step *s = after(f, KILN_JUDGE_CONFIRM, verdict("pass", 0.02, 3, 1.0, 1.0, 1.0));
    assert_revert(s, "does not clear 2% (re-timed in a fresh worker; pooled");
}

/* The verdict and its re-time do not overlap: the pool takes the lower,
 * says so, and the lower still clears the margin. */
static void pools_that_do_not_overlap(void **state)
{
    fixture *f = *state;
    after(f, KILN_JUDGE_VERDICT, verdict("pass", 0.01, 1, 1.6));
    const kiln_step *s = after(f, KILN_JUDGE_CONFIRM, verdict("pass", 0.01, 1, 1.2));
    assert_judge(s, KILN_JUDGE_RECORD);
    assert_non_null(strstr(s->why, "pooled 1.200x"));
    assert_non_null(strstr(s->why, "do not overlap"));
    after(f, KILN_JUDGE_RECORD, verdict("pass", 0.01, 1, 3.0));
    s = after(f, KILN_JUDGE_RERECORD, verdict("pass", 0.01, 1, 2.0));
    assert_int_equal(s->what, KILN_STEP_KEEP);
    assert_non_null(strstr(s->why, "; vs baseline: "));
    assert_non_null(strstr(strstr(s->why, "; vs baseline: "), "do not overlap"));
}

static void record_or_rerecord_failing_reverts(void **state)
{
    fixture *f = *state;
    after(f, KILN_JUDGE_VERDICT, verdict("pass", 0.01, 3, 1.5, 1.5, 1.5));
    after(f, KILN_JUDGE_CONFIRM, verdict("pass", 0.01, 3, 1.5, 1.5, 1.5));
    const kiln_step *s = after(f, KILN_JUDGE_RECORD, failed("hidden", "wrong-output"));
    assert_revert(s, "failed its measurement against the task's baseline");
    /* A re-record that fails is the pool, and fails it too. */
    free(f->vs_baseline);
    f->vs_baseline = NULL;
    after(f, KILN_JUDGE_RECORD, verdict("pass", 0.01, 3, 2.0, 2.0, 2.0));
    s = after(f, KILN_JUDGE_RERECORD, failed("timing", "timeout"));
    assert_revert(s, "failed its measurement against the task's baseline");
}

/* A candidate past a state whose verdict cannot be read back (a damaged
 * database) is reverted saying so, never judged again. */
static void unreadable_verdicts(void **state)
{
    fixture *f = *state;
    f->e.verified = 1;
    assert_revert(after(f, KILN_NJUDGEMENTS, NULL), "its verdict against the parent cannot be "
                                                    "read back");
    f->e.confirmed = 1;
    assert_revert(after(f, KILN_JUDGE_VERDICT, verdict("pass", 0.01, 3, 1.5, 1.5, 1.5)),
                  "its re-time cannot be read back");
}

static void objective_min_and_a_shape(void **state)
{
    fixture *f = *state;
    kiln_keep_opts k = {0.02, 0.03, "min"};
    kiln_rule_objective(&f->rule, &k);
    assert_revert(after(f, KILN_JUDGE_VERDICT, verdict("pass", 0.001, 3, 1.5, 1.5, 1.0)),
                  "min 1.000x");
    snprintf(k.objective, sizeof k.objective, "v3");
    kiln_rule_objective(&f->rule, &k);
    assert_revert(after(f, KILN_JUDGE_VERDICT, verdict("pass", 0.001, 2, 1.5, 1.5)),
                  "the objective v3 has no timed visible shape");
    assert_judge(after(f, KILN_JUDGE_VERDICT, verdict("pass", 0.001, 3, 1.0, 1.0, 1.5)),
                 KILN_JUDGE_CONFIRM);
}

static void start_kernel(void **state)
{
    fixture *f = *state;
    kiln_rule_start(&f->rule);
    assert_string_equal(f->rule.doing[KILN_JUDGE_RECORD], "measuring the start kernel");
    assert_judge(after(f, KILN_NJUDGEMENTS, NULL), KILN_JUDGE_RECORD);
    assert_judge(after(f, KILN_JUDGE_RECORD, verdict("pass", 0.01, 2, 1.0, 1.0)),
                 KILN_JUDGE_RERECORD);
    const kiln_step *s = after(f, KILN_JUDGE_RERECORD, verdict("pass", 0.01, 2, 1.0, 1.0));
    assert_int_equal(s->what, KILN_STEP_KEEP);
    assert_string_equal(s->why, "kept: the start kernel");
    free(f->vs_baseline);
    f->vs_baseline = NULL;
    assert_int_equal(after(f, KILN_JUDGE_RECORD, failed("compile", "compile-error"))->what,
                     KILN_STEP_REVERT);
}

/* ---- --objective per-shape ------------------------------------------------- */

/* The per-shape rule on incumbents made of a start kernel's pooled verdict
 * (f->v's verdicts are freed by the teardown; these two by the test). */
typedef struct per_shape {
    kiln_incumbents in;
    kiln_verdict *start;
    kiln_per_shape_ctx ctx;
} per_shape;

static per_shape *per_shape_rule(fixture *f, kiln_verdict *start)
{
    per_shape *p = calloc(1, sizeof *p);
    assert_non_null(p);
    p->start = start;
    assert_int_equal(kiln_incumbents_offer(&p->in, 0, start), start->nresults);
    p->ctx = (kiln_per_shape_ctx){.in = &p->in, .parent_pooled = start};
    kiln_rule_per_shape(&f->rule, &defaults, &p->ctx);
    assert_int_equal(f->rule.one_winner, 0);
    return p;
}

static void per_shape_done(per_shape *p)
{
    free(p->start);
    free(p);
}

static void assert_keep(const kiln_step *s, const char *words)
{
    assert_int_equal(s->what, KILN_STEP_KEEP);
    if (!strstr(s->why, words))
        fail_msg("why '%s' does not say '%s'", s->why, words);
}

/* Slower on two shapes of three, surely faster on the third: the geomean
 * rule reverts it; per-shape keeps it, after the record and re-record
 * against the baseline (no re-time against the parent). */
static void per_shape_keeps_a_specialist(void **state)
{
    fixture *f = *state;
    per_shape *p = per_shape_rule(f, verdict("pass", 0.01, 3, 1.0, 1.0, 1.0));
    assert_judge(after(f, KILN_NJUDGEMENTS, NULL), KILN_JUDGE_VERDICT);
    const kiln_step *s = after(f, KILN_JUDGE_VERDICT, verdict("pass", 0.01, 3, 0.8, 0.9, 1.3));
    assert_judge(s, KILN_JUDGE_RECORD);
    assert_non_null(strstr(s->why, "contender: v3 est. 1.300x of its incumbent"));
    f->e.verified = f->e.confirmed = 1;
    assert_judge(after(f, KILN_JUDGE_RECORD, verdict("pass", 0.01, 3, 0.8, 0.9, 1.3)),
                 KILN_JUDGE_RERECORD);
    s = after(f, KILN_JUDGE_RERECORD, verdict("pass", 0.01, 3, 0.8, 0.9, 1.3));
    assert_keep(s, "kept: surely fastest at 1 shape: v3 1.300x");
    assert_non_null(strstr(s->why, "over #0's 1.000x [0.990, 1.010]"));
    /* and it now holds v3, the start kernel the other two */
    assert_int_equal(kiln_incumbents_offer(&p->in, 5, f->vs_baseline), 1);
    assert_int_equal(kiln_incumbent_at(&p->in, "v3")->n, 5);
    assert_int_equal(kiln_incumbent_at(&p->in, "v1")->n, 0);
    /* The same candidate under the geomean rule is reverted at once. */
    kiln_rule_objective(&f->rule, &defaults);
    f->e.verified = f->e.confirmed = 0;
    assert_revert(after(f, KILN_JUDGE_VERDICT, verdict("pass", 0.01, 3, 0.8, 0.9, 1.3)),
                  "geomean");
    per_shape_done(p);
}

/* Faster on paper, but its pool overlaps the incumbent's: reverted,
 * naming the closest shape. */
static void per_shape_overlap_reverts(void **state)
{
    fixture *f = *state;
    per_shape *p = per_shape_rule(f, verdict("pass", 0.05, 2, 1.0, 1.0));
    assert_judge(after(f, KILN_JUDGE_VERDICT, verdict("pass", 0.01, 2, 1.06, 0.9)),
                 KILN_JUDGE_RECORD);
    f->e.verified = f->e.confirmed = 1;
    after(f, KILN_JUDGE_RECORD, verdict("pass", 0.05, 2, 1.06, 0.9));
    assert_revert(after(f, KILN_JUDGE_RERECORD, verdict("pass", 0.05, 2, 1.06, 0.9)),
                  "reverted: surely fastest at no shape (closest: v1 1.060x");
    per_shape_done(p);
}

/* The screen: no shape's estimate clears the incumbent by the margin, so
 * it is never measured against the baseline; a failure is reverted with
 * its verdict's words. */
static void per_shape_screen(void **state)
{
    fixture *f = *state;
    per_shape *p = per_shape_rule(f, verdict("pass", 0.01, 3, 2.0, 2.0, 2.0));
    assert_revert(after(f, KILN_JUDGE_VERDICT, verdict("pass", 0.01, 3, 0.9, 1.01, 1.015)),
                  "reverted: no shape where it may beat the incumbent by 2% (at best v3, est. "
                  "1.015x of its incumbent)");
    assert_revert(after(f, KILN_JUDGE_VERDICT, failed("hidden", "wrong-output")),
                  "fail at hidden (wrong-output)");
    /* A parent that is not the incumbent: the estimate goes through the
     * parent's own pooled figure (1.5x of the baseline at v1, where the
     * incumbent holds 2.0x: 1.4x over the parent is 1.05x of it). */
    kiln_verdict *parent = verdict("pass", 0.01, 3, 1.5, 1.0, 1.0);
    p->ctx.parent_pooled = parent;
    const kiln_step *s = after(f, KILN_JUDGE_VERDICT, verdict("pass", 0.01, 3, 1.4, 1.0, 1.0));
    assert_judge(s, KILN_JUDGE_RECORD);
    assert_non_null(strstr(s->why, "v1 est. 1.050x"));
    free(parent);
    per_shape_done(p);
}

/* A failed record reverts as in every rule; a shape no kernel holds yet is
 * won by any timed figure. */
static void per_shape_record_and_new_shape(void **state)
{
    fixture *f = *state;
    per_shape *p = per_shape_rule(f, verdict("pass", 0.01, 1, 1.0));
    after(f, KILN_JUDGE_VERDICT, verdict("pass", 0.01, 2, 1.2, 0.5));
    f->e.verified = f->e.confirmed = 1;
    assert_revert(after(f, KILN_JUDGE_RECORD, failed("timing", "timeout")),
                  "failed its measurement against the task's baseline");
    free(f->vs_baseline);
    f->vs_baseline = NULL;
    after(f, KILN_JUDGE_RECORD, verdict("pass", 0.01, 2, 0.9, 0.5));
    assert_keep(after(f, KILN_JUDGE_RERECORD, verdict("pass", 0.01, 2, 0.9, 0.5)),
                "kept: surely fastest at 1 shape: v2 0.500x [0.495, 0.505], no incumbent");
    per_shape_done(p);
}

/* The incumbents alone: taken in the order kept, each shape moving to the
 * kept kernel with the higher pooled speedup there (the export's choice);
 * the worst shape by its floor. */
static void incumbents_offer_and_worst(void **state)
{
    (void)state;
    kiln_incumbents in = {0};
    kiln_verdict *a = verdict("pass", 0.01, 3, 1.0, 1.0, 1.0);
    kiln_verdict *b = verdict("pass", 0.01, 3, 1.005, 1.5, 0.5);
    a->results[0].roofline_fraction = 0.8;
    a->results[1].roofline_fraction = 0.5;
    a->results[2].roofline_fraction = 0.6;
    b->results[1].roofline_fraction = 0.9;
    assert_null(kiln_incumbents_worst(&in));
    assert_int_equal(kiln_incumbents_offer(&in, 0, a), 3);
    assert_string_equal(kiln_incumbents_worst(&in)->id, "v2");
    assert_int_equal(kiln_incumbents_offer(&in, 1, b), 2);   /* v1 (not surely) and v2 */
    assert_int_equal(kiln_incumbent_at(&in, "v1")->n, 1);
    assert_int_equal(kiln_incumbent_at(&in, "v2")->n, 1);
    assert_int_equal(kiln_incumbent_at(&in, "v3")->n, 0);
    assert_string_equal(kiln_incumbents_worst(&in)->id, "v3");
    assert_int_equal(kiln_incumbents_offer(&in, 2, b), 0);   /* itself again: nothing */
    char why[400];
    assert_int_equal(kiln_incumbents_wins(&in, a, why, sizeof why), 0);   /* v1 overlaps */
    assert_non_null(strstr(why, "over #"));
    kiln_verdict *c = verdict("pass", 0.001, 3, 0.99, 1.0, 1.2);
    assert_int_equal(kiln_incumbents_wins(&in, c, why, sizeof why), 1);   /* v3: 1.2 over #0's 1.0 */
    assert_non_null(strstr(why, "v3 1.200x [1.199, 1.201] over #0's 1.000x"));
    free(c);
    free(a);
    free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(keep_takes_four_judgements, setup, teardown),
        cmocka_unit_test_setup_teardown(failure_is_reverted_at_once, setup, teardown),
        cmocka_unit_test_setup_teardown(not_clear_of_the_margin, setup, teardown),
        cmocka_unit_test_setup_teardown(a_regression_reverts, setup, teardown),
        cmocka_unit_test_setup_teardown(suspect_retime_reverts, setup, teardown),
        cmocka_unit_test_setup_teardown(retime_short_of_the_margin, setup, teardown),
        cmocka_unit_test_setup_teardown(pools_that_do_not_overlap, setup, teardown),
        cmocka_unit_test_setup_teardown(record_or_rerecord_failing_reverts, setup, teardown),
        cmocka_unit_test_setup_teardown(unreadable_verdicts, setup, teardown),
        cmocka_unit_test_setup_teardown(objective_min_and_a_shape, setup, teardown),
        cmocka_unit_test_setup_teardown(start_kernel, setup, teardown),
        cmocka_unit_test_setup_teardown(per_shape_keeps_a_specialist, setup, teardown),
        cmocka_unit_test_setup_teardown(per_shape_overlap_reverts, setup, teardown),
        cmocka_unit_test_setup_teardown(per_shape_screen, setup, teardown),
        cmocka_unit_test_setup_teardown(per_shape_record_and_new_shape, setup, teardown),
        cmocka_unit_test_setup_teardown(incumbents_offer_and_worst, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
