/* rundb.c - SQLite records of search runs (see rundb.h). */
#include "rundb.h"

#include "lessons.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char schema_v1[] =
    "CREATE TABLE IF NOT EXISTS runs ("
    " id TEXT PRIMARY KEY, task TEXT NOT NULL, backend TEXT, dtype TEXT, grp TEXT, agent TEXT,"
    " model TEXT, seed INTEGER, branch TEXT, start_commit TEXT, head_commit TEXT, status TEXT,"
    " iterations_done INTEGER, budget_iterations INTEGER, drafts INTEGER, budget_seconds REAL,"
    " seconds_used REAL, budget_tokens INTEGER, tokens_used INTEGER, best_speedup REAL,"
    " started_at REAL, updated_at REAL, base_url TEXT, from_path TEXT);"
    "CREATE TABLE IF NOT EXISTS candidates ("
    " run TEXT NOT NULL REFERENCES runs(id), n INTEGER NOT NULL, iteration INTEGER, draft INTEGER,"
    " parent TEXT, commit_id TEXT, proposer TEXT, state TEXT, hypothesis TEXT, job TEXT,"
    " confirm_job TEXT, record_job TEXT, status TEXT, stage TEXT, code TEXT, reason TEXT,"
    " decision TEXT, speedup REAL, confirm_speedup REAL, speedup_vs_baseline REAL, roofline REAL,"
    " verdict TEXT, confirm_verdict TEXT, record_verdict TEXT, source TEXT, updated_at REAL,"
    " PRIMARY KEY (run, n));"
    "CREATE TABLE IF NOT EXISTS llm_calls ("
    " id INTEGER PRIMARY KEY, run TEXT, n INTEGER, draft INTEGER, provider TEXT, model TEXT,"
    " prompt_tokens INTEGER, completion_tokens INTEGER, latency_s REAL, attempts INTEGER,"
    " http_status INTEGER, ok INTEGER, error TEXT, created_at REAL);"
    "CREATE INDEX IF NOT EXISTS candidates_state ON candidates(run, state);";

/* Version 5: the archive, one row per cell of a run (harness/archive.h). */
static const char schema_v5[] =
    "CREATE TABLE IF NOT EXISTS archive ("
    " run TEXT NOT NULL REFERENCES runs(id), cell TEXT NOT NULL, n INTEGER NOT NULL,"
    " commit_id TEXT, speedup REAL, lo REAL, hi REAL, updated_at REAL,"
    " PRIMARY KEY (run, cell));";

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A full disk is named as such, with the file, so the user knows to free
 * space and resume rather than suspect kiln. */
static int db_fail(sqlite3 *db, kiln_error *err, const char *what)
{
    if (sqlite3_errcode(db) == SQLITE_FULL)
        return kiln_fail_as(err, KILN_ERR_RESOURCE, "database %s: %s: the disk is full",
                            sqlite3_db_filename(db, "main"), what);
    return kiln_fail(err, "database: %s: %s", what, sqlite3_errmsg(db));
}

static int exec(sqlite3 *db, const char *sql, kiln_error *err)
{
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        if (sqlite3_errcode(db) == SQLITE_FULL)
            db_fail(db, err, "writing");
        else
            kiln_fail(err, "database: %s", msg ? msg : sqlite3_errmsg(db));
        sqlite3_free(msg);
        return -1;
    }
    return 0;
}

static int user_version(sqlite3 *db, int *v)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL);
    if (rc == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        *v = sqlite3_column_int(st, 0);
    else
        rc = SQLITE_ERROR;
    sqlite3_finalize(st);
    return rc == SQLITE_OK ? 0 : -1;
}

