/* test_pooled.c - pooled measurements (verifier/measure/pooled.c): two records that
 * differ give a claim that is their pool and neither of them, intervals
 * that do not overlap give the lower figure and say so, a shape timed once
 * is no claim, a failure is the pool; and the run database's version 6
 * (the re-record and the pooled verdict): a version 5 database opens,
 * migrates and keeps its rows, and read-only it still reads. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pooled.h"
#include "rundb.h"

static void shape(kiln_verdict *v, const char *id, double sp, double lo, double hi)
{
    kiln_shape_result *r = &v->results[v->nresults++];
    snprintf(r->id, sizeof r->id, "%s", id);
    r->visible = r->timed = 1;
    r->speedup = sp;
    r->speedup_lo = lo;
    r->speedup_hi = hi;
    r->cand = (kiln_time_stats){1000, 990, 1010, 20};
    r->base = (kiln_time_stats){1000 * sp, 990 * sp, 1010 * sp, 20};
    r->roofline_fraction = 0.5;
}

static kiln_verdict *verdict(const char *status)
{
    kiln_verdict *v = calloc(1, sizeof *v);
    assert_non_null(v);
    snprintf(v->status, sizeof v->status, "%s", status);
    return v;
}

static void pool_is_neither_record(void **state)
{
    (void)state;
    kiln_verdict *a = verdict("pass"), *b = verdict("pass"), *p = verdict("");
    shape(a, "v1", 1.20, 1.10, 1.30);
    shape(a, "v2", 2.00, 1.90, 2.10);
    shape(b, "v1", 1.25, 1.15, 1.35);
    shape(b, "v2", 1.96, 1.86, 2.06);
    a->geomean_speedup = sqrt(1.20 * 2.00);
    b->geomean_speedup = sqrt(1.25 * 1.96);
    char why[200];
    assert_int_equal(kiln_pool_verdicts(a, b, p, why, sizeof why), 2);
    assert_string_equal(why, "");
    assert_float_equal(p->results[0].speedup, sqrt(1.20 * 1.25), 1e-12);
    assert_float_equal(p->results[0].speedup_lo, 1.10, 1e-12);   /* the hull */
    assert_float_equal(p->results[0].speedup_hi, 1.35, 1e-12);
    assert_float_equal(p->results[1].speedup, sqrt(2.00 * 1.96), 1e-12);
    double g, lo, hi;
    kiln_pool_geomean(p, &g, &lo, &hi);
    /* The claim is the geometric mean of the two geomeans: neither record. */
    assert_float_equal(g, sqrt(a->geomean_speedup * b->geomean_speedup), 1e-12);
    assert_true(fabs(g - a->geomean_speedup) > 1e-3 && fabs(g - b->geomean_speedup) > 1e-3);
    assert_true(lo < g && g < hi);
    free(a);
    free(b);
    free(p);
}

static void apart_takes_the_lower(void **state)
{
    (void)state;
    kiln_verdict *a = verdict("pass"), *b = verdict("pass"), *p = verdict("");
    shape(a, "v1", 3.27, 3.20, 3.35);   /* the 3.27x and 5.94x */
    shape(b, "v1", 5.94, 5.80, 6.10);
    a->geomean_speedup = 3.27;
    b->geomean_speedup = 5.94;
    b->results[0].roofline_fraction = 0.9;
    char why[200];
    assert_int_equal(kiln_pool_verdicts(b, a, p, why, sizeof why), 1);
    assert_float_equal(p->results[0].speedup, 3.27, 1e-12);
    assert_float_equal(p->results[0].roofline_fraction, 0.5, 1e-12);   /* the lower's figures */
    assert_float_equal(p->geomean_speedup, 3.27, 1e-12);
    assert_non_null(strstr(why, "v1: its two intervals do not overlap, the lower taken"));
    assert_non_null(strstr(why, "geomeans' intervals"));
    kiln_interval x[2] = {{1.0, 0.9, 1.1, 1}, {1.05, 1.0, 1.2, 1}}, o;
    assert_int_equal(kiln_pool_intervals(x, 2, &o), 0);
    assert_float_equal(o.point, sqrt(1.05), 1e-12);
    x[1] = (kiln_interval){1.3, 1.2, 1.4, 1};
    assert_int_equal(kiln_pool_intervals(x, 2, &o), 1);
    assert_float_equal(o.point, 1.0, 1e-12);
    assert_float_equal(o.hi, 1.4, 1e-12);
    assert_int_equal(kiln_pool_intervals(x, 1, &o), 0);   /* one: itself */
    assert_float_equal(o.point, 1.0, 1e-12);
    free(a);
    free(b);
    free(p);
}

