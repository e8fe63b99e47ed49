/* test_keep_rule.c - the search's keep rule (verifier/measure/keep_rule.c): the
 * interval arithmetic (a shape's interval measured or from its spreads, the
 * geomean's from the shapes', the min's), the rule's edge cases (missing
 * intervals, a single shape, one regressing shape under a good geomean, an
 * objective shape that was not timed), the flags' parsing, and the run
 * database's migration of a version 2 database to the rule's columns. */
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

#include "keep_rule.h"
#include "rundb.h"

static const kiln_keep_opts defaults = {0.02, 0.03, "geomean"};

/* Shape i timed at speedup sp; lo/hi 0: no interval, the spreads are
 * +-spread of both medians (half 20-80 spread = spread). */
static void shape(kiln_verdict *v, double sp, double lo, double hi, double spread)
{
    kiln_shape_result *r = &v->results[v->nresults];
    snprintf(r->id, sizeof r->id, "v%d", ++v->nresults);
    r->visible = r->timed = 1;
    r->speedup = sp;
    r->speedup_lo = lo;
    r->speedup_hi = hi;
    r->base = (kiln_time_stats){1000 * sp, 1000 * sp * (1 - spread), 1000 * sp * (1 + spread), 40};
    r->cand = (kiln_time_stats){1000, 1000 * (1 - spread), 1000 * (1 + spread), 40};
}

static kiln_verdict *verdict(void)
{
    kiln_verdict *v = calloc(1, sizeof *v);
    assert_non_null(v);
    snprintf(v->status, sizeof v->status, "pass");
    return v;
}

static void shape_interval_measured_or_spread(void **state)
{
    (void)state;
    kiln_verdict *v = verdict();
    shape(v, 1.10, 1.05, 1.16, 0.01);
    shape(v, 1.10, 0, 0, 0.03);
    kiln_interval a = kiln_shape_interval(&v->results[0]);
    assert_true(a.measured);
    assert_float_equal(a.lo, 1.05, 1e-12);
    assert_float_equal(a.hi, 1.16, 1e-12);
    /* No interval: both spreads of 3% combine to sqrt(2) x 3% in log space. */
    kiln_interval b = kiln_shape_interval(&v->results[1]);
    assert_false(b.measured);
    assert_float_equal(log(b.point / b.lo), sqrt(2) * 0.03, 1e-9);
    assert_float_equal(log(b.hi / b.point), sqrt(2) * 0.03, 1e-9);
    /* No timings at all: a 100% half-width per side, deciding nothing. */
    v->results[1].cand.median_ns = v->results[1].base.median_ns = 0;
    b = kiln_shape_interval(&v->results[1]);
    assert_float_equal(log(b.point / b.lo), sqrt(2), 1e-9);
    free(v);
}

static void geomean_interval_combines_independent_errors(void **state)
{
    (void)state;
    kiln_verdict *v = verdict();
    shape(v, 1.2, 1.2 * exp(-0.04), 1.2 * exp(0.04), 0);
    shape(v, 1.0, exp(-0.03), exp(0.03), 0);
    kiln_interval g;
    assert_int_equal(kiln_geomean_interval(v, &g), 2);
    assert_true(g.measured);
    assert_float_equal(g.point, sqrt(1.2), 1e-9);
    /* sqrt(0.04^2 + 0.03^2) / 2 = 0.025 */
    assert_float_equal(log(g.hi / g.point), 0.025, 1e-9);
    assert_float_equal(log(g.point / g.lo), 0.025, 1e-9);
    /* The verifier's own geomean is the centre where the verdict has one. */
    v->geomean_speedup = 1.1;
    kiln_geomean_interval(v, &g);
    assert_float_equal(g.point, 1.1, 1e-12);
    /* A mix of measured and spread intervals is not "measured". */
    shape(v, 1.0, 0, 0, 0.01);
    kiln_geomean_interval(v, &g);
    assert_false(g.measured);
    /* Hidden or untimed shapes do not count. */
    v->results[2].visible = 0;
    assert_int_equal(kiln_geomean_interval(v, &g), 2);
    free(v);
}

