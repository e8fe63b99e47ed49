/* search_loop.c - one iteration at a time, each step recorded before the
 * next (see search.c for the shape of an iteration). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln_exit.h"
#include "lessons.h"
#include "normalize.h"   /* kiln_source_normalize */
#include "keep_rule.h"
#include "pooled.h"
#include "prefetch.h"
#include "search_state.h"
#include "worker_io.h"   /* kiln_mono_ns */

#define MAX_DRAFTS 16

/* ---- verification steps -------------------------------------------------- */

typedef struct accept_ctx {
    search *s;
    kiln_cand *c;
    char *job_field;
} accept_ctx;

/* Record the job id as soon as kilnd accepts it: a resumed run then asks
 * for this job's result instead of verifying the candidate again. */
static void on_accepted(void *p, const char *job)
{
    accept_ctx *a = p;
    kiln_error e;
    if (a->job_field != job)
        snprintf(a->job_field, 32, "%s", job);
    kiln_db_cand_upsert(a->s->db, a->c, &e);
}

/* Verify through the judge. A job recorded by an earlier session that
 * ended in an error instead of a verdict (no GPU there then, say) is
 * submitted again, once per session, under a key of its own: asking for it
 * again would only repeat the error. */
static kiln_verdict *judge_job(search *s, const char *src, const char *base, char *key, size_t keylen,
                        accept_ctx *a, kiln_error *err)
{
    char *job = a->job_field;
    int stored = job[0] != '\0';
    s->judge.key = key;
    double t = kiln_wall_now();   /* waiting for the verifier (docs/search.md) */
    kiln_verdict *v = kiln_judge_run(&s->judge, src, base, job, on_accepted, a, err);
    if (!v && stored && s->judge.job_failed) {
        size_t n = strlen(key);
        snprintf(key + n, keylen - n, ":after:%.31s", job);
        job[0] = '\0';
        v = kiln_judge_run(&s->judge, src, base, job, on_accepted, a, err);
    }
    s->run.verify_wait_s += kiln_wall_now() - t;
    s->judge.key = NULL;
    return v;
}

/* The idempotency key of candidate n's job which: kilnd hands back the
 * job it already has under it, so a job handed over ahead (submit_ahead)
 * or before a crash is collected, never verified again. */
static void job_key(const search *s, int n, const char *which, char *key, size_t len)
{
    snprintf(key, len, "search:%.120s:%s:%d:%s", s->ws.dir, s->run.id, n, which);
}

/* Candidate c's job id field for which (see judge). */
static char *job_field(kiln_cand *c, const char *which)
{
    return strcmp(which, "verdict") == 0    ? c->job
           : strcmp(which, "confirm") == 0  ? c->confirm_job
           : strcmp(which, "rerecord") == 0 ? c->rerecord_job
                                            : c->record_job;
}

/* which: "verdict" (against the parent), "confirm" (again, fresh worker),
 * "record" (against the task's baseline), "rerecord" (that again, fresh
 * worker). Each has its own job id and idempotency key, so a resumed run
 * collects it. s->verify_failed tells a NULL that came from the verifier
 * from one that came from here. */
static kiln_verdict *judge(search *s, kiln_cand *c, const char *which, const char *parent_src,
                    kiln_error *err)
{
    s->verify_failed = 0;
    char *src = kiln_db_cand_get_verdict(s->db, s->run.id, c->n, "source");
    if (!src)
        return kiln_fail(err, "candidate %d has no stored source", c->n), NULL;
    char *job = job_field(c, which);
    accept_ctx a = {s, c, job};
    const char *base = strstr(which, "record") ? NULL : parent_src;
    /* If this process dies between kilnd accepting the job and the job id
     * reaching the database, the resumed run sends the same key and kilnd
     * hands back the same job: nothing is verified twice. */
    char key[320];
    job_key(s, c->n, which, key, sizeof key);
    kiln_verdict *v = judge_job(s, src, base, key, sizeof key, &a, err);
    free(src);
    if (!v) {
        s->verify_failed = 1;
        return NULL;
    }
    char *text = kiln_verdict_json(v, &s->task, 0);
    int rc = text ? kiln_db_cand_verdict(s->db, s->run.id, c->n, which, text, err)
                  : kiln_fail(err, "out of memory");
    free(text);
    if (rc < 0) {
        free(v);
        return NULL;
    }
    return v;
}

static void say(search *s, kiln_cand *c, const char *what)
{
    snprintf(s->progress.last, sizeof s->progress.last, "#%d %s", c->n, what);
    kiln_progress_update(&s->progress, 0);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "candidate", c->n);
    cJSON_AddStringToObject(o, "what", what);
    cJSON_AddStringToObject(o, "hypothesis", c->hypothesis);
    kiln_progress_event(&s->progress, "step", o);
}

/* What verdict v of candidate c (its speedup against the parent, that
 * speedup's noise and, when pooled, its interval lo..hi) teaches: a failure
 * note for the lineage, or, when v pools the verdict and its re-time
 * (pooled 1), a lesson if the change surely helped or hurt
 * (knowledge/record.c decides). A single
 * measurement teaches no speed lesson. A lesson that cannot be stored does
 * not stop the search. */
static void learn(search *s, const kiln_cand *c, const kiln_verdict *v, double speedup,
                  double noise, int pooled, double lo, double hi)
{
    kiln_lesson_event ev = {.run = s->run.id, .candidate = c->n, .task = s->task.name,
                            .dtype = s->run.dtype, .backend = s->run.backend,
                            .group = s->run.grp, .proposer = c->proposer,
                            .hypothesis = c->hypothesis, .status = v->status, .stage = v->stage,
                            .code = v->code, .reason = v->reason, .speedup = speedup,
                            .noise = noise, .decision = c->decision, .verdict = v,
                            .pooled = pooled, .lo = lo, .hi = hi};
    kiln_error e;
    kiln_lessons_record(s->db, &ev, &e);
}