static void once_and_failures(void **state)
{
    (void)state;
    kiln_verdict *a = verdict("pass"), *b = verdict("pass"), *p = verdict("");
    shape(a, "v1", 1.5, 1.4, 1.6);
    shape(a, "v2", 9.0, 8.0, 10.0);
    shape(b, "v1", 1.5, 1.4, 1.6);
    char why[200];
    assert_int_equal(kiln_pool_verdicts(a, b, p, why, sizeof why), 1);
    assert_false(p->results[1].timed);   /* v2 timed once: no claim */
    assert_float_equal(p->geomean_speedup, 1.5, 1e-12);
    assert_non_null(strstr(why, "v2 timed once"));
    snprintf(b->status, sizeof b->status, "fail");
    snprintf(b->code, sizeof b->code, "wrong-output");
    assert_int_equal(kiln_pool_verdicts(a, b, p, why, sizeof why), 0);
    assert_string_equal(p->status, "fail");
    assert_string_equal(p->code, "wrong-output");
    free(a);
    free(b);
    free(p);
}

/* A version 5 database (before pooling) read-only, then migrated. */
static void v5_database_migrates(void **state)
{
    (void)state;
    char path[] = "/tmp/test_pooled_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    sqlite3 *raw;
    assert_int_equal(sqlite3_open(path, &raw), SQLITE_OK);
    const char *v5 =
        "CREATE TABLE runs (id TEXT PRIMARY KEY, task TEXT NOT NULL, backend TEXT, dtype TEXT,"
        " grp TEXT, agent TEXT, model TEXT, seed INTEGER, branch TEXT, start_commit TEXT,"
        " head_commit TEXT, status TEXT, iterations_done INTEGER, budget_iterations INTEGER,"
        " drafts INTEGER, budget_seconds REAL, seconds_used REAL, budget_tokens INTEGER,"
        " tokens_used INTEGER, best_speedup REAL, started_at REAL, updated_at REAL,"
        " base_url TEXT, from_path TEXT, keep_margin REAL, max_regression REAL, objective TEXT,"
        " parents TEXT);"
        "CREATE TABLE candidates (run TEXT NOT NULL, n INTEGER NOT NULL, iteration INTEGER,"
        " draft INTEGER, parent TEXT, commit_id TEXT, proposer TEXT, state TEXT, hypothesis TEXT,"
        " job TEXT, confirm_job TEXT, record_job TEXT, status TEXT, stage TEXT, code TEXT,"
        " reason TEXT, decision TEXT, speedup REAL, confirm_speedup REAL,"
        " speedup_vs_baseline REAL, roofline REAL, verdict TEXT, confirm_verdict TEXT,"
        " record_verdict TEXT, source TEXT, updated_at REAL, why TEXT, answer TEXT,"
        " speedup_lo REAL, speedup_hi REAL, confirm_lo REAL, confirm_hi REAL, baseline_lo REAL,"
        " baseline_hi REAL, PRIMARY KEY (run, n));"
        "CREATE TABLE archive (run TEXT NOT NULL, cell TEXT NOT NULL, n INTEGER NOT NULL,"
        " commit_id TEXT, speedup REAL, lo REAL, hi REAL, updated_at REAL, PRIMARY KEY (run, cell));"
        "INSERT INTO runs (id, task, backend, dtype, status) VALUES ('r1', 'rmsnorm', 'cpu', 'f32',"
        " 'done');"
        "INSERT INTO candidates (run, n, state, decision, commit_id, speedup_vs_baseline,"
        " record_job, record_verdict, source) VALUES ('r1', 0, 'done', 'keep', 'c0', 1.5, 'j0',"
        " '{\"old\":1}', 'src');"
        "PRAGMA user_version=5;";
    assert_int_equal(sqlite3_exec(raw, v5, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(raw);
    kiln_error e = {0};
    sqlite3 *db;
    kiln_cand *rows;
    kiln_kept_record *k;
    int n;
    /* Read-only (the review commands): no pooled figures, one record. */
    assert_int_equal(kiln_db_open_readonly(&db, path, &e), 0);
    assert_int_equal(kiln_db_cand_rows(db, "r1", &rows, &n, &e), 0);
    assert_int_equal(n, 1);
    assert_int_equal(rows[0].pooled, 0);
    assert_float_equal(rows[0].pooled_speedup, 0, 0);
    free(rows);
    assert_int_equal(kiln_db_kept_records(db, "f32", "cpu", &k, &n, &e), 0);
    assert_int_equal(n, 1);
    assert_null(k[0].reverdict);
    kiln_kept_records_free(k, n);
    char *rec = kiln_db_record_verdict_at(db, "r1", "c0");
    assert_string_equal(rec, "{\"old\":1}");
    free(rec);
    kiln_db_close(db);
    /* Opened for writing: migrated, rows kept, the new columns work. */
    assert_int_equal(kiln_db_open(&db, path, &e), 0);
    kiln_cand *cs;
    assert_int_equal(kiln_db_cands(db, "r1", &cs, &n, &e), 0);
    assert_int_equal(n, 1);
    assert_float_equal(cs[0].speedup_vs_baseline, 1.5, 1e-12);
    assert_string_equal(cs[0].rerecord_job, "");
    snprintf(cs[0].rerecord_job, sizeof cs[0].rerecord_job, "j1");
    cs[0].pooled_speedup = 1.21;
    cs[0].pooled_lo = 1.1;
    cs[0].pooled_hi = 1.3;
    assert_int_equal(kiln_db_cand_upsert(db, &cs[0], &e), 0);
    free(cs);
    assert_int_equal(kiln_db_cand_verdict(db, "r1", 0, "rerecord", "{\"again\":1}", &e), 0);
    assert_int_equal(kiln_db_cand_verdict(db, "r1", 0, "pooled", "{\"pooled\":1}", &e), 0);
    assert_int_equal(kiln_db_cands(db, "r1", &cs, &n, &e), 0);
    assert_string_equal(cs[0].rerecord_job, "j1");
    assert_float_equal(cs[0].pooled_speedup, 1.21, 1e-12);
    free(cs);
    rec = kiln_db_record_verdict_at(db, "r1", "c0");   /* the pooled one, now */
    assert_string_equal(rec, "{\"pooled\":1}");
    free(rec);
    assert_int_equal(kiln_db_cand_rows(db, "r1", &rows, &n, &e), 0);
    assert_int_equal(rows[0].pooled, 1);
    assert_float_equal(rows[0].pooled_hi, 1.3, 1e-12);
    free(rows);
    assert_int_equal(kiln_db_kept_records(db, "f32", "cpu", &k, &n, &e), 0);
    assert_string_equal(k[0].reverdict, "{\"again\":1}");
    assert_string_equal(k[0].rejob, "j1");
    kiln_kept_records_free(k, n);
    kiln_db_close(db);
    assert_int_equal(sqlite3_open(path, &raw), SQLITE_OK);
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(raw, "PRAGMA user_version", -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int(st, 0), KILN_DB_SCHEMA_VERSION);
    sqlite3_finalize(st);
    sqlite3_close(raw);
    unlink(path);
    char wal[64];
    snprintf(wal, sizeof wal, "%s-wal", path);
    unlink(wal);
    snprintf(wal, sizeof wal, "%s-shm", path);
    unlink(wal);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pool_is_neither_record),
        cmocka_unit_test(apart_takes_the_lower),
        cmocka_unit_test(once_and_failures),
        cmocka_unit_test(v5_database_migrates),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
