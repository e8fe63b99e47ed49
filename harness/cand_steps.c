/* cand_steps.c - judging one candidate of the iteration (iteration.h):
 * each judgement asked through the judge seam under its own key, its
 * verdict encoded once into the database and kept decoded in memory, what
 * it means for the candidate's row, and the rule's steps taken in turn. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "iteration.h"
#include "pooled.h"

kiln_judge_seam kiln_search_seam(search *s)
{
    return s->seam.ops ? s->seam : kiln_judge_seam_real(&s->judge);
}

/* Candidate c's job id for judgement k. */
static char *job_of(kiln_cand *c, kiln_judgement k)
{
    switch (k) {
    case KILN_JUDGE_VERDICT: return c->job;
    case KILN_JUDGE_CONFIRM: return c->confirm_job;
    case KILN_JUDGE_RECORD: return c->record_job;
    case KILN_JUDGE_RERECORD: return c->rerecord_job;
    case KILN_NJUDGEMENTS: break;
    }
    return c->job;   /* not reached: the callers pass a judgement */
}

/* The idempotency key of candidate n's judgement k: kilnd hands back the
 * job it already has under it, so a job handed over ahead or before a
 * crash is collected, never verified again. */
static void job_key(const search *s, int n, kiln_judgement k, char *key, size_t len)
{
    snprintf(key, len, "search:%.120s:%s:%d:%s", s->ws.dir, s->run.id, n, kiln_judgement_name(k));
}

typedef struct accept_ctx {
    search *s;
    kiln_cand *c;
    char *job;
} accept_ctx;

/* Record the job id as soon as the verifier accepts it: a resumed run then
 * asks for this job's result instead of verifying the candidate again. */
static void on_accepted(void *p, const char *job)
{
    accept_ctx *a = p;
    kiln_error e;
    if (a->job != job)
        snprintf(a->job, 32, "%s", job);
    kiln_db_cand_upsert(a->s->db, a->c, &e);
}

static kiln_judge_req request(const kiln_iteration *t, const kiln_draft *d, kiln_judgement k,
                              const char *key)
{
    return (kiln_judge_req){.kind = k, .n = d->c.n, .source = d->text[KILN_TEXT_SOURCE],
                            .baseline = kiln_judgement_vs_parent(k) ? t->parent_src : NULL,
                            .key = key};
}

void kiln_cand_hand_over(search *s, const kiln_iteration *t, kiln_draft *d, kiln_judgement k)
{
    kiln_judge_seam j = kiln_search_seam(s);
    char *job = job_of(&d->c, k);
    if (!j.ops->ahead(j.self) || job[0] || !d->text[KILN_TEXT_SOURCE])
        return;
    char key[320];
    kiln_error e = {0};
    job_key(s, d->c.n, k, key, sizeof key);
    kiln_judge_req rq = request(t, d, k, key);
    accept_ctx a = {s, &d->c, job};
    double t0 = kiln_wall_now();   /* handing over to the verifier counts as its time */
    j.ops->submit(j.self, &rq, job, on_accepted, &a, &e);   /* failed: collect submits it */
    s->run.verify_wait_s += kiln_wall_now() - t0;
}

/* Judgement k of d, through the seam. A job recorded by an earlier
 * session that ended in an error instead of a verdict (no GPU there then,
 * say) is submitted again, once per session, under a key of its own:
 * asking for it again would only repeat the error. s->verify_failed tells
 * a NULL from the verifier from one from here. */
static kiln_verdict *ask(search *s, const kiln_iteration *t, kiln_draft *d, kiln_judgement k,
                         kiln_error *err)
{
    s->verify_failed = s->past_deadline = 0;
    if (!d->text[KILN_TEXT_SOURCE])
        return kiln_fail(err, "candidate %d has no stored source", d->c.n), NULL;
    kiln_judge_seam j = kiln_search_seam(s);
    char key[320], *job = job_of(&d->c, k);
    int stored = job[0] != '\0';
    job_key(s, d->c.n, k, key, sizeof key);
    kiln_judge_req rq = request(t, d, k, key);
    accept_ctx a = {s, &d->c, job};
    kiln_judge_end end;
    double t0 = kiln_wall_now();   /* waiting for the verifier (docs/search.md) */
    kiln_verdict *v = j.ops->collect(j.self, &rq, job, on_accepted, &a, &end, err);
    if (!v && stored && end.job_failed) {
        size_t n = strlen(key);
        snprintf(key + n, sizeof key - n, ":after:%.31s", job);
        job[0] = '\0';
        v = j.ops->collect(j.self, &rq, job, on_accepted, &a, &end, err);
    }
    s->run.verify_wait_s += kiln_wall_now() - t0;
    if (!v) {
        s->verify_failed = 1;
        s->past_deadline = end.past_deadline;
    }
    return v;
}