/* Move c on (cand_state.c lists the moves); any other move is a bug. */
static int move_to(kiln_cand *c, kiln_cand_state to, kiln_error *err)
{
    if (!kiln_cand_state_allowed(c->state, to))
        return kiln_fail(err, "candidate %d: no move from %s to %s (a bug in kiln)", c->n,
                         kiln_cand_state_name(c->state), kiln_cand_state_name(to));
    c->state = to;
    return 0;
}

/* The geomean's interval, for the record: what status and report show
 * beside every claimed speedup. */
static void geomean_of(const kiln_verdict *v, double *lo, double *hi)
{
    double point;
    kiln_pool_geomean(v, &point, lo, hi);   /* on one verdict: its own interval */
}

static int verify_step(search *s, kiln_cand *c, const char *parent_src, kiln_error *err)
{
    say(s, c, "verifying against its parent");
    kiln_verdict *v = judge(s, c, "verdict", parent_src, err);
    if (!v)
        return -1;
    kiln_cand_from_verdict(c, v);
    geomean_of(v, &c->speedup_lo, &c->speedup_hi);
    learn(s, c, v, c->speedup, kiln_verdict_noise(v), 0, 0, 0);   /* a failure's note only */
    free(v);
    if (move_to(c, KILN_CAND_VERIFIED, err) < 0)
        return -1;
    return kiln_db_cand_upsert(s->db, c, err);
}

#define REVERTED "reverted: "

/* The decision and why ("kept: ..." or "reverted: ..."); a revert's why,
 * less that word, is also its reason (what the prompt's attempts and the
 * summary show). A keep's why is NULL when the caller set it before. */
static int decide(kiln_cand *c, const char *decision, const char *why, kiln_error *err)
{
    snprintf(c->decision, sizeof c->decision, "%s", decision);
    int revert = strcmp(decision, "keep") != 0;
    if (why && revert) {
        if (strncmp(why, REVERTED, strlen(REVERTED)) == 0)
            why += strlen(REVERTED);
        snprintf(c->reason, sizeof c->reason, "%.630s", why);
        snprintf(c->why, sizeof c->why, REVERTED "%.380s", why);
    } else if (why) {
        snprintf(c->why, sizeof c->why, "%.399s", why);
    }
    return move_to(c, KILN_CAND_DECIDED, err);
}

/* c's stored verdict which ("verdict", "record", ...), decoded; NULL when
 * it has none or it does not decode. */
static kiln_verdict *stored_verdict(search *s, const kiln_cand *c, const char *which)
{
    char *text = kiln_db_cand_get_verdict(s->db, s->run.id, c->n, which);
    kiln_verdict *v = text ? malloc(sizeof *v) : NULL;
    kiln_error e;
    if (v && kiln_verdict_parse(text, v, &e) < 0) {
        free(v);
        v = NULL;
    }
    free(text);
    return v;
}

/* The claim against the parent: the first verdict and its re-time pooled
 * (pooled.h) into c->pooled_*, and what the pool teaches (learn). "" or
 * what the pool set aside goes into note. */
static void pool_vs_parent(search *s, kiln_cand *c, const kiln_verdict *retime, char *note,
                           size_t len)
{
    kiln_verdict *first = stored_verdict(s, c, "verdict");
    kiln_verdict *p = first ? malloc(sizeof *p) : NULL;
    note[0] = '\0';
    if (p) {
        kiln_pool_verdicts(first, retime, p, note, len);
        kiln_pool_geomean(p, &c->pooled_speedup, &c->pooled_lo, &c->pooled_hi);
        learn(s, c, p, c->pooled_speedup,
              fmax(kiln_verdict_noise(first), kiln_verdict_noise(retime)), 1, c->pooled_lo,
              c->pooled_hi);
    }
    free(p);
    free(first);
}

/* The keep rule again on a re-time in a fresh worker (the parent is its
 * baseline in the same job, as in the first verdict): a candidate is kept
 * only when both measurements clear it; the claim is the two pooled.
 * Returns 1 kept, 0 reverted, -1 error. */
static int confirm_step(search *s, kiln_cand *c, const char *parent_src, kiln_error *err)
{
    say(s, c, "re-timing in a fresh worker");
    kiln_verdict *v = judge(s, c, "confirm", parent_src, err);
    if (!v)
        return -1;
    char rule[400], why[480], note[160];
    int ok = kiln_keep_rule(v, &s->keep, rule, sizeof rule);
    c->confirm_speedup = v->geomean_speedup;
    geomean_of(v, &c->confirm_lo, &c->confirm_hi);
    pool_vs_parent(s, c, v, note, sizeof note);
    free(v);
    snprintf(why, sizeof why, "%.240s (re-timed in a fresh worker; pooled %.3fx [%.3f, %.3f]%s%.100s)",
             rule, c->pooled_speedup, c->pooled_lo, c->pooled_hi, note[0] ? ": " : "", note);
    snprintf(c->why, sizeof c->why, "%.399s", why);
    if ((ok ? move_to(c, KILN_CAND_CONFIRMED, err) : decide(c, "revert", why, err)) < 0)
        return -1;
    return kiln_db_cand_upsert(s->db, c, err) < 0 ? -1 : ok;
}

/* Through kilnd: hand c's job which over now (base: the baseline's
 * source, NULL for the task's), so kilnd compiles it while it times the
 * job before; judge collects it later under the same key, and the job id
 * is recorded as kilnd accepts it (a resumed run collects it too). A
 * hand-over that fails is left to judge, which submits again. */
