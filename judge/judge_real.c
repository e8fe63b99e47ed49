/* judge_real.c - the judge seam's real table (judge_seam.h): each
 * operation is one call of judge.c's client, in process, through kilnd or
 * over many kilnds. */
#include "judge_seam.h"

#include "worker_io.h"   /* kiln_mono_ns */

static int real_ahead(void *self)
{
    const kiln_judge *j = self;
    return !j->in_process;
}

static int real_submit(void *self, const kiln_judge_req *rq, char job[32],
                       kiln_judge_accepted on_accepted, void *ctx, kiln_error *err)
{
    return kiln_judge_submit(self, rq->source, rq->baseline, rq->key, job, on_accepted, ctx, err);
}

static kiln_verdict *real_collect(void *self, const kiln_judge_req *rq, char job[32],
                                  kiln_judge_accepted on_accepted, void *ctx,
                                  kiln_judge_end *end, kiln_error *err)
{
    kiln_judge *j = self;
    kiln_verdict *v = kiln_judge_run(j, rq->source, rq->baseline, rq->key, job, on_accepted,
                                     ctx, err);
    *end = (kiln_judge_end){.job_failed = j->job_failed, .past_deadline = j->past_deadline};
    return v;
}

/* kilnd has no way to drop a job: one the search gives up runs on there,
 * and its verdict is never asked for. In process nothing is in flight. */
static void real_cancel(void *self, const kiln_judge_req *rq, const char *job)
{
    (void)self, (void)rq, (void)job;
}

/* Through kilnd only: a job there outlives the wait and a resumed run
 * collects it; in process a verification is never cut short. */
static void real_deadline(void *self, double seconds)
{
    kiln_judge *j = self;
    if (j->in_process)
        return;
    j->deadline_ns = seconds < 0 ? 0 : kiln_mono_ns() + (uint64_t)(seconds * 1e9) + 1;
}

static const kiln_judge_ops real_ops = {
    .ahead = real_ahead,
    .submit = real_submit,
    .collect = real_collect,
    .cancel = real_cancel,
    .deadline = real_deadline,
};

kiln_judge_seam kiln_judge_seam_real(kiln_judge *j)
{
    return (kiln_judge_seam){&real_ops, j};
}