/* v encoded once into column which, the text kept as d's. */
static int store(search *s, kiln_draft *d, kiln_cand_text which, const kiln_verdict *v,
                 kiln_error *err)
{
    char *json = kiln_verdict_json(v, &s->task, 0);
    if (!json)
        return kiln_fail(err, "out of memory");
    free(d->text[which]);
    d->text[which] = json;
    return kiln_db_cand_text_put(s->db, s->run.id, d->c.n, which, json, err);
}

/* The geomean's interval, for the record: what status and report show
 * beside every claimed speedup. */
static void geomean_of(const kiln_verdict *v, double *lo, double *hi)
{
    double point;
    kiln_pool_geomean(v, &point, lo, hi);   /* on one verdict: its own interval */
}

static kiln_verdict *copy_of(const kiln_verdict *v)
{
    kiln_verdict *c = malloc(sizeof *c);
    if (c)
        memcpy(c, v, sizeof *c);
    return c;
}

/* The pools from d's verdicts: against the parent (the verdict and its
 * re-time) and against the task's baseline (the record and its re-record;
 * the record alone when it did not pass, as the pool of a failure is the
 * failure). */
static void pool(kiln_draft *d)
{
    const kiln_verdict *first = d->v[KILN_JUDGE_VERDICT], *again = d->v[KILN_JUDGE_CONFIRM];
    const kiln_verdict *rec = d->v[KILN_JUDGE_RECORD], *rerec = d->v[KILN_JUDGE_RERECORD];
    if (first && again && !d->vs_parent && (d->vs_parent = malloc(sizeof *d->vs_parent)))
        kiln_pool_verdicts(first, again, d->vs_parent, d->parent_note, sizeof d->parent_note);
    int failed = rec && strcmp(rec->status, "pass") != 0;
    if (rec && !d->vs_baseline && failed)
        d->vs_baseline = copy_of(rec);
    else if (rec && rerec && !d->vs_baseline && (d->vs_baseline = malloc(sizeof *d->vs_baseline)))
        kiln_pool_verdicts(rec, rerec, d->vs_baseline, d->baseline_note,
                           sizeof d->baseline_note);
}

/* What judgement k's verdict means for d's row, and what it teaches. */
static int arrived(search *s, kiln_draft *d, kiln_judgement k, kiln_error *err)
{
    kiln_cand *c = &d->c;
    const kiln_verdict *v = d->v[k];
    pool(d);
    switch (k) {
    case KILN_JUDGE_VERDICT:
        kiln_cand_from_verdict(c, v);
        geomean_of(v, &c->speedup_lo, &c->speedup_hi);
        kiln_learn(s, c, v, c->speedup, kiln_verdict_noise(v), 0, 0, 0);   /* a failure's note */
        return 0;
    case KILN_JUDGE_CONFIRM:
        c->confirm_speedup = v->geomean_speedup;
        geomean_of(v, &c->confirm_lo, &c->confirm_hi);
        if (!d->vs_parent)
            return 0;   /* the first verdict cannot be read back: nothing to pool */
        kiln_pool_geomean(d->vs_parent, &c->pooled_speedup, &c->pooled_lo, &c->pooled_hi);
        kiln_learn(s, c, d->vs_parent, c->pooled_speedup,
                   fmax(kiln_verdict_noise(d->v[KILN_JUDGE_VERDICT]), kiln_verdict_noise(v)), 1,
                   c->pooled_lo, c->pooled_hi);
        return 0;
    case KILN_JUDGE_RECORD:
    case KILN_JUDGE_RERECORD:
        if (!d->vs_baseline)
            return 0;   /* the re-record comes next */
        kiln_pool_geomean(d->vs_baseline, &c->speedup_vs_baseline, &c->baseline_lo,
                          &c->baseline_hi);
        c->roofline = d->vs_baseline->median_roofline;
        kiln_learn_baseline(s, c);
        return store(s, d, KILN_TEXT_POOLED, d->vs_baseline, err);
    case KILN_NJUDGEMENTS:
        break;
    }
    return 0;
}

void kiln_cand_evidence(const kiln_draft *d, kiln_evidence *e)
{
    *e = (kiln_evidence){.verified = d->c.state >= KILN_CAND_VERIFIED,
                         .confirmed = d->c.state >= KILN_CAND_CONFIRMED,
                         .vs_parent = d->vs_parent, .vs_baseline = d->vs_baseline,
                         .parent_note = d->parent_note, .baseline_note = d->baseline_note};
    for (int k = 0; k < KILN_NJUDGEMENTS; k++)
        e->v[k] = d->v[k];
}

/* d's verdict k taken in: its meaning for the row, and a verdict against
 * the parent moves d to verified. */
