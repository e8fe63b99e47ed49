/* test_lessons.c - unit tests of the knowledge layer (knowledge/): schema
 * creation and in-place upgrade from a version-1 workspace database,
 * recording notes and lessons from verdicts, tag-prefix scope, FTS5
 * escaping of hostile text, outcomes and confidence, the prompt budget,
 * a reader beside a writer (WAL), corrupt and foreign files, distill,
 * export/import, one run's lessons as kiln status and report read them;
 * the technique (word-boundary summary), width classes, the schema-9
 * structure and its in-place upgrade, and confidence moved by a
 * technique's confirmed outcomes across runs. Databases are temporary files opened through
 * harness/rundb.c's kiln_db_open, as the kiln command opens them. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "lessons.h"
#include "rundb.h"

/* harness/rundb.c's version-1 schema, verbatim: the database an older kiln
 * left behind. */
static const char schema_v1[] =
    "CREATE TABLE IF NOT EXISTS runs ("
    " id TEXT PRIMARY KEY, task TEXT NOT NULL, backend TEXT, dtype TEXT, grp TEXT, agent TEXT,"
    " model TEXT, seed INTEGER, branch TEXT, start_commit TEXT, head_commit TEXT, status TEXT,"
    " iterations_done INTEGER, budget_iterations INTEGER, drafts INTEGER, budget_seconds REAL,"
    " seconds_used REAL, budget_tokens INTEGER, tokens_used INTEGER, best_speedup REAL,"
    " started_at REAL, updated_at REAL);"
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

typedef struct fixture {
    char dir[64], path[128];
    sqlite3 *db;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    kiln_error err = {0};
    snprintf(f->dir, sizeof f->dir, "/tmp/kiln-lessons-XXXXXX");
    if (!mkdtemp(f->dir))
        return -1;
    snprintf(f->path, sizeof f->path, "%s/kiln.db", f->dir);
    if (kiln_db_open(&f->db, f->path, &err) < 0) {
        fprintf(stderr, "%s\n", err.msg);
        return -1;
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    char p[160];
    kiln_db_close(f->db);
    const char *suffix[] = {"", "-wal", "-shm"};
    for (int i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s%s", f->path, suffix[i]);
        unlink(p);
    }
    rmdir(f->dir);
    free(f);
    return 0;
}

static int user_version(sqlite3 *db)
{
    sqlite3_stmt *st;
    int v = -1;
    sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL);
    if (sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    return v;
}

static long long add(sqlite3 *db, const char *sit, const char *act, const char *tag1,
                     const char *tag2, double conf)
{
    kiln_lesson l;
    long long id = 0;
    kiln_error err = {0};
    kiln_lesson_init(&l);
    snprintf(l.situation, sizeof l.situation, "%s", sit);
    snprintf(l.action, sizeof l.action, "%s", act);
    if (tag1)
        snprintf(l.tags[l.ntags++], KILN_TAG_MAX, "%s", tag1);
    if (tag2)
        snprintf(l.tags[l.ntags++], KILN_TAG_MAX, "%s", tag2);
    l.confidence = conf;
    if (kiln_lesson_add(db, &l, &id, &err) < 0)
        fail_msg("add: %s", err.msg);
    return id;
}

static kiln_lesson get(sqlite3 *db, long long id)
{
    kiln_lesson l;
    kiln_error err = {0};
    assert_int_equal(kiln_lesson_get(db, id, &l, &err), 1);
    return l;
}

/* ---- schema -------------------------------------------------------------- */

static void test_schema_fresh(void **state)
{
    fixture *f = *state;
    kiln_error err = {0};
    assert_int_equal(user_version(f->db), KILN_DB_SCHEMA_VERSION);
    assert_int_equal(KILN_DB_SCHEMA_VERSION, 9);
    /* Idempotent: running it again changes nothing and fails nothing. */
    assert_int_equal(kiln_knowledge_schema(f->db, &err), 0);
    assert_int_equal(kiln_knowledge_schema(f->db, &err), 0);
    /* Reopening an up-to-date database works too. */
    sqlite3 *again = NULL;
    assert_int_equal(kiln_db_open(&again, f->path, &err), 0);
    kiln_db_close(again);
}

static void test_upgrade_from_v1(void **state)
{
    fixture *f = *state;
    char path[160];
    sqlite3 *db = NULL;
    kiln_error err = {0};
    snprintf(path, sizeof path, "%s/v1.db", f->dir);
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, schema_v1, NULL, NULL, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "INSERT INTO runs (id, task) VALUES ('r1', 'rmsnorm');"
                                      "INSERT INTO candidates (run, n, hypothesis) VALUES ('r1', 0, 'start');"
                                      "PRAGMA user_version=1;", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);

    assert_int_equal(kiln_db_open(&db, path, &err), 0);
    assert_int_equal(user_version(db), KILN_DB_SCHEMA_VERSION);
    kiln_run r;
    assert_int_equal(kiln_db_run_get(db, "r1", &r, &err), 1);
    assert_string_equal(r.task, "rmsnorm");
    long long id = add(db, "loading bf16 rows", "use vectorized loads", "op/norm", NULL, -1);
    assert_true(id > 0);
    kiln_lesson_filter flt = {.query = "vectorized"};
    kiln_lesson *ls = NULL;
    int n = 0;
    assert_int_equal(kiln_lessons_list(db, &flt, &ls, &n, &err), 0);
    assert_int_equal(n, 1);
    free(ls);
    kiln_db_close(db);
    /* A second open finds version 2 and leaves it alone. */
    assert_int_equal(kiln_db_open(&db, path, &err), 0);
    assert_int_equal(get(db, id).id, id);
    kiln_db_close(db);
    unlink(path);
}

/* ---- record -------------------------------------------------------------- */

static kiln_lesson_event event(const char *status, double speedup, const char *hyp, int cand)
{
    kiln_lesson_event ev = {.run = "r1", .candidate = cand, .task = "rmsnorm", .dtype = "f32",
                            .backend = "cpu", .group = "decode", .proposer = "tune",
                            .hypothesis = hyp, .status = status, .stage = "", .code = "",
                            .reason = "", .speedup = speedup, .noise = 0.02, .decision = "revert",
                            .pooled = 1};
    return ev;
}

