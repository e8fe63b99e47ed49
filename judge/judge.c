/* judge.c - kiln's one client of the verifier (see judge.h): requests
 * built by the protocol's codec, one retry and timeout policy for kilnd
 * (one daemon, or many through kilnd_pool.h with failover), and the same
 * interface in process. */
#include "judge.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "build_cache.h"
#include "daemon_client.h"
#include "fileutil.h"
#include "paths.h"
#include "protocol.h"
#include "verdict.h"
#include "kilnd_pool.h"
#include "verify.h"
#include "worker_io.h"   /* kiln_mono_ns */

/* How long kilnd may stay away (restarting, say) before a job counts as
 * lost: it is spooled, so a daemon back within this time answers it. */
#define RECONNECT_S 60
/* With many verifiers: how long a wait for the next event lasts before the
 * verifier is pinged (a daemon that stops answering loses its jobs). */
#define PROBE_MS 5000

static int is_cuda(const kiln_judge *j)
{
    return j->backend && strcmp(j->backend, "cuda") == 0;
}

static void set_code(kiln_judge *j, const char *code)
{
    snprintf(j->error_code, sizeof j->error_code, "%s", code);
}

/* What a request asks: the candidate's source, the baseline's (NULL: the
 * task's) and the idempotency key (NULL: none), passed down unchanged. */
typedef struct asked {
    const char *source, *baseline, *key;
} asked;

/* ---- in process --------------------------------------------------------- */

static int write_temp(const char *dir, const char *name, const char *text, char *path, size_t len,
                      kiln_error *err)
{
    snprintf(path, len, "%s/%s", dir, name);
    return kiln_write_text(path, text, err);
}

/* The backend, dtype and group the job asks for; -1 with err. */
static int job_shape(const kiln_judge *j, kiln_verify_opts *o, kiln_error *err)
{
    o->backend = is_cuda(j) ? KILN_BACKEND_CUDA : KILN_BACKEND_CPU;
    o->dtype = j->dtype && *j->dtype ? kiln_dtype_parse(j->dtype)
                                     : kiln_backend_default_dtype(j->task, o->backend);
    const char *bn = is_cuda(j) ? "cuda" : "cpu";
    o->group = j->group && *j->group ? kiln_task_group_for(j->task, bn, j->group)
                                     : kiln_task_default_group_for(j->task, bn);
    if (o->group < 0)
        return kiln_fail(err, "task %s has no %s group '%s'", j->task->name, bn,
                         j->group && *j->group ? j->group : "(default)");
    return 0;
}

/* Sources given as text go to files in a temporary directory. */
static int stage_files(const kiln_judge *j, const char *dir, const char *source,
                       const char *baseline, char *src, char *base, size_t len, kiln_error *err)
{
    const char *ext = is_cuda(j) ? "cu" : "c";
    char name[32];
    if (j->candidate_path) {
        snprintf(src, len, "%s", j->candidate_path);
    } else {
        snprintf(name, sizeof name, "candidate.%s", ext);
        if (write_temp(dir, name, source, src, len, err) < 0)
            return -1;
    }
    base[0] = '\0';
    if (j->baseline_path) {
        snprintf(base, len, "%s", j->baseline_path);
    } else if (baseline) {
        snprintf(name, sizeof name, "baseline.%s", ext);
        if (write_temp(dir, name, baseline, base, len, err) < 0)
            return -1;
    }
    return 0;
}

static kiln_verdict *run_here(kiln_judge *j, const char *source, const char *baseline,
                              kiln_error *err)
{
    char dir[4096], src[4200], base[4200];
    char cache[4096];
    kiln_verify_opts o = {.task = j->task, .timing_ms = j->timing_ms,
                          .call_timeout_ms = j->call_timeout_ms, .keep_dir = j->keep_dir,
                          .test_report_scale = j->report_scale, .progress = j->progress,
                          .progress_ctx = j->progress_ctx};
    kiln_verdict *out = NULL;
    set_code(j, "bad-input");
    if (job_shape(j, &o, err) < 0)
        return NULL;
    /* What the verification builds is kept as kilnd keeps it, in the
     * user's cache directory (or $KILN_BUILD_CACHE's). */
    int has_cache = kiln_build_cache_dir(NULL, cache, sizeof cache, err);
    if (has_cache < 0)
        return NULL;
    o.build_cache = has_cache ? cache : NULL;
    set_code(j, "internal");
    if (kiln_make_tempdir(NULL, "kiln-judge", dir, sizeof dir, err) < 0)
        return NULL;
    kiln_verdict *v = calloc(1, sizeof *v);
    if (!v)
        kiln_fail(err, "out of memory");
    else if (stage_files(j, dir, source, baseline, src, base, sizeof src, err) == 0) {
        o.candidate = src;
        o.baseline = base[0] ? base : NULL;
        int rc = kiln_verify(&o, v, err);
        if (rc == 0)
            out = v, v = NULL;
        if (rc == KILN_VERIFY_BAD_INPUT)
            set_code(j, "bad-input");
    }
    if (out)
        j->error_code[0] = '\0';
    free(v);
    kiln_remove_tree(dir);
    return out;
}