static void min_and_shape_objectives(void **state)
{
    (void)state;
    kiln_verdict *v = verdict();
    shape(v, 1.5, 1.4, 1.6, 0);
    shape(v, 1.1, 1.0, 1.3, 0);
    kiln_interval x;
    char why[160];
    assert_int_equal(kiln_objective_interval(v, "min", &x, why, sizeof why), 0);
    assert_float_equal(x.point, 1.1, 1e-12);
    assert_float_equal(x.lo, 1.0, 1e-12);
    assert_float_equal(x.hi, 1.3, 1e-12);
    assert_int_equal(kiln_objective_interval(v, "v1", &x, why, sizeof why), 0);
    assert_float_equal(x.lo, 1.4, 1e-12);
    /* A shape the verdict did not time (left out by preconditions). */
    v->results[1].timed = 0;
    assert_int_equal(kiln_objective_interval(v, "v2", &x, why, sizeof why), -1);
    assert_non_null(strstr(why, "v2 has no timed visible shape"));
    v->nresults = 0;
    assert_int_equal(kiln_objective_interval(v, "geomean", &x, why, sizeof why), -1);
    free(v);
}

static void rule_keeps_only_above_the_margin(void **state)
{
    (void)state;
    char why[400];
    kiln_verdict *v = verdict();
    shape(v, 1.08, 1.04, 1.12, 0);   /* a single shape: its interval is the geomean's */
    assert_int_equal(kiln_keep_rule(v, &defaults, why, sizeof why), 1);
    assert_string_equal(why, "kept: geomean 1.080x [1.040, 1.120] clears 2%, no shape surely "
                             "below 0.970x");
    v->results[0].speedup_lo = 1.01;   /* the point clears 2%, the lower end does not */
    assert_int_equal(kiln_keep_rule(v, &defaults, why, sizeof why), 0);
    assert_string_equal(why, "reverted: geomean 1.080x [1.010, 1.120] does not clear 2%");
    kiln_keep_opts zero = {0, 0.03, "geomean"};
    assert_int_equal(kiln_keep_rule(v, &zero, why, sizeof why), 1);
    snprintf(v->status, sizeof v->status, "fail");
    snprintf(v->code, sizeof v->code, "wrong-output");
    assert_int_equal(kiln_keep_rule(v, &zero, why, sizeof why), 0);
    assert_non_null(strstr(why, "reverted: fail"));
    free(v);
}

static void rule_reverts_a_regression_under_a_good_geomean(void **state)
{
    (void)state;
    char why[400];
    kiln_verdict *v = verdict();
    for (int i = 0; i < 5; i++)
        shape(v, 1.5, 1.45, 1.55, 0);
    shape(v, 0.95, 0.93, 0.96, 0);   /* surely 4% slower */
    assert_int_equal(kiln_keep_rule(v, &defaults, why, sizeof why), 0);
    assert_non_null(strstr(why, "reverted: v6 0.950x [0.930, 0.960] regresses by more than 3% "
                                "(geomean "));
    /* The same point with an interval reaching 0.97: not surely a regression. */
    v->results[5].speedup_hi = 0.98;
    assert_int_equal(kiln_keep_rule(v, &defaults, why, sizeof why), 1);
    /* --max-regression 10%: 0.96 is allowed. */
    v->results[5].speedup_hi = 0.96;
    kiln_keep_opts loose = {0.02, 0.10, "geomean"};
    assert_int_equal(kiln_keep_rule(v, &loose, why, sizeof why), 1);
    /* The min objective sees the slow shape as its value. */
    kiln_keep_opts by_min = {0.02, 0.10, "min"};
    assert_int_equal(kiln_keep_rule(v, &by_min, why, sizeof why), 0);
    assert_non_null(strstr(why, "reverted: min 0.950x"));
    /* Two regressions are both named. */
    v->results[0].speedup = 0.5, v->results[0].speedup_lo = 0.4, v->results[0].speedup_hi = 0.6;
    assert_int_equal(kiln_keep_rule(v, &defaults, why, sizeof why), 0);
    assert_non_null(strstr(why, "v1 0.500x [0.400, 0.600], v6 0.950x [0.930, 0.960] regress by"));
    free(v);
}