/* A database this kiln did not create is refused rather than changed. */
static int check_foreign(sqlite3 *db, int version, const char *path, kiln_error *err)
{
    if (version > KILN_DB_SCHEMA_VERSION)
        return kiln_fail(err, "%s: database schema version %d is newer than this kiln (%d)", path,
                         version, KILN_DB_SCHEMA_VERSION);
    sqlite3_stmt *st = NULL;
    int tables = 0;
    /* kiln's own tables: v1's and the lessons' (with the FTS5 index's shadow tables). */
    if (sqlite3_prepare_v2(db, "SELECT count(*) FROM sqlite_master WHERE type='table' AND "
                           "name NOT IN ('runs','candidates','llm_calls','lessons','lesson_tags',"
                           "'lessons_fts','lessons_fts_data','lessons_fts_idx','lessons_fts_docsize',"
                           "'lessons_fts_config','lesson_shown','lesson_prompts')", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        tables = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    if (version == 0 && tables > 0)
        return kiln_fail(err, "%s: not a kiln database (it has other tables)", path);
    return 0;
}

/* 1 when table has column, 0 when not, -1 when the schema is unreadable. */
static int has_column(sqlite3 *db, const char *table, const char *column)
{
    char sql[128];
    sqlite3_stmt *st = NULL;
    int found = 0;
    snprintf(sql, sizeof sql, "PRAGMA table_info(%s)", table);
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return -1;
    while (sqlite3_step(st) == SQLITE_ROW)
        found |= strcmp((const char *)sqlite3_column_text(st, 1), column) == 0;
    sqlite3_finalize(st);
    return found;
}

/* Version 2 records what a resumed run needs to talk to the same model
 * server and read the same files; version 3 the keep rule's settings and
 * the intervals and reason behind each decision; version 4 the model's raw
 * answer of each candidate. */
static int add_column(sqlite3 *db, const char *table, const char *column, const char *type,
                      kiln_error *err)
{
    char sql[256];
    int found = has_column(db, table, column);
    if (found < 0)
        return db_fail(db, err, "reading the schema");
    if (found)
        return 0;
    snprintf(sql, sizeof sql, "ALTER TABLE %s ADD COLUMN %s %s", table, column, type);
    return exec(db, sql, err);
}

static const char *const v3_cand_reals[] = {"speedup_lo", "speedup_hi", "confirm_lo", "confirm_hi",
                                            "baseline_lo", "baseline_hi",
                                            /* version 6: the claim vs the parent, pooled */
                                            "pooled_speedup", "pooled_lo", "pooled_hi"};
/* Version 6: the re-record (a second measurement against the task's
 * baseline, in a fresh worker) and the pool of the two. */
static const char *const v6_cand_texts[] = {"rerecord_job", "rerecord_verdict", "pooled_verdict"};

/* Version 8: what pipelining weighed (harness/shares.h) and saved. */
static int add_v8_columns(sqlite3 *db, kiln_error *err)
{
    static const char *const cols[][2] = {
        {"pipe_model_s", "REAL"},  {"pipe_model_n", "INTEGER"},   {"pipe_verify_s", "REAL"},
        {"pipe_verify_n", "INTEGER"}, {"pipelined", "INTEGER"}, {"pipe_saved_s", "REAL"},
        {"pipe_declined", "INTEGER"}};
    for (size_t i = 0; i < sizeof cols / sizeof *cols; i++)
        if (add_column(db, "runs", cols[i][0], cols[i][1], err) < 0)
            return -1;
    return 0;
}

static int add_v3_columns(sqlite3 *db, kiln_error *err)
{
    if (add_column(db, "runs", "keep_margin", "REAL", err) < 0 ||
        add_column(db, "runs", "max_regression", "REAL", err) < 0 ||
        add_column(db, "runs", "objective", "TEXT", err) < 0 ||
        add_column(db, "candidates", "why", "TEXT", err) < 0 ||
        add_column(db, "candidates", "answer", "TEXT", err) < 0 ||   /* version 4 */
        add_column(db, "runs", "parents", "TEXT", err) < 0 ||          /* version 5 */
        add_column(db, "runs", "model_wait_s", "REAL", err) < 0 ||     /* version 6 */
        add_column(db, "runs", "verify_wait_s", "REAL", err) < 0 ||
        add_column(db, "runs", "lane_busy_s", "REAL", err) < 0 ||      /* version 7 */
        add_column(db, "runs", "lane_s", "REAL", err) < 0 ||
        add_column(db, "runs", "prefetch_asked", "INTEGER", err) < 0 ||
        add_column(db, "runs", "prefetch_dropped", "INTEGER", err) < 0 ||
        add_v8_columns(db, err) < 0 ||
        exec(db, schema_v5, err) < 0)
        return -1;
    for (size_t i = 0; i < sizeof v3_cand_reals / sizeof *v3_cand_reals; i++)
        if (add_column(db, "candidates", v3_cand_reals[i], "REAL", err) < 0)
            return -1;
    for (size_t i = 0; i < sizeof v6_cand_texts / sizeof *v6_cand_texts; i++)
        if (add_column(db, "candidates", v6_cand_texts[i], "TEXT", err) < 0)
            return -1;
    return 0;
}

/* Create or upgrade the schema in one write transaction: two processes
 * opening an old database at once upgrade it once, and a crash midway
 * leaves the old version intact. Each step is idempotent, so an upgrade
 * from any earlier version runs them all. */
static int upgrade(sqlite3 *db, const char *path, kiln_error *err)
{
    int version = 0;
    if (exec(db, "BEGIN IMMEDIATE", err) < 0)
        return -1;
    if (user_version(db, &version) == 0 && version >= KILN_DB_SCHEMA_VERSION)
        return exec(db, "COMMIT", err);   /* another process got here first */
    char set[64];
    snprintf(set, sizeof set, "PRAGMA user_version=%d", KILN_DB_SCHEMA_VERSION);
    if (exec(db, schema_v1, err) == 0 && add_column(db, "runs", "base_url", "TEXT", err) == 0 &&
        add_column(db, "runs", "from_path", "TEXT", err) == 0 && add_v3_columns(db, err) == 0 &&
        kiln_knowledge_schema(db, err) == 0 &&
        exec(db, set, err) == 0 && exec(db, "COMMIT", err) == 0)
        return 0;
    sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    return kiln_error_prefix(err, "%s: upgrading the schema from version %d", path, version);
}

int kiln_db_open(sqlite3 **db, const char *path, kiln_error *err)
{
    int version = 0;
    if (sqlite3_open_v2(path, db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) != SQLITE_OK) {
        kiln_fail(err, "%s: cannot open: %s", path, sqlite3_errmsg(*db));
        sqlite3_close(*db);
        *db = NULL;
        return -1;
    }
    sqlite3_busy_timeout(*db, 10000);
    if (user_version(*db, &version) < 0) {
        kiln_fail(err, "%s: not a SQLite database or corrupt: %s", path, sqlite3_errmsg(*db));
    } else if (check_foreign(*db, version, path, err) == 0 &&
               exec(*db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;", err) == 0 &&
               (version == KILN_DB_SCHEMA_VERSION || upgrade(*db, path, err) == 0)) {
        /* An up-to-date database is only read here, so opening it never
         * waits on (or blocks) a search that is writing. */
        return 0;
    }
    sqlite3_close(*db);
    *db = NULL;
    return -1;
}

void kiln_db_close(sqlite3 *db)
{
    sqlite3_close(db);
}

static void bind_text(sqlite3_stmt *st, int i, const char *s)
{
    sqlite3_bind_text(st, i, s, -1, SQLITE_TRANSIENT);
}

static int run_write(sqlite3 *db, const kiln_run *r, const char *sql, kiln_error *err)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return db_fail(db, err, "preparing a run update");
    bind_text(st, 1, r->id);
    bind_text(st, 2, r->task);
    bind_text(st, 3, r->backend);
    bind_text(st, 4, r->dtype);
    bind_text(st, 5, r->grp);
    bind_text(st, 6, r->agent);
    bind_text(st, 7, r->model);
    sqlite3_bind_int64(st, 8, r->seed);
    bind_text(st, 9, r->branch);
    bind_text(st, 10, r->start_commit);
    bind_text(st, 11, r->head_commit);
    bind_text(st, 12, r->status);
    sqlite3_bind_int(st, 13, r->iterations_done);
    sqlite3_bind_int(st, 14, r->budget_iterations);
    sqlite3_bind_int(st, 15, r->drafts);
    sqlite3_bind_double(st, 16, r->budget_seconds);
    sqlite3_bind_double(st, 17, r->seconds_used);
    sqlite3_bind_int64(st, 18, r->budget_tokens);
    sqlite3_bind_int64(st, 19, r->tokens_used);
    sqlite3_bind_double(st, 20, r->best_speedup);
    sqlite3_bind_double(st, 21, now_s());
    bind_text(st, 22, r->base_url);
    bind_text(st, 23, r->from_path);
    sqlite3_bind_double(st, 24, r->keep_margin);
    sqlite3_bind_double(st, 25, r->max_regression);
    bind_text(st, 26, r->objective);
    bind_text(st, 27, r->parents);
    sqlite3_bind_double(st, 28, r->model_wait_s);
    sqlite3_bind_double(st, 29, r->verify_wait_s);
    sqlite3_bind_double(st, 30, r->lane_busy_s);
    sqlite3_bind_double(st, 31, r->lane_s);
    sqlite3_bind_int(st, 32, r->prefetch_asked);
    sqlite3_bind_int(st, 33, r->prefetch_dropped);
    sqlite3_bind_double(st, 34, r->pipe.model_s);
    sqlite3_bind_int(st, 35, r->pipe.model_n);
    sqlite3_bind_double(st, 36, r->pipe.verify_s);
    sqlite3_bind_int(st, 37, r->pipe.verify_n);
    sqlite3_bind_int(st, 38, r->pipe.pipelined);
    sqlite3_bind_double(st, 39, r->pipe.saved_s);
    sqlite3_bind_int(st, 40, r->pipe.declined);
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : db_fail(db, err, "writing the run");
    sqlite3_finalize(st);
    return rc;
}

int kiln_db_run_insert(sqlite3 *db, const kiln_run *r, kiln_error *err)
{
    return run_write(db, r,
                     "INSERT INTO runs (id, task, backend, dtype, grp, agent, model, seed, branch,"
                     " start_commit, head_commit, status, iterations_done, budget_iterations, drafts,"
                     " budget_seconds, seconds_used, budget_tokens, tokens_used, best_speedup,"
                     " started_at, updated_at, base_url, from_path, keep_margin, max_regression,"
                     " objective, parents, model_wait_s, verify_wait_s, lane_busy_s, lane_s,"
                     " prefetch_asked, prefetch_dropped, pipe_model_s, pipe_model_n, pipe_verify_s,"
                     " pipe_verify_n, pipelined, pipe_saved_s, pipe_declined) VALUES (?1,?2,?3,?4,"
                     "?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19,?20,?21,?21,?22,?23,"
                     "?24,?25,?26,?27,?28,?29,?30,?31,?32,?33,?34,?35,?36,?37,?38,?39,?40)",
                     err);
}

int kiln_db_run_update(sqlite3 *db, const kiln_run *r, kiln_error *err)
{
    return run_write(db, r,
                     "UPDATE runs SET task=?2, backend=?3, dtype=?4, grp=?5, agent=?6, model=?7,"
                     " seed=?8, branch=?9, start_commit=?10, head_commit=?11, status=?12,"
                     " iterations_done=?13, budget_iterations=?14, drafts=?15, budget_seconds=?16,"
                     " seconds_used=?17, budget_tokens=?18, tokens_used=?19, best_speedup=?20,"
                     " updated_at=?21, base_url=?22, from_path=?23, keep_margin=?24, max_regression=?25,"
                     " objective=?26, parents=?27, model_wait_s=?28, verify_wait_s=?29,"
                     " lane_busy_s=?30, lane_s=?31, prefetch_asked=?32, prefetch_dropped=?33,"
                     " pipe_model_s=?34, pipe_model_n=?35, pipe_verify_s=?36, pipe_verify_n=?37,"
                     " pipelined=?38, pipe_saved_s=?39, pipe_declined=?40 WHERE id=?1",
                     err);
}

static void col_text(sqlite3_stmt *st, int i, char *buf, size_t len)
{
    const unsigned char *t = sqlite3_column_text(st, i);
    snprintf(buf, len, "%s", t ? (const char *)t : "");
}

/* A REAL column, or dflt where it is NULL (a row from before the column). */
static double real_or(sqlite3_stmt *st, int i, double dflt)
{
    return sqlite3_column_type(st, i) == SQLITE_NULL ? dflt : sqlite3_column_double(st, i);
}

int kiln_db_run_get(sqlite3 *db, const char *id, kiln_run *r, kiln_error *err)
{
    sqlite3_stmt *st = NULL;
    char sql[1024];
    /* An older database opened read-only (review) may have no keep rule
     * (version 2) or no parents (before version 5). */
    int v3 = has_column(db, "runs", "objective") == 1;
    int v5 = has_column(db, "runs", "parents") == 1;
    int v6 = has_column(db, "runs", "verify_wait_s") == 1;
    int v7 = has_column(db, "runs", "prefetch_dropped") == 1;
    int v8 = has_column(db, "runs", "pipe_declined") == 1;
    snprintf(sql, sizeof sql, "SELECT id, task, backend, dtype, grp, agent, model, seed, branch,"
             " start_commit, head_commit, status, iterations_done, budget_iterations,"
             " drafts, budget_seconds, seconds_used, budget_tokens, tokens_used,"
             " best_speedup, base_url, from_path, %s, %s, %s, %s, %s FROM runs WHERE id=?1",
             v3 ? "keep_margin, max_regression, objective" : "NULL, NULL, NULL",
             v5 ? "parents" : "NULL", v6 ? "model_wait_s, verify_wait_s" : "NULL, NULL",
             v7 ? "lane_busy_s, lane_s, prefetch_asked, prefetch_dropped" : "NULL, NULL, NULL, NULL",
             v8 ? "pipe_model_s, pipe_model_n, pipe_verify_s, pipe_verify_n, pipelined,"
                  " pipe_saved_s, pipe_declined"
                : "NULL, NULL, NULL, NULL, NULL, NULL, NULL");
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return db_fail(db, err, "reading the run");
    bind_text(st, 1, id);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        memset(r, 0, sizeof *r);
        col_text(st, 0, r->id, sizeof r->id);
        col_text(st, 1, r->task, sizeof r->task);
        col_text(st, 2, r->backend, sizeof r->backend);
        col_text(st, 3, r->dtype, sizeof r->dtype);
        col_text(st, 4, r->grp, sizeof r->grp);
        col_text(st, 5, r->agent, sizeof r->agent);
        col_text(st, 6, r->model, sizeof r->model);
        r->seed = sqlite3_column_int64(st, 7);
        col_text(st, 8, r->branch, sizeof r->branch);
        col_text(st, 9, r->start_commit, sizeof r->start_commit);
        col_text(st, 10, r->head_commit, sizeof r->head_commit);
        col_text(st, 11, r->status, sizeof r->status);
        r->iterations_done = sqlite3_column_int(st, 12);
        r->budget_iterations = sqlite3_column_int(st, 13);
        r->drafts = sqlite3_column_int(st, 14);
        r->budget_seconds = sqlite3_column_double(st, 15);
        r->seconds_used = sqlite3_column_double(st, 16);
        r->budget_tokens = sqlite3_column_int64(st, 17);
        r->tokens_used = sqlite3_column_int64(st, 18);
        r->best_speedup = sqlite3_column_double(st, 19);
        col_text(st, 20, r->base_url, sizeof r->base_url);
        col_text(st, 21, r->from_path, sizeof r->from_path);
        r->keep_margin = real_or(st, 22, -1);
        r->max_regression = real_or(st, 23, -1);
        col_text(st, 24, r->objective, sizeof r->objective);
        col_text(st, 25, r->parents, sizeof r->parents);
        r->model_wait_s = real_or(st, 26, 0);
        r->verify_wait_s = real_or(st, 27, 0);
        r->lane_busy_s = real_or(st, 28, 0);
        r->lane_s = real_or(st, 29, 0);
        r->prefetch_asked = (int)real_or(st, 30, 0);
        r->prefetch_dropped = (int)real_or(st, 31, 0);
        r->pipe = (kiln_pipe_times){.model_s = real_or(st, 32, 0),
                                    .model_n = (int)real_or(st, 33, 0),
                                    .verify_s = real_or(st, 34, 0),
                                    .verify_n = (int)real_or(st, 35, 0),
                                    .pipelined = (int)real_or(st, 36, 0),
                                    .saved_s = real_or(st, 37, 0),
                                    .declined = (int)real_or(st, 38, 0)};
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return db_fail(db, err, "reading the run");
    return rc == SQLITE_ROW;
}

int kiln_db_cand_upsert(sqlite3 *db, const kiln_cand *c, kiln_error *err)
{
    sqlite3_stmt *st = NULL;
    const char *sql =
        "INSERT INTO candidates (run, n, iteration, draft, parent, commit_id, proposer, state,"
        " hypothesis, job, confirm_job, record_job, status, stage, code, reason, decision, speedup,"
        " confirm_speedup, speedup_vs_baseline, roofline, updated_at, speedup_lo, speedup_hi,"
        " confirm_lo, confirm_hi, baseline_lo, baseline_hi, why, rerecord_job, pooled_speedup,"
        " pooled_lo, pooled_hi) VALUES (?1,?2,?3,?4,?5,?6,?7,"
        "?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19,?20,?21,?22,?23,?24,?25,?26,?27,?28,?29,"
        "?30,?31,?32,?33)"
        " ON CONFLICT(run, n) DO UPDATE"
        " SET iteration=?3, draft=?4, parent=?5, commit_id=?6, proposer=?7, state=?8, hypothesis=?9,"
        " job=?10, confirm_job=?11, record_job=?12, status=?13, stage=?14, code=?15, reason=?16,"
        " decision=?17, speedup=?18, confirm_speedup=?19, speedup_vs_baseline=?20, roofline=?21,"
        " updated_at=?22, speedup_lo=?23, speedup_hi=?24, confirm_lo=?25, confirm_hi=?26,"
        " baseline_lo=?27, baseline_hi=?28, why=?29, rerecord_job=?30, pooled_speedup=?31,"
        " pooled_lo=?32, pooled_hi=?33";
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return db_fail(db, err, "preparing a candidate update");
    const char *texts[] = {c->parent, c->commit, c->proposer, kiln_cand_state_name(c->state),
                           c->hypothesis, c->job,
                           c->confirm_job, c->record_job, c->status, c->stage, c->code, c->reason,
                           c->decision};
    bind_text(st, 1, c->run);
    sqlite3_bind_int(st, 2, c->n);
    sqlite3_bind_int(st, 3, c->iteration);
    sqlite3_bind_int(st, 4, c->draft);
    for (int i = 0; i < 13; i++)
        bind_text(st, 5 + i, texts[i]);
    sqlite3_bind_double(st, 18, c->speedup);
    sqlite3_bind_double(st, 19, c->confirm_speedup);
    sqlite3_bind_double(st, 20, c->speedup_vs_baseline);
    sqlite3_bind_double(st, 21, c->roofline);
    sqlite3_bind_double(st, 22, c->updated_at > 0 ? c->updated_at : now_s());
    const double iv[] = {c->speedup_lo, c->speedup_hi, c->confirm_lo, c->confirm_hi,
                         c->baseline_lo, c->baseline_hi};
    for (int i = 0; i < 6; i++)
        sqlite3_bind_double(st, 23 + i, iv[i]);
    bind_text(st, 29, c->why);
    bind_text(st, 30, c->rerecord_job);
    sqlite3_bind_double(st, 31, c->pooled_speedup);
    sqlite3_bind_double(st, 32, c->pooled_lo);
    sqlite3_bind_double(st, 33, c->pooled_hi);
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : db_fail(db, err, "writing a candidate");
    sqlite3_finalize(st);
    return rc;
}

/* One row; -1 when its state is none kiln knows (a foreign or damaged
 * database), with err naming the run and candidate. */
static int read_cand(sqlite3_stmt *st, kiln_cand *c, kiln_error *err)
{
    memset(c, 0, sizeof *c);
    char state[16];
    col_text(st, 0, c->run, sizeof c->run);
    c->n = sqlite3_column_int(st, 1);
    c->iteration = sqlite3_column_int(st, 2);
    c->draft = sqlite3_column_int(st, 3);
    col_text(st, 4, c->parent, sizeof c->parent);
    col_text(st, 5, c->commit, sizeof c->commit);
    col_text(st, 6, c->proposer, sizeof c->proposer);
    col_text(st, 7, state, sizeof state);
    col_text(st, 8, c->hypothesis, sizeof c->hypothesis);
    col_text(st, 9, c->job, sizeof c->job);
    col_text(st, 10, c->confirm_job, sizeof c->confirm_job);
    col_text(st, 11, c->record_job, sizeof c->record_job);
    col_text(st, 12, c->status, sizeof c->status);
    col_text(st, 13, c->stage, sizeof c->stage);
    col_text(st, 14, c->code, sizeof c->code);
    col_text(st, 15, c->reason, sizeof c->reason);
    col_text(st, 16, c->decision, sizeof c->decision);
    c->speedup = sqlite3_column_double(st, 17);
    c->confirm_speedup = sqlite3_column_double(st, 18);
    c->speedup_vs_baseline = sqlite3_column_double(st, 19);
    c->roofline = sqlite3_column_double(st, 20);
    double *iv[] = {&c->speedup_lo, &c->speedup_hi, &c->confirm_lo, &c->confirm_hi,
                    &c->baseline_lo, &c->baseline_hi};
    for (int i = 0; i < 6; i++)
        *iv[i] = real_or(st, 21 + i, 0);
    col_text(st, 27, c->why, sizeof c->why);
    col_text(st, 28, c->rerecord_job, sizeof c->rerecord_job);
    c->pooled_speedup = real_or(st, 29, 0);
    c->pooled_lo = real_or(st, 30, 0);
    c->pooled_hi = real_or(st, 31, 0);
    int k = kiln_cand_state_parse(state);
    if (k < 0)
        return kiln_fail(err, "database: run %s candidate %d has the unknown state '%s'", c->run,
                         c->n, state);
    c->state = (kiln_cand_state)k;
    return 0;
}

/* The rows of run that where (an SQL condition on ?2, which it binds to
 * it when it has one) selects, in order. */
static int read_cands(sqlite3 *db, const char *run, const char *where, int it, kiln_cand **out,
                      int *n, kiln_error *err)
{
    sqlite3_stmt *st = NULL;
    char sql[1024];
    *out = NULL;
    *n = 0;
    snprintf(sql, sizeof sql, "SELECT run, n, iteration, draft, parent, commit_id, proposer,"
             " state, hypothesis, job, confirm_job, record_job, status, stage, code,"
             " reason, decision, speedup, confirm_speedup, speedup_vs_baseline,"
             " roofline, speedup_lo, speedup_hi, confirm_lo, confirm_hi, baseline_lo,"
             " baseline_hi, why, rerecord_job, pooled_speedup, pooled_lo, pooled_hi"
             " FROM candidates WHERE run=?1%s ORDER BY n", where);
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return db_fail(db, err, "reading candidates");
    bind_text(st, 1, run);
    if (*where)
        sqlite3_bind_int(st, 2, it);
    int cap = 0, rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (*n == cap) {
            cap = cap ? cap * 2 : 16;
            kiln_cand *p = realloc(*out, (size_t)cap * sizeof *p);
            if (!p) {
                sqlite3_finalize(st);
                return kiln_fail(err, "out of memory");
            }
            *out = p;
        }
        if (read_cand(st, &(*out)[(*n)++], err) < 0) {
            sqlite3_finalize(st);
            free(*out);
            *out = NULL;
            *n = 0;
            return -1;
        }
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : db_fail(db, err, "reading candidates");
}

int kiln_db_cands(sqlite3 *db, const char *run, kiln_cand **out, int *n, kiln_error *err)
{
    return read_cands(db, run, "", 0, out, n, err);
}

int kiln_db_cands_of(sqlite3 *db, const char *run, int it, kiln_cand **out, int *n,
                     kiln_error *err)
{
    return read_cands(db, run, " AND iteration=?2", it, out, n, err);
}

int kiln_db_cand_next(sqlite3 *db, const char *run, kiln_error *err)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT coalesce(max(n) + 1, 0) FROM candidates WHERE run=?1", -1,
                           &st, NULL) != SQLITE_OK)
        return db_fail(db, err, "reading candidates");
    bind_text(st, 1, run);
    int next = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int(st, 0)
                                              : db_fail(db, err, "reading candidates");
    sqlite3_finalize(st);
    return next;
}

