/* db_rebuild.c - a lost .kiln/kiln.db made again from git (db_rebuild.h).
 * Every decided candidate has a note on its commit (cand_git.c note_json):
 * the run, number, proposer, hypothesis, decision, reason, why and the
 * verdicts as the encoder wrote them; newer notes add iteration, draft and
 * the verifier's job ids. The commit gives the parent and the source, the
 * branch kiln/<task>/<run> the head, refs/kiln/archive the archive. What
 * no note holds (model calls, time shares, lessons, budgets) is said. */
#include "db_rebuild.h"

#include <cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "pooled.h"
#include "rundb.h"
#include "search_state.h"
#include "workspace.h"

enum { RB_NVERDICTS = KILN_TEXT_POOLED + 1 };   /* the texts a note holds */
static const char *const rb_names[RB_NVERDICTS] = {"verdict", "confirm", "record", "rerecord",
                                                   "pooled"};

typedef struct rb_cand {
    kiln_cand c;
    char *text[RB_NVERDICTS];   /* verbatim from the note; NULL: none */
    char *source;
    double t;                   /* its note's last write */
    cJSON *settings;            /* the run's, as its note has them; NULL: none */
    char task[256], backend[8], dtype[8], grp[32];
} rb_cand;

typedef struct rb {
    kiln_ws *ws;
    rb_cand *c;
    int n, cap;
    int foreign, misplaced, no_jobs, no_source, no_settings;
    double last_t;
    int same_second;
} rb;

/* ---- the note's raw members ------------------------------------------------ */

static const char *skip_ws(const char *p)
{
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
        p++;
    return p;
}

static const char *skip_string(const char *p)
{
    for (p++; *p && *p != '"'; p++)
        if (*p == '\\' && p[1])
            p++;
    return *p ? p + 1 : p;
}

/* Past the JSON value at p (which the caller knows parses). */
static const char *skip_value(const char *p)
{
    if (*p == '"')
        return skip_string(p);
    if (*p != '{' && *p != '[') {
        while (*p && *p != ',' && *p != '}' && *p != ']' && *p != ' ' && *p != '\n' && *p != '\t')
            p++;
        return p;
    }
    int depth = 0;
    do {
        if (*p == '"') {
            p = skip_string(p);
            continue;
        }
        depth += *p == '{' || *p == '[';
        depth -= *p == '}' || *p == ']';
        p++;
    } while (*p && depth > 0);
    return p;
}

/* A malloc'd copy of the text of the top-level member key of the object
 * in note, byte for byte as it was written; NULL when it has none. */
static char *raw_member(const char *note, const char *key)
{
    const char *p = skip_ws(note);
    if (*p != '{')
        return NULL;
    p = skip_ws(p + 1);
    size_t kl = strlen(key);
    while (*p == '"') {
        const char *k = p + 1, *end = skip_string(p);
        p = skip_ws(end);
        if (*p != ':')
            return NULL;
        const char *v = skip_ws(p + 1), *ve = skip_value(v);
        if ((size_t)(end - 1 - k) == kl && strncmp(k, key, kl) == 0) {
            char *out = malloc((size_t)(ve - v) + 1);
            if (out) {
                memcpy(out, v, (size_t)(ve - v));
                out[ve - v] = '\0';
            }
            return out;
        }
        p = skip_ws(ve);
        if (*p == ',')
            p = skip_ws(p + 1);
    }
    return NULL;
}

/* ---- one candidate from its note and commit -------------------------------- */

static void copy_str(const cJSON *o, const char *key, char *buf, size_t len)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (cJSON_IsString(v))
        snprintf(buf, len, "%s", v->valuestring);
}

static int get_int(const cJSON *o, const char *key, int dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valueint : dflt;
}

/* Iteration and draft from the commit message, for a note from before
 * they were in it: "... candidate N (iteration I, draft D, ...". */
static void from_message(kiln_cand *c, const char *msg)
{
    const char *p = strstr(msg, ", candidate ");
    int n, it, dr;
    if (p && sscanf(p, ", candidate %d (iteration %d, draft %d", &n, &it, &dr) == 3)
        c->iteration = it, c->draft = dr;
}