static void test_record(void **state)
{
    fixture *f = *state;
    kiln_error err = {0};
    kiln_lesson_event ev = event("fail", 0, "UNROLL 1 -> 8", 1);
    ev.stage = "compile";
    ev.code = "compile-error";
    ev.reason = "error: 'x' undeclared\n  at line 3";
    long long note = kiln_lessons_record(f->db, &ev, &err);
    assert_true(note > 0);
    kiln_lesson l = get(f->db, note);
    assert_string_equal(l.kind, "note");
    assert_non_null(strstr(l.action, "compile"));
    assert_null(strchr(l.action, '\n'));
    assert_int_equal(kiln_lessons_record(f->db, &ev, &err), note);   /* resumed: same entry */

    ev = event("pass", 1.5, "UNROLL 1 -> 8", 2);
    long long helped = kiln_lessons_record(f->db, &ev, &err);
    assert_true(helped > 0);
    l = get(f->db, helped);
    assert_string_equal(l.kind, "lesson");
    assert_string_equal(l.source, "measured");
    assert_non_null(strstr(l.action, "UNROLL 1 -> 8 made it 1.50x faster"));
    assert_non_null(strstr(l.situation, "rmsnorm f32 (decode)"));
    assert_int_equal(l.ntags, 4);
    assert_string_equal(l.tags[0], "backend/cpu");
    assert_string_equal(l.tags[1], "dtype/f32");
    assert_string_equal(l.tags[2], "op/norm/rmsnorm");
    assert_string_equal(l.tags[3], "shape/decode");
    assert_true(l.effect > 1.49 && l.effect < 1.51);

    ev = event("pass", 0.7, "VEC 8 -> 1", 3);
    ev.proposer = "openai";
    long long hurt = kiln_lessons_record(f->db, &ev, &err);
    l = get(f->db, hurt);
    assert_non_null(strstr(l.action, "1.43x slower; avoid"));
    assert_string_equal(l.source, "model");
    assert_true(l.confidence > 0.39 && l.confidence < 0.41);

    ev = event("pass", 1.02, "BLOCK 64 -> 128", 4);    /* within 2 x noise */
    assert_int_equal(kiln_lessons_record(f->db, &ev, &err), 0);
    ev = event("pass", 2.0, "   ", 5);                  /* no hypothesis: no action */
    assert_int_equal(kiln_lessons_record(f->db, &ev, &err), 0);
    ev = event("fail", 0, "", 6);
    assert_int_equal(kiln_lessons_record(f->db, &ev, &err), 0);

    /* A single measurement (screened out before any re-time) teaches no
     * speed lesson however clear, but a failure still teaches its note. */
    ev = event("pass", 3.0, "VEC 1 -> 16", 7);
    ev.pooled = 0;
    assert_int_equal(kiln_lessons_record(f->db, &ev, &err), 0);
    ev = event("pass", 0.2, "VEC 1 -> 16", 7);
    ev.pooled = 0;
    assert_int_equal(kiln_lessons_record(f->db, &ev, &err), 0);
    ev = event("fail", 0, "VEC 1 -> 16", 7);
    ev.pooled = 0;
    ev.stage = "visible";
    ev.code = "wrong-output";
    assert_true(kiln_lessons_record(f->db, &ev, &err) > 0);
    ev = event("pass", 3.0, "VEC 1 -> 16", 7);   /* its re-time pooled: now a lesson */
    assert_true(kiln_lessons_record(f->db, &ev, &err) > 0);
}

/* A technique is the knob changes as they are, or a model's hypothesis on
 * one line cut after a whole word with "..."; never mid-word. */
static void test_technique(void **state)
{
    (void)state;
    char out[64];
    assert_true(kiln_lesson_is_knobs("ACC 4 -> 16, ROWS 4 -> 1"));
    assert_true(kiln_lesson_is_knobs("UNROLL 1 -> 8"));
    assert_false(kiln_lesson_is_knobs("use float4 loads -> faster"));
    assert_false(kiln_lesson_is_knobs("ACC 4 -> 16, then unroll the loop"));
    kiln_lesson_technique("ACC 4 -> 16, ROWS 4 -> 1", 40, out, sizeof out);
    assert_string_equal(out, "ACC 4 -> 16, ROWS 4 -> 1");
    kiln_lesson_technique("  Vectorize\nthe   loads with float4 ", 0, out, sizeof out);
    assert_string_equal(out, "Vectorize the loads with float4");
    /* 30 bytes: "Vectorize the loads with" fits before "..." (27), "float4" does not. */
    kiln_lesson_technique("Vectorize the loads with float4 and keep f32 sums", 30, out, sizeof out);
    assert_string_equal(out, "Vectorize the loads with...");
    /* A comma before the cut goes, so the summary does not end ",...". */
    kiln_lesson_technique("Tile rows, then reduce with shuffles", 16, out, sizeof out);
    assert_string_equal(out, "Tile rows...");
    /* The cap bounds it like the limit. */
    char small[12];
    kiln_lesson_technique("one two three four five", 0, small, sizeof small);
    assert_string_equal(small, "one two...");
    assert_string_equal(kiln_lesson_width_class(1024), "narrow");
    assert_string_equal(kiln_lesson_width_class(1025), "mid");
    assert_string_equal(kiln_lesson_width_class(8191), "mid");
    assert_string_equal(kiln_lesson_width_class(8192), "wide");
    assert_string_equal(kiln_lesson_width_class(0), "");
}

/* A long model hypothesis is named whole in `change` and cut at a word
 * boundary in the action; a suspect or error verdict files no note. */
