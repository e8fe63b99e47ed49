/* judge.c - running verifications for a search (see judge.h). */
#include "judge.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon_client.h"
#include "fileutil.h"
#include "paths.h"
#include "verdict.h"
#include "verify.h"
#include "worker_io.h"   /* kiln_mono_ns */

static int write_temp(const char *dir, const char *name, const char *text, char *path, size_t len,
                      kiln_error *err)
{
    snprintf(path, len, "%s/%s", dir, name);
    return kiln_write_text(path, text, err);
}

static int is_cuda(const kiln_judge *j)
{
    return j->backend && strcmp(j->backend, "cuda") == 0;
}

static cJSON *run_here(kiln_judge *j, const char *source, const char *baseline, kiln_error *err)
{
    char dir[4096], src[4200], base[4200];
    cJSON *out = NULL;
    if (kiln_make_tempdir(NULL, "kiln-judge", dir, sizeof dir, err) < 0)
        return NULL;
    kiln_verdict *v = calloc(1, sizeof *v);
    kiln_backend b = is_cuda(j) ? KILN_BACKEND_CUDA : KILN_BACKEND_CPU;
    const char *ext = b == KILN_BACKEND_CUDA ? "cu" : "c";
    char cname[32], bname[32];
    snprintf(cname, sizeof cname, "candidate.%s", ext);
    snprintf(bname, sizeof bname, "baseline.%s", ext);
    kiln_dtype dt = j->dtype && *j->dtype ? kiln_dtype_parse(j->dtype) : kiln_backend_default_dtype(j->task, b);
    const char *bn = b == KILN_BACKEND_CUDA ? "cuda" : "cpu";
    int group = j->group && *j->group ? kiln_task_group_for(j->task, bn, j->group)
                                      : kiln_task_default_group_for(j->task, bn);
    if (group < 0) {
        kiln_fail(err, "task %s has no %s group '%s'", j->task->name, bn,
                  j->group && *j->group ? j->group : "(default)");
        free(v);
        kiln_remove_tree(dir);
        return NULL;
    }
    if (v && write_temp(dir, cname, source, src, sizeof src, err) == 0 &&
        (!baseline || write_temp(dir, bname, baseline, base, sizeof base, err) == 0)) {
        kiln_verify_opts o = {.task = j->task, .backend = b, .candidate = src, .dtype = dt,
                              .group = group, .baseline = baseline ? base : NULL,
                              .timing_ms = j->timing_ms};
        if (kiln_verify(&o, v, err) == 0) {
            char *s = kiln_verdict_json(v, j->task, 0);
            out = s ? cJSON_Parse(s) : NULL;
            free(s);
        }
    }
    free(v);
    kiln_remove_tree(dir);
    return out;
}

static cJSON *request(kiln_judge *j, const char *source, const char *baseline, const char *job)
{
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "id", "search");
    if (job[0]) {
        cJSON_AddStringToObject(m, "op", "result");
        cJSON_AddStringToObject(m, "job", job);
        return m;
    }
    cJSON_AddStringToObject(m, "op", "verify");
    cJSON_AddStringToObject(m, "task", j->task_ref);
    cJSON_AddStringToObject(m, "language", is_cuda(j) ? "cuda" : "c");
    cJSON_AddStringToObject(m, "backend", is_cuda(j) ? "cuda" : "cpu");
    if (j->dtype && *j->dtype)
        cJSON_AddStringToObject(m, "dtype", j->dtype);
    if (j->group && *j->group)
        cJSON_AddStringToObject(m, "group", j->group);
    cJSON_AddNumberToObject(m, "timing_ms", j->timing_ms);
    cJSON_AddStringToObject(m, "source", source);
    if (baseline)
        cJSON_AddStringToObject(m, "baseline", baseline);
    if (j->key)
        cJSON_AddStringToObject(m, "key", j->key);
    return m;
}

/* How long to wait for kilnd's next event: an hour, or until the
 * deadline. 0 when the deadline has passed. */