static void hand_over(search *s, kiln_cand *c, const char *which, const char *base)
{
    char *job = job_field(c, which);
    if (s->judge.in_process || job[0])
        return;
    char *src = kiln_db_cand_get_verdict(s->db, s->run.id, c->n, "source");
    if (!src)
        return;
    char key[320];
    kiln_error e = {{0}};
    job_key(s, c->n, which, key, sizeof key);
    accept_ctx a = {s, c, job};
    double t = kiln_wall_now();   /* handing over to the verifier counts as its time */
    s->judge.key = key;
    kiln_judge_submit(&s->judge, src, base, job, on_accepted, &a, &e);
    s->judge.key = NULL;
    s->run.verify_wait_s += kiln_wall_now() - t;
    free(src);
}

/* c against the task's baseline twice, each in a fresh worker (the
 * "record" and "rerecord" jobs), pooled (pooled.h) and stored as c's
 * "pooled" verdict: speedup_vs_baseline, its interval and roofline are the
 * pool's. Through kilnd the re-record is handed over with the record, so
 * the lane goes from one to the other without waiting on a compile; when
 * the record does not pass, the re-record's verdict is not used. The
 * pooled verdict (malloc'd) into *out; what the pool set aside into note. */
static int baseline_step(search *s, kiln_cand *c, kiln_verdict **out, char *note, size_t len,
                         kiln_error *err)
{
    *out = NULL;
    note[0] = '\0';
    hand_over(s, c, "record", NULL);
    hand_over(s, c, "rerecord", NULL);
    kiln_verdict *a = judge(s, c, "record", NULL, err), *b = NULL;
    if (!a)
        return -1;
    int pass = strcmp(a->status, "pass") == 0;
    if (pass) {
        say(s, c, "measuring against the task's baseline again, in a fresh worker");
        if (!(b = judge(s, c, "rerecord", NULL, err))) {
            free(a);
            return -1;
        }
    }
    kiln_verdict *p = malloc(sizeof *p);
    if (p && b)
        kiln_pool_verdicts(a, b, p, note, len);
    else if (p)
        memcpy(p, a, sizeof *p);
    free(a);
    free(b);
    char *text = p ? kiln_verdict_json(p, &s->task, 0) : NULL;
    int rc = text ? kiln_db_cand_verdict(s->db, s->run.id, c->n, "pooled", text, err)
                  : kiln_fail(err, "out of memory");
    free(text);
    if (rc < 0) {
        free(p);
        return -1;
    }
    kiln_pool_geomean(p, &c->speedup_vs_baseline, &c->baseline_lo, &c->baseline_hi);
    c->roofline = p->median_roofline;
    *out = p;
    return 0;
}

static int record_step(search *s, kiln_cand *c, kiln_error *err)
{
    say(s, c, "measuring against the task's baseline");
    kiln_verdict *v;
    char note[160];
    if (baseline_step(s, c, &v, note, sizeof note, err) < 0)
        return -1;
    int pass = strcmp(v->status, "pass") == 0;
    free(v);
    size_t used = strlen(c->why);
    if (note[0] && used + 1 < sizeof c->why)   /* the pool's caveat, in why */
        snprintf(c->why + used, sizeof c->why - used, "; vs baseline: %s", note);
    /* A kept candidate's why stays the confirmation's ("kept: ..."). */
    if ((pass ? decide(c, "keep", NULL, err)
              : decide(c, "revert", "failed its measurement against the task's baseline", err)) < 0)
        return -1;
    return kiln_db_cand_upsert(s->db, c, err);
}

/* Why a verified candidate is not kept, before any re-time: the keep rule
 * on its verdict against the parent (keep_rule.c). */
static int screen(search *s, kiln_cand *c, kiln_error *err)
{
    kiln_verdict *v = stored_verdict(s, c, "verdict");
    int ok = v != NULL;
    char why[700];
    if (ok && kiln_keep_rule(v, &s->keep, why, sizeof why)) {
        snprintf(c->why, sizeof c->why, "%.399s", why);   /* a contender, until the re-time */
        free(v);
        return 0;
    }
    if (strcmp(c->status, "pass") != 0)
        snprintf(why, sizeof why, "%s at %s (%s): %.500s", c->status, c->stage, c->code, c->reason);
    else if (!ok)
        snprintf(why, sizeof why, "its verdict against the parent cannot be read back");
    free(v);
    return decide(c, "revert", why, err);
}

/* ---- no source verified twice ---------------------------------------------
 *
 * A candidate whose normalised source (kiln_source_normalize: comments,
 * whitespace and knob lists set aside) this run has verified already is
 * not verified again: it reuses that verdict and is reverted. Were #k kept,
 * the parent now is #k or faster than it; were #k reverted, it failed or
 * was no faster than a parent the present one is at least as fast as. */

static uint64_t fnv1a(const char *t)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *t; t++)
        h = (h ^ (unsigned char)*t) * 1099511628211ULL;
    return h;
}

/* Candidate n's stored source, normalised (malloc'd; NULL when it has none). */
static char *normalised_source(search *s, int n)
{
    char *src = kiln_db_cand_get_verdict(s->db, s->run.id, n, "source");
    char *norm = src ? kiln_source_normalize(src) : NULL;
    free(src);
    return norm;
}

/* A verdict of its own: not a proposal that failed, nor a duplicate. */
static int was_verified(const kiln_cand *c)
{
    return c->state != KILN_CAND_PROPOSED && c->status[0] && strcmp(c->stage, "propose") != 0;
}

static int seen_add(search *s, const kiln_cand *c, kiln_error *err)
{
    char *norm = normalised_source(s, c->n);
    if (!norm)
        return 0;   /* no source: nothing to match */
    if (s->nseen == s->capseen) {
        int cap = s->capseen ? 2 * s->capseen : 64;
        kiln_seen_source *p = realloc(s->seen, (size_t)cap * sizeof *p);
        if (!p) {
            free(norm);
            return kiln_fail(err, "out of memory");
        }
        s->seen = p;
        s->capseen = cap;
    }
    kiln_seen_source *e = &s->seen[s->nseen++];
    *e = (kiln_seen_source){.n = c->n, .hash = fnv1a(norm)};
    snprintf(e->status, sizeof e->status, "%s", c->status);
    snprintf(e->stage, sizeof e->stage, "%s", c->stage);
    snprintf(e->code, sizeof e->code, "%s", c->code);
    free(norm);
    return 0;
}