/* ---- through kilnd ------------------------------------------------------ */

static cJSON *request(kiln_judge *j, const asked *a, const char *job)
{
    if (job[0]) {
        cJSON *m = cJSON_CreateObject();
        cJSON_AddStringToObject(m, "op", "result");
        cJSON_AddStringToObject(m, "id", "result");
        cJSON_AddStringToObject(m, "job", job);
        return m;
    }
    kiln_verify_request rq = {.timing_ms = j->timing_ms, .call_timeout_ms = j->call_timeout_ms,
                              .source = (char *)a->source, .baseline = (char *)a->baseline};
    snprintf(rq.id, sizeof rq.id, "kiln-%d", (int)getpid());
    memcpy(rq.task, j->task_ref, strlen(j->task_ref) + 1);   /* length checked */
    snprintf(rq.language, sizeof rq.language, "%s", is_cuda(j) ? "cuda" : "c");
    snprintf(rq.backend, sizeof rq.backend, "%s", is_cuda(j) ? "cuda" : "cpu");
    snprintf(rq.dtype, sizeof rq.dtype, "%s", j->dtype ? j->dtype : "");
    snprintf(rq.group, sizeof rq.group, "%s", j->group ? j->group : "");
    snprintf(rq.mode, sizeof rq.mode, "full");
    snprintf(rq.key, sizeof rq.key, "%s", a->key ? a->key : "");
    if (!rq.call_timeout_ms)
        rq.call_timeout_ms = 10000;   /* the protocol's default */
    return kiln_verify_request_json(&rq);
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

static const char *str_of(const cJSON *o, const char *k)
{
    return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, k));
}

/* One event: note the job id, pass progress on. 1 when it is the final
 * one (a verdict or an error). */
static int on_event(kiln_judge *j, cJSON *ev, char job[32], kiln_judge_accepted on_accepted,
                    void *ctx)
{
    const char *kind = str_of(ev, "event"), *id = str_of(ev, "job");
    if (kind && strcmp(kind, "accepted") == 0 && id) {
        snprintf(job, 32, "%s", id);
        if (on_accepted)
            on_accepted(ctx, job);
    } else if (id && !job[0]) {
        snprintf(job, 32, "%s", id);
    }
    if (kind && strcmp(kind, "progress") == 0 && j->progress)
        j->progress(j->progress_ctx, str_of(ev, "stage"), str_of(ev, "message"));
    return kind && (strcmp(kind, "verdict") == 0 || strcmp(kind, "error") == 0);
}

/* One exchange with kilnd: 1 final event, 0 connection lost, -1 the
 * deadline passed (the job goes on in kilnd; its id is known), -3 no
 * connection at all, 2 (until_accepted) the job is accepted. */
static int exchange(kiln_judge *j, const char *address, const asked *a, char job[32],
                    kiln_judge_accepted on_accepted, void *ctx, int until_accepted, cJSON **final,
                    kiln_error *err)
{
    kiln_client c;
    int many = j->verifiers != NULL;   /* not started on demand; pinged when quiet */
    const char *keep = j->daemon_build[0] ? j->daemon_build : NULL;   /* the session's kilnd */
    if ((many ? kiln_client_open(&c, address, 0, err) : kiln_client_open_keep(&c, address, keep, err)) < 0)
        return -3;
    if (!many && !j->daemon_build[0])
        snprintf(j->daemon_build, sizeof j->daemon_build, "%s", c.build);
    cJSON *m = request(j, a, job);
    int rc = kiln_client_send(&c, m, err) < 0 ? 0 : -2;
    cJSON_Delete(m);
    while (rc == -2) {
        int ms = wait_ms(j);
        if (many && ms > PROBE_MS)
            ms = PROBE_MS;
        cJSON *ev = ms > 0 ? kiln_client_next(&c, ms, err) : NULL;
        if (!ev && many && !c.closed && !past(j)) {
            /* quiet: still there? (a long timing stage sends nothing) */
            kiln_error e;
            if (kiln_verifier_answers(address, PROBE_MS, &e))
                continue;
            kiln_fail(err, "kilnd at %s stopped answering: %s", address, e.msg);
            rc = 0;
        } else if (!ev && past(j)) {
            j->past_deadline = 1;
            set_code(j, "deadline");
            kiln_fail(err, "the time budget ran out while job %s was verified; it goes on in "
                      "kilnd and a resumed run collects its verdict", job[0] ? job : "(new)");
            rc = -1;
        } else if (!ev) {
            rc = 0;
        } else if (on_event(j, ev, job, on_accepted, ctx)) {
            *final = ev;
            rc = 1;
        } else {
            cJSON_Delete(ev);
            if (until_accepted && job[0])
                rc = 2;
        }
    }
    kiln_client_close(&c);
    return rc;
}