int kiln_db_cand_at(sqlite3 *db, const char *run, const char *commit, int *n, kiln_error *err)
{
    sqlite3_stmt *st = NULL;
    *n = -1;
    if (!commit || !commit[0])
        return 0;
    if (sqlite3_prepare_v2(db, "SELECT n FROM candidates WHERE run=?1 AND commit_id=?2"
                           " ORDER BY n LIMIT 1", -1, &st, NULL) != SQLITE_OK)
        return db_fail(db, err, "reading candidates");
    bind_text(st, 1, run);
    bind_text(st, 2, commit);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        *n = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : db_fail(db, err, "reading candidates");
}

/* The text columns, by kiln_cand_text (the judgements' verdicts first, in
 * kiln_judgement's order). */
static const char *const text_columns[KILN_NTEXTS][2] = {
    [KILN_TEXT_VERDICT] = {"verdict", "verdict"},
    [KILN_TEXT_CONFIRM] = {"confirm", "confirm_verdict"},
    [KILN_TEXT_RECORD] = {"record", "record_verdict"},
    [KILN_TEXT_RERECORD] = {"rerecord", "rerecord_verdict"},
    [KILN_TEXT_POOLED] = {"pooled", "pooled_verdict"},
    [KILN_TEXT_SOURCE] = {"source", "source"},
    [KILN_TEXT_ANSWER] = {"answer", "answer"},
};