/* The run's verified sources, read once a session (a resumed run too). */
static int seen_load(search *s, kiln_error *err)
{
    if (s->seen_loaded)
        return 0;
    kiln_cand *all;
    int n, rc = 0;
    if (kiln_db_cands(s->db, s->run.id, &all, &n, err) < 0)
        return -1;
    for (int i = 0; i < n && rc == 0; i++)
        if (was_verified(&all[i]))
            rc = seen_add(s, &all[i], err);
    free(all);
    s->seen_loaded = rc == 0;
    return rc;
}

/* The verified source equal to norm, the parent's first (its number is
 * parent_n); the hash finds it, the text confirms it. NULL when none. */
static const kiln_seen_source *seen_find(search *s, const char *norm, int parent_n)
{
    uint64_t h = fnv1a(norm);
    const kiln_seen_source *found = NULL;
    for (int i = 0; i < s->nseen; i++) {
        kiln_seen_source *e = &s->seen[i];
        if (e->hash != h || (found && e->n != parent_n))
            continue;
        char *other = normalised_source(s, e->n);
        int same = other && strcmp(other, norm) == 0;
        free(other);
        if (same)
            found = e;
        if (same && e->n == parent_n)
            break;
    }
    return found;
}

/* *p: the number of the candidate whose commit is c's parent (-1: none). */
static int parent_number(search *s, const kiln_cand *c, int *p, kiln_error *err)
{
    kiln_cand *all;
    int n;
    *p = -1;
    if (kiln_db_cands(s->db, s->run.id, &all, &n, err) < 0)
        return -1;
    for (int i = 0; i < n && *p < 0; i++)
        if (all[i].commit[0] && strcmp(all[i].commit, c->parent) == 0)
            *p = all[i].n;
    free(all);
    return 0;
}

/* c repeats k: recorded with k's status, reverted, never sent to kilnd. */
static int duplicate_step(search *s, kiln_cand *c, const kiln_seen_source *k, int parent_n,
                          kiln_error *err)
{
    char why[640];
    if (k->n == parent_n)
        snprintf(why, sizeof why, "same source as its parent (#%d), comments, whitespace and "
                 "knob lists aside: not verified again (a copy of the parent is never faster "
                 "than it)", k->n);
    else
        snprintf(why, sizeof why, "same source as candidate #%d, comments, whitespace and knob "
                 "lists aside: not verified again; #%d's verdict: %s at %s (%s)", k->n, k->n,
                 k->status, k->stage, k->code);
    snprintf(c->status, sizeof c->status, "%s", k->status);
    snprintf(c->stage, sizeof c->stage, "propose");
    snprintf(c->code, sizeof c->code, "duplicate");
    c->speedup = 0;
    say(s, c, "same source as an earlier candidate: not verified again");
    if (decide(c, "revert", why, err) < 0)
        return -1;
    return kiln_db_cand_upsert(s->db, c, err);
}

/* What the run verified before of c's source: c's parent's number, its
 * normalised source (NULL when it has none; the caller frees it) and the
 * verified source it repeats (NULL: none). -1 on a database error. */
static int lookup_seen(search *s, const kiln_cand *c, int *parent_n, char **norm,
                       const kiln_seen_source **k, kiln_error *err)
{
    *norm = NULL;
    *k = NULL;
    if (seen_load(s, err) < 0 || parent_number(s, c, parent_n, err) < 0)
        return -1;
    *norm = normalised_source(s, c->n);
    if (*norm)
        *k = seen_find(s, *norm, *parent_n);
    return 0;
}

/* 1 when c repeats a verified source (and is decided), 0 when it is new. */
static int duplicate_check(search *s, kiln_cand *c, kiln_error *err)
{
    int parent_n;
    char *norm;
    const kiln_seen_source *k;
    if (lookup_seen(s, c, &parent_n, &norm, &k, err) < 0)
        return -1;
    free(norm);
    if (!k)
        return 0;   /* fresh, or no source: verify_step reports a missing one */
    return duplicate_step(s, c, k, parent_n, err) < 0 ? -1 : 1;
}

/* ---- git ------------------------------------------------------------------ */

static char *note_json(search *s, const kiln_cand *c)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "run", s->run.id);
    cJSON_AddNumberToObject(o, "candidate", c->n);
    cJSON_AddStringToObject(o, "proposer", c->proposer);
    cJSON_AddStringToObject(o, "hypothesis", c->hypothesis);
    cJSON_AddStringToObject(o, "decision", c->decision);
    cJSON_AddStringToObject(o, "reason", c->reason);
    cJSON_AddStringToObject(o, "why", c->why);
    static const char *which[] = {"verdict", "confirm", "record", "rerecord", "pooled"};
    for (int i = 0; i < 5; i++) {
        /* The stored text is the encoder's JSON: it goes in as it is. */
        char *t = kiln_db_cand_get_verdict(s->db, s->run.id, c->n, which[i]);
        if (t)
            cJSON_AddItemToObject(o, which[i], cJSON_CreateRaw(t));
        free(t);
    }
    char *s2 = cJSON_Print(o);
    cJSON_Delete(o);
    return s2;
}