static kiln_verdict *parse_verdict(const char *text)
{
    kiln_verdict *v = text ? malloc(sizeof *v) : NULL;
    kiln_error e;
    if (v && kiln_verdict_parse(text, v, &e) < 0) {
        free(v);
        v = NULL;
    }
    return v;
}

/* The figures the search computed from the verdicts (cand_steps.c
 * arrived): against the parent, its re-time and their pool; against the
 * task's baseline, the pooled record. */
static void figures(rb_cand *r)
{
    kiln_cand *c = &r->c;
    kiln_verdict *v[RB_NVERDICTS];
    double point;
    for (int i = 0; i < RB_NVERDICTS; i++)
        v[i] = parse_verdict(r->text[i]);
    if (v[KILN_TEXT_VERDICT]) {
        kiln_cand_from_verdict(c, v[KILN_TEXT_VERDICT]);
        kiln_pool_geomean(v[KILN_TEXT_VERDICT], &point, &c->speedup_lo, &c->speedup_hi);
    }
    if (v[KILN_TEXT_CONFIRM]) {
        c->confirm_speedup = v[KILN_TEXT_CONFIRM]->geomean_speedup;
        kiln_pool_geomean(v[KILN_TEXT_CONFIRM], &point, &c->confirm_lo, &c->confirm_hi);
        kiln_verdict *pool = v[KILN_TEXT_VERDICT] ? malloc(sizeof *pool) : NULL;
        char why[256];
        if (pool) {
            kiln_pool_verdicts(v[KILN_TEXT_VERDICT], v[KILN_TEXT_CONFIRM], pool, why, sizeof why);
            kiln_pool_geomean(pool, &c->pooled_speedup, &c->pooled_lo, &c->pooled_hi);
        }
        free(pool);
    }
    if (v[KILN_TEXT_POOLED]) {
        if (!v[KILN_TEXT_VERDICT])   /* the start kernel's row is its pooled record's */
            kiln_cand_from_verdict(c, v[KILN_TEXT_POOLED]);
        kiln_pool_geomean(v[KILN_TEXT_POOLED], &c->speedup_vs_baseline, &c->baseline_lo,
                          &c->baseline_hi);
        c->roofline = v[KILN_TEXT_POOLED]->median_roofline;
    }
    for (int i = 0; i < RB_NVERDICTS; i++)
        free(v[i]);
}

/* The jobs, from a note that has them. */
static int jobs(kiln_cand *c, const cJSON *note)
{
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(note, "jobs");
    if (!cJSON_IsObject(j))
        return 0;
    copy_str(j, "verdict", c->job, sizeof c->job);
    copy_str(j, "confirm", c->confirm_job, sizeof c->confirm_job);
    copy_str(j, "record", c->record_job, sizeof c->record_job);
    copy_str(j, "rerecord", c->rerecord_job, sizeof c->rerecord_job);
    return 1;
}

/* The kernel the commit holds: TASK/cpu/kernel.c or TASK/cuda/kernel.cu. */
static char *source_of(rb *b, const rb_cand *r)
{
    char path[512];
    char *src = NULL;
    kiln_error e;
    int cuda = strcmp(r->backend, "cuda") == 0;
    snprintf(path, sizeof path, "%s/%s/%s", r->task, cuda ? "cuda" : "cpu",
             cuda ? "kernel.cu" : "kernel.c");
    return kiln_ws_read(b->ws, r->c.commit, path, &src, &e) == 0 ? src : NULL;
}

/* 1 when msg is the commit message of run's candidate n: a note copied
 * onto another commit (git notes copy) names a candidate it is not. */
static int names_it(const char *msg, const char *run, int n)
{
    char want[96];
    snprintf(want, sizeof want, "kiln run %s, candidate %d (", run, n);
    return strstr(msg, want) != NULL;
}

/* r from its note and commit; 1 when the note is not the commit's
 * candidate's (left out), -1 with err. */