int kiln_cand_text_parse(const char *name)
{
    for (int i = 0; name && i < KILN_NTEXTS; i++)
        if (strcmp(name, text_columns[i][0]) == 0)
            return i;
    return -1;
}

static int text_valid(kiln_cand_text which)
{
    return (int)which >= 0 && which < KILN_NTEXTS;
}

int kiln_db_cand_text_put(sqlite3 *db, const char *run, int n, kiln_cand_text which,
                          const char *text, kiln_error *err)
{
    if (!text_valid(which))
        return kiln_fail(err, "database: no candidate text number %d (a bug in kiln)", (int)which);
    char sql[128];
    snprintf(sql, sizeof sql, "UPDATE candidates SET %s=?3 WHERE run=?1 AND n=?2",
             text_columns[which][1]);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return db_fail(db, err, "storing a verdict");
    bind_text(st, 1, run);
    sqlite3_bind_int(st, 2, n);
    bind_text(st, 3, text);
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : db_fail(db, err, "storing a verdict");
    sqlite3_finalize(st);
    return rc;
}

char *kiln_db_cand_text(sqlite3 *db, const char *run, int n, kiln_cand_text which)
{
    if (!text_valid(which))
        return NULL;
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT %s FROM candidates WHERE run=?1 AND n=?2",
             text_columns[which][1]);
    sqlite3_stmt *st = NULL;
    char *out = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return NULL;
    bind_text(st, 1, run);
    sqlite3_bind_int(st, 2, n);
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
        out = strdup((const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    return out;
}

int kiln_db_cand_verdict(sqlite3 *db, const char *run, int n, const char *which,
                         const char *json, kiln_error *err)
{
    int k = kiln_cand_text_parse(which);
    if (k < 0)
        return kiln_fail(err, "database: candidates have no text '%s' (a bug in kiln)",
                         which ? which : "(null)");
    return kiln_db_cand_text_put(db, run, n, (kiln_cand_text)k, json, err);
}

char *kiln_db_cand_get_verdict(sqlite3 *db, const char *run, int n, const char *which)
{
    int k = kiln_cand_text_parse(which);
    return k < 0 ? NULL : kiln_db_cand_text(db, run, n, (kiln_cand_text)k);
}

int kiln_db_llm_call(sqlite3 *db, const char *run, int n, int draft, const char *provider,
                     const char *model, long prompt_tokens, long completion_tokens,
                     double latency_s, int attempts, long http_status, int ok, const char *error,
                     kiln_error *err)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "INSERT INTO llm_calls (run, n, draft, provider, model,"
                           " prompt_tokens, completion_tokens, latency_s, attempts, http_status, ok,"
                           " error, created_at) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13)",
                           -1, &st, NULL) != SQLITE_OK)
        return db_fail(db, err, "recording an LLM call");
    bind_text(st, 1, run);
    sqlite3_bind_int(st, 2, n);
    sqlite3_bind_int(st, 3, draft);
    bind_text(st, 4, provider);
    bind_text(st, 5, model);
    sqlite3_bind_int64(st, 6, prompt_tokens);
    sqlite3_bind_int64(st, 7, completion_tokens);
    sqlite3_bind_double(st, 8, latency_s);
    sqlite3_bind_int(st, 9, attempts);
    sqlite3_bind_int64(st, 10, http_status);
    sqlite3_bind_int(st, 11, ok);
    bind_text(st, 12, error ? error : "");
    sqlite3_bind_double(st, 13, now_s());
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : db_fail(db, err, "recording an LLM call");
    sqlite3_finalize(st);
    return rc;
}

