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
    *db = NULL;
    if (access(path, R_OK) != 0)
        return kiln_fail(err, "%s: no kiln database (is %s a kiln workspace?)", path, workspace);
    if (sqlite3_open_v2(path, db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        kiln_fail(err, "%s: cannot open: %s", path, sqlite3_errmsg(*db));
        sqlite3_close(*db);
        *db = NULL;
        return -1;
    }
    sqlite3_busy_timeout(*db, 10000);
    return 0;
}

int kiln_rv_search_running(const char *workspace)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/.kiln/lock", workspace);
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return 0;
    int busy = flock(fd, LOCK_EX | LOCK_NB) < 0 && errno == EWOULDBLOCK;
    close(fd);   /* closing drops the lock if we took it */
    return busy;
}

/* ---- runs ---------------------------------------------------------------- */

static const char *col(sqlite3_stmt *st, int i)
{
    const unsigned char *t = sqlite3_column_text(st, i);
    return t ? (const char *)t : "";
}

static int push_id(char (**ids)[32], int *n, const char *id)
{
    char(*p)[32] = realloc(*ids, (size_t)(*n + 1) * sizeof *p);
    if (!p)
        return -1;
    *ids = p;
    snprintf(p[(*n)++], 32, "%s", id);
    return 0;
}

int kiln_rv_run_ids(sqlite3 *db, const char *run, const char *task, char (**ids)[32], int *n,
                    kiln_error *err)
{
    const char *sql = task ? "SELECT id FROM runs WHERE task=?1 ORDER BY started_at"
                      : run && strcmp(run, "last") != 0 ? "SELECT id FROM runs WHERE id=?1"
                                                        : "SELECT id FROM runs ORDER BY started_at DESC LIMIT 1";
    sqlite3_stmt *st = NULL;
    *ids = NULL;
    *n = 0;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return kiln_fail(err, "database: %s", sqlite3_errmsg(db));
    sqlite3_bind_text(st, 1, task ? task : run, -1, SQLITE_TRANSIENT);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        if (push_id(ids, n, col(st, 0)) < 0) {
            sqlite3_finalize(st);
            return kiln_fail(err, "out of memory");
        }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return kiln_fail(err, "database: %s", sqlite3_errmsg(db));
    if (*n == 0)
        return kiln_fail(err, task ? "no runs of task '%s' in this workspace"
                                   : run ? "no run '%s' in this workspace" : "no runs in this workspace%s",
                         task ? task : run ? run : ""), -2;
    return 0;
}

static void read_row(sqlite3_stmt *st, kiln_rv_cand *c, double started)
{
    memset(c, 0, sizeof *c);
    c->n = sqlite3_column_int(st, 0);
    c->iteration = sqlite3_column_int(st, 1);
    snprintf(c->commit, sizeof c->commit, "%s", col(st, 2));
    snprintf(c->parent, sizeof c->parent, "%s", col(st, 3));
    snprintf(c->proposer, sizeof c->proposer, "%s", col(st, 4));
    snprintf(c->status, sizeof c->status, "%s", col(st, 5));
    snprintf(c->stage, sizeof c->stage, "%s", col(st, 6));
    snprintf(c->code, sizeof c->code, "%s", col(st, 7));
    snprintf(c->decision, sizeof c->decision, "%s", col(st, 8));
    snprintf(c->record_job, sizeof c->record_job, "%s", col(st, 9));
    snprintf(c->hypothesis, sizeof c->hypothesis, "%s", col(st, 10));
    snprintf(c->reason, sizeof c->reason, "%s", col(st, 11));
    c->speedup = sqlite3_column_double(st, 12);
    c->vs_baseline = sqlite3_column_double(st, 13);
    c->t = sqlite3_column_double(st, 14) - started;
    if (c->t < 0)
        c->t = 0;
    c->kept = strcmp(c->decision, "keep") == 0;
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

static int load_cands(sqlite3 *db, kiln_rv_run *r, kiln_error *err)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT n, iteration, commit_id, parent, proposer, status, stage,"
                           " code, decision, record_job, hypothesis, reason, speedup,"
                           " speedup_vs_baseline, updated_at FROM candidates WHERE run=?1 ORDER BY n",
                           -1, &st, NULL) != SQLITE_OK)
        return kiln_fail(err, "database: %s", sqlite3_errmsg(db));
    sqlite3_bind_text(st, 1, r->run.id, -1, SQLITE_TRANSIENT);
    int cap = 0, rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (r->nc == cap) {
            cap = cap ? 2 * cap : 16;
            kiln_rv_cand *p = realloc(r->c, (size_t)cap * sizeof *p);
            if (!p) {
                sqlite3_finalize(st);
                return kiln_fail(err, "out of memory");
            }
            r->c = p;
        }
        read_row(st, &r->c[r->nc++], r->started_at);
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : kiln_fail(err, "database: %s", sqlite3_errmsg(db));
}