static void test_record_technique(void **state)
{
    fixture *f = *state;
    kiln_error err = {0};
    char hyp[700] = "";
    while (strlen(hyp) < 600)
        strcat(hyp, "vectorize loads ");
    kiln_lesson_event ev = event("pass", 1.5, hyp, 11);
    ev.proposer = "openai";
    long long id = kiln_lessons_record(f->db, &ev, &err);
    assert_true(id > 0);
    kiln_lesson l = get(f->db, id);
    const char *cut = strstr(l.action, "... made it 1.50x faster");
    assert_non_null(cut);
    assert_true(cut - l.action <= 160);
    assert_true(cut[-1] == 'e' || cut[-1] == 's');   /* "vectorize" or "loads": whole words */
    assert_true(strlen(l.change) < 512);
    assert_non_null(strstr(l.change, "..."));

    /* A lesson of a narrow run is shown to narrow runs only; one learned
     * without a width class, to every width. */
    ev = event("pass", 1.6, "ROWS 4 -> 1", 15);
    ev.width = kiln_lesson_width_class(512);
    long long narrow = kiln_lessons_record(f->db, &ev, &err);
    l = get(f->db, narrow);
    assert_int_equal(l.ntags, 5);
    assert_string_equal(l.tags[4], "width/narrow");
    char scope[8][KILN_TAG_MAX];
    const char *tp[8];
    for (int w = 0; w < 2; w++) {
        int ns = kiln_lesson_scope("rmsnorm", "f32", "cpu", "decode", NULL, scope);
        ns = kiln_lesson_scope_width(w ? "wide" : "narrow", scope, ns);
        for (int i = 0; i < ns; i++)
            tp[i] = scope[i];
        kiln_lesson_query q = {.tags = tp, .ntags = ns, .context = "rows", .max_lessons = 10,
                               .budget_chars = 8000};
        char *text = NULL;
        long long ids[16];
        int n = 0, seen = 0, seen_plain = 0;
        assert_int_equal(kiln_lessons_for_prompt(f->db, &q, &text, ids, 16, &n, &err), 0);
        for (int i = 0; i < n; i++)
            seen += ids[i] == narrow, seen_plain += ids[i] == id;
        assert_int_equal(seen, w ? 0 : 1);
        assert_int_equal(seen_plain, 1);
        free(text);
    }

    ev = event("suspect", 0, "ROWS 4 -> 1", 12);
    ev.stage = "timing";
    ev.code = "baseline-below-roofline";
    assert_int_equal(kiln_lessons_record(f->db, &ev, &err), 0);
    ev = event("error", 0, "ROWS 4 -> 1", 13);
    assert_int_equal(kiln_lessons_record(f->db, &ev, &err), 0);
    ev = event("fail", 0, "ROWS 4 -> 1", 14);
    ev.code = "wrong-output";
    assert_true(kiln_lessons_record(f->db, &ev, &err) > 0);
}

static double confidence_of(sqlite3 *db, long long id)
{
    kiln_lesson l = get(db, id);
    return l.confidence;
}

/* A confirmed outcome moves the lessons of the technique the candidate
 * tried, within a run and across runs of the workspace: a kept re-time
 * raises a "faster" lesson, a correctness failure lowers it; a suspect
 * (a fast parent) moves nothing; another width class is another lesson. */
static void test_technique_confidence(void **state)
{
    fixture *f = *state;
    kiln_error err = {0};
    kiln_lesson_event ev = event("pass", 1.5, "ACC 4 -> 16, ROWS 4 -> 1", 1);
    ev.width = "narrow";
    long long first = kiln_lessons_record(f->db, &ev, &err);
    ev.width = "wide";
    ev.candidate = 2;
    long long wide = kiln_lessons_record(f->db, &ev, &err);
    assert_true(first > 0 && wide > 0);
    kiln_lesson_decision kept1 = {"r1", 1, "pass", "plausibility", "ok", "keep", "kept", 1.6, 1};
    assert_int_equal(kiln_lessons_decided(f->db, &kept1, &err), 0);
    assert_true(fabs(confidence_of(f->db, first) - 0.5) < 1e-9);   /* its own evidence */

    /* Run 2 tries the same knobs at the same width and keeps them. */
    ev = event("pass", 1.4, "ACC 4 -> 16, ROWS 4 -> 1", 1);
    ev.run = "r2";
    ev.width = "narrow";
    long long second = kiln_lessons_record(f->db, &ev, &err);
    kiln_lesson_decision kept2 = {"r2", 1, "pass", "plausibility", "ok", "keep", "kept", 1.5, 1};
    assert_int_equal(kiln_lessons_decided(f->db, &kept2, &err), 0);
    assert_true(fabs(confidence_of(f->db, first) - 0.6) < 1e-9);
    assert_int_equal(get(f->db, first).helped, 1);
    assert_true(fabs(confidence_of(f->db, second) - 0.5) < 1e-9);
    assert_true(fabs(confidence_of(f->db, wide) - 0.5) < 1e-9);
    assert_int_equal(kiln_lessons_decided(f->db, &kept2, &err), 0);   /* once per candidate */
    assert_true(fabs(confidence_of(f->db, first) - 0.6) < 1e-9);

    /* A timing suspect caused by a fast parent files nothing and moves nothing. */
    ev = event("suspect", 0, "ACC 4 -> 16, ROWS 4 -> 1", 3);
    ev.run = "r2";
    ev.width = "narrow";
    ev.stage = "timing";
    ev.code = "baseline-below-roofline";
    assert_int_equal(kiln_lessons_record(f->db, &ev, &err), 0);
    kiln_lesson_decision sus = {"r2", 3, "suspect", "timing", "baseline-below-roofline", "revert",
                                "a number in doubt", 0, 0};
    assert_int_equal(kiln_lessons_decided(f->db, &sus, &err), 0);
    assert_true(fabs(confidence_of(f->db, first) - 0.6) < 1e-9);

    /* Wrong output counts against the technique: both narrow lessons lose 0.15. */
    ev = event("fail", 0, "ACC 4 -> 16, ROWS 4 -> 1", 4);
    ev.run = "r2";
    ev.width = "narrow";
    ev.stage = "visible";
    ev.code = "wrong-output";
    assert_true(kiln_lessons_record(f->db, &ev, &err) > 0);
    kiln_lesson_decision wrong = {"r2", 4, "fail", "visible", "wrong-output", "revert",
                                  "reverted", 0, 0};
    assert_int_equal(kiln_lessons_decided(f->db, &wrong, &err), 0);
    assert_true(fabs(confidence_of(f->db, first) - 0.45) < 1e-9);
    assert_true(fabs(confidence_of(f->db, second) - 0.35) < 1e-9);
    assert_int_equal(get(f->db, second).hurt, 1);
    assert_true(fabs(confidence_of(f->db, wide) - 0.5) < 1e-9);
}