/* ---- reading for the review commands and the search's summary ---------- */

int kiln_db_open_readonly(sqlite3 **db, const char *path, kiln_error *err)
{
    if (sqlite3_open_v2(path, db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        kiln_fail(err, "%s: cannot open: %s", path, sqlite3_errmsg(*db));
        sqlite3_close(*db);
        *db = NULL;
        return -1;
    }
    sqlite3_busy_timeout(*db, 10000);
    return 0;
}

/* "database: <SQLite's message>", the review commands' error. */
static int read_fail(sqlite3 *db, kiln_error *err)
{
    return kiln_fail(err, "database: %s", sqlite3_errmsg(db));
}

/* Room for element n of arr (capacity *cap, elements of size bytes): arr
 * itself, or a larger copy; NULL when out of memory (arr left as it is). */
static void *grow(void *arr, int n, int *cap, size_t size)
{
    if (n < *cap)
        return arr;
    int c = *cap ? 2 * *cap : 16;
    void *p = realloc(arr, (size_t)c * size);
    if (p)
        *cap = c;
    return p;
}

/* After a reader's loop over a statement ended with rc: 0 when it read
 * every row; else -1, err says why (rc SQLITE_ROW: out of memory), out (the
 * rows so far) is freed and *n is 0. */
static int rows_end(sqlite3 *db, int rc, void *out, int *n, kiln_error *err)
{
    if (rc == SQLITE_DONE)
        return 0;
    if (rc == SQLITE_ROW)
        kiln_fail(err, "out of memory");
    else
        read_fail(db, err);
    free(out);
    *n = 0;
    return -1;
}

/* A statement's rows' first text column into *out (strings of len bytes
 * each, malloc'd; NULL and none on failure). Finalizes st. */
static int text_column(sqlite3 *db, sqlite3_stmt *st, char **out, int *n, size_t len,
                       kiln_error *err)
{
    int cap = 0, rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        char *p = grow(*out, *n, &cap, len);
        if (!p)
            break;
        *out = p;
        col_text(st, 0, p + (size_t)(*n)++ * len, len);
    }
    sqlite3_finalize(st);
    if (rows_end(db, rc, *out, n, err) == 0)
        return 0;
    *out = NULL;
    return -1;
}