/* The verdict event's verdict, decoded: the one parse of a judgement. */
static kiln_verdict *decode(kiln_judge *j, cJSON *final, kiln_error *err)
{
    kiln_verdict *v = malloc(sizeof *v);
    if (!v)
        kiln_fail(err, "out of memory");
    else if (kiln_verdict_from_cjson(cJSON_GetObjectItemCaseSensitive(final, "verdict"), v, err) < 0)
        free(v), v = NULL, kiln_error_prefix(err, "kilnd's verdict");
    cJSON_Delete(final);
    if (!v)
        set_code(j, "internal");
    return v;
}

/* The final event: the verdict, or NULL with err. *again is set when the
 * job should be asked for once more (kilnd restarted or is shutting down). */
static kiln_verdict *conclude(kiln_judge *j, cJSON *final, char job[32], int *again,
                              kiln_error *err)
{
    if (strcmp(str_of(final, "event"), "verdict") == 0)
        return decode(j, final, err);
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(final, "error");
    const char *code = str_of(e, "code"), *msg = str_of(e, "message");
    int lost = code && (strcmp(code, "daemon-restarted") == 0 || strcmp(code, "unknown-job") == 0);
    int later = code && strcmp(code, "shutting-down") == 0;
    kiln_fail(err, "kilnd: %s (%s)", msg ? msg : "error", code ? code : "?");
    set_code(j, code ? code : "internal");
    cJSON_Delete(final);
    *again = lost || later;
    if (!*again)
        j->job_failed = job[0] != '\0';
    /* A job that never produced a verdict may be submitted again without
     * verifying anything twice; a spooled one is waited for. */
    if (lost)
        job[0] = '\0';
    return NULL;
}

static kiln_verdict *run_daemon(kiln_judge *j, const asked *a, char job[32],
                                kiln_judge_accepted on_accepted, void *ctx, kiln_error *err)
{
    uint64_t away_since = 0;
    for (;;) {
        cJSON *final = NULL;
        int rc = exchange(j, j->address, a, job, on_accepted, ctx, 0, &final, err);
        if (rc == -1)
            return NULL;
        /* No kilnd to talk to and no job of ours in one: nothing to wait
         * for (a refused token, a wrong address). */
        if (rc == -3 && !job[0] && !away_since) {
            set_code(j, "unreachable");
            return NULL;
        }
        int again = 0;
        if (rc == 1) {
            kiln_verdict *v = conclude(j, final, job, &again, err);
            if (v || !again)
                return v;
        }
        /* kilnd went away (the job is spooled) or asked to be asked again. */
        uint64_t now = kiln_mono_ns();
        if (!away_since)
            away_since = now;
        if (now - away_since > RECONNECT_S * 1000000000ull) {
            char last[sizeof err->msg];
            snprintf(last, sizeof last, "%s", err->msg);
            set_code(j, "lost");
            return kiln_fail(err, "lost kilnd at %s%s%s (%.200s)", j->address,
                             job[0] ? " during job " : "", job, last), NULL;
        }
        if (past(j)) {
            j->past_deadline = 1;
            set_code(j, "deadline");
            return kiln_fail(err, "the time budget ran out while kilnd was away"), NULL;
        }
        sleep(1);
    }
}

/* ---- through many kilnds (kilnd_pool.h) ------------------------------------- */

#define MAX_AVOID 16

/* on_accepted with the job id naming its verifier: "RAW@TAG" in the
 * caller's job buffer, which is what the caller records. */
