/* kilnd_jobs.c - kilnd's queue: compile threads take jobs in order, compile
 * in parallel, then each waits for its device lane, so no two run stages
 * ever overlap on one device. Every accepted job ends in exactly one final
 * event, stored in the spool's results before it is sent. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fileutil.h"
#include "kilnd.h"
#include "task.h"
#include "verdict.h"
#include "verify.h"
#include "worker_client.h"

/* ---- lanes ---------------------------------------------------------------- */

typedef struct lane_use {
    kilnd_lane *lane;
    const char *job;
} lane_use;

static void lane_acquire(void *ctx)
{
    lane_use *u = ctx;
    pthread_mutex_lock(&u->lane->mu);
    while (u->lane->busy)
        pthread_cond_wait(&u->lane->cv, &u->lane->mu);
    u->lane->busy = 1;
    u->lane->busy_since = kiln_mono_ns();
    snprintf(u->lane->job, sizeof u->lane->job, "%s", u->job);
    pthread_mutex_unlock(&u->lane->mu);
}

static void lane_release(void *ctx)
{
    lane_use *u = ctx;
    pthread_mutex_lock(&u->lane->mu);
    u->lane->busy = 0;
    u->lane->busy_s += (double)(kiln_mono_ns() - u->lane->busy_since) / 1e9;
    u->lane->job[0] = '\0';
    pthread_cond_signal(&u->lane->cv);
    pthread_mutex_unlock(&u->lane->mu);
}

/* ---- events --------------------------------------------------------------- */

typedef struct progress_ctx {
    kilnd *d;
    kilnd_job *job;
} progress_ctx;

static void on_progress(void *ctx, const char *stage, const char *message)
{
    progress_ctx *p = ctx;
    if (!p->job->conn)
        return;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", p->job->rq.id);
    cJSON_AddStringToObject(o, "job", p->job->id);
    cJSON_AddStringToObject(o, "event", "progress");
    cJSON_AddStringToObject(o, "stage", stage);
    cJSON_AddStringToObject(o, "message", message);
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (s)
        kilnd_send(p->d, p->job->conn, s);
    free(s);
}