int kiln_db_archive_put(sqlite3 *db, const char *run, const kiln_elite *e, kiln_error *err)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO archive (run, cell, n, commit_id, speedup,"
                           " lo, hi, updated_at) VALUES (?1,?2,?3,?4,?5,?6,?7,?8)", -1, &st,
                           NULL) != SQLITE_OK)
        return db_fail(db, err, "preparing an archive update");
    bind_text(st, 1, run);
    bind_text(st, 2, e->cell);
    sqlite3_bind_int(st, 3, e->n);
    bind_text(st, 4, e->commit);
    sqlite3_bind_double(st, 5, e->speedup);
    sqlite3_bind_double(st, 6, e->lo);
    sqlite3_bind_double(st, 7, e->hi);
    sqlite3_bind_double(st, 8, now_s());
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : db_fail(db, err, "writing the archive");
    sqlite3_finalize(st);
    return rc;
}

int kiln_db_archive(sqlite3 *db, const char *run, kiln_elite **out, int *n, kiln_error *err)
{
    sqlite3_stmt *st = NULL;
    *out = NULL;
    *n = 0;
    if (has_column(db, "runs", "parents") != 1)
        return 0;   /* an older database, read-only: no archive yet */
    if (sqlite3_prepare_v2(db, "SELECT cell, n, commit_id, speedup, lo, hi FROM archive"
                           " WHERE run=?1 ORDER BY cell", -1, &st, NULL) != SQLITE_OK)
        return read_fail(db, err);
    bind_text(st, 1, run);
    int cap = 0, rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        kiln_elite *p = grow(*out, *n, &cap, sizeof *p);
        if (!p)
            break;
        *out = p;
        kiln_elite *e = &p[(*n)++];
        memset(e, 0, sizeof *e);
        col_text(st, 0, e->cell, sizeof e->cell);
        e->n = sqlite3_column_int(st, 1);
        col_text(st, 2, e->commit, sizeof e->commit);
        e->speedup = sqlite3_column_double(st, 3);
        e->lo = sqlite3_column_double(st, 4);
        e->hi = sqlite3_column_double(st, 5);
    }
    sqlite3_finalize(st);
    if (rows_end(db, rc, *out, n, err) == 0)
        return 0;
    *out = NULL;
    return -1;
}

static const char latest_run_sql[] = "SELECT id FROM runs ORDER BY started_at DESC LIMIT 1";

int kiln_db_run_ids(sqlite3 *db, const char *run, const char *task, char (**ids)[32], int *n,
                    kiln_error *err)
{
    const char *sql = task ? "SELECT id FROM runs WHERE task=?1 ORDER BY started_at"
                      : run && strcmp(run, "last") != 0 ? "SELECT id FROM runs WHERE id=?1"
                                                        : latest_run_sql;
    sqlite3_stmt *st = NULL;
    *ids = NULL;
    *n = 0;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return read_fail(db, err);
    bind_text(st, 1, task ? task : run);
    char *out = NULL;
    int rc = text_column(db, st, &out, n, sizeof **ids, err);
    *ids = (char(*)[32])out;
    return rc;
}

int kiln_db_latest_run(sqlite3 *db, char *id, size_t len)
{
    sqlite3_stmt *st = NULL;
    int found = 0;
    if (sqlite3_prepare_v2(db, latest_run_sql, -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW) {
        col_text(st, 0, id, len);
        found = 1;
    }
    sqlite3_finalize(st);
    return found;
}

void kiln_db_run_times(sqlite3 *db, const char *run, double *started, double *updated)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT started_at, updated_at FROM runs WHERE id=?1", -1, &st,
                           NULL) == SQLITE_OK) {
        bind_text(st, 1, run);
        if (sqlite3_step(st) == SQLITE_ROW) {
            *started = sqlite3_column_double(st, 0);
            *updated = sqlite3_column_double(st, 1);
        }
    }
    sqlite3_finalize(st);
}

