/* review.c - read-only access to a workspace's records for the review
 * commands (see review.h). */
#include "review.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

int kiln_rv_db_open(const char *workspace, sqlite3 **db, kiln_error *err)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/.kiln/kiln.db", workspace);
    char marker[PATH_MAX + 32];
    snprintf(marker, sizeof marker, "%s/.kiln/workspace", workspace);
    *db = NULL;
    if (access(path, F_OK) != 0 && access(marker, F_OK) == 0)   /* a workspace that lost it */
        return kiln_bad_input(err, "%s: no kiln database; 'kiln db rebuild --workspace %s' "
                              "rebuilds it from the git notes", path, workspace);
    if (access(path, R_OK) != 0 && access(path, F_OK) == 0)
        return kiln_bad_input(err, "%s: unreadable: %s; 'kiln db rebuild --workspace %s' rebuilds "
                              "it from the git notes", path, strerror(errno), workspace);
    if (access(path, R_OK) != 0)
        return kiln_fail(err, "%s: no kiln database (is %s a kiln workspace?)", path, workspace);
    if (kiln_db_open_readonly(db, path, err) < 0)
        return -1;
    /* A damaged file is named with the way back, before any query fails
     * with SQLite's words alone. */
    kiln_error why = {0};
    if (kiln_db_check(*db, &why) == 0)
        return 0;
    kiln_db_close(*db);
    *db = NULL;
    return kiln_bad_input(err, "%s: corrupt or not a kiln database (%s); 'kiln db rebuild "
                          "--workspace %s' rebuilds it from the git notes", path, why.msg,
                          workspace);
}

int kiln_rv_lock_holder(const char *workspace, char *who, size_t len)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/.kiln/lock", workspace);
    if (who && len)
        who[0] = '\0';
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return 0;
    int busy = flock(fd, LOCK_EX | LOCK_NB) < 0 && errno == EWOULDBLOCK;
    if (busy && who && len) {   /* "PID RUN" (kiln_ws_lock_note); empty from an older kiln */
        ssize_t n = pread(fd, who, len - 1, 0);
        who[n > 0 ? n : 0] = '\0';
        who[strcspn(who, "\n")] = '\0';
    }
    close(fd);   /* closing drops the lock if we took it */
    return busy;
}

int kiln_rv_search_running(const char *workspace)
{
    return kiln_rv_lock_holder(workspace, NULL, 0);
}

/* ---- runs ---------------------------------------------------------------- */

int kiln_rv_run_ids(sqlite3 *db, const char *run, const char *task, char (**ids)[32], int *n,
                    kiln_error *err)
{
    if (kiln_db_run_ids(db, run, task, ids, n, err) < 0)
        return -1;
    if (*n == 0)
        return kiln_bad_input(err, task ? "no runs of task '%s' in this workspace"
                                   : run ? "no run '%s' in this workspace" : "no runs in this workspace%s",
                         task ? task : run ? run : "");
    return 0;
}

/* Only kept candidates are measured against the task's baseline. For the
 * others the chart needs a comparable number: their speedup against the
 * parent times the parent's recorded speedup against the baseline. */
static void estimate(kiln_rv_run *r)
{
    for (int i = 0; i < r->nc; i++) {
        kiln_rv_cand *c = &r->c[i];
        if (c->kept)
            continue;
        c->vs_baseline = 0;
        if (strcmp(c->status, "pass") != 0)
            continue;
        double parent = 1;
        for (int k = 0; k < r->nc; k++)
            if (r->c[k].kept && r->c[k].commit[0] && strcmp(r->c[k].commit, c->parent) == 0)
                parent = r->c[k].vs_baseline;
        c->vs_baseline = c->speedup * parent;
    }
}

/* The run's candidates, t counted from the run's start. */
static int load_cands(sqlite3 *db, kiln_rv_run *r, kiln_error *err)
{
    if (kiln_db_cand_rows(db, r->run.id, &r->c, &r->nc, err) < 0)
        return -1;
    for (int i = 0; i < r->nc; i++)
        r->c[i].t = r->c[i].updated_at > r->started_at ? r->c[i].updated_at - r->started_at : 0;
    return 0;
}