static void rule_names_the_margin_before_a_regression(void **state)
{
    (void)state;
    char why[400];
    kiln_verdict *v = verdict();
    /* As fast as its parent, and one shape surely 12% slower (noise on a
     * loaded machine, or real): not faster is the reason, the shape beside. */
    for (int i = 0; i < 5; i++)
        shape(v, 1.0, 0.97, 1.03, 0);
    shape(v, 0.88, 0.84, 0.92, 0);
    assert_int_equal(kiln_keep_rule(v, &defaults, why, sizeof why), 0);
    assert_non_null(strstr(why, "reverted: geomean "));
    assert_non_null(strstr(why, " does not clear 2% (and v6 is surely below 0.970x)"));
    /* Two such shapes, by name only. */
    v->results[0].speedup = 0.9, v->results[0].speedup_lo = 0.85, v->results[0].speedup_hi = 0.95;
    assert_int_equal(kiln_keep_rule(v, &defaults, why, sizeof why), 0);
    assert_non_null(strstr(why, " does not clear 2% (and v1, v6 are surely below 0.970x)"));
    free(v);
}

static void rule_without_intervals_uses_the_spreads(void **state)
{
    (void)state;
    char why[400];
    kiln_verdict *v = verdict();
    shape(v, 1.10, 0, 0, 0.02);
    shape(v, 1.10, 0, 0, 0.02);
    assert_int_equal(kiln_keep_rule(v, &defaults, why, sizeof why), 1);
    /* Wide spreads (20%) hide a 10% gain: reverted. */
    v->nresults = 0;
    for (int i = 0; i < 2; i++)
        shape(v, 1.10, 0, 0, 0.20);
    assert_int_equal(kiln_keep_rule(v, &defaults, why, sizeof why), 0);
    assert_non_null(strstr(why, "does not clear 2%"));
    free(v);
}

static void flags_parse(void **state)
{
    (void)state;
    kiln_error e;
    double x = -1;
    assert_int_equal(kiln_keep_parse_percent("--keep-margin", "2%", &x, &e), 0);
    assert_float_equal(x, 0.02, 1e-12);
    assert_int_equal(kiln_keep_parse_percent("--keep-margin", "0%", &x, &e), 0);
    assert_float_equal(x, 0, 1e-12);
    assert_int_equal(kiln_keep_parse_percent("--keep-margin", "2.5%", &x, &e), 0);
    assert_float_equal(x, 0.025, 1e-12);
    const char *bad[] = {"2", "0.02", "%", "", "-1%", "100%", "2%%", "2 %", "nan%", "inf%"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_int_equal(kiln_keep_parse_percent("--max-regression", bad[i], &x, &e), -1);
        assert_non_null(strstr(e.msg, "--max-regression"));
    }
    kiln_task t;
    memset(&t, 0, sizeof t);
    snprintf(t.name, sizeof t.name, "rmsnorm");
    t.ngroups = 1;
    snprintf(t.groups[0].name, sizeof t.groups[0].name, "decode");
    t.groups[0].nvisible = 6;
    const char *good[] = {"geomean", "min", "v1", "v6"};
    for (size_t i = 0; i < 4; i++)
        assert_int_equal(kiln_keep_check_objective(good[i], &t, 0, "cpu", &e), 0);
    const char *nope[] = {"v0", "v7", "v", "v01", "v1x", "mean", "", "h1"};
    for (size_t i = 0; i < sizeof nope / sizeof *nope; i++) {
        assert_int_equal(kiln_keep_check_objective(nope[i], &t, 0, "cpu", &e), -1);
        assert_non_null(strstr(e.msg, "(v1 to v6)"));
    }
}

/* A version 2 database (runs and candidates as kiln wrote them before the
 * keep rule) opens, gains the columns, keeps its rows, and reads back -1
 * and "" for the rule it never had; read-only review of an unmigrated one
 * still reads its candidates. */