static int wait_ms(const kiln_judge *j)
{
    if (!j->deadline_ns)
        return 3600 * 1000;
    uint64_t now = kiln_mono_ns();
    if (now >= j->deadline_ns)
        return 0;
    uint64_t left_ms = (j->deadline_ns - now) / 1000000 + 1;
    return left_ms > 3600 * 1000 ? 3600 * 1000 : (int)left_ms;
}

static int past(const kiln_judge *j)
{
    return j->deadline_ns && kiln_mono_ns() >= j->deadline_ns;
}

/* One exchange with kilnd: 1 final event, 0 connection lost, -1 the
 * deadline passed (the job goes on in kilnd; its id is known). */
static int exchange(kiln_judge *j, const char *source, const char *baseline, char job[32],
                    kiln_judge_accepted on_accepted, void *ctx, cJSON **final, kiln_error *err)
{
    kiln_client c;
    if (kiln_client_open(&c, j->address, 1, err) < 0)
        return 0;
    cJSON *m = request(j, source, baseline, job);
    int rc = kiln_client_send(&c, m, err) < 0 ? 0 : -2;
    cJSON_Delete(m);
    while (rc == -2) {
        int ms = wait_ms(j);
        cJSON *ev = ms > 0 ? kiln_client_next(&c, ms, err) : NULL;
        if (!ev && past(j)) {
            j->past_deadline = 1;
            kiln_fail(err, "the time budget ran out while job %s was verified; it goes on in "
                      "kilnd and a resumed run collects its verdict", job[0] ? job : "(new)");
            rc = -1;
            break;
        }
        if (!ev) {
            rc = 0;
            break;
        }
        const char *kind = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ev, "event"));
        const char *id = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ev, "job"));
        if (kind && strcmp(kind, "accepted") == 0 && id) {
            snprintf(job, 32, "%s", id);
            if (on_accepted)
                on_accepted(ctx, job);
        }
        if (kind && (strcmp(kind, "verdict") == 0 || strcmp(kind, "error") == 0)) {
            *final = ev;
            rc = 1;
        } else {
            cJSON_Delete(ev);
        }
    }
    kiln_client_close(&c);
    return rc;
}

static cJSON *run_daemon(kiln_judge *j, const char *source, const char *baseline, char job[32],
                         kiln_judge_accepted on_accepted, void *ctx, kiln_error *err)
{
    for (int attempt = 0; attempt < 30; attempt++) {
        if (attempt > 0 && past(j)) {
            j->past_deadline = 1;
            return kiln_fail(err, "the time budget ran out while kilnd was away"), NULL;
        }
        cJSON *final = NULL;
        int rc = exchange(j, source, baseline, job, on_accepted, ctx, &final, err);
        if (rc < 0)
            return NULL;
        if (rc == 0) {   /* kilnd went away: the job is spooled; ask again */
            sleep(1);
            continue;
        }
        const char *kind = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(final, "event"));
        if (strcmp(kind, "verdict") == 0) {
            cJSON *v = cJSON_DetachItemFromObject(final, "verdict");
            cJSON_Delete(final);
            return v;
        }
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(final, "error");
        const char *code = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "code"));
        const char *msg = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "message"));
        int lost = code && (strcmp(code, "daemon-restarted") == 0 || strcmp(code, "unknown-job") == 0);
        int later = code && strcmp(code, "shutting-down") == 0;
        kiln_fail(err, "kilnd: %s (%s)", msg ? msg : "error", code ? code : "?");
        cJSON_Delete(final);
        if (!lost && !later) {
            j->job_failed = job[0] != '\0';
            return NULL;
        }
        /* A job that never produced a verdict may be submitted again without
         * verifying anything twice; a spooled one is waited for. */
        if (lost)
            job[0] = '\0';
        sleep(1);
    }
    return NULL;
}

cJSON *kiln_judge_run(kiln_judge *j, const char *source, const char *baseline, char job[32],
                      kiln_judge_accepted on_accepted, void *ctx, kiln_error *err)
{
    j->job_failed = 0;
    j->past_deadline = 0;
    if (j->in_process)
        return run_here(j, source, baseline, err);
    return run_daemon(j, source, baseline, job, on_accepted, ctx, err);
}