static int take_in(search *s, kiln_draft *d, kiln_judgement k, kiln_error *err)
{
    if (arrived(s, d, k, err) < 0)
        return -1;
    d->taken |= 1u << k;
    if (k != KILN_JUDGE_VERDICT || d->c.state != KILN_CAND_PROPOSED)
        return 0;
    if (kiln_cand_move(s, d, KILN_CAND_VERIFIED, err) < 0)
        return -1;
    return kiln_dup_add(s, d, err);   /* a later draft repeating it is caught */
}

/* The verdicts a session stored but stopped before taking in (it stopped
 * between storing one and the move it led to). */
static int catch_up(search *s, kiln_draft *d, kiln_error *err)
{
    for (int k = 0; k < KILN_NJUDGEMENTS; k++)
        if (d->v[k] && !(d->taken & 1u << k) && take_in(s, d, (kiln_judgement)k, err) < 0)
            return -1;
    return 0;
}

/* Judgement k of d, asked for and taken in. */
static int judge_step(search *s, const kiln_iteration *t, kiln_draft *d, const kiln_rule *r,
                      kiln_judgement k, kiln_error *err)
{
    kiln_say(s, &d->c, r->doing && r->doing[k] ? r->doing[k] : kiln_judgement_doing(k));
    /* Through kilnd the re-record is handed over with the record, so the
     * lane goes from one to the other without waiting on a compile. */
    if (k == KILN_JUDGE_RECORD) {
        kiln_cand_hand_over(s, t, d, KILN_JUDGE_RECORD);
        kiln_cand_hand_over(s, t, d, KILN_JUDGE_RERECORD);
    }
    kiln_verdict *v = ask(s, t, d, k, err);
    if (!v)
        return -1;
    d->v[k] = v;
    if (store(s, d, (kiln_cand_text)k, v, err) < 0)
        return -1;
    return take_in(s, d, k, err);
}

/* A re-record handed over with a record that did not pass: not collected. */
static void cancel_unused(search *s, const kiln_iteration *t, kiln_draft *d)
{
    const char *job = job_of(&d->c, KILN_JUDGE_RERECORD);
    if (!job[0] || d->v[KILN_JUDGE_RERECORD])
        return;
    kiln_judge_seam j = kiln_search_seam(s);
    kiln_judge_req rq = request(t, d, KILN_JUDGE_RERECORD, NULL);
    j.ops->cancel(j.self, &rq, job);
}

int kiln_cand_advance(search *s, const kiln_iteration *t, kiln_draft *d, const kiln_rule *r,
                      int stop_at_contender, kiln_step *final, kiln_error *err)
{
    if (catch_up(s, d, err) < 0)
        return -1;
    for (;;) {
        kiln_evidence e;
        kiln_cand_evidence(d, &e);
        r->next(r, &e, final);
        if (final->what != KILN_STEP_JUDGE) {
            cancel_unused(s, t, d);
            return 1;
        }
        if (final->why[0])   /* a contender's standing reason */
            snprintf(d->c.why, sizeof d->c.why, "%.399s", final->why);
        int verified = d->c.state == KILN_CAND_VERIFIED;
        if (verified && stop_at_contender)
            return 0;   /* waits for its turn */
        /* Past its verdicts against the parent: measured against the
         * task's baseline from here. */
        if (verified && !kiln_judgement_vs_parent(final->judge) &&
            kiln_cand_move(s, d, KILN_CAND_CONFIRMED, err) < 0)
            return -1;
        if (judge_step(s, t, d, r, final->judge, err) < 0)
            return -1;
    }
}

void kiln_cand_decode(kiln_draft *d)
{
    kiln_error e;
    /* What the row has taken in already, by its state. */
    kiln_cand_state st = d->c.state;
    d->taken = (st >= KILN_CAND_VERIFIED) << KILN_JUDGE_VERDICT |
               (st >= KILN_CAND_CONFIRMED) << KILN_JUDGE_CONFIRM |
               (st >= KILN_CAND_DECIDED) << KILN_JUDGE_RECORD |
               (st >= KILN_CAND_DECIDED) << KILN_JUDGE_RERECORD;
    for (int k = 0; k < KILN_NJUDGEMENTS; k++) {
        if (d->v[k] || !d->text[k] || !(d->v[k] = malloc(sizeof *d->v[k])))
            continue;
        if (kiln_verdict_parse(d->text[k], d->v[k], &e) < 0) {
            free(d->v[k]);   /* unreadable: the rule says what that means */
            d->v[k] = NULL;
        }
    }
    pool(d);   /* from the parts, as they were pooled: with what the pools set aside */
    if (!d->vs_baseline && d->text[KILN_TEXT_POOLED] &&
        (d->vs_baseline = malloc(sizeof *d->vs_baseline)) &&
        kiln_verdict_parse(d->text[KILN_TEXT_POOLED], d->vs_baseline, &e) < 0) {
        free(d->vs_baseline);   /* the parts are gone (an older run) and it is unreadable */
        d->vs_baseline = NULL;
    }
}