static int fill(rb *b, rb_cand *r, const cJSON *note, const char *text, kiln_error *err)
{
    kiln_cand *c = &r->c;
    copy_str(note, "run", c->run, sizeof c->run);
    c->n = get_int(note, "candidate", -1);
    char *msg = NULL;
    kiln_error e;
    if (kiln_ws_commit_info(b->ws, c->commit, c->parent, &msg, &e) < 0)
        return 1;   /* a note on an object that is no commit here */
    if (!names_it(msg, c->run, c->n)) {
        free(msg);
        return 1;
    }
    copy_str(note, "proposer", c->proposer, sizeof c->proposer);
    copy_str(note, "hypothesis", c->hypothesis, sizeof c->hypothesis);
    copy_str(note, "decision", c->decision, sizeof c->decision);
    copy_str(note, "why", c->why, sizeof c->why);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(note, "verdict");
    if (!v)   /* the start kernel has no verdict against a parent */
        v = cJSON_GetObjectItemCaseSensitive(note, "record");
    copy_str(v, "task", r->task, sizeof r->task);
    copy_str(v, "backend", r->backend, sizeof r->backend);
    copy_str(v, "dtype", r->dtype, sizeof r->dtype);
    copy_str(v, "group", r->grp, sizeof r->grp);
    for (int i = 0; i < RB_NVERDICTS; i++)
        if (cJSON_GetObjectItemCaseSensitive(note, rb_names[i]) &&
            !(r->text[i] = raw_member(text, rb_names[i]))) {
            free(msg);
            return kiln_fail(err, "out of memory");
        }
    c->iteration = get_int(note, "iteration", -1);
    c->draft = get_int(note, "draft", -1);
    if (c->iteration < 0 || c->draft < 0)
        from_message(c, msg);
    free(msg);
    figures(r);
    copy_str(note, "reason", c->reason, sizeof c->reason);   /* as the search had it */
    b->no_jobs += !jobs(c, note);
    const cJSON *set = cJSON_GetObjectItemCaseSensitive(note, "settings");
    if (cJSON_IsObject(set) && !(r->settings = cJSON_Duplicate(set, 1)))
        return kiln_fail(err, "out of memory");
    c->state = KILN_CAND_DONE;
    r->source = source_of(b, r);
    b->no_source += !r->source;
    return 0;
}

/* A note from kiln_ws_note_each; one that is no kiln verdict note is
 * counted and left out. Notes written in the same second keep their
 * order, a millisecond apart. */
static int on_note(const char *commit, const char *text, double when, void *ctx, kiln_error *err)
{
    rb *b = ctx;
    cJSON *note = cJSON_Parse(text);
    const cJSON *run = cJSON_GetObjectItemCaseSensitive(note, "run");
    if (!cJSON_IsString(run) || get_int(note, "candidate", -1) < 0) {
        b->foreign++;
        cJSON_Delete(note);
        return 0;
    }
    if (b->n == b->cap) {
        int cap = b->cap ? 2 * b->cap : 32;
        rb_cand *p = realloc(b->c, (size_t)cap * sizeof *p);
        if (!p) {
            cJSON_Delete(note);
            return kiln_fail(err, "out of memory");
        }
        b->c = p, b->cap = cap;
    }
    rb_cand *r = &b->c[b->n++];
    memset(r, 0, sizeof *r);
    snprintf(r->c.commit, sizeof r->c.commit, "%s", commit);
    b->same_second = when == b->last_t ? b->same_second + 1 : 0;
    b->last_t = when;
    r->t = when + 0.001 * b->same_second;
    const cJSON *at = cJSON_GetObjectItemCaseSensitive(note, "updated_at");
    if (cJSON_IsNumber(at) && at->valuedouble > 0)   /* the row's own time, noted */
        r->t = at->valuedouble;
    int rc = fill(b, r, note, text, err);
    cJSON_Delete(note);
    if (rc == 1) {   /* not this commit's candidate: left out */
        for (int k = 0; k < RB_NVERDICTS; k++)
            free(r->text[k]);
        cJSON_Delete(r->settings);
        b->n--;
        b->misplaced++;
        return 0;
    }
    return rc;
}

/* ---- the runs ------------------------------------------------------------- */

static const rb_cand *cand_of(const rb *b, const char *run, const char *commit)
{
    for (int i = 0; i < b->n; i++)
        if (strcmp(b->c[i].c.run, run) == 0 && strcmp(b->c[i].c.commit, commit) == 0)
            return &b->c[i];
    return NULL;
}

