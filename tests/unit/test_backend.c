/* test_backend.c - the backend interface (verifier/backend/backend.h) with
 * a backend of the test's own that runs nothing: its calls and timings are
 * made up here, so the stages in verify.c are seen to call the table in
 * order and to turn what it returns into the verdict, without a compiler,
 * a worker or a GPU. Adding a backend is this table and its functions. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job.h"

/* What the fake backend does, and what it saw. */
static struct {
    int fail_hidden;            /* the candidate's call fails at this hidden shape (1-based) */
    double speedup;             /* what timing reports */
    double cand_ns;             /* the candidate's time per call */
    int builds, starts, finishes, calls, agains, timed, hidden_seen;
    int seconds;                /* fresh workers started for the hidden stage */
    int agains_fresh;           /* ... and for determinism's second run */
    int hidden_in_first;        /* hidden shapes called in the first worker: must stay 0 */
    int visible_in_second;      /* visible shapes called in the second worker */
    int timed_after_hidden_in_first;   /* timing in a worker that saw a hidden shape */
    int first_saw_hidden;
} fake;

static const char *fake_task_baseline(const job *j)
{
    return j->t->baseline_cpu;
}

static int fake_build(job *j, kiln_error *err)
{
    (void)j;
    (void)err;
    fake.builds++;
    return 0;
}

static int fake_start(job *j, kiln_error *err)
{
    (void)j;
    (void)err;
    fake.starts++;
    return 0;
}

static int fake_fresh_worker(job *j, int purpose, kiln_error *err)
{
    (void)j;
    (void)err;
    fake.seconds += purpose == KILN_FRESH_HIDDEN;
    fake.agains_fresh += purpose == KILN_FRESH_AGAIN;
    return 0;
}

static int fake_call(job *j, const kiln_shape *s, const kiln_variant *var, int lib,
                     kiln_call_result *res, kiln_error *err)
{
    (void)var;
    (void)err;
    memset(res, 0, sizeof *res);
    res->outcome = KILN_CALL_OK;
    res->budget_ulps = 8;
    res->max_err_ulps = 0.5;
    res->elapsed_ns = res->rt_ns = 1000;
    fake.calls++;
    int second = j->cs.cand == &j->hid, hidden = 0;
    for (int h = 0; h < j->nhidden; h++)
        hidden |= memcmp(&j->hidden[h], s, sizeof *s) == 0;
    fake.hidden_in_first += hidden && !second;
    fake.visible_in_second += !hidden && second;
    fake.first_saw_hidden |= hidden && !second;
    for (int h = 0; h < j->nhidden; h++) {
        if (memcmp(&j->hidden[h], s, sizeof *s) != 0)
            continue;
        fake.hidden_seen++;
        if (lib == 0 && h + 1 == fake.fail_hidden) {
            res->outcome = KILN_CALL_WRONG;
            snprintf(res->detail, sizeof res->detail, "at the secret dims %lld",
                     (long long)s->d[0]);
        }
    }
    return 0;
}

static int fake_again(job *j, const char *label, const kiln_call_result *first,
                      const kiln_shape *s, kiln_error *err)
{
    (void)j, (void)label, (void)first, (void)s, (void)err;
    fake.agains++;
    return 0;
}

static int fake_time(job *j, int i, uint64_t budget_ns, kiln_error *err)
{
    (void)budget_ns;
    (void)err;
    char id[16];
    snprintf(id, sizeof id, "v%d", i + 1);
    kiln_shape_result *r = job_result_for(j, id, &j->g->visible[i], 1);
    fake.timed_after_hidden_in_first += fake.first_saw_hidden || j->cs.cand != &j->cand;
    r->timed = 1;
    r->cand.median_ns = fake.cand_ns;
    r->base.median_ns = fake.cand_ns * fake.speedup;
    r->speedup = fake.speedup;
    fake.timed++;
    return 0;
}

/* A machine that moves 1 TB/s: a call of fake.cand_ns beats the roofline
 * when the shape's bytes take longer than that. */
static int fake_roofline(job *j, double rd, double wr, int again, double *bw, double *peak,
                         kiln_error *err)
{
    (void)j, (void)rd, (void)wr, (void)again, (void)err;
    *bw = 1e12;
    *peak = 0;
    return 0;
}

static void fake_finish(job *j)
{
    (void)j;
    fake.finishes++;
}

static const kiln_backend_ops fake_backend = {
    .name = "fake",
    .kind = KILN_BACKEND_CPU,   /* judged on the task's CPU shapes and dtypes */
    .task_baseline = fake_task_baseline,
    .build = fake_build,
    .start = fake_start,
    .fresh_worker = fake_fresh_worker,
    .call = fake_call,
    .again = fake_again,
    .time_shape = fake_time,
    .roofline = fake_roofline,
    .finish = fake_finish,
};

