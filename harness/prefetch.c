/* prefetch.c - the next iteration's model requests on a thread while this
 * iteration is verified (see prefetch.h). The thread runs one call,
 * kiln_llm_complete_each_until, on a batch the main thread built and does
 * not touch until the thread is joined; it shares nothing else with the
 * search but two atomic flags. Signals stay with the main thread (blocked
 * in the asking thread), so Ctrl-C and SIGTERM reach the search loop as
 * before. */
#include "prefetch.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "iteration.h"   /* kiln_search_seam */
#include "propose.h"
#include "shares.h"

struct kiln_prefetch {
    pthread_t thread;
    atomic_int stop;        /* main -> thread: give up the calls */
    atomic_int done;        /* thread -> main: the results are in */
    kiln_llm_config cfg;    /* the thread's own copy */
    kiln_model_batch b;
    int rc;                 /* of the call */
    double call_s;          /* how long the call took (the model's time) */
    kiln_error err;
};

static void *ask(void *p)
{
    kiln_prefetch *f = p;
    double t = kiln_wall_now();
    f->rc = kiln_llm_complete_each_until(&f->cfg, f->b.req, f->b.n, f->b.res, &f->stop, &f->err);
    f->call_s = kiln_wall_now() - t;
    atomic_store(&f->done, 1);
    return NULL;
}

/* Would iteration it start, as far as can be told while the one before it
 * runs? The budgets of search_loop.c's budget_left, with the current
 * iteration assumed to take as long as the slowest so far. */
static int worth_it(const search *s, int it, double started)
{
    const kiln_run *r = &s->run;
    if (r->budget_iterations > 0 && it > r->budget_iterations)
        return 0;
    if (r->budget_tokens > 0 && r->tokens_used >= r->budget_tokens)
        return 0;
    if (r->budget_seconds <= 0)
        return 1;
    double into = kiln_wall_now() - started;
    double rest = s->slowest_iteration_s > into ? s->slowest_iteration_s - into : 0;
    return r->seconds_used + rest + kiln_search_next_iteration_s(s) <= r->budget_seconds;
}

/* The thread, with every signal blocked in it (it inherits the mask). */
static int spawn(kiln_prefetch *f)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    int rc = pthread_create(&f->thread, NULL, ask, f);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc == 0 ? 0 : -1;
}

void kiln_prefetch_start(search *s, int it, double started)
{
    kiln_judge_seam j = kiln_search_seam(s);   /* verified elsewhere, while the model is asked */
    if (!s->use_llm || !j.ops->ahead(j.self) || s->prefetch || kiln_search_should_stop() ||
        !worth_it(s, it, started))
        return;
    if (!kiln_pipeline_pays(&s->run.pipe, s->o->pipeline_min_saving)) {
        s->run.pipe.declined++;   /* asked after the verdicts, with them */
        return;
    }
    kiln_prefetch *f = calloc(1, sizeof *f);
    if (!f)
        return;
    char parent[41], *src = NULL, *verdict = NULL;
    kiln_error e = {0};
    int ok = kiln_search_draw_parent(s, it, parent, &e) == 0 &&
             kiln_ws_read(&s->ws, parent, s->relpath, &src, &e) == 0;
    if (ok) {
        verdict = kiln_db_record_verdict_at(s->db, s->run.id, parent);
        ok = kiln_model_prepare(s, it, parent, src, verdict, &f->b, &e) == 0;
    }
    free(src);
    free(verdict);
    f->cfg = s->llm;
    if (!ok || spawn(f) < 0) {
        kiln_model_batch_free(&f->b);
        free(f);
        return;
    }
    s->prefetch = f;
    s->prefetch_asked++;
    s->run.prefetch_asked++;   /* over all sessions, in the run row */
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "iteration", it);
    cJSON_AddNumberToObject(o, "during_iteration", it - 1);
    cJSON_AddStringToObject(o, "parent", parent);
    cJSON_AddNumberToObject(o, "drafts", f->b.n);
    kiln_progress_event(&s->progress, "asked_ahead", o);
}

const char *kiln_prefetch_parent(const search *s, int it)
{
    return s->prefetch && s->prefetch->b.it == it ? s->prefetch->b.parent : NULL;
}

/* Join the thread and take the batch off the search. */
static kiln_prefetch *join(search *s)
{
    kiln_prefetch *f = s->prefetch;
    pthread_join(f->thread, NULL);
    s->prefetch = NULL;
    return f;
}

static void release(kiln_prefetch *f)
{
    kiln_model_batch_free(&f->b);
    free(f);
}

int kiln_prefetch_collect(search *s, int it, int first, kiln_error *err)
{
    kiln_prefetch *f = s->prefetch;
    if (!f || f->b.it != it)
        return kiln_fail(err, "no answers were asked for iteration %d ahead (a bug in kiln)", it);
    snprintf(s->progress.last, sizeof s->progress.last,
             "waiting for %s (%s): %d draft%s asked for during iteration %d", s->run.agent,
             s->run.model, f->b.n, f->b.n == 1 ? "" : "s", it - 1);
    kiln_progress_update(&s->progress, 0);
    double t = kiln_wall_now();
    int interrupted = 0;
    struct timespec nap = {0, 2 * 1000 * 1000};
    while (!atomic_load(&f->done)) {
        if (!interrupted && kiln_search_should_stop()) {
            interrupted = 1;   /* Ctrl-C: nothing more is waited for */
            atomic_store(&f->stop, 1);
        }
        nanosleep(&nap, NULL);
    }
    join(s);
    double waited = kiln_wall_now() - t;
    s->run.model_wait_s += waited;
    int rc;
    if (interrupted) {
        kiln_model_drop(s, &f->b);
        s->prefetch_dropped += f->b.n;
        s->run.prefetch_dropped += f->b.n;
        rc = 1;
    } else if (f->rc < 0) {
        *err = f->err;
        rc = -1;
    } else {
        /* What the thread took while verification ran is what was saved. */
        s->run.pipe.model_s += f->call_s;
        s->run.pipe.model_n++;
        s->run.pipe.pipelined++;
        s->run.pipe.saved_s += f->call_s > waited ? f->call_s - waited : 0;
        rc = kiln_model_record(s, &f->b, first, err);
    }
    release(f);
    return rc;
}

void kiln_prefetch_cancel(search *s)
{
    if (!s->prefetch)
        return;
    atomic_store(&s->prefetch->stop, 1);
    kiln_prefetch *f = join(s);
    if (f->rc == 0) {
        kiln_model_drop(s, &f->b);
        s->prefetch_dropped += f->b.n;
        s->run.prefetch_dropped += f->b.n;
    }
    release(f);
}