static int commit_step(search *s, kiln_cand *c, kiln_error *err)
{
    char *src = kiln_db_cand_get_verdict(s->db, s->run.id, c->n, "source");
    if (!src)
        return kiln_fail(err, "candidate %d has no stored source", c->n);
    char msg[2048];
    snprintf(msg, sizeof msg,
             "%s\n\nkiln run %s, candidate %d (iteration %d, draft %d, proposer %s)\n"
             "verdict against parent: %s at %s (%s), %.3fx [%.3f, %.3f]\ndecision: %s%s%.600s\n",
             c->hypothesis[0] ? c->hypothesis : "(no hypothesis given)", s->run.id, c->n,
             c->iteration, c->draft, c->proposer, c->status, c->stage, c->code, c->speedup,
             c->speedup_lo, c->speedup_hi, c->decision, c->why[0] ? " - " : "", c->why);
    int rc = kiln_ws_commit(&s->ws, c->parent, s->relpath, src, msg, c->commit, err);
    free(src);
    if (rc < 0)
        return -1;
    if (move_to(c, KILN_CAND_COMMITTED, err) < 0)
        return -1;
    return kiln_db_cand_upsert(s->db, c, err);
}

/* Tag the kernel when it beats what the tag points to (both measured
 * against the task's baseline, as recorded in their notes: the pooled
 * verdict, or the record of a kernel tagged before pooling). */
static int maybe_tag(search *s, const kiln_cand *c, kiln_error *err)
{
    char tag[256], ref[300], old[41];
    snprintf(tag, sizeof tag, "kiln/best/%s/%s/%s", s->task.name, s->run.backend, s->run.dtype);
    snprintf(ref, sizeof ref, "refs/tags/%s", tag);
    kiln_error e;
    if (kiln_ws_resolve(&s->ws, ref, old, &e) == 0) {
        char *text = kiln_ws_note_read(&s->ws, KILN_VERDICT_NOTES_REF, old);
        double best = 0;
        cJSON *n = text ? cJSON_Parse(text) : NULL;
        kiln_verdict *rec = n ? malloc(sizeof *rec) : NULL;
        const cJSON *p = cJSON_GetObjectItemCaseSensitive(n, "pooled");
        if (!p)
            p = cJSON_GetObjectItemCaseSensitive(n, "record");
        if (rec && kiln_verdict_from_cjson(p, rec, &e) == 0)
            best = rec->geomean_speedup;
        free(rec);
        cJSON_Delete(n);
        free(text);
        if (best >= c->speedup_vs_baseline)
            return 0;
    }
    return kiln_ws_tag(&s->ws, tag, c->commit, err);
}

/* ---- the population (archive.h) ------------------------------------------ */

/* Does kept candidate c move the run's branch? A child of the head that
 * was kept beat the head by the keep rule; a child of another elite must
 * also beat the head's speedup against the task's baseline. Decided from
 * the run as it was before this iteration, so a resume decides the same. */
static int becomes_best(const search *s, const kiln_cand *c)
{
    return !s->run.head_commit[0] || strcmp(c->parent, s->run.head_commit) == 0 ||
           c->speedup_vs_baseline > s->run.best_speedup;
}

/* e's cell and objective from c's pooled verdict against the task's
 * baseline (the record in a run from before pooling) and its source; 0
 * when c has no readable one (it stays out). */
static int elite_of(search *s, const kiln_cand *c, kiln_elite *e)
{
    char *rec = kiln_db_cand_get_verdict(s->db, s->run.id, c->n, "pooled");
    if (!rec)
        rec = kiln_db_cand_get_verdict(s->db, s->run.id, c->n, "record");
    char *src = kiln_db_cand_get_verdict(s->db, s->run.id, c->n, "source");
    kiln_verdict *v = malloc(sizeof *v);
    kiln_error pe;
    int ok = rec && src && v && kiln_verdict_parse(rec, v, &pe) == 0;
    *e = (kiln_elite){.n = c->n, .speedup = c->speedup_vs_baseline, .lo = c->baseline_lo,
                      .hi = c->baseline_hi};
    snprintf(e->commit, sizeof e->commit, "%s", c->commit);
    if (ok) {
        kiln_interval iv;
        char why[160];
        kiln_archive_cell(v, src, e->cell, sizeof e->cell);
        if (kiln_objective_interval(v, s->keep.objective, &iv, why, sizeof why) == 0)
            e->speedup = iv.point, e->lo = iv.lo, e->hi = isfinite(iv.hi) ? iv.hi : 0;
    }
    free(v);
    free(rec);
    free(src);
    return ok;
}

/* Offer kept candidate c to the archive (the cell update rule); when it
 * takes its cell, refs/kiln/archive/<run>/<cell> points to it. The ref is
 * set before the row, so a crash between them is repaired by offering c
 * again on resume. */
static int archive_offer(search *s, const kiln_cand *c, kiln_error *err)
{
    kiln_elite e, *a;
    int n;
    if (!elite_of(s, c, &e))
        return 0;
    if (kiln_db_archive(s->db, s->run.id, &a, &n, err) < 0)
        return -1;
    kiln_elite *more = realloc(a, (size_t)(n + 1) * sizeof *a);
    if (!more) {
        free(a);
        return kiln_fail(err, "out of memory");
    }
    int at = kiln_archive_offer(more, &n, KILN_ARCHIVE_MAX, &e);
    free(more);
    if (at < 0)
        return 0;
    char ref[256];
    snprintf(ref, sizeof ref, "refs/kiln/archive/%s/%s", s->run.id, e.cell);
    if (kiln_ws_set_ref(&s->ws, ref, c->commit, err) < 0)
        return -1;
    return kiln_db_archive_put(s->db, s->run.id, &e, err);
}

/* A kept candidate: into the archive; onto the branch when it is the new
 * best, else under refs/kiln/kept/<run>/<n> (its cell's ref may move on). */
static int apply_keep(search *s, kiln_cand *c, kiln_error *err)
{
    if (archive_offer(s, c, err) < 0)
        return -1;
    if (becomes_best(s, c))
        return kiln_ws_reset_hard(&s->ws, c->commit, err) < 0 ? -1 : maybe_tag(s, c, err);
    char ref[128];
    snprintf(ref, sizeof ref, "refs/kiln/kept/%s/%d", s->run.id, c->n);
    return kiln_ws_set_ref(&s->ws, ref, c->commit, err);
}