static void v2_database_migrates(void **state)
{
    (void)state;
    char path[] = "/tmp/test_keep_rule_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    sqlite3 *raw;
    assert_int_equal(sqlite3_open(path, &raw), SQLITE_OK);
    const char *v2 =
        "CREATE TABLE runs (id TEXT PRIMARY KEY, task TEXT NOT NULL, backend TEXT, dtype TEXT,"
        " grp TEXT, agent TEXT, model TEXT, seed INTEGER, branch TEXT, start_commit TEXT,"
        " head_commit TEXT, status TEXT, iterations_done INTEGER, budget_iterations INTEGER,"
        " drafts INTEGER, budget_seconds REAL, seconds_used REAL, budget_tokens INTEGER,"
        " tokens_used INTEGER, best_speedup REAL, started_at REAL, updated_at REAL,"
        " base_url TEXT, from_path TEXT);"
        "CREATE TABLE candidates (run TEXT NOT NULL, n INTEGER NOT NULL, iteration INTEGER,"
        " draft INTEGER, parent TEXT, commit_id TEXT, proposer TEXT, state TEXT, hypothesis TEXT,"
        " job TEXT, confirm_job TEXT, record_job TEXT, status TEXT, stage TEXT, code TEXT,"
        " reason TEXT, decision TEXT, speedup REAL, confirm_speedup REAL,"
        " speedup_vs_baseline REAL, roofline REAL, verdict TEXT, confirm_verdict TEXT,"
        " record_verdict TEXT, source TEXT, updated_at REAL, PRIMARY KEY (run, n));"
        "INSERT INTO runs (id, task, status) VALUES ('r1', 'rmsnorm', 'done');"
        "INSERT INTO candidates (run, n, state, decision, speedup) VALUES ('r1', 0, 'done',"
        " 'keep', 1.5);"
        "PRAGMA user_version=2;";
    assert_int_equal(sqlite3_exec(raw, v2, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(raw);
    kiln_error e = {0};
    sqlite3 *db;
    kiln_cand *rows;
    int n;
    assert_int_equal(kiln_db_open_readonly(&db, path, &e), 0);
    assert_int_equal(kiln_db_cand_rows(db, "r1", &rows, &n, &e), 0);
    assert_int_equal(n, 1);
    assert_string_equal(rows[0].why, "");
    free(rows);
    kiln_run r;
    assert_int_equal(kiln_db_run_get(db, "r1", &r, &e), 1);
    assert_true(r.keep_margin < 0);
    kiln_db_close(db);
    assert_int_equal(kiln_db_open(&db, path, &e), 0);
    assert_int_equal(kiln_db_run_get(db, "r1", &r, &e), 1);
    assert_true(r.keep_margin < 0 && r.max_regression < 0);
    assert_string_equal(r.objective, "");
    kiln_cand *cs;
    assert_int_equal(kiln_db_cands(db, "r1", &cs, &n, &e), 0);
    assert_int_equal(n, 1);
    assert_float_equal(cs[0].speedup, 1.5, 1e-12);
    cs[0].speedup_lo = 1.4;
    snprintf(cs[0].why, sizeof cs[0].why, "kept: the start kernel");
    assert_int_equal(kiln_db_cand_upsert(db, &cs[0], &e), 0);
    free(cs);
    r.keep_margin = 0.02;
    snprintf(r.objective, sizeof r.objective, "v3");
    assert_int_equal(kiln_db_run_update(db, &r, &e), 0);
    assert_int_equal(kiln_db_run_get(db, "r1", &r, &e), 1);
    assert_float_equal(r.keep_margin, 0.02, 1e-12);
    assert_string_equal(r.objective, "v3");
    assert_int_equal(kiln_db_cand_rows(db, "r1", &rows, &n, &e), 0);
    assert_string_equal(rows[0].why, "kept: the start kernel");
    assert_float_equal(rows[0].speedup_lo, 1.4, 1e-12);
    free(rows);
    kiln_db_close(db);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(shape_interval_measured_or_spread),
        cmocka_unit_test(geomean_interval_combines_independent_errors),
        cmocka_unit_test(min_and_shape_objectives),
        cmocka_unit_test(rule_keeps_only_above_the_margin),
        cmocka_unit_test(rule_reverts_a_regression_under_a_good_geomean),
        cmocka_unit_test(rule_names_the_margin_before_a_regression),
        cmocka_unit_test(rule_without_intervals_uses_the_spreads),
        cmocka_unit_test(flags_parse),
        cmocka_unit_test(v2_database_migrates),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
