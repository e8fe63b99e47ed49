/* judge_script.c - the judge seam's scripted table (see judge_script.h). */
#include "judge_script.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void kiln_judge_script_init(kiln_judge_script *s, int ahead, int first_job)
{
    memset(s, 0, sizeof *s);
    s->ahead = ahead;
    s->deadline = -1;
    s->next_job = first_job;
}

int kiln_judge_script_add(kiln_judge_script *s, int n, kiln_judgement kind,
                          const kiln_verdict *v, double delay_s)
{
    if (s->nsteps == KILN_SCRIPT_MAX)
        return -1;
    s->step[s->nsteps] = (kiln_script_step){.n = n, .kind = kind, .verdict = v, .delay_s = delay_s};
    return s->nsteps++;
}

static void note(kiln_judge_script *s, kiln_script_op op, const kiln_judge_req *rq,
                 const char *job, int answered)
{
    if (s->nlog == (int)(sizeof s->log / sizeof s->log[0]))
        return;
    kiln_script_call *c = &s->log[s->nlog++];
    *c = (kiln_script_call){.op = op, .n = rq->n, .kind = rq->kind,
                            .baseline_is_task = rq->baseline == NULL, .answered = answered};
    snprintf(c->job, sizeof c->job, "%s", job ? job : "");
    snprintf(c->key, sizeof c->key, "%s", rq->key ? rq->key : "");
}

/* The step that answers rq: the one already handed over as job, else the
 * first unanswered one for its candidate and judgement; -1 when none. */
static int find(const kiln_judge_script *s, const kiln_judge_req *rq, const char *job)
{
    for (int i = 0; job && job[0] && i < s->nsteps; i++)
        if (!s->used[i] && strcmp(s->job_of[i], job) == 0)
            return i;
    for (int i = 0; i < s->nsteps; i++)
        if (!s->used[i] && !s->job_of[i][0] && s->step[i].n == rq->n &&
            s->step[i].kind == rq->kind)
            return i;
    return -1;
}

/* Step i accepted as a job now: its id in job, reported to the caller. */
static void accept(kiln_judge_script *s, int i, char job[32], kiln_judge_accepted on_accepted,
                   void *ctx)
{
    snprintf(job, 32, "s%d", s->next_job++);
    snprintf(s->job_of[i], sizeof s->job_of[i], "%s", job);
    if (on_accepted)
        on_accepted(ctx, job);
}

static int script_ahead(void *self)
{
    return ((kiln_judge_script *)self)->ahead;
}

static int script_submit(void *self, const kiln_judge_req *rq, char job[32],
                         kiln_judge_accepted on_accepted, void *ctx, kiln_error *err)
{
    kiln_judge_script *s = self;
    int i = s->ahead && !job[0] ? find(s, rq, NULL) : -1;
    if (i < 0) {
        note(s, KILN_SCRIPT_SUBMIT, rq, "", 0);
        return kiln_fail(err, "the script has no step for candidate %d's %s", rq->n,
                         kiln_judgement_name(rq->kind));
    }
    accept(s, i, job, on_accepted, ctx);
    note(s, KILN_SCRIPT_SUBMIT, rq, job, 0);
    return 0;
}

/* A job recorded by another session (not this script's): the script
 * answers it as it would a new request, under that id. */
static kiln_verdict *script_collect(void *self, const kiln_judge_req *rq, char job[32],
                                    kiln_judge_accepted on_accepted, void *ctx,
                                    kiln_judge_end *end, kiln_error *err)
{
    kiln_judge_script *s = self;
    *end = (kiln_judge_end){0};
    char asked[32];
    snprintf(asked, sizeof asked, "%s", job);
    int i = find(s, rq, job);
    if (i < 0) {
        note(s, KILN_SCRIPT_COLLECT, rq, asked, 0);
        return kiln_fail(err, "the script has no step for candidate %d's %s", rq->n,
                         kiln_judgement_name(rq->kind)), NULL;
    }
    if (!job[0])
        accept(s, i, job, on_accepted, ctx);
    else if (!s->job_of[i][0])
        snprintf(s->job_of[i], sizeof s->job_of[i], "%s", job);
    const kiln_script_step *st = &s->step[i];
    if (s->deadline >= 0 && s->clock + st->delay_s > s->deadline) {
        s->clock = s->deadline;
        end->past_deadline = 1;
        note(s, KILN_SCRIPT_COLLECT, rq, asked, 0);
        return kiln_fail(err, "the time budget ran out while job %s was verified", job), NULL;
    }
    s->clock += st->delay_s;
    s->used[i] = 1;
    note(s, KILN_SCRIPT_COLLECT, rq, asked, st->verdict != NULL);
    if (!st->verdict) {
        end->job_failed = 1;
        return kiln_fail(err, "kilnd: the script's job %s ended in an error (internal)", job),
               NULL;
    }
    kiln_verdict *v = malloc(sizeof *v);
    if (!v)
        return kiln_fail(err, "out of memory"), NULL;
    memcpy(v, st->verdict, sizeof *v);
    return v;
}

static void script_cancel(void *self, const kiln_judge_req *rq, const char *job)
{
    kiln_judge_script *s = self;
    for (int i = 0; i < s->nsteps; i++)
        if (!s->used[i] && job[0] && strcmp(s->job_of[i], job) == 0)
            s->used[i] = 1;   /* dropped: never answered */
    note(s, KILN_SCRIPT_CANCEL, rq, job, 0);
}

static void script_deadline(void *self, double seconds)
{
    kiln_judge_script *s = self;
    s->deadline = seconds < 0 ? -1 : s->clock + seconds;
}

static const kiln_judge_ops script_ops = {
    .ahead = script_ahead,
    .submit = script_submit,
    .collect = script_collect,
    .cancel = script_cancel,
    .deadline = script_deadline,
};

kiln_judge_seam kiln_judge_script_seam(kiln_judge_script *s)
{
    return (kiln_judge_seam){&script_ops, s};
}

int kiln_judge_script_count(const kiln_judge_script *s, kiln_script_op op, int n,
                            kiln_judgement kind)
{
    int count = 0;
    for (int i = 0; i < s->nlog; i++)
        count += s->log[i].op == op && s->log[i].n == n && s->log[i].kind == kind;
    return count;
}