static int apply_step(search *s, kiln_cand *c, kiln_error *err)
{
    char *note = note_json(s, c), line[1024];
    snprintf(line, sizeof line, "kiln: %s (%s at %s, %.3fx vs parent, %.3fx vs baseline); "
             "run %s candidate %d; verdicts: git notes --ref=kiln-verdict show",
             c->decision, c->status, c->stage, c->speedup, c->speedup_vs_baseline, s->run.id, c->n);
    int rc = note ? kiln_ws_note(&s->ws, c->commit, line, note, err) : kiln_fail(err, "out of memory");
    free(note);
    if (rc < 0)
        return -1;
    if (strcmp(c->decision, "keep") == 0) {
        if (apply_keep(s, c, err) < 0)
            return -1;
    } else {
        /* The branch stays on the best, whichever elite was the parent. */
        char ref[128];
        snprintf(ref, sizeof ref, "refs/kiln/rejected/%s/%d", s->run.id, c->n);
        if (kiln_ws_set_ref(&s->ws, ref, c->commit, err) < 0 ||
            kiln_ws_reset_hard(&s->ws, s->run.head_commit[0] ? s->run.head_commit : c->parent,
                               err) < 0)
            return -1;
    }
    if (move_to(c, KILN_CAND_DONE, err) < 0)
        return -1;
    return kiln_db_cand_upsert(s->db, c, err);
}

/* ---- an iteration ----------------------------------------------------------- */

static int load_iteration(search *s, int it, kiln_cand **out, int *n, kiln_error *err)
{
    kiln_cand *all;
    int nall;
    if (kiln_db_cands(s->db, s->run.id, &all, &nall, err) < 0)
        return -1;
    *n = 0;
    for (int i = 0; i < nall; i++)
        if (all[i].iteration == it)
            all[(*n)++] = all[i];
    *out = all;
    return 0;
}

static int by_speedup(const void *a, const void *b)
{
    const kiln_cand *x = a, *y = b;
    return (x->speedup < y->speedup) - (x->speedup > y->speedup);
}

/* Verify a proposal unless its source was verified before; a new verdict
 * joins the verified sources, so a later draft repeating it is caught too. */
static int verify_new(search *s, kiln_cand *c, const char *parent_src, kiln_error *err)
{
    int dup = duplicate_check(s, c, err);
    if (dup != 0)
        return dup < 0 ? -1 : 0;
    if (verify_step(s, c, parent_src, err) < 0)
        return -1;
    return seen_add(s, c, err);
}

/* Would candidate i be verified (not a copy of a source verified before,
 * in the run or earlier in this batch)? */
static int needs_verifying(search *s, kiln_cand *c, int i, kiln_error *err)
{
    int parent_n;
    char *norm;
    const kiln_seen_source *k;
    if (c[i].state != KILN_CAND_PROPOSED || c[i].job[0] ||
        lookup_seen(s, &c[i], &parent_n, &norm, &k, err) < 0)
        return 0;
    int fresh = norm && !k;
    for (int k = 0; k < i && fresh; k++) {
        char *other = normalised_source(s, c[k].n);
        fresh = !(other && strcmp(other, norm) == 0);
        free(other);
    }
    free(norm);
    return fresh;
}

/* Pipelining: through kilnd, every new proposal of the iteration is handed
 * over before the first is waited for, so kilnd compiles one while it
 * times another and keeps every lane busy; verify_step then waits for
 * each. */
static void submit_ahead(search *s, kiln_cand *c, int n, const char *parent_src)
{
    if (s->judge.in_process || n < 2)
        return;
    for (int i = 0; i < n && !kiln_search_should_stop(); i++) {
        kiln_error e = {{0}};
        if (needs_verifying(s, c, i, &e))
            hand_over(s, &c[i], "verdict", parent_src);
    }
}

/* Steps that need no ordering: verify every proposal, screen the results. */
static int verify_all(search *s, kiln_cand *c, int n, const char *parent_src, kiln_error *err)
{
    for (int i = 0; i < n; i++) {
        if (kiln_search_should_stop())
            return 1;
        if (c[i].state == KILN_CAND_PROPOSED && verify_new(s, &c[i], parent_src, err) < 0)
            return -1;
        if (c[i].state == KILN_CAND_VERIFIED) {
            if (screen(s, &c[i], err) < 0 ||
                (c[i].decision[0] && kiln_db_cand_upsert(s->db, &c[i], err) < 0))
                return -1;
        }
    }
    return 0;
}

/* Contenders in order of speedup: the first confirmed one wins. */
static int choose(search *s, kiln_cand *c, int n, const char *parent_src, kiln_error *err)
{
    qsort(c, (size_t)n, sizeof *c, by_speedup);
    int won = 0;
    for (int i = 0; i < n; i++) {
        if (kiln_search_should_stop())
            return 1;
        if (c[i].state == KILN_CAND_VERIFIED && !c[i].decision[0]) {
            if (won) {
                if (decide(&c[i], "revert", "another draft of this iteration was kept", err) < 0 ||
                    kiln_db_cand_upsert(s->db, &c[i], err) < 0)
                    return -1;
                continue;
            }
            if (confirm_step(s, &c[i], parent_src, err) < 0)
                return -1;
        }
        if (c[i].state == KILN_CAND_CONFIRMED && record_step(s, &c[i], err) < 0)
            return -1;
        won |= strcmp(c[i].decision, "keep") == 0;
    }
    return 0;
}