/* Replace the "id" of a stored final event with the asking client's. */
static char *with_client_id(const char *event, const char *client_id)
{
    cJSON *o = cJSON_Parse(event);
    if (!o)
        return kiln_event_error(client_id, NULL, "internal", "stored result is unreadable");
    cJSON_DeleteItemFromObject(o, "id");
    cJSON_AddStringToObject(o, "id", client_id);
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

/* Store the final event, then deliver it to the submitter and any waiters. */
static void finish(kilnd *d, kilnd_job *job, char *event)
{
    if (kiln_spool_finish(&d->spool, job->id, event) < 0)
        kilnd_log(d, "job %s: cannot store its result in %s", job->id, d->spool.results);
    if (job->conn)
        kilnd_send(d, job->conn, event);
    pthread_mutex_lock(&d->mu);
    kilnd_waiter **pp = &d->waiters;
    while (*pp) {
        kilnd_waiter *w = *pp;
        if (strcmp(w->job, job->id) != 0) {
            pp = &w->next;
            continue;
        }
        char *mine = with_client_id(event, w->client_id);
        if (mine)
            kilnd_send(d, w->conn, mine);
        free(mine);
        kilnd_conn_release(w->conn);
        *pp = w->next;
        free(w);
    }
    pthread_mutex_unlock(&d->mu);
}

/* ---- running one job ---------------------------------------------------- */

static char *verdict_event(const kilnd_job *job, const kiln_verdict *v, const kiln_task *t)
{
    cJSON *vj = kiln_verdict_to_cjson(v, t);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", job->rq.id);
    cJSON_AddStringToObject(o, "job", job->id);
    cJSON_AddStringToObject(o, "event", "verdict");
    cJSON_AddItemToObject(o, "verdict", vj ? vj : cJSON_CreateNull());
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

static int resolve(const kiln_verify_request *rq, const kiln_task *t, kiln_dtype *dt, int *group,
                   kiln_error *err)
{
    kiln_backend b = (kiln_backend)kiln_backend_parse(rq->backend);
    *dt = rq->dtype[0] ? kiln_dtype_parse(rq->dtype) : kiln_backend_default_dtype(t, b);
    if (!kiln_task_supports_backend(t, rq->backend, *dt))
        return kiln_fail(err, "task %s has no %s variant for dtype '%s'", t->name, rq->backend,
                         rq->dtype[0] ? rq->dtype : "(default)");
    /* the backend's groups: a task with cuda_groups has other shapes there */
    *group = rq->group[0] ? kiln_task_group_for(t, rq->backend, rq->group)
                          : kiln_task_default_group_for(t, rq->backend);
    if (*group < 0)
        return kiln_fail(err, "task %s has no %s group '%s'", t->name, rq->backend,
                         rq->group[0] ? rq->group : "(default)");
    return 0;
}

/* The candidate (and a given baseline) as files the build can copy. */
static int write_sources(kilnd *d, kilnd_job *job, char *src, char *base, size_t len,
                         kiln_error *err)
{
    const char *ext = strcmp(job->rq.backend, "cuda") == 0 ? "cu" : "c";
    snprintf(src, len, "%s/%s.%s", d->spool.work, job->id, ext);
    snprintf(base, len, "%s/%s-baseline.%s", d->spool.work, job->id, ext);
    if (kiln_write_text(src, job->rq.source, err) < 0)
        return -1;
    return job->rq.baseline ? kiln_write_text(base, job->rq.baseline, err) : 0;
}

/* CPU jobs time on the "cpu" lane, CUDA jobs on the GPU lane with the
 * fewest jobs assigned (the first on a tie); with no lane of that kind they
 * share the first (still never two at once). The job keeps its lane. */
static kilnd_lane *lane_take(kilnd *d, const char *backend)
{
    int cuda = strcmp(backend, "cuda") == 0;
    kilnd_lane *best = NULL;
    pthread_mutex_lock(&d->mu);
    for (int i = 0; i < d->nlanes; i++)
        if ((strncmp(d->lanes[i].name, "cuda:", 5) == 0) == cuda &&
            (!best || d->lanes[i].load < best->load))
            best = &d->lanes[i];
    if (!best)
        best = &d->lanes[0];
    best->load++;
    pthread_mutex_unlock(&d->mu);
    return best;
}

static void lane_give(kilnd *d, kilnd_lane *lane)
{
    pthread_mutex_lock(&d->mu);
    lane->load--;
    pthread_mutex_unlock(&d->mu);
}

/* Who judged it: this daemon's host, its endpoint (TCP when it listens
 * there, else its socket) and the lane. */
static void stamp_verifier(const kilnd *d, const kilnd_lane *lane, kiln_verdict *v)
{
    if (gethostname(v->verifier_host, sizeof v->verifier_host) != 0)
        v->verifier_host[0] = '\0';
    v->verifier_host[sizeof v->verifier_host - 1] = '\0';
    if (d->listen_addr[0])
        snprintf(v->verifier_endpoint, sizeof v->verifier_endpoint, "tcp://%s", d->listen_addr);
    else
        snprintf(v->verifier_endpoint, sizeof v->verifier_endpoint, "%.200s", d->socket_path);   /* sun_path: < 108 */
    snprintf(v->lane, sizeof v->lane, "%s", lane->name);
}

static char *verify_job(kilnd *d, kilnd_job *job, char *status, size_t slen)
{
    kiln_error err = {0};
    kiln_task *t = calloc(1, sizeof *t);
    kiln_verdict *v = calloc(1, sizeof *v);
    char src[4200], base[4200];
    char *event = NULL;
    kiln_dtype dt = KILN_DT_INVALID;
    int group = 0, rc;
    snprintf(status, slen, "error");
    if (!t || !v) {
        event = kiln_event_error(job->rq.id, job->id, "internal", "out of memory");
    } else if (kiln_task_find(job->rq.task, t, &err) < 0 || resolve(&job->rq, t, &dt, &group, &err) < 0) {
        event = kiln_event_error(job->rq.id, job->id, "bad-input", err.msg);
    } else if (write_sources(d, job, src, base, sizeof src, &err) < 0) {
        event = kiln_event_error(job->rq.id, job->id, "internal", err.msg);
    } else {
        progress_ctx pc = {d, job};
        kilnd_lane *lane = lane_take(d, job->rq.backend);
        lane_use lu = {lane, job->id};
        kiln_verify_opts o = {.task = t, .candidate = src, .dtype = dt, .group = group,
                              .device = strncmp(lane->name, "cuda:", 5) == 0 ? atoi(lane->name + 5) : 0,
                              .backend = (kiln_backend)kiln_backend_parse(job->rq.backend),
                              .baseline = job->rq.baseline ? base : NULL,
                              .timing_ms = job->rq.timing_ms,
                              .call_timeout_ms = job->rq.call_timeout_ms,
                              .progress = on_progress, .progress_ctx = &pc,
                              .lane_acquire = lane_acquire, .lane_release = lane_release,
                              .lane_ctx = &lu, .work_root = d->spool.work,
                              .build_cache = d->spool.cache[0] ? d->spool.cache : NULL};
        rc = kiln_verify(&o, v, &err);
        lane_give(d, lane);
        if (rc == 0) {
            stamp_verifier(d, lane, v);
            event = verdict_event(job, v, t);
            snprintf(status, slen, "%s stage=%s code=%s", v->status, v->stage, v->code);
        } else {
            event = kiln_event_error(job->rq.id, job->id,
                                     rc == KILN_VERIFY_BAD_INPUT ? "bad-input" : "internal", err.msg);
        }
        unlink(src);
        unlink(base);
    }
    free(t);
    free(v);
    return event;
}

static void run_job(kilnd *d, kilnd_job *job)
{
    uint64_t t0 = kiln_mono_ns();
    kiln_spool_mark_running(&d->spool, job->id);
    char status[128];
    char *event = verify_job(d, job, status, sizeof status);
    if (!event)
        event = kiln_event_error(job->rq.id, job->id, "internal", "out of memory");
    finish(d, job, event);
    kilnd_log(d, "job %s task=%s status=%s wall=%.2fs", job->id, job->rq.task, status,
              (double)(kiln_mono_ns() - t0) / 1e9);
    pthread_mutex_lock(&d->mu);
    d->done++;
    d->failed += strncmp(status, "pass", 4) != 0;
    pthread_mutex_unlock(&d->mu);
    free(event);
}

static void free_job(kilnd_job *job)
{
    if (job->conn)
        kilnd_conn_release(job->conn);
    kiln_verify_request_free(&job->rq);
    free(job);
}

static void *compile_thread(void *arg)
{
    kilnd *d = arg;
    for (;;) {
        pthread_mutex_lock(&d->mu);
        while (!d->head && !d->stopping)
            pthread_cond_wait(&d->cv, &d->mu);
        if (d->stopping) {
            pthread_mutex_unlock(&d->mu);
            return NULL;
        }
        kilnd_job *job = d->head;
        d->head = job->next;
        if (!d->head)
            d->tail = NULL;
        d->queued--;
        d->active++;
        pthread_mutex_unlock(&d->mu);
        run_job(d, job);
        free_job(job);
        pthread_mutex_lock(&d->mu);
        d->active--;
        pthread_cond_broadcast(&d->cv);
        pthread_mutex_unlock(&d->mu);
    }
}

/* ---- queue ---------------------------------------------------------------- */

static void enqueue(kilnd *d, kilnd_job *job)
{
    pthread_mutex_lock(&d->mu);
    if (d->tail)
        d->tail->next = job;
    else
        d->head = job;
    d->tail = job;
    d->queued++;
    pthread_cond_signal(&d->cv);
    pthread_mutex_unlock(&d->mu);
}

static void send_accepted(kilnd *d, kilnd_conn *c, const char *id, const char *job)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", id);
    cJSON_AddStringToObject(o, "job", job);
    cJSON_AddStringToObject(o, "event", "accepted");
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (s)
        kilnd_send(d, c, s);
    free(s);
}

/* A task is a name in the daemon's task roots; a local client (Unix
 * socket, the daemon's own user) may also give an absolute directory, but
 * never one with a ".." in it, and a TCP client names tasks only: a remote
 * peer must not make the daemon load a directory of its choosing. */
static int task_allowed(const kilnd_conn *c, const char *task, kiln_error *err)
{
    if (!strchr(task, '/') && strcmp(task, "..") != 0 && strcmp(task, ".") != 0)
        return 0;
    if (c->tcp)
        return kiln_fail(err, "field 'task' must name a task in the daemon's task roots "
                         "(a TCP client cannot give a directory)");
    if (task[0] != '/' || strstr(task, "/../") || strstr(task, "/./") ||
        (strlen(task) >= 3 && strcmp(task + strlen(task) - 3, "/..") == 0))
        return kiln_fail(err, "field 'task' must be a task name or an absolute directory "
                         "without '..' or '.' (got '%.200s')", task);
    return 0;
}

void kilnd_submit(kilnd *d, kilnd_conn *c, const cJSON *msg, const char *client_id)
{
    kiln_error err = {0};
    kilnd_job *job = calloc(1, sizeof *job);
    if (!job || kiln_parse_verify(msg, &job->rq, &err) < 0 || task_allowed(c, job->rq.task, &err) < 0) {
        char *e = kiln_event_error(client_id, NULL, "bad-request", job ? err.msg : "out of memory");
        kilnd_send(d, c, e);
        free(e);
        if (job)
            kiln_verify_request_free(&job->rq);
        free(job);
        return;
    }
    char known[32];
    if (job->rq.key[0] && kiln_spool_key_get(&d->spool, job->rq.key, known)) {
        send_accepted(d, c, job->rq.id, known);   /* the same job as before */
        kilnd_result(d, c, client_id, known);
        kiln_verify_request_free(&job->rq);
        free(job);
        return;
    }
    if (d->stopping || kiln_spool_accept(&d->spool, &job->rq, job->id, &err) < 0 ||
        (job->rq.key[0] && kiln_spool_key_put(&d->spool, job->rq.key, job->id, &err) < 0)) {
        char *e = kiln_event_error(client_id, NULL, d->stopping ? "shutting-down" : "internal",
                                   d->stopping ? "kilnd is shutting down" : err.msg);
        kilnd_send(d, c, e);
        free(e);
        kiln_verify_request_free(&job->rq);
        free(job);
        return;
    }
    send_accepted(d, c, job->rq.id, job->id);
    kilnd_conn_retain(c);
    job->conn = c;
    enqueue(d, job);
}

void kilnd_result(kilnd *d, kilnd_conn *c, const char *client_id, const char *job)
{
    if (!kiln_valid_job_id(job)) {
        char *e = kiln_event_error(client_id, NULL, "bad-request", "field 'job' is not a job id");
        kilnd_send(d, c, e);
        free(e);
        return;
    }
    pthread_mutex_lock(&d->mu);   /* ordered against finish(): no lost wake-up */
    char *stored = kiln_spool_result(&d->spool, job);
    if (stored) {
        pthread_mutex_unlock(&d->mu);
        char *mine = with_client_id(stored, client_id);
        kilnd_send(d, c, mine);
        free(mine);
        free(stored);
        return;
    }
    if (!kiln_spool_pending(&d->spool, job)) {
        pthread_mutex_unlock(&d->mu);
        char *e = kiln_event_error(client_id, job, "unknown-job", "no such job");
        kilnd_send(d, c, e);
        free(e);
        return;
    }
    kilnd_waiter *w = calloc(1, sizeof *w);
    if (w) {
        snprintf(w->job, sizeof w->job, "%s", job);
        snprintf(w->client_id, sizeof w->client_id, "%s", client_id);
        kilnd_conn_retain(c);
        w->conn = c;
        w->next = d->waiters;
        d->waiters = w;
    }
    pthread_mutex_unlock(&d->mu);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", client_id);
    cJSON_AddStringToObject(o, "job", job);
    cJSON_AddStringToObject(o, "event", "pending");
    char *ack = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (ack)
        kilnd_send(d, c, ack);
    free(ack);
}

typedef struct recover_ctx {
    kilnd *d;
    int requeued, answered;
} recover_ctx;

static void recover_one(void *ctx, const char *id, int was_running, cJSON *request)
{
    recover_ctx *r = ctx;
    kilnd_job *job = calloc(1, sizeof *job);
    kiln_error err = {0};
    int ok = job && request && kiln_parse_verify(request, &job->rq, &err) == 0;
    if (job)
        snprintf(job->id, sizeof job->id, "%s", id);
    if (ok && !was_running) {
        enqueue(r->d, job);
        r->requeued++;
    } else {
        const char *msg = was_running
                              ? "kilnd restarted while this job was running; it was not retried "
                                "(a job that brings the daemon down must not do it twice)"
                              : "kilnd restarted and could not read this job's spool record";
        char *e = kiln_event_error(ok ? job->rq.id : "", id, "daemon-restarted", msg);
        kiln_spool_finish(&r->d->spool, id, e);
        free(e);
        if (job)
            kiln_verify_request_free(&job->rq);
        free(job);
        r->answered++;
    }
    cJSON_Delete(request);
}

int kilnd_recover(kilnd *d, kiln_error *err)
{
    recover_ctx r = {d, 0, 0};
    if (kiln_spool_recover(&d->spool, recover_one, &r, err) < 0)
        return -1;
    if (r.requeued || r.answered)
        kilnd_log(d, "recovered the spool: %d jobs queued again, %d answered with daemon-restarted",
                  r.requeued, r.answered);
    return 0;
}

int kilnd_jobs_start(kilnd *d, kiln_error *err)
{
    d->threads = calloc((size_t)d->compile_jobs, sizeof *d->threads);
    if (!d->threads)
        return kiln_fail(err, "out of memory");
    for (int i = 0; i < d->compile_jobs; i++)
        if (pthread_create(&d->threads[i], NULL, compile_thread, d) != 0)
            return kiln_fail(err, "cannot start thread %d", i);
    return 0;
}

void kilnd_jobs_stop(kilnd *d)
{
    pthread_mutex_lock(&d->mu);
    d->stopping = 1;
    pthread_cond_broadcast(&d->cv);
    pthread_mutex_unlock(&d->mu);
    for (int i = 0; d->threads && i < d->compile_jobs; i++)
        pthread_join(d->threads[i], NULL);
    free(d->threads);
    d->threads = NULL;
    /* Queued jobs stay in the spool and run when kilnd starts again. */
    while (d->head) {
        kilnd_job *job = d->head;
        d->head = job->next;
        if (job->conn) {
            char *e = kiln_event_error(job->rq.id, job->id, "shutting-down",
                                       "kilnd stopped before this job ran; it stays spooled and "
                                       "runs when kilnd starts again (ask for it with its job id)");
            kilnd_send(d, job->conn, e);
            free(e);
        }
        free_job(job);
    }
    d->tail = NULL;
    /* The running jobs have answered their waiters; the rest wait for a job
     * that stays spooled: tell them, as its submitter was told. */
    while (d->waiters) {
        kilnd_waiter *w = d->waiters;
        d->waiters = w->next;
        char *e = kiln_event_error(w->client_id, w->job, "shutting-down",
                                   "kilnd stopped before this job ran; it stays spooled and runs "
                                   "when kilnd starts again (ask for it then)");
        if (e)
            kilnd_send(d, w->conn, e);
        free(e);
        kilnd_conn_release(w->conn);
        free(w);
    }
}

int kilnd_idle(kilnd *d)
{
    pthread_mutex_lock(&d->mu);
    int idle = !d->head && d->active == 0;
    pthread_mutex_unlock(&d->mu);
    return idle;
}

char *kilnd_status_json(kilnd *d, const char *client_id)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", client_id);
    cJSON_AddStringToObject(o, "event", "status");
    cJSON_AddStringToObject(o, "version", KILN_PROTO_VERSION);
    cJSON_AddStringToObject(o, "build", d->build);
    cJSON_AddNumberToObject(o, "pid", getpid());
    cJSON_AddNumberToObject(o, "uptime_s", (double)(time(NULL) - d->started));
    pthread_mutex_lock(&d->mu);
    cJSON_AddNumberToObject(o, "queued", d->queued);
    cJSON_AddNumberToObject(o, "active", d->active);
    cJSON_AddNumberToObject(o, "jobs_done", (double)d->done);
    cJSON_AddNumberToObject(o, "jobs_not_passed", (double)d->failed);
    pthread_mutex_unlock(&d->mu);
    cJSON_AddNumberToObject(o, "compile_jobs", d->compile_jobs);
    cJSON *lanes = cJSON_AddArrayToObject(o, "devices");
    for (int i = 0; i < d->nlanes; i++) {
        cJSON *l = cJSON_CreateObject();
        pthread_mutex_lock(&d->lanes[i].mu);
        cJSON_AddStringToObject(l, "name", d->lanes[i].name);
        cJSON_AddStringToObject(l, "job", d->lanes[i].busy ? d->lanes[i].job : "");
        /* how long the lane has worked: a client takes two of these and
         * divides by the time between (harness/lane_busy.h) */
        double busy = d->lanes[i].busy_s;
        if (d->lanes[i].busy)
            busy += (double)(kiln_mono_ns() - d->lanes[i].busy_since) / 1e9;
        cJSON_AddNumberToObject(l, "busy_s", busy);
        pthread_mutex_unlock(&d->lanes[i].mu);
        pthread_mutex_lock(&d->mu);   /* jobs assigned to the lane, running or waiting for it */
        cJSON_AddNumberToObject(l, "load", d->lanes[i].load);
        pthread_mutex_unlock(&d->mu);
        cJSON_AddItemToArray(lanes, l);
    }
    kilnd_add_clients(d, o);
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}