/* When the run started and ended, and its LLM calls summed. */
static void load_times_tokens(sqlite3 *db, kiln_rv_run *r)
{
    kiln_llm_totals t;
    kiln_db_run_times(db, r->run.id, &r->started_at, &r->updated_at);
    kiln_db_llm_totals(db, r->run.id, &t);
    r->llm_calls = t.calls;
    r->prompt_tokens = t.prompt_tokens;
    r->completion_tokens = t.completion_tokens;
    r->llm_failed = t.failed;
}

/* The best kept candidate and its pooled verdict against the task's
 * baseline (its one record in a run from before pooling). */
static void load_best(sqlite3 *db, kiln_rv_run *r)
{
    r->best = -1;
    for (int i = 0; i < r->nc; i++)
        if (r->c[i].kept && (r->best < 0 || r->c[i].vs_baseline > r->c[r->best].vs_baseline))
            r->best = i;
    if (r->best < 0)
        return;
    char *text = r->c[r->best].pooled
                     ? kiln_db_cand_text(db, r->run.id, r->c[r->best].n, KILN_TEXT_POOLED) : NULL;
    r->best_pooled = text != NULL;
    if (!text)
        text = kiln_db_cand_text(db, r->run.id, r->c[r->best].n, KILN_TEXT_RECORD);
    kiln_error e;
    r->best_record = text ? malloc(sizeof *r->best_record) : NULL;
    if (r->best_record && kiln_verdict_parse(text, r->best_record, &e) < 0) {
        free(r->best_record);
        r->best_record = NULL;
    }
    free(text);
}

int kiln_rv_run_load(sqlite3 *db, const char *id, kiln_rv_run *r, kiln_error *err)
{
    memset(r, 0, sizeof *r);
    r->best = -1;
    int rc = kiln_db_run_get(db, id, &r->run, err);
    if (rc <= 0)
        return rc < 0 ? -1 : kiln_fail(err, "no run '%s' in this workspace", id);
    load_times_tokens(db, r);
    if (load_cands(db, r, err) < 0)
        return -1;
    estimate(r);
    load_best(db, r);
    return kiln_db_archive(db, id, &r->archive, &r->narchive, err);
}

static int cand_at(const kiln_rv_run *r, const char *commit)
{
    for (int i = 0; commit[0] && i < r->nc; i++)
        if (strcmp(r->c[i].commit, commit) == 0)
            return i;
    return -1;
}

int kiln_rv_lineage(const kiln_rv_run *r, int *out, int cap)
{
    int n = 0;
    /* Walk back from the head, then reverse: parents come before children
     * in the run, so the walk ends (cap bounds a corrupt loop too). */
    for (int i = cand_at(r, r->run.head_commit); i >= 0 && n < cap; i = cand_at(r, r->c[i].parent))
        out[n++] = i;
    for (int a = 0, b = n - 1; a < b; a++, b--) {
        int t = out[a];
        out[a] = out[b];
        out[b] = t;
    }
    return n;
}

int kiln_rv_shares(const kiln_rv_run *r, kiln_shares *out)
{
    *out = (kiln_shares){0};
    if (r->run.model_wait_s <= 0 && r->run.verify_wait_s <= 0)
        return -1;
    int decided = 0;
    for (int i = 0; i < r->nc; i++)
        decided += r->c[i].n > 0 && r->c[i].decision[0];
    kiln_shares_of(&r->run, decided, out);
    return 0;
}

void kiln_rv_run_free(kiln_rv_run *r)
{
    free(r->c);
    free(r->best_record);
    free(r->archive);
    memset(r, 0, sizeof *r);
    r->best = -1;
}