typedef struct tagger {
    const kiln_verifier *v;
    char *job;
    kiln_judge_accepted fn;
    void *ctx;
} tagger;

static void tag_accepted(void *p, const char *raw)
{
    tagger *t = p;
    if (kiln_verifier_job_id(t->v->tag, raw, t->job) < 0)
        t->job[0] = '\0';   /* not kilnd's: nothing to record, the verdict still comes */
    else if (t->fn)
        t->fn(t->ctx, t->job);
}

/* The verifier holding a recorded job, its id there in raw; NULL when the
 * job names none that can still be asked (a plain id from a session with
 * one daemon, a verifier no longer listed or gone from the fleet). */
static kiln_verifier *holder(kiln_judge *j, const char *job, char raw[32])
{
    char tag[13];
    if (kiln_verifier_split_job(job, raw, tag) <= 0)
        return NULL;   /* plain, or malformed (raw is ""): sent again under its key */
    kiln_verifier *v = kiln_verifiers_find(j->verifiers, tag);
    return v && !v->gone ? v : NULL;
}

/* Verify through one verifier after another until one answers the job. A
 * job is sent under the caller's key; when its verifier dies, stops
 * answering or shuts down, the job is sent to another under the same key,
 * so each daemon runs it at most once and the caller gets one verdict. */
static kiln_verdict *run_many(kiln_judge *j, const asked *a, char job[32],
                              kiln_judge_accepted on_accepted, void *ctx, kiln_error *err)
{
    kiln_verifier *avoid[MAX_AVOID];
    int navoid = 0;
    uint64_t none_since = 0;
    for (;;) {
        char raw[32] = "";
        kiln_verifier *v = job[0] ? holder(j, job, raw) : NULL;
        if (v && v->down && navoid < MAX_AVOID)
            avoid[navoid++] = v, v = NULL;
        if (!v) {
            /* Its verifier is gone or down: the job is sent elsewhere under
             * the same key. Never ask another daemon for this id: its ids
             * are its own, and the same one there is another job. */
            job[0] = raw[0] = '\0';
            v = kiln_verifiers_pick(j->verifiers, j->backend, avoid, navoid, err);
        }
        if (!v) {
            uint64_t now = kiln_mono_ns();
            if (!none_since)
                none_since = now;
            if (now - none_since > RECONNECT_S * 1000000000ull) {
                char last[sizeof err->msg - 32];
                snprintf(last, sizeof last, "%.*s", (int)sizeof last - 1, err->msg);
                set_code(j, "unreachable");
                return kiln_fail(err, "%s (for %d s)", last, RECONNECT_S), NULL;
            }
            if (past(j)) {
                j->past_deadline = 1;
                set_code(j, "deadline");
                return kiln_fail(err, "the time budget ran out while no verifier could take a "
                                 "job"), NULL;
            }
            sleep(1);
            continue;
        }
        none_since = 0;
        tagger t = {v, job, on_accepted, ctx};
        cJSON *final = NULL;
        int rc = exchange(j, v->address, a, raw, tag_accepted, &t, 0, &final, err);
        if (rc == -1)
            return NULL;   /* the deadline: the job goes on there; its id is recorded */
        if (rc == 1) {
            int again = 0;
            kiln_verdict *out = conclude(j, final, raw, &again, err);
            if (out || !again)
                return out;
            /* kilnd lost the job (restarted) or is stopping: asking it again
             * under the same key would get the same answer */
            if (strcmp(j->error_code, "shutting-down") == 0)
                kiln_verifier_down(v, "shutting down");
        } else {
            kiln_verifier_down(v, err->msg);   /* died, or stopped answering */
        }
        if (navoid < MAX_AVOID)
            avoid[navoid++] = v;
        job[0] = '\0';
        j->error_code[0] = '\0';
    }
}

static int submit_many(kiln_judge *j, const asked *a, char job[32],
                       kiln_judge_accepted on_accepted, void *ctx, kiln_error *err)
{
    kiln_verifier *avoid[MAX_AVOID];
    for (int navoid = 0; navoid < MAX_AVOID;) {
        kiln_verifier *v = kiln_verifiers_pick(j->verifiers, j->backend, avoid, navoid, err);
        if (!v)
            return -1;
        char raw[32] = "";
        tagger t = {v, job, on_accepted, ctx};
        cJSON *final = NULL;
        int rc = exchange(j, v->address, a, raw, tag_accepted, &t, 1, &final, err);
        const char *msg = str_of(cJSON_GetObjectItemCaseSensitive(final, "error"), "message");
        if (rc == 1 && !raw[0])
            kiln_fail(err, "kilnd at %s refused the job: %s", v->address, msg ? msg : "error");
        cJSON_Delete(final);
        if (raw[0] || rc == 1 || rc == -1)
            return raw[0] ? 0 : -1;
        kiln_verifier_down(v, err->msg);
        avoid[navoid++] = v;
    }
    return -1;
}