static double num_or(const cJSON *o, const char *key, double dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

/* The run's settings from the last note that has them. */
static void settings(kiln_run *r, const cJSON *t)
{
    copy_str(t, "agent", r->agent, sizeof r->agent);
    copy_str(t, "model", r->model, sizeof r->model);
    copy_str(t, "base_url", r->base_url, sizeof r->base_url);
    copy_str(t, "from", r->from_path, sizeof r->from_path);
    copy_str(t, "objective", r->objective, sizeof r->objective);
    copy_str(t, "parents", r->parents, sizeof r->parents);
    r->seed = (long long)num_or(t, "seed", 0);
    r->budget_iterations = (int)num_or(t, "iterations", r->budget_iterations);
    r->budget_seconds = num_or(t, "budget_s", 0);
    r->budget_tokens = (long long)num_or(t, "max_tokens", 0);
    r->drafts = (int)num_or(t, "drafts", r->drafts);
    r->keep_margin = num_or(t, "keep_margin", -1);
    r->max_regression = num_or(t, "max_regression", -1);
}

/* What the candidates and the branch say of run id (the first candidate
 * of it is b->c[first]). */
static void run_of(rb *b, int first, kiln_run *r, double *started, double *updated)
{
    const rb_cand *f = &b->c[first];
    memset(r, 0, sizeof *r);
    snprintf(r->id, sizeof r->id, "%s", f->c.run);
    snprintf(r->task, sizeof r->task, "%s", f->task);
    snprintf(r->backend, sizeof r->backend, "%s", f->backend);
    snprintf(r->dtype, sizeof r->dtype, "%s", f->dtype);
    snprintf(r->grp, sizeof r->grp, "%s", f->grp);
    snprintf(r->branch, sizeof r->branch, "kiln/%.80s/%s", f->task, f->c.run);
    snprintf(r->status, sizeof r->status, "done");
    r->keep_margin = r->max_regression = -1;   /* not in the notes */
    char ref[192];
    kiln_error e;
    snprintf(ref, sizeof ref, "refs/heads/%s", r->branch);
    if (kiln_ws_resolve(b->ws, ref, r->head_commit, &e) < 0)
        r->head_commit[0] = '\0';
    *started = *updated = f->t;
    for (int i = first; i < b->n; i++) {
        const kiln_cand *c = &b->c[i].c;
        if (strcmp(c->run, r->id) != 0)
            continue;
        if (c->n == 0) {
            snprintf(r->start_commit, sizeof r->start_commit, "%s", c->commit);
            if (strncmp(c->hypothesis, "start: /", 8) == 0)   /* --from's path */
                snprintf(r->from_path, sizeof r->from_path, "%s", c->hypothesis + 7);
            double t = kiln_ws_commit_time(b->ws, c->commit);
            if (t > 0 && t < *started)
                *started = t;
        } else if (!r->agent[0]) {
            snprintf(r->agent, sizeof r->agent, "%s", c->proposer);
        }
        if (c->iteration > r->iterations_done)
            r->iterations_done = c->iteration;
        if (c->draft + 1 > r->drafts)
            r->drafts = c->draft + 1;
        if (strcmp(c->commit, r->head_commit) == 0)
            r->best_speedup = c->speedup_vs_baseline;
        if (b->c[i].t > *updated)
            *updated = b->c[i].t;
    }
    r->budget_iterations = r->iterations_done;
    r->seconds_used = *updated - *started;
    const rb_cand *last = NULL;   /* the latest note with the run's settings */
    for (int i = first; i < b->n; i++)
        if (strcmp(b->c[i].c.run, r->id) == 0 && b->c[i].settings &&
            (!last || b->c[i].t >= last->t))
            last = &b->c[i];
    if (last)
        settings(r, last->settings);
    else
        b->no_settings++;
}

static int first_of_run(const rb *b, int i)
{
    for (int k = 0; k < i; k++)
        if (strcmp(b->c[k].c.run, b->c[i].c.run) == 0)
            return 0;
    return 1;
}

typedef struct archive_ctx {
    rb *b;
    sqlite3 *db;
    const char *run;
    int cells, stray;
} archive_ctx;

/* refs/kiln/archive/<run>/<cell>: the cell's elite, with the figures of
 * its candidate against the task's baseline. */
static int on_cell(const char *ref, const char *commit, void *ctx, kiln_error *err)
{
    archive_ctx *a = ctx;
    const char *cell = ref + strlen("refs/kiln/archive/") + strlen(a->run) + 1;
    const rb_cand *r = cand_of(a->b, a->run, commit);
    if (!r) {
        a->stray++;
        return 0;
    }
    kiln_elite e = {.n = r->c.n, .speedup = r->c.speedup_vs_baseline, .lo = r->c.baseline_lo,
                    .hi = r->c.baseline_hi};
    snprintf(e.cell, sizeof e.cell, "%s", cell);
    snprintf(e.commit, sizeof e.commit, "%s", commit);
    a->cells++;
    if (kiln_db_archive_put(a->db, a->run, &e, err) < 0)
        return -1;
    return kiln_db_archive_set_time(a->db, a->run, e.cell, r->t, err);
}

static int write_cand(sqlite3 *db, const rb_cand *r, kiln_error *err)
{
    const kiln_cand *c = &r->c;
    if (kiln_db_cand_upsert(db, c, err) < 0)
        return -1;
    for (int k = 0; k < RB_NVERDICTS; k++)
        if (r->text[k] && kiln_db_cand_text_put(db, c->run, c->n, (kiln_cand_text)k, r->text[k],
                                                err) < 0)
            return -1;
    if (r->source && kiln_db_cand_text_put(db, c->run, c->n, KILN_TEXT_SOURCE, r->source, err) < 0)
        return -1;
    return kiln_db_cand_set_time(db, c->run, c->n, r->t, err);
}

static int by_run_n(const void *x, const void *y)
{
    const rb_cand *a = x, *b = y;
    int d = strcmp(a->c.run, b->c.run);
    return d ? d : a->c.n - b->c.n;
}

/* Everything into the database at path; counts for the summary. */
static int write_db(rb *b, const char *path, int *runs, int *cells, int *stray, kiln_error *err)
{
    sqlite3 *db = NULL;
    if (kiln_db_open(&db, path, err) < 0)
        return -1;
    int rc = 0;
    for (int i = 0; rc == 0 && i < b->n; i++) {
        if (!first_of_run(b, i))
            continue;
        kiln_run r;
        double started, updated;
        run_of(b, i, &r, &started, &updated);
        rc = kiln_db_run_insert(db, &r, err) < 0 ||
             kiln_db_run_set_times(db, r.id, started, updated, err) < 0 ? -1 : 0;
        ++*runs;
    }
    /* in the order of the runs' ids and numbers, which the notes' order may not be */
    qsort(b->c, (size_t)b->n, sizeof *b->c, by_run_n);
    for (int i = 0; rc == 0 && i < b->n; i++)
        rc = write_cand(db, &b->c[i], err);
    for (int i = 0; rc == 0 && i < b->n; i++) {
        if (i > 0 && strcmp(b->c[i - 1].c.run, b->c[i].c.run) == 0)
            continue;
        archive_ctx a = {.b = b, .db = db, .run = b->c[i].c.run};
        char glob[128];
        snprintf(glob, sizeof glob, "refs/kiln/archive/%s/*", a.run);
        rc = kiln_ws_ref_each(b->ws, glob, on_cell, &a, err);
        *cells += a.cells;
        *stray += a.stray;
    }
    kiln_db_close(db);
    return rc;
}

/* ---- moving the files -------------------------------------------------- */

static void rb_free(rb *b)
{
    for (int i = 0; i < b->n; i++) {
        for (int k = 0; k < RB_NVERDICTS; k++)
            free(b->c[i].text[k]);
        free(b->c[i].source);
        cJSON_Delete(b->c[i].settings);
    }
    free(b->c);
}

static int exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* path, path-wal and path-shm renamed to to, to-wal, to-shm (those that
 * exist): a stale WAL must never meet the new database. */
static int move_db(const char *path, const char *to, kiln_error *err)
{
    static const char *const tails[] = {"", "-wal", "-shm"};
    for (int i = 0; i < 3; i++) {
        char a[4200], b[4200];
        snprintf(a, sizeof a, "%s%s", path, tails[i]);
        snprintf(b, sizeof b, "%s%s", to, tails[i]);
        if (exists(a) && rename(a, b) != 0)
            return kiln_fail(err, "moving %s to %s: %s", a, b, strerror(errno));
    }
    return 0;
}

static void summary(FILE *out, const rb *b, const char *path, const char *old, int runs,
                    int cells, int stray)
{
    int kept = 0;
    for (int i = 0; i < b->n; i++)
        kept += strcmp(b->c[i].c.decision, "keep") == 0;
    fprintf(out, "rebuilt %s from the git notes: %d run%s, %d candidates (%d kept), %d archive "
            "cell%s\n", path, runs, runs == 1 ? "" : "s", b->n, kept, cells, cells == 1 ? "" : "s");
    if (old[0])
        fprintf(out, "the old database is kept as %s\n", old);
    if (b->no_source)
        fprintf(out, "%d candidate%s without a kernel in the commit (no source)\n", b->no_source,
                b->no_source == 1 ? "" : "s");
    if (b->no_jobs)
        fprintf(out, "%d candidate%s noted before kiln noted job ids: no job ids\n", b->no_jobs,
                b->no_jobs == 1 ? "" : "s");
    if (b->misplaced)
        fprintf(out, "%d note%s on a commit that is not its candidate's (copied?), left out\n",
                b->misplaced, b->misplaced == 1 ? "" : "s");
    if (b->foreign)
        fprintf(out, "%d note%s not kiln's, left out\n", b->foreign, b->foreign == 1 ? "" : "s");
    if (stray)
        fprintf(out, "%d archive ref%s to a commit without a note, left out\n", stray,
                stray == 1 ? "" : "s");
    if (b->no_settings)
        fprintf(out, "%d run%s noted before kiln noted a run's settings: no seed, model, budgets, "
                "keep rule or parents policy\n", b->no_settings, b->no_settings == 1 ? "" : "s");
    fputs("not rebuilt (no note holds them): model usage (llm_calls, tokens), where the time went "
          "(model and verifier waits, lane shares), lessons, the model's raw answers, candidates "
          "never committed; a run's start and time used are estimated from its notes\n", out);
}

int kiln_db_rebuild(const char *workspace, FILE *out, kiln_error *err)
{
    kiln_ws ws;
    rb b = {.ws = &ws};
    if (kiln_ws_open(&ws, workspace, 0, err) < 0) {
        kiln_ws_close(&ws);
        return kiln_error_as(err, KILN_ERR_BAD_INPUT);
    }
    char path[4200], tmp[4300], old[4300] = "";
    snprintf(path, sizeof path, "%s/.kiln/kiln.db", ws.dir);
    snprintf(tmp, sizeof tmp, "%s.rebuild", path);
    int runs = 0, cells = 0, stray = 0;
    int rc = kiln_ws_note_each(&ws, KILN_VERDICT_NOTES_REF, on_note, &b, err);
    if (rc == 0 || (rc > 0 && b.n == 0))
        rc = kiln_bad_input(err, "workspace %s: no kiln verdict notes (%s): nothing to rebuild "
                            "%s from", workspace, KILN_VERDICT_NOTES_REF, path);
    if (rc >= 0) {
        unlink(tmp);
        rc = write_db(&b, tmp, &runs, &cells, &stray, err);
        if (rc < 0)
            unlink(tmp);
    }
    if (rc >= 0 && exists(path)) {
        char stamp[32];
        time_t now = time(NULL);
        struct tm tm;
        gmtime_r(&now, &tm);
        strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
        snprintf(old, sizeof old, "%s.corrupt-%s", path, stamp);
        for (int k = 2; exists(old); k++)   /* an earlier rebuild's, this second */
            snprintf(old, sizeof old, "%s.corrupt-%s-%d", path, stamp, k);
        rc = move_db(path, old, err);
    }
    if (rc >= 0)
        rc = move_db(tmp, path, err);
    if (rc >= 0)
        summary(out, &b, path, old, runs, cells, stray);
    rb_free(&b);
    kiln_ws_close(&ws);
    return rc < 0 ? -1 : 0;
}
