/* search_loop.c - a search run: the start kernel, then one iteration
 * after another (iteration.c, the state machine) until a budget, Ctrl-C,
 * the proposer or an error stops it; then the summary. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "iteration.h"
#include "prefetch.h"
#include "search_state.h"

/* Bring git back in line with the database after a crash: the branch
 * points at the last kept commit and stray files are gone. */
static int reconcile(search *s, kiln_error *err)
{
    if (kiln_ws_clean(&s->ws, err) < 0)
        return -1;
    if (s->run.head_commit[0])
        return kiln_ws_reset_hard(&s->ws, s->run.head_commit, err);
    return 0;
}

#define OUT_OF_TIME "time budget reached (a verification still running at its end is " \
                    "collected by --resume)"

static const char *budget_left(search *s)
{
    kiln_run *r = &s->run;
    if (r->budget_iterations > 0 && r->iterations_done >= r->budget_iterations)
        return "iteration budget reached";
    if (r->budget_seconds > 0 && r->seconds_used >= r->budget_seconds)
        return "time budget reached";
    /* A budget is a deadline: no iteration starts that would not finish
     * inside it (kiln_search_next_iteration_s). */
    double next = kiln_search_next_iteration_s(s);
    if (r->budget_seconds > 0 && next > 0 && r->seconds_used + next > r->budget_seconds)
        return "time budget reached (the next iteration would not finish inside it)";
    if (r->budget_tokens > 0 && r->tokens_used >= r->budget_tokens)
        return "token budget reached";
    return NULL;
}

static void tick(search *s)
{
    s->run.seconds_used = s->seconds_before + (kiln_wall_now() - s->t0);
    /* The budget's end, for the judge: a verification through kilnd that
     * is still running then is left there (a resumed run collects its
     * verdict), a little early so the summary still fits inside. */
    if (s->run.budget_seconds > 0) {
        kiln_judge_seam j = kiln_search_seam(s);
        double left = s->run.budget_seconds - s->run.seconds_used - 0.05;
        j.ops->deadline(j.self, left > 0 ? left : 0);
    }
    s->progress.iteration = s->run.iterations_done;
    s->progress.budget_iterations = s->run.budget_iterations;
    s->progress.elapsed_s = s->run.seconds_used;
    s->progress.budget_s = s->run.budget_seconds;
}

void kiln_search_summary(search *s);

/* This session's busy seconds of the verifiers' lanes into the run row
 * (lane_busy.h): asked of the daemons again as the session ends. */
static void add_lane_busy(search *s)
{
    kiln_lane_sample end;
    double busy, lane;
    if (s->lanes_at_start.at <= 0 || kiln_lane_sample_take(&s->judge, &end) == 0)
        return;
    kiln_lane_sample_diff(&s->lanes_at_start, &end, &busy, &lane);
    s->run.lane_busy_s += busy;
    s->run.lane_s += lane;
}

int kiln_search_loop(search *s, kiln_error *err)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "task", s->task.name);
    cJSON_AddStringToObject(o, "backend", s->run.backend);
    cJSON_AddStringToObject(o, "dtype", s->run.dtype);
    cJSON_AddStringToObject(o, "agent", s->run.agent);
    cJSON_AddStringToObject(o, "branch", s->run.branch);
    cJSON_AddStringToObject(o, "workspace", s->ws.dir);
    cJSON_AddNumberToObject(o, "keep_margin", s->keep.margin);
    cJSON_AddNumberToObject(o, "max_regression", s->keep.max_regression);
    cJSON_AddStringToObject(o, "objective", s->keep.objective);
    kiln_progress_event(&s->progress, "run", o);
    if (!s->o->json)
        printf("kiln search: run %s on branch %s in %s (%s/%s, agent %s; keep when the %s's "
               "interval clears %.3g%% and no shape is surely %.3g%% slower)\n", s->run.id,
               s->run.branch, s->ws.dir, s->run.backend, s->run.dtype, s->run.agent,
               s->keep.objective, 100 * s->keep.margin, 100 * s->keep.max_regression);
    double started = kiln_wall_now();
    kiln_lane_sample_take(&s->judge, &s->lanes_at_start);
    tick(s);
    int rc = reconcile(s, err) < 0 ? -1 : kiln_search_start(s, err);
    /* The start kernel's verification is the first estimate of what an
     * iteration (a proposal and its verifications) takes. */
    s->slowest_iteration_s = kiln_wall_now() - started;
    const char *why = NULL;
    if (rc < 0 && s->past_deadline)
        rc = 0, why = OUT_OF_TIME;
    while (rc == 0 && !why) {
        tick(s);
        if ((why = budget_left(s)) != NULL)
            break;
        if (kiln_search_should_stop()) {
            why = "interrupted";
            break;
        }
        kiln_search_hold(s);   /* again, should kilnd have restarted */
        started = kiln_wall_now();
        rc = kiln_search_iteration(s, s->run.iterations_done + 1, err);
        double took = kiln_wall_now() - started;
        s->slowest_iteration_s = took > s->slowest_iteration_s ? took : s->slowest_iteration_s;
        tick(s);
        if (rc == 0)
            kiln_progress_update(&s->progress, 1);
        if (rc < 0 && s->past_deadline)
            rc = 3;
        if (rc == 3)
            why = OUT_OF_TIME;
        else if (rc == 1)
            why = "interrupted";
        else if (rc == 2 && !s->stop_reason[0])
            why = "the proposer has nothing more to try";
        else if (rc == 2)
            why = "";   /* the proposer said why */
        if (rc >= 0 && kiln_db_run_update(s->db, &s->run, err) < 0)
            rc = -1;
        if (rc > 0) {
            rc = 0;
            break;
        }
    }
    kiln_prefetch_cancel(s);   /* a batch asked for an iteration that will not run */
    add_lane_busy(s);
    tick(s);
    snprintf(s->run.status, sizeof s->run.status, "%s",
             rc < 0 ? "failed" : why && strcmp(why, "interrupted") == 0 ? "stopped" : "done");
    if (why && strcmp(why, "interrupted") == 0 && *kiln_search_stop_cause())
        snprintf(s->stop_reason, sizeof s->stop_reason, "interrupted: %s", kiln_search_stop_cause());
    else if (why && *why)
        snprintf(s->stop_reason, sizeof s->stop_reason, "%s", why);
    /* The summary says what failed, in its first line: a message of many
     * (a compiler's log) is printed whole once, at the end. */
    if (rc < 0 && err->msg[0])
        snprintf(s->stop_reason, sizeof s->stop_reason, "%.*s",
                 (int)strcspn(err->msg, "\n") < (int)sizeof s->stop_reason - 1
                     ? (int)strcspn(err->msg, "\n") : (int)sizeof s->stop_reason - 1,
                 err->msg);
    kiln_error e2;
    kiln_db_run_update(s->db, &s->run, rc < 0 ? &e2 : err);
    kiln_progress_finish_line(&s->progress);
    kiln_search_summary(s);
    kiln_dup_free(s);
    if (rc < 0)
        return -1;
    if (!why || strcmp(why, "interrupted") != 0)
        return 0;
    err->msg[0] = '\0';   /* stopped, resumable: nothing went wrong */
    return kiln_error_as(err, KILN_ERR_INTERRUPTED);
}