/* 1 when column exists in lessons. */
static int has_lesson_column(sqlite3 *db, const char *column)
{
    sqlite3_stmt *st = NULL;
    sqlite3_prepare_v2(db, "SELECT 1 FROM pragma_table_info('lessons') WHERE name=?1", -1, &st, NULL);
    sqlite3_bind_text(st, 1, column, -1, SQLITE_STATIC);
    int found = sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    return found;
}

static void text_col(sqlite3 *db, const char *sql, char *out, size_t cap)
{
    sqlite3_stmt *st = NULL;
    out[0] = '\0';
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
        snprintf(out, cap, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
}

/* Schema 9: a lesson's structure (technique, task, dtype, width class, its
 * effect against the baseline, its evidence count); a version-8 lessons
 * table gains the columns in place. */
static void test_structure(void **state)
{
    fixture *f = *state;
    kiln_error err = {0};
    char got[256], sql[256];
    kiln_lesson_event ev = event("pass", 1.5, "ACC 4 -> 16, ROWS 4 -> 1", 1);
    ev.width = "mid";
    long long id = kiln_lessons_record(f->db, &ev, &err);
    assert_true(id > 0);
    snprintf(sql, sizeof sql, "SELECT technique||'|'||task||'|'||dtype||'|'||shape_class||'|'||"
             "evidence_n||'|'||coalesce(vs_baseline,'-') FROM lessons WHERE id=%lld", id);
    text_col(f->db, sql, got, sizeof got);
    assert_string_equal(got, "ACC 4 -> 16, ROWS 4 -> 1|rmsnorm|f32|mid|1|-");
    /* 2.4x the baseline against a parent at 1.6x: the change's own 1.5x. */
    assert_int_equal(kiln_lessons_baseline(f->db, "r1", 1, 2.4, 1.6, &err), 0);
    snprintf(sql, sizeof sql, "SELECT printf('%%.2f %%.2f', vs_baseline, baseline_effect) FROM"
             " lessons WHERE id=%lld", id);
    text_col(f->db, sql, got, sizeof got);
    assert_string_equal(got, "2.40 1.50");
    /* Run 2 keeps the same knobs: run 1's lesson has two pieces of evidence. */
    ev = event("pass", 1.3, "ACC 4 -> 16, ROWS 4 -> 1", 1);
    ev.run = "r2";
    ev.width = "mid";
    assert_true(kiln_lessons_record(f->db, &ev, &err) > 0);
    kiln_lesson_decision kept = {"r2", 1, "pass", "plausibility", "ok", "keep", "kept", 1.4, 1};
    assert_int_equal(kiln_lessons_decided(f->db, &kept, &err), 0);
    snprintf(sql, sizeof sql, "SELECT evidence_n FROM lessons WHERE id=%lld", id);
    text_col(f->db, sql, got, sizeof got);
    assert_string_equal(got, "2");

    /* A version-8 table (without the columns) is upgraded on open. */
    static const char *const cols[] = {"technique", "task", "dtype", "shape_class", "vs_baseline",
                                       "baseline_effect", "evidence_n"};
    for (size_t i = 0; i < sizeof cols / sizeof *cols; i++) {
        snprintf(sql, sizeof sql, "ALTER TABLE lessons DROP COLUMN %s", cols[i]);
        assert_int_equal(sqlite3_exec(f->db, sql, NULL, NULL, NULL), SQLITE_OK);
    }
    assert_int_equal(sqlite3_exec(f->db, "PRAGMA user_version=8", NULL, NULL, NULL), SQLITE_OK);
    assert_false(has_lesson_column(f->db, "technique"));
    kiln_db_close(f->db);
    assert_int_equal(kiln_db_open(&f->db, f->path, &err), 0);
    assert_int_equal(user_version(f->db), 9);
    for (size_t i = 0; i < sizeof cols / sizeof *cols; i++)
        assert_true(has_lesson_column(f->db, cols[i]));
    assert_int_equal(get(f->db, id).id, id);
}

/* With the pooled interval, the interval decides, not 1 +- 2*noise: a
 * loaded machine's per-call spread must not call a surely faster change
 * noise, and a wide interval around a large speedup teaches nothing. */
static void test_record_interval(void **state)
{
    fixture *f = *state;
    kiln_error err = {0};
    kiln_lesson_event ev = event("pass", 1.22, "ACC 1 -> 8", 1);
    ev.noise = 0.15;   /* 1 + 2*noise = 1.3: the old rule learned nothing */
    ev.decision = "keep";
    assert_int_equal(kiln_lessons_record(f->db, &ev, &err), 0);
    ev.lo = 1.09;
    ev.hi = 1.34;
    long long helped = kiln_lessons_record(f->db, &ev, &err);
    assert_true(helped > 0);
    kiln_lesson l = get(f->db, helped);
    assert_non_null(strstr(l.action, "ACC 1 -> 8 made it 1.22x faster"));
    assert_non_null(strstr(l.evidence, "\"interval\":[1.09,1.34]"));

    ev = event("pass", 1.5, "ROWS 1 -> 4", 2);   /* clear by the noise, not by the interval */
    ev.lo = 0.97;
    ev.hi = 2.1;
    assert_int_equal(kiln_lessons_record(f->db, &ev, &err), 0);

    ev = event("pass", 0.85, "VECT 1 -> 0", 3);
    ev.noise = 0.2;
    ev.lo = 0.8;
    ev.hi = 0.9;
    long long hurt = kiln_lessons_record(f->db, &ev, &err);
    assert_true(hurt > 0);
    l = get(f->db, hurt);
    assert_non_null(strstr(l.action, "VECT 1 -> 0 made it 1.18x slower; avoid"));
}

/* ---- tags -------------------------------------------------------------- */

static void test_tag_prefix(void **state)
{
    fixture *f = *state;
    kiln_error err = {0};
    assert_true(kiln_tag_applies("op/norm", "op/norm/rmsnorm"));
    assert_true(kiln_tag_applies("op/norm/rmsnorm", "op/norm/rmsnorm"));
    assert_false(kiln_tag_applies("op/norm", "op/normal"));
    assert_false(kiln_tag_applies("op/norm/rmsnorm", "op/norm"));
    assert_false(kiln_tag_applies("dtype/bf16", "dtype/f32"));
    assert_true(kiln_tag_valid("arch/sm_90"));
    assert_false(kiln_tag_valid("op//norm"));
    assert_false(kiln_tag_valid("/op"));
    assert_false(kiln_tag_valid("op/"));
    assert_false(kiln_tag_valid("op norm"));

    long long fam = add(f->db, "norm family", "fits", "op/norm", NULL, 0.6);
    long long exact = add(f->db, "rmsnorm exactly", "fits", "op/norm/rmsnorm", "dtype/f32", 0.6);
    long long other = add(f->db, "layernorm only", "does not fit", "op/norm/layernorm", NULL, 0.6);
    long long bf16 = add(f->db, "bf16 only", "does not fit", "op/norm", "dtype/bf16", 0.6);
    long long hopper = add(f->db, "hopper only", "does not fit", "arch/sm_90", NULL, 0.6);
    long long normal = add(f->db, "normal op", "does not fit", "op/normal", NULL, 0.6);
    long long global = add(f->db, "anything", "fits everywhere", NULL, NULL, 0.6);
    (void)other, (void)bf16, (void)hopper, (void)normal;

    char scope[5][KILN_TAG_MAX];
    int ns = kiln_lesson_scope("rmsnorm", "f32", "cpu", "decode", NULL, scope);
    assert_int_equal(ns, 4);
    const char *tags[5];
    for (int i = 0; i < ns; i++)
        tags[i] = scope[i];
    kiln_lesson_query q = {.tags = tags, .ntags = ns, .context = "", .max_lessons = 10};
    long long ids[10];
    int n = 0;
    char *text = NULL;
    assert_int_equal(kiln_lessons_for_prompt(f->db, &q, &text, ids, 10, &n, &err), 0);
    assert_int_equal(n, 3);
    int seen = 0;
    for (int i = 0; i < n; i++)
        seen |= (ids[i] == fam) | (ids[i] == exact) << 1 | (ids[i] == global) << 2;
    assert_int_equal(seen, 7);
    free(text);

    /* Listing: a tag matches itself and everything below it, not op/normal. */
    const char *want[] = {"op/norm"};
    kiln_lesson_filter flt = {.tags = want, .ntags = 1};
    kiln_lesson *ls = NULL;
    assert_int_equal(kiln_lessons_list(f->db, &flt, &ls, &n, &err), 0);
    assert_int_equal(n, 4);   /* fam, exact, other, bf16 */
    for (int i = 0; i < n; i++)
        assert_int_not_equal(ls[i].id, normal);
    free(ls);
}

/* ---- FTS escaping -------------------------------------------------------- */

static void test_fts_hostile(void **state)
{
    fixture *f = *state;
    kiln_error err = {0};
    add(f->db, "loading rows with scalar loads", "use vectorized loads", "op/norm", NULL, 0.7);
    static const char *hostile[] = {
        "\"", "\"\"\"", "vector*", "*", "NEAR(", "NEAR(a b", "AND OR NOT", "AND", "col:",
        "situation:loads", "^loads", "((loads", "loads))", ")(", "-loads", "+", "{a b}:x",
        "'; DROP TABLE lessons; --", "\xc3\xa9t\xc3\xa9 \xe2\x80\x94 \xf0\x9f\x98\x80 \xe6\xbc\xa2",
        "\xff\xfe invalid utf8", "", "   ", "a\"b\"c", "NOT loads", "loads NOT", "...", NULL};
    for (int i = 0; hostile[i]; i++) {
        kiln_lesson_filter flt = {.query = hostile[i]};
        kiln_lesson *ls = NULL;
        int n = -1;
        if (kiln_lessons_list(f->db, &flt, &ls, &n, &err) < 0)
            fail_msg("query '%s': %s", hostile[i], err.msg);
        free(ls);
        kiln_lesson_query q = {.context = hostile[i]};
        long long ids[5];
        char *text = NULL;
        if (kiln_lessons_for_prompt(f->db, &q, &text, ids, 5, &n, &err) < 0)
            fail_msg("context '%s': %s", hostile[i], err.msg);
        free(text);
    }
    /* Operators become plain quoted words; words still match. */
    char *m = kiln_fts_query("NOT loads NEAR(x) a\"b", 1);
    assert_string_equal(m, "\"NOT\" OR \"loads\" OR \"NEAR\" OR \"x\" OR \"b\"");
    free(m);
    m = kiln_fts_query("unrolled loads", 0);
    assert_string_equal(m, "\"unrolled\" AND \"loads\"");
    free(m);
    assert_null(kiln_fts_query("  ()\"*: ", 1));
    kiln_lesson_filter flt = {.query = "\"vectorized\" loads*"};
    kiln_lesson *ls = NULL;
    int n = 0;
    assert_int_equal(kiln_lessons_list(f->db, &flt, &ls, &n, &err), 0);
    assert_int_equal(n, 1);
    free(ls);
}

/* ---- outcomes ------------------------------------------------------------ */

static void test_outcome(void **state)
{
    fixture *f = *state;
    kiln_error err = {0};
    long long a = add(f->db, "situation a", "action a", "op/norm", NULL, 0.5);
    long long b = add(f->db, "situation b", "action b", "op/norm", NULL, 0.95);
    long long ids[] = {a, b};
    assert_int_equal(kiln_lessons_shown(f->db, "r1", 1, ids, 2, 120, 4000, &err), 0);
    assert_int_equal(kiln_lessons_shown(f->db, "r1", 1, ids, 2, 120, 4100, &err), 0);  /* again */
    assert_int_equal(get(f->db, a).shown, 1);
    assert_int_equal(kiln_lessons_outcome(f->db, "r1", 1, +1, &err), 0);
    kiln_lesson la = get(f->db, a), lb = get(f->db, b);
    assert_true(la.confidence > 0.599 && la.confidence < 0.601);
    assert_int_equal(la.helped, 1);
    assert_true(lb.confidence <= 1.0 && lb.confidence > 0.999);   /* clamped */
    assert_true(la.last_used > 0);
    /* Idempotent per (run, candidate): a second report changes nothing. */
    assert_int_equal(kiln_lessons_outcome(f->db, "r1", 1, -1, &err), 0);
    assert_int_equal(kiln_lessons_outcome(f->db, "r1", 1, +1, &err), 0);
    la = get(f->db, a);
    assert_true(la.confidence > 0.599 && la.confidence < 0.601);
    assert_int_equal(la.hurt, 0);
    /* Another candidate regresses: -0.15. */
    assert_int_equal(kiln_lessons_shown(f->db, "r1", 2, ids, 1, 60, 3000, &err), 0);
    assert_int_equal(kiln_lessons_outcome(f->db, "r1", 2, -1, &err), 0);
    la = get(f->db, a);
    assert_true(la.confidence > 0.449 && la.confidence < 0.451);
    assert_int_equal(la.hurt, 1);
    assert_int_equal(la.shown, 2);
    /* Neither, and an outcome for a prompt never recorded: no change. */
    assert_int_equal(kiln_lessons_shown(f->db, "r1", 3, ids, 1, 60, 3000, &err), 0);
    assert_int_equal(kiln_lessons_outcome(f->db, "r1", 3, 0, &err), 0);
    assert_int_equal(kiln_lessons_outcome(f->db, "r1", 99, 1, &err), 0);
    assert_true(get(f->db, a).confidence > 0.449 && get(f->db, a).confidence < 0.451);

    kiln_lesson_stats s;
    assert_int_equal(kiln_lessons_stats(f->db, &s, &err), 0);
    assert_int_equal(s.prompts, 3);
    assert_int_equal(s.lesson_chars, 240);
    assert_int_equal(s.prompt_chars, 10100);
    assert_int_equal(s.kept, 1);
    assert_int_equal(s.regressed, 1);
    kiln_lessons_stats_free(&s);
}

/* ---- one run's lessons, as kiln status and report read them ------------- */

static long long add_in_run(sqlite3 *db, const char *run, const char *sit)
{
    kiln_lesson l;
    long long id = 0;
    kiln_error err = {0};
    kiln_lesson_init(&l);
    snprintf(l.situation, sizeof l.situation, "%s", sit);
    snprintf(l.action, sizeof l.action, "act on %s", sit);
    snprintf(l.run, sizeof l.run, "%s", run);
    if (kiln_lesson_add(db, &l, &id, &err) < 0)
        fail_msg("add: %s", err.msg);
    return id;
}

static void test_run_view(void **state)
{
    fixture *f = *state;
    kiln_error err = {0};
    long long a = add_in_run(f->db, "r1", "situation a"), b = add_in_run(f->db, "r1", "situation b");
    add_in_run(f->db, "r2", "situation c");
    long long ids[] = {a, b};
    assert_int_equal(kiln_lessons_shown(f->db, "r1", 1, ids, 2, 100, 1000, &err), 0);
    assert_int_equal(kiln_lessons_shown(f->db, "r1", 2, ids, 1, 50, 1000, &err), 0);
    assert_int_equal(kiln_lessons_present(f->db), 1);
    int created, shown;
    kiln_lessons_run_counts(f->db, "r1", &created, &shown);
    assert_int_equal(created, 2);
    assert_int_equal(shown, 3);

    kiln_lesson_table t;
    assert_int_equal(kiln_lessons_run_created(f->db, "r1", &t), 2);
    assert_int_equal(t.ncol, 7);   /* id, kind, situation, action, status, confidence, created_at */
    assert_string_equal(t.names[2], "situation");
    assert_string_equal(t.text[2], "situation a");
    assert_string_equal(t.names[6], "created_at");
    assert_true(t.num[6] > 1e9);   /* a date, in seconds */
    kiln_lesson_table_free(&t);
    assert_int_equal(kiln_lessons_run_shown(f->db, "r1", &t), 2);
    assert_string_equal(t.names[1], "prompts");
    assert_int_equal((long long)t.num[0], a);   /* most shown first */
    assert_string_equal(t.text[1], "2");
    assert_string_equal(t.text[3], "act on situation a");
    kiln_lesson_table_free(&t);

    kiln_lessons_run_counts(f->db, "r3", &created, &shown);
    assert_int_equal(created + shown, 0);
    assert_int_equal(kiln_lessons_run_shown(f->db, "r3", &t), 0);
    kiln_lesson_table_free(&t);
}

/* ---- budget ------------------------------------------------------------- */

static void test_budget(void **state)
{
    fixture *f = *state;
    kiln_error err = {0};
    char sit[200];
    for (int i = 0; i < 12; i++) {
        snprintf(sit, sizeof sit, "reducing rows of length %d with a long explanation of the "
                 "situation so that each lesson line is well over a hundred characters", 1024 * (i + 1));
        add(f->db, sit, "use warp shuffles for the reduction", "op/norm", NULL, 0.5 + 0.03 * i);
    }
    add(f->db, "weak", "below the floor", "op/norm", NULL, 0.1);
    const char *tags[] = {"op/norm/rmsnorm"};
    size_t budgets[] = {1500, 700, 400, 200, 50, 1};
    for (size_t b = 0; b < sizeof budgets / sizeof *budgets; b++) {
        kiln_lesson_query q = {.tags = tags, .ntags = 1, .context = "reduction warp shuffles",
                               .budget_chars = budgets[b]};
        long long ids[8];
        int n = 0;
        char *text = NULL;
        assert_int_equal(kiln_lessons_for_prompt(f->db, &q, &text, ids, 8, &n, &err), 0);
        assert_true(strlen(text) <= budgets[b]);
        assert_true(n <= 5);   /* max_lessons default */
        if (budgets[b] >= 400)
            assert_true(n >= 1);
        if (n == 0)
            assert_string_equal(text, "");
        assert_null(strstr(text, "below the floor"));
        /* Whole lessons only: every line ends with its closing parenthesis. */
        for (char *p = strstr(text, "- When"); p; p = strstr(p + 1, "- When"))
            assert_non_null(strstr(p, ")\n"));
        free(text);
    }
    /* cap limits the count too. */
    kiln_lesson_query q = {.tags = tags, .ntags = 1, .budget_chars = 100000, .max_lessons = 10};
    long long ids[2];
    int n = 0;
    char *text = NULL;
    assert_int_equal(kiln_lessons_for_prompt(f->db, &q, &text, ids, 2, &n, &err), 0);
    assert_int_equal(n, 2);
    free(text);
}

/* ---- concurrency ----------------------------------------------------------- */

static void test_reader_beside_writer(void **state)
{
    fixture *f = *state;
    kiln_error err = {0};
    add(f->db, "committed before", "visible to the reader", "op/norm", NULL, 0.6);
    /* The writer (a search) holds an open write transaction... */
    assert_int_equal(sqlite3_exec(f->db, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
    for (int i = 0; i < 20; i++)
        add(f->db, "written inside the transaction", "not yet visible", "op/norm", NULL, 0.6);
    /* ...while `kiln lessons list` opens and reads through a second connection. */
    sqlite3 *reader = NULL;
    assert_int_equal(kiln_db_open(&reader, f->path, &err), 0);
    sqlite3_busy_timeout(reader, 0);   /* any lock wait would surface as SQLITE_BUSY */
    for (int round = 0; round < 5; round++) {
        kiln_lesson *ls = NULL;
        int n = 0;
        kiln_lesson_filter flt = {.tags = NULL};
        if (kiln_lessons_list(reader, &flt, &ls, &n, &err) < 0)
            fail_msg("reader: %s", err.msg);
        assert_int_equal(n, 1);
        free(ls);
        kiln_lesson_stats s;
        assert_int_equal(kiln_lessons_stats(reader, &s, &err), 0);
        kiln_lessons_stats_free(&s);
    }
    assert_int_equal(sqlite3_exec(f->db, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
    kiln_lesson *ls = NULL;
    int n = 0;
    assert_int_equal(kiln_lessons_list(reader, NULL, &ls, &n, &err), 0);
    assert_int_equal(n, 21);
    free(ls);
    kiln_db_close(reader);
}

/* ---- corrupt and foreign files ---------------------------------------------- */

static void test_corrupt_and_foreign(void **state)
{
    fixture *f = *state;
    char path[160];
    sqlite3 *db = NULL;
    kiln_error err = {0};
    snprintf(path, sizeof path, "%s/corrupt.db", f->dir);
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    srand(7);
    for (int i = 0; i < 8192; i++)
        fputc(rand() & 0xff, fp);
    fclose(fp);
    assert_int_equal(kiln_db_open(&db, path, &err), -1);
    assert_null(db);
    assert_non_null(strstr(err.msg, path));
    assert_non_null(strstr(err.msg, "not a SQLite database"));
    unlink(path);

    snprintf(path, sizeof path, "%s/foreign.db", f->dir);
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT);"
                                      "INSERT INTO customers VALUES (1, 'x');", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    db = NULL;
    assert_int_equal(kiln_db_open(&db, path, &err), -1);
    assert_non_null(strstr(err.msg, path));
    assert_non_null(strstr(err.msg, "not a kiln database"));
    /* Refused, not changed: the foreign table is still alone there. */
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(user_version(db), 0);
    sqlite3_close(db);
    unlink(path);
}

/* ---- distill -------------------------------------------------------------- */

static int count_changes(sqlite3 *db, double now, int dry, const char *what)
{
    kiln_distill_opts o = {.now = now, .dry_run = dry};
    kiln_distill_change *c = NULL;
    int n = 0, k = 0;
    kiln_error err = {0};
    if (kiln_lessons_distill(db, &o, &c, &n, &err) < 0)
        fail_msg("distill: %s", err.msg);
    for (int i = 0; i < n; i++)
        k += !what || strcmp(c[i].what, what) == 0;
    free(c);
    return k;
}

static void test_distill(void **state)
{
    fixture *f = *state;
    kiln_error err = {0};
    long long keep = add(f->db, "optimizing rmsnorm f32 (decode)", "UNROLL 1 -> 8 made it 1.42x faster",
                         "op/norm/rmsnorm", NULL, 0.6);
    long long dup = add(f->db, "optimizing rmsnorm f32 (decode)", "UNROLL 1 -> 8 made it 1.40x faster",
                        "op/norm/rmsnorm", NULL, 0.5);
    long long other_scope = add(f->db, "optimizing rmsnorm f32 (decode)",
                                "UNROLL 1 -> 8 made it 1.42x faster", "op/softmax", NULL, 0.5);
    long long weak = add(f->db, "weak lesson", "not trusted", "op/norm", NULL, 0.2);
    long long solid = add(f->db, "use warp shuffles", "for row reductions", "op/norm", NULL, 0.8);
    (void)other_scope;

    /* A measured 'helped' lesson that later measurements contradict. */
    kiln_lesson_event ev = event("pass", 1.3, "VEC 1 -> 4", 10);
    long long helped = kiln_lessons_record(f->db, &ev, &err);
    ev = event("pass", 0.8, "VEC 1 -> 4", 11);
    assert_true(kiln_lessons_record(f->db, &ev, &err) > 0);
    ev = event("pass", 0.85, "VEC 1 -> 4", 12);
    assert_true(kiln_lessons_record(f->db, &ev, &err) > 0);

    double now = (double)time(NULL) + 1;
    /* A dry run reports and writes nothing. */
    int planned = count_changes(f->db, now, 1, NULL);
    assert_true(planned >= 3);
    assert_string_equal(get(f->db, dup).status, "active");
    assert_int_equal(count_changes(f->db, now, 1, NULL), planned);

    assert_int_equal(count_changes(f->db, now, 0, NULL), planned);
    assert_string_equal(get(f->db, dup).status, "retired");
    assert_string_equal(get(f->db, keep).status, "active");
    assert_string_equal(get(f->db, other_scope).status, "active");   /* other tags: no merge */
    assert_string_equal(get(f->db, weak).status, "retired");
    assert_string_equal(get(f->db, helped).status, "retired");
    assert_non_null(strstr(get(f->db, helped).retired_reason, "contradicted"));
    assert_string_equal(get(f->db, solid).status, "active");
    /* Idempotent. */
    assert_int_equal(count_changes(f->db, now, 0, NULL), 0);
    assert_int_equal(count_changes(f->db, now + 60, 0, NULL), 0);

    /* 31 days on, unused lessons decay once per period. */
    double later = now + 31 * 86400.0;
    double before = get(f->db, solid).confidence;
    assert_true(count_changes(f->db, later, 0, "decay") >= 1);
    assert_true(get(f->db, solid).confidence < before * 0.91);
    assert_int_equal(count_changes(f->db, later + 3600, 0, NULL), 0);
}

/* ---- export / import --------------------------------------------------------- */

static void test_export_import(void **state)
{
    fixture *f = *state;
    kiln_error err = {0};
    add(f->db, "loading rows \"quoted\"", "use vectorized loads", "op/norm", "dtype/bf16", 0.7);
    add(f->db, "softmax over long rows", "online normalization", "op/softmax", NULL, 0.6);
    kiln_lesson *ls = NULL;
    int n = 0, added = 0, skipped = 0;
    kiln_lesson_filter flt = {.status = "all", .sort = "id"};
    assert_int_equal(kiln_lessons_list(f->db, &flt, &ls, &n, &err), 0);
    char *json = kiln_lessons_export_json(ls, n);
    char *md = kiln_lessons_export_md(ls, n);
    assert_non_null(strstr(md, "use vectorized loads"));
    free(md);
    free(ls);
    /* Into the same database: everything is already there. */
    assert_int_equal(kiln_lessons_import_json(f->db, json, &added, &skipped, &err), 0);
    assert_int_equal(added, 0);
    assert_int_equal(skipped, 2);
    /* Into a fresh one: everything arrives, with its tags. */
    char path[160];
    sqlite3 *db = NULL;
    snprintf(path, sizeof path, "%s/other.db", f->dir);
    assert_int_equal(kiln_db_open(&db, path, &err), 0);
    assert_int_equal(kiln_lessons_import_json(db, json, &added, &skipped, &err), 0);
    assert_int_equal(added, 2);
    kiln_lesson l = get(db, 1);
    assert_string_equal(l.situation, "loading rows \"quoted\"");
    assert_int_equal(l.ntags, 2);
    /* Bad input is refused whole. */
    assert_int_equal(kiln_lessons_import_json(db, "{\"lessons\":[{\"situation\":\"s\",\"action\":\"a\"},"
                                                  "{\"situation\":\"only\"}]}", &added, &skipped, &err), -1);
    assert_non_null(strstr(err.msg, "lesson 2"));
    assert_int_equal(kiln_lessons_import_json(db, "not json", &added, &skipped, &err), -1);
    kiln_db_close(db);
    free(json);
    char p[200];
    const char *suffix[] = {"", "-wal", "-shm"};
    for (int i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s%s", path, suffix[i]);
        unlink(p);
    }
}

static void test_edit_retire(void **state)
{
    fixture *f = *state;
    kiln_error err = {0};
    long long id = add(f->db, "stale situation", "old action", "op/norm", NULL, 0.5);
    const char *tags[] = {"Op/Softmax", "dtype/f16"};
    assert_int_equal(kiln_lesson_edit(f->db, id, "new situation", NULL, tags, 2, 0.8, &err), 1);
    kiln_lesson l = get(f->db, id);
    assert_string_equal(l.situation, "new situation");
    assert_string_equal(l.action, "old action");
    assert_string_equal(l.tags[0], "dtype/f16");
    assert_string_equal(l.tags[1], "op/softmax");
    assert_true(l.confidence > 0.79 && l.confidence < 0.81);
    /* The FTS index follows the edit. */
    kiln_lesson_filter flt = {.query = "new situation"};
    kiln_lesson *ls = NULL;
    int n = 0;
    assert_int_equal(kiln_lessons_list(f->db, &flt, &ls, &n, &err), 0);
    assert_int_equal(n, 1);
    free(ls);
    flt.query = "stale";
    assert_int_equal(kiln_lessons_list(f->db, &flt, &ls, &n, &err), 0);
    assert_int_equal(n, 0);   /* the old text left the index */
    free(ls);
    assert_int_equal(kiln_lesson_edit(f->db, 999, "x", NULL, NULL, -1, -1, &err), 0);
    const char *bad[] = {"not a tag!"};
    assert_int_equal(kiln_lesson_edit(f->db, id, NULL, NULL, bad, 1, -1, &err), -1);
    assert_int_equal(kiln_lesson_edit(f->db, id, " ", NULL, NULL, -1, -1, &err), -1);
    assert_int_equal(kiln_lesson_retire(f->db, id, "wrong", &err), 1);
    assert_int_equal(kiln_lesson_retire(f->db, id, "again", &err), 0);
    assert_string_equal(get(f->db, id).retired_reason, "wrong");
    kiln_lesson empty;
    kiln_lesson_init(&empty);
    long long none;
    assert_int_equal(kiln_lesson_add(f->db, &empty, &none, &err), -1);
    assert_non_null(strstr(err.msg, "situation and an action"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_schema_fresh, setup, teardown),
        cmocka_unit_test_setup_teardown(test_upgrade_from_v1, setup, teardown),
        cmocka_unit_test_setup_teardown(test_record, setup, teardown),
        cmocka_unit_test_setup_teardown(test_record_interval, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tag_prefix, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fts_hostile, setup, teardown),
        cmocka_unit_test_setup_teardown(test_outcome, setup, teardown),
        cmocka_unit_test_setup_teardown(test_run_view, setup, teardown),
        cmocka_unit_test_setup_teardown(test_budget, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reader_beside_writer, setup, teardown),
        cmocka_unit_test_setup_teardown(test_corrupt_and_foreign, setup, teardown),
        cmocka_unit_test_setup_teardown(test_distill, setup, teardown),
        cmocka_unit_test_setup_teardown(test_export_import, setup, teardown),
        cmocka_unit_test_setup_teardown(test_edit_retire, setup, teardown),
        cmocka_unit_test(test_technique),
        cmocka_unit_test_setup_teardown(test_structure, setup, teardown),
        cmocka_unit_test_setup_teardown(test_technique_confidence, setup, teardown),
        cmocka_unit_test_setup_teardown(test_record_technique, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