int kiln_rv_rejections(const kiln_rv_run *r, kiln_rv_reject *out, int cap)
{
    int n = 0;
    for (int i = 0; i < r->nc; i++) {
        const kiln_rv_cand *c = &r->c[i];
        if (c->n == 0 || c->kept || !c->decision[0])
            continue;
        int pass = strcmp(c->status, "pass") == 0;
        const char *stage = pass ? "timing" : c->stage[0] ? c->stage : "propose";
        const char *code = pass ? "not-faster" : c->code[0] ? c->code : "no-code";
        int k = 0;
        while (k < n && (strcmp(out[k].stage, stage) || strcmp(out[k].code, code)))
            k++;
        if (k == n) {
            if (n == cap)
                continue;
            memset(&out[n], 0, sizeof out[n]);
            snprintf(out[n].stage, sizeof out[n].stage, "%s", stage);
            snprintf(out[n].code, sizeof out[n].code, "%s", code);
            n++;
        }
        out[k].count++;
    }
    for (int i = 1; i < n; i++)   /* insertion sort by count, descending */
        for (int k = i; k > 0 && out[k].count > out[k - 1].count; k--) {
            kiln_rv_reject t = out[k];
            out[k] = out[k - 1];
            out[k - 1] = t;
        }
    return n;
}

/* ---- JSON, times, dates ----------------------------------------------------- */

const cJSON *kiln_rv_get(const cJSON *o, const char *path)
{
    char key[64];
    while (o && *path) {
        size_t n = strcspn(path, ".");
        snprintf(key, sizeof key, "%.*s", (int)(n < sizeof key ? n : sizeof key - 1), path);
        o = cJSON_GetObjectItemCaseSensitive(o, key);
        path += n + (path[n] == '.');
    }
    return o;
}

double kiln_rv_num(const cJSON *o, const char *path)
{
    const cJSON *v = kiln_rv_get(o, path);
    return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

const char *kiln_rv_str(const cJSON *o, const char *path)
{
    const char *s = cJSON_GetStringValue(kiln_rv_get(o, path));
    return s ? s : "";
}

double kiln_rv_fin(double x)
{
    return isfinite(x) ? x : 0;
}

void kiln_rv_fmt_speedup(double x, double lo, double hi, char *buf, size_t len)
{
    if (lo > 0 && hi > 0 && isfinite(hi))
        snprintf(buf, len, "%.3fx [%.3f, %.3f]", kiln_rv_fin(x), lo, hi);
    else
        snprintf(buf, len, "%.3fx", kiln_rv_fin(x));
}

void kiln_rv_fmt_kept(const kiln_rv_cand *c, char claim[64], char first[64], char retimed[64],
                      char base[64])
{
    char one[48];
    kiln_rv_fmt_speedup(c->speedup, c->speedup_lo, c->speedup_hi, first, 64);
    kiln_rv_fmt_speedup(c->confirm_speedup, c->confirm_lo, c->confirm_hi, retimed, 64);
    if (c->pooled_speedup > 0) {
        kiln_rv_fmt_speedup(c->pooled_speedup, c->pooled_lo, c->pooled_hi, claim, 64);
    } else {
        kiln_rv_fmt_speedup(c->speedup, c->speedup_lo, c->speedup_hi, one, sizeof one);
        snprintf(claim, 64, "%.44s (one measurement)", one);
    }
    kiln_rv_fmt_speedup(c->vs_baseline, c->baseline_lo, c->baseline_hi, one, sizeof one);
    snprintf(base, 64, "%.44s%s", one, c->pooled ? "" : " (one record)");
}

void kiln_rv_fmt_time(double ns, char *buf, size_t len)
{
    if (ns <= 0 || !isfinite(ns))
        snprintf(buf, len, "-");
    else if (ns < 1e4)
        snprintf(buf, len, "%.2f us", ns / 1e3);
    else if (ns < 1e7)
        snprintf(buf, len, "%.1f us", ns / 1e3);
    else
        snprintf(buf, len, "%.2f ms", ns / 1e6);
}

void kiln_rv_fmt_date(double epoch_s, char *buf, size_t len)
{
    time_t t = (time_t)epoch_s;
    struct tm tm;
    if (epoch_s <= 0 || !gmtime_r(&t, &tm) || !strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm))
        snprintf(buf, len, "-");
}

double kiln_rv_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}