static void load_times_tokens(sqlite3 *db, kiln_rv_run *r)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT started_at, updated_at FROM runs WHERE id=?1", -1, &st,
                           NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, r->run.id, -1, SQLITE_TRANSIENT);
        if (sqlite3_step(st) == SQLITE_ROW) {
            r->started_at = sqlite3_column_double(st, 0);
            r->updated_at = sqlite3_column_double(st, 1);
        }
    }
    sqlite3_finalize(st);
    st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT count(*), coalesce(sum(prompt_tokens),0),"
                           " coalesce(sum(completion_tokens),0), coalesce(sum(ok=0),0)"
                           " FROM llm_calls WHERE run=?1", -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, r->run.id, -1, SQLITE_TRANSIENT);
        if (sqlite3_step(st) == SQLITE_ROW) {
            r->llm_calls = sqlite3_column_int(st, 0);
            r->prompt_tokens = sqlite3_column_int64(st, 1);
            r->completion_tokens = sqlite3_column_int64(st, 2);
            r->llm_failed = sqlite3_column_int(st, 3);
        }
    }
    sqlite3_finalize(st);
}

/* The best kept candidate and its record verdict. */
static void load_best(sqlite3 *db, kiln_rv_run *r)
{
    r->best = -1;
    for (int i = 0; i < r->nc; i++)
        if (r->c[i].kept && (r->best < 0 || r->c[i].vs_baseline > r->c[r->best].vs_baseline))
            r->best = i;
    if (r->best < 0)
        return;
    char *text = kiln_db_cand_get_verdict(db, r->run.id, r->c[r->best].n, "record");
    r->best_record = text ? cJSON_Parse(text) : NULL;
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
    return 0;
}

void kiln_rv_run_free(kiln_rv_run *r)
{
    free(r->c);
    cJSON_Delete(r->best_record);
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

/* ---- lessons (tables owned by the knowledge layer) ------------------------ */

int kiln_rv_table_exists(sqlite3 *db, const char *table)
{
    sqlite3_stmt *st = NULL;
    int found = 0;
    if (sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_master WHERE type='table' AND name=?1", -1,
                           &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, table, -1, SQLITE_TRANSIENT);
        found = sqlite3_step(st) == SQLITE_ROW;
    }
    sqlite3_finalize(st);
    return found;
}

int kiln_rv_has_column(sqlite3 *db, const char *table, const char *column)
{
    sqlite3_stmt *st = NULL;
    int found = 0;
    /* pragma_table_info takes the table name as a bound value: no quoting. */
    if (sqlite3_prepare_v2(db, "SELECT 1 FROM pragma_table_info(?1) WHERE name=?2", -1, &st,
                           NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, table, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 2, column, -1, SQLITE_TRANSIENT);
        found = sqlite3_step(st) == SQLITE_ROW;
    }
    sqlite3_finalize(st);
    return found;
}

static int count_where_run(sqlite3 *db, const char *sql, const char *run)
{
    sqlite3_stmt *st = NULL;
    int n = -1;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, run, -1, SQLITE_TRANSIENT);
        if (sqlite3_step(st) == SQLITE_ROW)
            n = sqlite3_column_int(st, 0);
    }
    sqlite3_finalize(st);
    return n;
}

void kiln_rv_lesson_counts(sqlite3 *db, const char *run, int *created, int *shown)
{
    *created = *shown = -1;
    if (kiln_rv_table_exists(db, "lessons") && kiln_rv_has_column(db, "lessons", "run"))
        *created = count_where_run(db, "SELECT count(*) FROM lessons WHERE run=?1", run);
    if (kiln_rv_table_exists(db, "lesson_shown") && kiln_rv_has_column(db, "lesson_shown", "run"))
        *shown = count_where_run(db, "SELECT count(*) FROM lesson_shown WHERE run=?1", run);
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

void kiln_rv_dims(const cJSON *shape, char *buf, size_t len)
{
    const cJSON *dims = cJSON_GetObjectItemCaseSensitive(shape, "dims");
    snprintf(buf, len, "%s", cJSON_IsObject(dims) ? "" : "hidden");
    size_t u = 0;
    const cJSON *d;
    cJSON_ArrayForEach(d, dims) {
        if (u < len)
            u += (size_t)snprintf(buf + u, len - u, "%s%s=%.0f", u ? " " : "", d->string,
                                  d->valuedouble);
    }
}

double kiln_rv_half_spread(const cJSON *t)
{
    double med = kiln_rv_num(t, "median_ns");
    return med > 0 ? (kiln_rv_num(t, "p80_ns") - kiln_rv_num(t, "p20_ns")) / (2 * med) : 0;
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