static int finish_all(search *s, kiln_cand *c, int n, kiln_cand **winner, kiln_error *err)
{
    *winner = NULL;
    for (int i = 0; i < n; i++) {   /* reverts first, so the branch ends on the winner */
        int keep = strcmp(c[i].decision, "keep") == 0;
        if (keep)
            *winner = &c[i];
        if (keep || c[i].state == KILN_CAND_DONE)
            continue;
        if (c[i].state == KILN_CAND_DECIDED && commit_step(s, &c[i], err) < 0)
            return -1;
        if (c[i].state == KILN_CAND_COMMITTED && apply_step(s, &c[i], err) < 0)
            return -1;
    }
    kiln_cand *w = *winner;
    if (w && w->state == KILN_CAND_DECIDED && commit_step(s, w, err) < 0)
        return -1;
    if (w && w->state == KILN_CAND_COMMITTED && apply_step(s, w, err) < 0)
        return -1;
    return 0;
}

/* Lessons shown to this candidate's prompt gain confidence when it was
 * kept after its re-time and lose it when it broke the kernel or its
 * pooled re-timed measurement shows it surely slower; a candidate screened
 * out on its one first measurement, and everything else, moves nothing
 * (knowledge/outcome.c decides). */
static void judge_lessons(search *s, const kiln_cand *c)
{
    int pooled = c->pooled_speedup > 0;   /* re-timed: the verdict and its re-time pooled */
    kiln_lesson_decision d = {.run = s->run.id, .candidate = c->n, .status = c->status,
                              .stage = c->stage, .code = c->code, .decision = c->decision,
                              .why = c->why, .speedup_hi = pooled ? c->pooled_hi : 0,
                              .pooled = pooled};
    kiln_error e;
    kiln_lessons_decided(s->db, &d, &e);
}

static void report(search *s, const kiln_cand *c)
{
    judge_lessons(s, c);
    char line[256];
    if (strcmp(c->decision, "keep") == 0)
        snprintf(line, sizeof line, "#%d kept: %.2fx [%.2f, %.2f] vs parent (pooled), %.2fx vs "
                 "baseline", c->n, c->pooled_speedup, c->pooled_lo, c->pooled_hi,
                 c->speedup_vs_baseline);
    else
        snprintf(line, sizeof line, "#%d reverted: %.180s", c->n, c->reason);
    snprintf(s->progress.last, sizeof s->progress.last, "%s", line);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "candidate", c->n);
    cJSON_AddNumberToObject(o, "iteration", c->iteration);
    cJSON_AddStringToObject(o, "proposer", c->proposer);
    cJSON_AddStringToObject(o, "hypothesis", c->hypothesis);
    cJSON_AddStringToObject(o, "status", c->status);
    cJSON_AddStringToObject(o, "stage", c->stage);
    cJSON_AddStringToObject(o, "code", c->code);
    cJSON_AddStringToObject(o, "decision", c->decision);
    cJSON_AddStringToObject(o, "reason", c->reason);
    cJSON_AddNumberToObject(o, "speedup_vs_parent", c->speedup);
    if (c->pooled_speedup > 0)   /* the claim: the verdict and its re-time pooled */
        cJSON_AddNumberToObject(o, "pooled_speedup_vs_parent", c->pooled_speedup);
    if (strcmp(c->decision, "keep") == 0)
        cJSON_AddNumberToObject(o, "speedup_vs_baseline", c->speedup_vs_baseline);
    cJSON_AddStringToObject(o, "why", c->why);
    cJSON_AddStringToObject(o, "commit", c->commit);
    kiln_progress_event(&s->progress, "candidate", o);
}

/* The parent of iteration it into s->parent: the one its stored proposals
 * name (a resumed iteration), else the one its drafts were asked from
 * while the iteration before it was verified (prefetch.h), else the head
 * (--parents best) or a draw from the archive (kiln_archive_pick, seeded
 * by the run's seed). */
static int choose_parent(search *s, int it, const kiln_cand *c, int n, kiln_error *err)
{
    const char *ahead = n > 0 ? NULL : kiln_prefetch_parent(s, it);
    if (s->prefetch && !ahead)
        kiln_prefetch_cancel(s);   /* asked for another iteration: never the case, never lost */
    if (n > 0 || ahead) {
        snprintf(s->parent, sizeof s->parent, "%s", n > 0 ? c[0].parent : ahead);
        return 0;
    }
    return kiln_search_draw_parent(s, it, s->parent, err);
}

static int parent_state(search *s, char **src, char **verdict, kiln_error *err)
{
    *verdict = NULL;
    if (kiln_ws_read(&s->ws, s->parent, s->relpath, src, err) < 0)
        return -1;
    /* The parent's measurement against the baseline: what the prompt shows. */
    *verdict = kiln_db_record_verdict_at(s->db, s->run.id, s->parent);
    return 0;
}

static int next_n(search *s, kiln_error *err)
{
    kiln_cand *all;
    int n;
    if (kiln_db_cands(s->db, s->run.id, &all, &n, err) < 0)
        return -1;
    int next = n ? all[n - 1].n + 1 : 0;
    free(all);
    return next;
}

/* Iteration it's proposals: the answers asked for during the iteration
 * before it, else asked for now. 0, 1 interrupted while waiting for the
 * model, 2 the proposer has nothing left, -1 error. */
static int propose(search *s, int it, const char *parent_src, const char *parent_verdict,
                   kiln_error *err)
{
    int first = next_n(s, err);
    if (first < 0)
        return -1;
    if (kiln_prefetch_parent(s, it))
        return kiln_prefetch_collect(s, it, first, err);
    int rc = kiln_propose(s, it, first, parent_src, parent_verdict, err);
    return rc == 1 ? 2 : rc;
}