static int verify_fake(kiln_verdict *v, kiln_task *t)
{
    kiln_error err = {0};
    assert_int_equal(kiln_task_find("rmsnorm", t, &err), 0);
    kiln_verify_opts o = {.task = t, .backend = KILN_BACKEND_CPU, .dtype = KILN_DT_F32,
                          .group = kiln_task_default_group_for(t, "cpu"),
                          .candidate = t->baseline_cpu, .backend_ops = &fake_backend};
    int rc = kiln_verify(&o, v, &err);
    if (rc != 0)
        fail_msg("kiln_verify: %s", err.msg);
    return rc;
}

static void test_every_stage_through_the_table(void **state)
{
    (void)state;
    memset(&fake, 0, sizeof fake);
    fake.speedup = 1.5;
    fake.cand_ns = 1e9;   /* far above any roofline */
    kiln_task *t = calloc(1, sizeof *t);
    kiln_verdict *v = calloc(1, sizeof *v);
    verify_fake(v, t);
    assert_string_equal(v->status, "pass");
    assert_int_equal(fake.builds, 1);
    assert_int_equal(fake.starts, 1);
    assert_int_equal(fake.finishes, 1);
    assert_int_equal(fake.timed, t->groups[kiln_task_default_group_for(t, "cpu")].nvisible);
    assert_int_equal(fake.agains, t->deterministic ? 1 : 0);
    assert_true(fake.hidden_seen > 0);
    /* Hidden shapes only in the second worker, which ran nothing visible
     * (determinism's second run goes through again); timing only in the
     * first, which never saw a hidden shape. */
    assert_int_equal(fake.seconds, 1);
    assert_int_equal(fake.agains_fresh, t->deterministic ? 1 : 0);
    assert_int_equal(fake.hidden_in_first, 0);
    assert_int_equal(fake.visible_in_second, 0);
    assert_int_equal(fake.timed_after_hidden_in_first, 0);
    assert_int_equal(v->nhidden, fake.hidden_seen - t->nvariants);   /* variants: on h1 */
    assert_true(v->hidden_ran);
    assert_string_equal(v->hidden_code, "");
    for (int i = 0; i < v->nresults; i++)
        assert_true(v->results[i].visible);   /* no entry per hidden shape */
    assert_true(v->geomean_speedup > 1.49 && v->geomean_speedup < 1.51);
    assert_int_equal(v->trust_level_cpu, 0);   /* the table did not say host code runs */
    free(v);
    free(t);
}

static void test_a_hidden_failure_says_only_its_code(void **state)
{
    (void)state;
    memset(&fake, 0, sizeof fake);
    fake.fail_hidden = 2;
    fake.speedup = 1;
    fake.cand_ns = 1e9;
    kiln_task *t = calloc(1, sizeof *t);
    kiln_verdict *v = calloc(1, sizeof *v);
    verify_fake(v, t);
    assert_string_equal(v->status, "fail");
    assert_string_equal(v->stage, "hidden");
    assert_string_equal(v->code, "wrong-output");
    assert_null(strstr(v->reason, "secret"));   /* the call's own words never leave */
    assert_null(strstr(v->reason, "h2"));       /* nor which hidden shape failed */
    assert_string_equal(v->hidden_code, "wrong-output");
    assert_true(v->hidden_ran);
    /* the calls made in the second worker are in no figure: a visible-only
     * count, the same whichever hidden shape failed */
    int calls = v->calls;
    memset(&fake, 0, sizeof fake);
    fake.fail_hidden = 5;
    fake.speedup = 1;
    fake.cand_ns = 1e9;
    verify_fake(v, t);
    assert_string_equal(v->stage, "hidden");
    assert_int_equal(v->calls, calls);
    assert_int_equal(fake.timed, 0);   /* no timing after a failure */
    assert_int_equal(fake.finishes, 1);
    free(v);
    free(t);
}

static void test_a_time_under_the_roofline_is_suspect(void **state)
{
    (void)state;
    memset(&fake, 0, sizeof fake);
    fake.speedup = 2;
    fake.cand_ns = 1e-3;   /* a picosecond: no memory moves that fast */
    kiln_task *t = calloc(1, sizeof *t);
    kiln_verdict *v = calloc(1, sizeof *v);
    verify_fake(v, t);
    assert_string_equal(v->status, "suspect");
    assert_string_equal(v->code, "below-roofline");
    free(v);
    free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_stage_through_the_table),
        cmocka_unit_test(test_a_hidden_failure_says_only_its_code),
        cmocka_unit_test(test_a_time_under_the_roofline_is_suspect),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