void kiln_db_llm_totals(sqlite3 *db, const char *run, kiln_llm_totals *t)
{
    sqlite3_stmt *st = NULL;
    memset(t, 0, sizeof *t);
    if (sqlite3_prepare_v2(db, "SELECT count(*), coalesce(sum(prompt_tokens),0),"
                           " coalesce(sum(completion_tokens),0), coalesce(sum(ok=0),0)"
                           " FROM llm_calls WHERE run=?1", -1, &st, NULL) == SQLITE_OK) {
        bind_text(st, 1, run);
        if (sqlite3_step(st) == SQLITE_ROW) {
            t->calls = sqlite3_column_int(st, 0);
            t->prompt_tokens = sqlite3_column_int64(st, 1);
            t->completion_tokens = sqlite3_column_int64(st, 2);
            t->failed = sqlite3_column_int(st, 3);
        }
    }
    sqlite3_finalize(st);
}

/* One row of kiln_db_cand_rows' query, as the review shows it: a state
 * kiln does not know reads as KILN_CAND_NSTATES. */
static void read_cand_row(sqlite3_stmt *st, kiln_cand *c)
{
    memset(c, 0, sizeof *c);
    char state[16];
    c->n = sqlite3_column_int(st, 0);
    c->iteration = sqlite3_column_int(st, 1);
    col_text(st, 2, c->commit, sizeof c->commit);
    col_text(st, 3, c->parent, sizeof c->parent);
    col_text(st, 4, c->proposer, sizeof c->proposer);
    col_text(st, 5, c->status, sizeof c->status);
    col_text(st, 6, c->stage, sizeof c->stage);
    col_text(st, 7, c->code, sizeof c->code);
    col_text(st, 8, c->decision, sizeof c->decision);
    col_text(st, 9, c->record_job, sizeof c->record_job);
    col_text(st, 10, c->hypothesis, sizeof c->hypothesis);
    col_text(st, 11, c->reason, sizeof c->reason);
    c->speedup = sqlite3_column_double(st, 12);
    c->speedup_vs_baseline = c->vs_baseline = sqlite3_column_double(st, 13);
    c->updated_at = sqlite3_column_double(st, 14);
    c->confirm_speedup = sqlite3_column_double(st, 15);
    double *iv[] = {&c->speedup_lo, &c->speedup_hi, &c->confirm_lo, &c->confirm_hi,
                    &c->baseline_lo, &c->baseline_hi};
    for (int i = 0; i < 6; i++)
        *iv[i] = real_or(st, 16 + i, 0);
    col_text(st, 22, c->why, sizeof c->why);
    c->pooled_speedup = real_or(st, 23, 0);
    c->pooled_lo = real_or(st, 24, 0);
    c->pooled_hi = real_or(st, 25, 0);
    c->pooled = sqlite3_column_int(st, 26);
    col_text(st, 27, state, sizeof state);
    int k = kiln_cand_state_parse(state);
    c->state = k < 0 ? KILN_CAND_NSTATES : (kiln_cand_state)k;
    c->kept = strcmp(c->decision, "keep") == 0;
}

int kiln_db_cand_rows(sqlite3 *db, const char *run, kiln_cand **out, int *n, kiln_error *err)
{
    sqlite3_stmt *st = NULL;
    *out = NULL;
    *n = 0;
    char sql[640];
    /* A database of version 2 opened read-only (review) has no intervals,
     * one from before version 6 no pooled figures. */
    int v3 = has_column(db, "candidates", "why") == 1;
    int v6 = has_column(db, "candidates", "pooled_verdict") == 1;
    snprintf(sql, sizeof sql, "SELECT n, iteration, commit_id, parent, proposer, status, stage,"
             " code, decision, record_job, hypothesis, reason, speedup, speedup_vs_baseline,"
             " updated_at, confirm_speedup, %s, %s, state FROM candidates WHERE run=?1 ORDER BY n",
             v3 ? "speedup_lo, speedup_hi, confirm_lo, confirm_hi, baseline_lo, baseline_hi, why"
                : "NULL, NULL, NULL, NULL, NULL, NULL, NULL",
             v6 ? "pooled_speedup, pooled_lo, pooled_hi, pooled_verdict IS NOT NULL"
                : "NULL, NULL, NULL, 0");
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return read_fail(db, err);
    bind_text(st, 1, run);
    int cap = 0, rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        kiln_cand *p = grow(*out, *n, &cap, sizeof *p);
        if (!p)
            break;
        *out = p;
        read_cand_row(st, &p[(*n)++]);
    }
    sqlite3_finalize(st);
    if (rows_end(db, rc, *out, n, err) == 0)
        return 0;
    *out = NULL;
    return -1;
}

int kiln_db_outcome_counts(sqlite3 *db, const char *run, kiln_outcome_count **out, int *n)
{
    sqlite3_stmt *st = NULL;
    *out = NULL;
    *n = 0;
    if (sqlite3_prepare_v2(db, "SELECT decision, CASE WHEN status='pass' THEN 'timing' ELSE "
                           "stage END, CASE WHEN status='pass' THEN 'not-faster' ELSE code END, "
                           "count(*) FROM candidates WHERE run=?1 AND n > 0 GROUP BY 1, 2, 3 "
                           "ORDER BY 4 DESC", -1, &st, NULL) != SQLITE_OK)
        return -1;
    bind_text(st, 1, run);
    int cap = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        kiln_outcome_count *p = grow(*out, *n, &cap, sizeof *p);
        if (!p)
            break;
        *out = p;
        p += (*n)++;
        col_text(st, 0, p->decision, sizeof p->decision);
        col_text(st, 1, p->stage, sizeof p->stage);
        col_text(st, 2, p->code, sizeof p->code);
        p->count = sqlite3_column_int(st, 3);
    }
    sqlite3_finalize(st);
    return 0;
}

char *kiln_db_record_verdict_at(sqlite3 *db, const char *run, const char *commit)
{
    sqlite3_stmt *st = NULL;
    char *out = NULL;
    const char *sql = has_column(db, "candidates", "pooled_verdict") == 1
        ? "SELECT coalesce(pooled_verdict, record_verdict) FROM candidates WHERE run=?1 AND "
          "commit_id=?2 AND record_verdict IS NOT NULL"
        : "SELECT record_verdict FROM candidates WHERE run=?1 AND commit_id=?2 AND "
          "record_verdict IS NOT NULL";
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
        bind_text(st, 1, run);
        bind_text(st, 2, commit);
        if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
            out = strdup((const char *)sqlite3_column_text(st, 0));
    }
    sqlite3_finalize(st);
    return out;
}