/* 0 done, 1 interrupted, 2 the proposer has nothing left, -1 error. */
static int iteration(search *s, int it, kiln_error *err)
{
    double started = kiln_wall_now();
    kiln_cand *c = NULL;
    int n = 0, rc;
    char *parent_src = NULL, *parent_verdict = NULL;
    if (load_iteration(s, it, &c, &n, err) < 0)
        return -1;
    if (choose_parent(s, it, c, n, err) < 0 || parent_state(s, &parent_src, &parent_verdict, err) < 0) {
        free(c);
        free(parent_src);
        return -1;
    }
    if (n == 0) {
        free(c);
        c = NULL;
        rc = propose(s, it, parent_src, parent_verdict, err);
        if (rc == 0)
            rc = load_iteration(s, it, &c, &n, err);
        if (rc != 0) {
            free(parent_src);
            free(parent_verdict);
            return rc;
        }
    }
    free(parent_verdict);
    /* Pipelining: the drafts go to kilnd, then the next iteration's are
     * asked for while these are verified (prefetch.h). */
    submit_ahead(s, c, n, parent_src);
    kiln_prefetch_start(s, it + 1, started);
    rc = verify_all(s, c, n, parent_src, err);
    if (rc == 0)
        rc = choose(s, c, n, parent_src, err);
    kiln_cand *winner = NULL;
    if (rc == 0)
        rc = finish_all(s, c, n, &winner, err);
    free(parent_src);
    if (rc == 0) {
        for (int i = 0; i < n; i++)
            report(s, &c[i]);
        if (winner && becomes_best(s, winner)) {
            snprintf(s->run.head_commit, sizeof s->run.head_commit, "%s", winner->commit);
            s->run.best_speedup = winner->speedup_vs_baseline;
            s->progress.best_speedup = winner->speedup_vs_baseline;
            s->progress.best_roofline = winner->roofline;
        }
        s->run.iterations_done = it;
    }
    free(c);
    return rc;
}

/* The start kernel got no verdict. On the CUDA backend that almost always
 * means no usable GPU or driver where kernels are verified (the message
 * under it says); the run is kept and can be resumed where there is one. */
static int start_unverified(search *s, kiln_error *err)
{
    if (s->backend != KILN_BACKEND_CUDA || !s->verify_failed)
        return -1;
    return kiln_error_prefix(err, "the CUDA backend is unavailable%s: the start kernel could not "
                             "be verified", s->judge.in_process ? " here" : " to kilnd");
}

/* Candidate 0, the start kernel: measured against the task's baseline and
 * committed as the first commit of the run's branch. */
static int start_step(search *s, kiln_error *err)
{
    kiln_cand *all;
    int n;
    if (kiln_db_cands(s->db, s->run.id, &all, &n, err) < 0)
        return -1;
    kiln_cand c = all[0];
    free(all);
    if (c.state == KILN_CAND_DONE)
        return 0;
    if (kiln_ws_resolve(&s->ws, "HEAD", c.parent, err) < 0)
        return -1;
    if (c.state == KILN_CAND_PROPOSED) {
        say(s, &c, "measuring the start kernel");
        kiln_verdict *v;
        char note[160];
        if (baseline_step(s, &c, &v, note, sizeof note, err) < 0)
            return s->verify_failed ? start_unverified(s, err) : -1;
        kiln_cand_from_verdict(&c, v);
        free(v);
        if (strcmp(c.status, "pass") != 0)
            return kiln_fail(err, "the start kernel does not pass verification: %s at %s (%s): %s",
                             c.status, c.stage, c.code, c.reason);
        char why[240];
        snprintf(why, sizeof why, "kept: the start kernel%s%.160s", note[0] ? "; vs baseline: " : "",
                 note);
        if (decide(&c, "keep", why, err) < 0 ||
            kiln_db_cand_upsert(s->db, &c, err) < 0)
            return -1;
    }
    if (c.state == KILN_CAND_DECIDED && commit_step(s, &c, err) < 0)
        return -1;
    if (c.state == KILN_CAND_COMMITTED && apply_step(s, &c, err) < 0)
        return -1;
    snprintf(s->run.head_commit, sizeof s->run.head_commit, "%s", c.commit);
    snprintf(s->run.start_commit, sizeof s->run.start_commit, "%s", c.commit);
    s->run.best_speedup = c.speedup_vs_baseline;
    s->progress.best_speedup = c.speedup_vs_baseline;
    s->progress.best_roofline = c.roofline;
    return kiln_db_run_update(s->db, &s->run, err);
}

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
    if (s->run.budget_seconds > 0 && !s->judge.in_process) {
        double left = s->run.budget_seconds - s->run.seconds_used - 0.05;
        s->judge.deadline_ns = kiln_mono_ns() + (uint64_t)(left > 0 ? left * 1e9 : 0) + 1;
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
    int rc = reconcile(s, err) < 0 ? -1 : start_step(s, err);
    /* The start kernel's verification is the first estimate of what an
     * iteration (a proposal and its verifications) takes. */
    s->slowest_iteration_s = kiln_wall_now() - started;
    const char *why = NULL;
    if (rc < 0 && s->judge.past_deadline)
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
        rc = iteration(s, s->run.iterations_done + 1, err);
        double took = kiln_wall_now() - started;
        s->slowest_iteration_s = took > s->slowest_iteration_s ? took : s->slowest_iteration_s;
        tick(s);
        if (rc == 0)
            kiln_progress_update(&s->progress, 1);
        if (rc < 0 && s->judge.past_deadline)
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
    if (rc < 0 && err->msg[0])   /* the summary says what failed */
        snprintf(s->stop_reason, sizeof s->stop_reason, "%.*s", (int)sizeof s->stop_reason - 1,
                 err->msg);
    kiln_error e2;
    kiln_db_run_update(s->db, &s->run, rc < 0 ? &e2 : err);
    kiln_progress_finish_line(&s->progress);
    kiln_search_summary(s);
    free(s->seen);
    s->seen = NULL;
    s->nseen = s->capseen = s->seen_loaded = 0;
    if (rc < 0)
        return -1;
    return why && strcmp(why, "interrupted") == 0 ? KILN_EXIT_INTERRUPTED : 0;
}