/* A recorded "RAW@TAG" with one daemon: the raw id when the tag is this
 * daemon's, else nothing (the job is sent again under its key). */
static void untag_for_one(const kiln_judge *j, char job[32])
{
    char raw[32], tag[13], mine[13];
    int tagged = kiln_verifier_split_job(job, raw, tag);
    if (tagged < 0)
        job[0] = '\0';   /* malformed: no daemon's id; sent again under its key */
    if (tagged <= 0)
        return;
    kiln_verifier_tag(j->address, mine);
    snprintf(job, 32, "%s", strcmp(tag, mine) == 0 ? raw : "");
}

int kiln_judge_submit(kiln_judge *j, const char *source, const char *baseline, const char *key,
                      char job[32], kiln_judge_accepted on_accepted, void *ctx, kiln_error *err)
{
    const asked a = {source, baseline, key};
    if (j->in_process || job[0])
        return 0;   /* nothing to hand over ahead: it runs (or is collected) when asked */
    if (strlen(j->task_ref) >= sizeof ((kiln_verify_request *)0)->task)
        return kiln_fail(err, "task '%.80s...' is too long for the protocol", j->task_ref);
    if (j->verifiers)
        return submit_many(j, &a, job, on_accepted, ctx, err);
    cJSON *final = NULL;
    int rc = exchange(j, j->address, &a, job, on_accepted, ctx, 1, &final, err);
    const char *msg = str_of(cJSON_GetObjectItemCaseSensitive(final, "error"), "message");
    if (rc == 1 && !job[0])   /* an error before any job id: refused */
        kiln_fail(err, "kilnd refused the job: %s", msg ? msg : "error");
    cJSON_Delete(final);
    return job[0] ? 0 : -1;
}

/* A verdict must be of the source sent: a daemon that lost its state (or a
 * new one at the same address) numbers its jobs afresh, and its job of a
 * recorded id may be another candidate's. One fetched by a recorded id
 * (by_id) must carry the sha256; one of a job sent now may lack it (a
 * candidate that could not be read has none). */
static int foreign(const char *source, const kiln_verdict *v, int by_id)
{
    char sha[65];
    if (!source)
        return 0;
    if (!v->source_sha256[0])
        return by_id;
    kiln_sha256_hex(source, strlen(source), sha);
    return strcmp(sha, v->source_sha256) != 0;
}

static kiln_verdict *run_checked(kiln_judge *j, const asked *a, char job[32],
                                 kiln_judge_accepted on_accepted, void *ctx, kiln_error *err)
{
    for (int attempt = 0;; attempt++) {
        char prior[32];
        snprintf(prior, sizeof prior, "%s", job);
        kiln_verdict *v = j->verifiers ? run_many(j, a, job, on_accepted, ctx, err)
                                       : run_daemon(j, a, job, on_accepted, ctx, err);
        if (!v || !foreign(a->source, v, prior[0] != '\0'))
            return v;
        free(v);
        if (attempt) {
            set_code(j, "internal");
            return kiln_fail(err, "kilnd's verdict for job %s is of another source (its sha256 "
                             "differs)", job[0] ? job : prior), NULL;
        }
        job[0] = '\0';   /* not this candidate's job: sent again under its key */
    }
}

kiln_verdict *kiln_judge_run(kiln_judge *j, const char *source, const char *baseline,
                             const char *key, char job[32], kiln_judge_accepted on_accepted,
                             void *ctx, kiln_error *err)
{
    j->job_failed = 0;
    j->past_deadline = 0;
    j->error_code[0] = '\0';
    if (j->in_process)
        return run_here(j, source, baseline, err);
    kiln_verify_request rq;
    if (strlen(j->task_ref) >= sizeof rq.task) {
        set_code(j, "bad-input");
        return kiln_fail(err, "task '%.80s...' is longer than the protocol's %zu bytes: give "
                         "its name, or a shorter path", j->task_ref, sizeof rq.task - 1), NULL;
    }
    if (!j->verifiers)
        untag_for_one(j, job);
    const asked a = {source, baseline, key};
    return run_checked(j, &a, job, on_accepted, ctx, err);
}