int kiln_db_kept_commits(sqlite3 *db, const char *run, char (**out)[41], int *n,
                         kiln_error *err)
{
    sqlite3_stmt *st = NULL;
    const char *sql = run ? "SELECT commit_id FROM candidates WHERE run=?1 AND decision='keep'"
                            " AND commit_id <> '' ORDER BY n"
                          : "SELECT commit_id FROM candidates WHERE decision='keep' AND"
                            " commit_id <> '' ORDER BY updated_at";
    *out = NULL;
    *n = 0;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return read_fail(db, err);
    if (run)
        bind_text(st, 1, run);
    char *p = NULL;
    int rc = text_column(db, st, &p, n, sizeof **out, err);
    *out = (char(*)[41])p;
    return rc;
}

/* A malloc'd copy of column i's text ("" for NULL); NULL out of memory. */
static char *col_dup(sqlite3_stmt *st, int i)
{
    const unsigned char *t = sqlite3_column_text(st, i);
    return strdup(t ? (const char *)t : "");
}

/* One row of kiln_db_kept_records' query; -1 out of memory. */
static int read_kept(sqlite3_stmt *st, kiln_kept_record *k)
{
    memset(k, 0, sizeof *k);
    col_text(st, 0, k->run, sizeof k->run);
    k->n = sqlite3_column_int(st, 1);
    col_text(st, 2, k->commit, sizeof k->commit);
    col_text(st, 3, k->job, sizeof k->job);
    k->verdict = col_dup(st, 4);
    k->source = col_dup(st, 5);
    k->updated_at = sqlite3_column_double(st, 6);
    k->hypothesis = col_dup(st, 7);
    col_text(st, 8, k->rejob, sizeof k->rejob);
    if (sqlite3_column_type(st, 9) != SQLITE_NULL && !(k->reverdict = col_dup(st, 9)))
        return -1;
    return k->verdict && k->source && k->hypothesis ? 0 : -1;
}

int kiln_db_kept_records(sqlite3 *db, const char *dtype, const char *backend,
                         kiln_kept_record **out, int *n, kiln_error *err)
{
    sqlite3_stmt *st = NULL;
    *out = NULL;
    *n = 0;
    char sql[512];
    /* Read-only, an older database may have no re-record (before version 6). */
    snprintf(sql, sizeof sql, "SELECT c.run, c.n, c.commit_id, c.record_job, c.record_verdict,"
             " c.source, c.updated_at, c.hypothesis, %s FROM candidates c JOIN runs r"
             " ON r.id = c.run WHERE c.decision='keep' AND c.record_verdict IS NOT NULL"
             " AND c.source IS NOT NULL AND r.backend=?2 AND r.dtype=?1 ORDER BY c.updated_at",
             has_column(db, "candidates", "rerecord_verdict") == 1
                 ? "c.rerecord_job, c.rerecord_verdict" : "NULL, NULL");
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return read_fail(db, err);
    bind_text(st, 1, dtype);
    bind_text(st, 2, backend);
    int cap = 0, rc = 0;
    while (rc == 0 && sqlite3_step(st) == SQLITE_ROW) {
        kiln_kept_record *p = grow(*out, *n, &cap, sizeof *p);
        if (p)
            *out = p;
        if (!p || read_kept(st, &p[(*n)++]) < 0)
            rc = kiln_fail(err, "out of memory");
    }
    sqlite3_finalize(st);
    if (rc < 0) {
        kiln_kept_records_free(*out, *n);
        *out = NULL;
        *n = 0;
    }
    return rc;
}

void kiln_kept_records_free(kiln_kept_record *k, int n)
{
    for (int i = 0; i < n; i++) {
        free(k[i].verdict);
        free(k[i].source);
        free(k[i].hypothesis);
        free(k[i].reverdict);
    }
    free(k);
}

/* ---- kiln db rebuild (harness/db_rebuild.h) ------------------------------ */

/* UPDATE sql with ?1 a text and ?2, ?3 reals (or ?2 an int, ?3 a real). */
static int set_times(sqlite3 *db, const char *sql, const char *key, double a, int n, double b,
                     kiln_error *err)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return db_fail(db, err, "preparing a time update");
    bind_text(st, 1, key);
    if (n >= 0)
        sqlite3_bind_int(st, 2, n);
    else
        sqlite3_bind_double(st, 2, a);
    sqlite3_bind_double(st, 3, b);
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : db_fail(db, err, "writing a time");
    sqlite3_finalize(st);
    return rc;
}

int kiln_db_run_set_times(sqlite3 *db, const char *id, double started, double updated,
                          kiln_error *err)
{
    return set_times(db, "UPDATE runs SET started_at=?2, updated_at=?3 WHERE id=?1", id, started,
                     -1, updated, err);
}

int kiln_db_cand_set_time(sqlite3 *db, const char *run, int n, double updated, kiln_error *err)
{
    return set_times(db, "UPDATE candidates SET updated_at=?3 WHERE run=?1 AND n=?2", run, 0, n,
                     updated, err);
}

int kiln_db_archive_set_time(sqlite3 *db, const char *run, const char *cell, double updated,
                             kiln_error *err)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "UPDATE archive SET updated_at=?3 WHERE run=?1 AND cell=?2", -1,
                           &st, NULL) != SQLITE_OK)
        return db_fail(db, err, "preparing a time update");
    bind_text(st, 1, run);
    bind_text(st, 2, cell);
    sqlite3_bind_double(st, 3, updated);
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : db_fail(db, err, "writing a time");
    sqlite3_finalize(st);
    return rc;
}

int kiln_db_check(sqlite3 *db, kiln_error *err)
{
    sqlite3_stmt *st = NULL;
    int version = -1, ok = 0;
    const unsigned char *first = NULL;
    if (user_version(db, &version) == 0 &&
        sqlite3_prepare_v2(db, "PRAGMA quick_check", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW && (first = sqlite3_column_text(st, 0)))
        ok = strcmp((const char *)first, "ok") == 0;
    int rc = ok ? 0 : kiln_fail(err, "%.300s", first ? (const char *)first : sqlite3_errmsg(db));
    sqlite3_finalize(st);
    for (char *p = err->msg; rc < 0 && *p; p++)   /* SQLite's lines, as one */
        if (*p == '\n')
            *p = ' ';
    if (rc == 0 && has_column(db, "runs", "id") != 1)
        rc = kiln_fail(err, "it has no runs table");
    return rc;
}

double kiln_db_commit_vs_baseline(sqlite3 *db, const char *commit)
{
    sqlite3_stmt *st = NULL;
    double v = 0;
    if (!commit || !commit[0] ||
        sqlite3_prepare_v2(db, "SELECT speedup_vs_baseline FROM candidates WHERE commit_id=?1"
                           " AND speedup_vs_baseline > 0 LIMIT 1", -1, &st, NULL) != SQLITE_OK)
        return 0;
    sqlite3_bind_text(st, 1, commit, -1, SQLITE_TRANSIENT);
    if (sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_double(st, 0);
    sqlite3_finalize(st);
    return v;
}
