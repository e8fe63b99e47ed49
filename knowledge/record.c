/* record.c - what the search loop writes after a verdict: a failure note, a
 * lesson when a change clearly helped or hurt, which lessons a prompt
 * showed, and how that candidate fared (the confidence rule). */
#include "lessons_int.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "verdict.h"

/* Confidence steps of an outcome (docs/knowledge.md). */
#define KN_GAIN 0.10
#define KN_LOSS 0.15
/* Without an interval, a speedup counts as an effect only beyond twice the
 * noise; the noise is taken as at least 1% so that an untimed noise of 0
 * does not make every wobble a lesson. */
#define KN_MIN_NOISE 0.01
/* The longest technique an action names (a model's hypothesis is cut at a
 * word boundary with "..."; docs/knowledge.md). */
#define KN_TECHNIQUE 160

static int blank(const char *s)
{
    if (!s)
        return 1;
    while (*s && isspace((unsigned char)*s))
        s++;
    return *s == '\0';
}

/* Copy text onto one line (newlines and tabs become spaces), trimmed. */
static void one_line(char *dst, size_t cap, const char *src)
{
    while (*src && isspace((unsigned char)*src))
        src++;
    kn_copy(dst, cap, src);
    for (char *p = dst; *p; p++)
        if (*p == '\n' || *p == '\r' || *p == '\t')
            *p = ' ';
    for (size_t n = strlen(dst); n > 0 && isspace((unsigned char)dst[n - 1]); n--)
        dst[n - 1] = '\0';
}

static const char *or_empty(const char *s)
{
    return s ? s : "";
}

/* The numbers behind a verdict: its largest visible timed shape (by bytes
 * moved, where a memory-bound kernel's bandwidth says most), that shape's
 * time, GB/s and fraction of the roofline. Nothing for an untimed verdict. */
static void verdict_numbers(const kiln_verdict *v, cJSON *o)
{
    const kiln_shape_result *best = NULL;
    for (int i = 0; v && i < v->nresults; i++) {
        const kiln_shape_result *r = &v->results[i];
        if (r->visible && r->timed && r->cand.median_ns > 0 && (!best || r->bytes > best->bytes))
            best = r;
    }
    if (!best)
        return;
    char dims[160], shape[200];
    kiln_verdict_dims(v, best, dims, sizeof dims);
    snprintf(shape, sizeof shape, "%s %s", best->id, dims);
    cJSON_AddStringToObject(o, "shape", shape);
    cJSON_AddNumberToObject(o, "time_us", best->cand.median_ns / 1e3);
    if (best->bytes > 0)
        cJSON_AddNumberToObject(o, "gbps", best->bytes / best->cand.median_ns);
    if (best->roofline_fraction > 0)
        cJSON_AddNumberToObject(o, "roofline", best->roofline_fraction);
    if (best->speedup > 0)
        cJSON_AddNumberToObject(o, "shape_speedup", best->speedup);
}

/* Whether the event carries a pooled interval (lesson.h: 0 and 0 when not). */
static int has_interval(const kiln_lesson_event *ev)
{
    return ev->lo > 0 && ev->hi >= ev->lo;
}

static void evidence_json(const kiln_lesson_event *ev, double noise, char *out, size_t cap)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "run", or_empty(ev->run));
    cJSON_AddNumberToObject(o, "candidate", ev->candidate);
    cJSON_AddNumberToObject(o, "effect", ev->speedup);
    cJSON_AddNumberToObject(o, "noise", noise);
    if (has_interval(ev)) {
        cJSON *iv = cJSON_AddArrayToObject(o, "interval");
        cJSON_AddItemToArray(iv, cJSON_CreateNumber(ev->lo));
        cJSON_AddItemToArray(iv, cJSON_CreateNumber(ev->hi));
    }
    cJSON_AddStringToObject(o, "proposer", or_empty(ev->proposer));
    cJSON_AddStringToObject(o, "status", or_empty(ev->status));
    if (!blank(ev->stage))
        cJSON_AddStringToObject(o, "stage", ev->stage);
    cJSON_AddStringToObject(o, "decision", or_empty(ev->decision));
    if (ev->pooled)
        cJSON_AddStringToObject(o, "measured", "pooled: the verdict and its re-time");
    verdict_numbers(ev->verdict, o);
    char *s = cJSON_PrintUnformatted(o);
    kn_copy(out, cap, s ? s : "{}");
    cJSON_free(s);
    cJSON_Delete(o);
}

/* The scope, evidence and provenance every recorded entry shares. */
static void fill_common(kiln_lesson *l, const kiln_lesson_event *ev, double noise, const char *change)
{
    kiln_lesson_init(l);
    l->ntags = kiln_lesson_scope(ev->task, ev->dtype, ev->backend, ev->group, ev->arch, l->tags);
    l->ntags = kiln_lesson_scope_width(ev->width, l->tags, l->ntags);
    kn_copy(l->run, sizeof l->run, or_empty(ev->run));
    l->candidate = ev->candidate;
    l->effect = ev->speedup;
    kn_copy(l->change, sizeof l->change, change);
    evidence_json(ev, noise, l->evidence, sizeof l->evidence);
    /* The effect is measured either way; a model's hypothesis is its own
     * explanation of it, so it starts lower than a knob change. */
    const char *p = or_empty(ev->proposer);
    snprintf(l->source, sizeof l->source, "%s",
             strcmp(p, "openai") == 0 || strcmp(p, "anthropic") == 0 ? "model" : "measured");
}

static void situation_of(const kiln_lesson_event *ev, char *out, size_t cap)
{
    snprintf(out, cap, "optimizing %s %s (%s)", or_empty(ev->task), or_empty(ev->dtype),
             blank(ev->group) ? "all shapes" : ev->group);
}

static void build_note(kiln_lesson *l, const kiln_lesson_event *ev, const char *change)
{
    char sit[256], reason[240];
    situation_of(ev, sit, sizeof sit);
    one_line(reason, sizeof reason, blank(ev->reason) ? "no reason given" : ev->reason);
    snprintf(l->kind, sizeof l->kind, "note");
    snprintf(l->situation, sizeof l->situation, "%s, trying: %s", sit, change);
    snprintf(l->action, sizeof l->action, "failed at %s (%s): %s",
             blank(ev->stage) ? "?" : ev->stage, blank(ev->code) ? or_empty(ev->status) : ev->code,
             reason);
}

static void build_lesson(kiln_lesson *l, const kiln_lesson_event *ev, const char *change, int helped)
{
    situation_of(ev, l->situation, sizeof l->situation);
    if (helped)
        snprintf(l->action, sizeof l->action, "%s made it %.2fx faster", change, ev->speedup);
    else
        snprintf(l->action, sizeof l->action, "%s made it %.2fx slower; avoid", change,
                 1.0 / ev->speedup);
}

/* An entry already recorded for this (run, candidate, kind): a resumed run
 * records its verdicts again. */
static long long existing(sqlite3 *db, const kiln_lesson_event *ev, const char *kind)
{
    sqlite3_stmt *st = NULL;
    long long id = 0;
    if (sqlite3_prepare_v2(db, "SELECT id FROM lessons WHERE run=?1 AND candidate=?2 AND kind=?3"
                           " LIMIT 1", -1, &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_text(st, 1, or_empty(ev->run), -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(st, 2, ev->candidate);
    sqlite3_bind_text(st, 3, kind, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        id = sqlite3_column_int64(st, 0);
    else if (rc != SQLITE_DONE)
        id = -1;
    sqlite3_finalize(st);
    return id;
}

/* Schema 9's structure of a new entry: technique, task, dtype, width class. */
static int structure(sqlite3 *db, long long id, const kiln_lesson_event *ev, const char *tech)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "UPDATE lessons SET technique=?2, task=?3, dtype=?4, shape_class=?5"
                           " WHERE id=?1", -1, &st, NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_text(st, 2, tech, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 3, or_empty(ev->task), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 4, or_empty(ev->dtype), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 5, or_empty(ev->width), -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : -1;
}

static long long store(sqlite3 *db, const kiln_lesson_event *ev, const kiln_lesson *l,
                       const char *tech, kiln_error *err)
{
    long long id = 0;
    if (kn_begin(db, err) < 0)
        return -1;
    long long old = existing(db, ev, l->kind);
    if (old < 0) {
        kn_rollback(db);
        return kn_db_fail(db, err, "recording a verdict");
    }
    if (old > 0) {
        kn_rollback(db);
        return old;
    }
    if (kiln_lesson_add(db, l, &id, err) < 0) {
        kn_rollback(db);
        return -1;
    }
    if (structure(db, id, ev, tech) < 0) {
        kn_db_fail(db, err, "recording a lesson's structure");
        kn_rollback(db);
        return -1;
    }
    return kn_commit(db, err) < 0 ? -1 : id;
}

/* +1 when the change surely helped, -1 when it surely hurt, 0 otherwise.
 * The pooled interval decides when there is one: it is what the keep rule
 * judged, and a per-call spread (noise) is far wider than the uncertainty
 * of a ratio of many calls, so on a loaded machine 1 +- 2*noise could call
 * a change the keep rule kept "noise". */
static int helped_or_hurt(const kiln_lesson_event *ev, double noise)
{
    if (!(ev->speedup > 0))
        return 0;
    if (has_interval(ev))
        return ev->lo > 1 ? 1 : ev->hi < 1 ? -1 : 0;
    return ev->speedup > 1 + 2 * noise ? 1 : ev->speedup < 1 - 2 * noise ? -1 : 0;
}

long long kiln_lessons_record(sqlite3 *db, const kiln_lesson_event *ev, kiln_error *err)
{
    char change[512], tech[KN_TECHNIQUE + 1];
    kiln_lesson l;
    if (!ev || blank(ev->task))
        return kiln_fail(err, "lessons: an event needs a task");
    if (blank(ev->hypothesis))
        return 0;   /* nothing names what changed: no action to learn */
    /* The hypothesis whole in `change` (cut only at a word boundary), the
     * technique the action names short enough to compare at a glance. */
    kiln_lesson_technique(ev->hypothesis, 0, change, sizeof change);
    kiln_lesson_technique(ev->hypothesis, KN_TECHNIQUE, tech, sizeof tech);
    /* A suspect number (a parent or baseline timed below the roofline, a
     * timer that disagrees) or an error of kiln or the machine is no fault
     * of the change: filed as a note, it would count against a technique
     * that did nothing wrong. */
    if (ev->status && (strcmp(ev->status, "suspect") == 0 || strcmp(ev->status, "error") == 0))
        return 0;
    double noise = ev->noise > KN_MIN_NOISE ? ev->noise : KN_MIN_NOISE;
    int failed = !blank(ev->status) && strcmp(ev->status, "pass") != 0;
    int effect;
    fill_common(&l, ev, noise, change);
    if (failed) {
        build_note(&l, ev, tech);
    } else if (!ev->pooled) {
        return 0;   /* one measurement, not re-timed: no claim about speed */
    } else if ((effect = helped_or_hurt(ev, noise)) != 0) {
        build_lesson(&l, ev, tech, effect > 0);
    } else {
        return 0;   /* within the noise, or untimed: nothing learned */
    }
    return store(db, ev, &l, tech, err);
}

/* ---- prompts and outcomes ---------------------------------------------- */

static int step_done(sqlite3 *db, sqlite3_stmt *st, kiln_error *err, const char *what)
{
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : kn_db_fail(db, err, what);
}

/* 1 when (run, candidate) already has a prompt row; its outcome in *outcome
 * (99 while none has been reported). */
static int prompt_row(sqlite3 *db, const char *run, int candidate, int *outcome, kiln_error *err)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT coalesce(outcome, 99) FROM lesson_prompts WHERE run=?1 AND"
                           " candidate=?2", -1, &st, NULL) != SQLITE_OK)
        return kn_db_fail(db, err, "reading a prompt record");
    sqlite3_bind_text(st, 1, run, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(st, 2, candidate);
    int rc = sqlite3_step(st), found = rc == SQLITE_ROW;
    if (found)
        *outcome = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return kn_db_fail(db, err, "reading a prompt record");
    return found;
}

static int write_prompt(sqlite3 *db, const char *run, int candidate, int n, size_t lesson_chars,
                        size_t prompt_chars, int found, kiln_error *err)
{
    sqlite3_stmt *st = NULL;
    const char *sql = found ? "UPDATE lesson_prompts SET lesson_chars=?4, prompt_chars=?5 WHERE"
                              " run=?1 AND candidate=?2"
                            : "INSERT INTO lesson_prompts (run, candidate, lessons, lesson_chars,"
                              " prompt_chars, created_at) VALUES (?1,?2,?3,?4,?5,?6)";
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return kn_db_fail(db, err, "recording a prompt");
    sqlite3_bind_text(st, 1, run, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(st, 2, candidate);
    sqlite3_bind_int(st, 3, n);
    sqlite3_bind_int64(st, 4, (sqlite3_int64)lesson_chars);
    sqlite3_bind_int64(st, 5, (sqlite3_int64)prompt_chars);
    sqlite3_bind_double(st, 6, kn_now());
    return step_done(db, st, err, "recording a prompt");
}

static int mark_shown(sqlite3 *db, const char *run, int candidate, long long id, int rank,
                      kiln_error *err)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "INSERT OR IGNORE INTO lesson_shown (run, candidate, lesson, rank)"
                           " VALUES (?1,?2,?3,?4)", -1, &st, NULL) != SQLITE_OK)
        return kn_db_fail(db, err, "recording a shown lesson");
    sqlite3_bind_text(st, 1, run, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(st, 2, candidate);
    sqlite3_bind_int64(st, 3, id);
    sqlite3_bind_int(st, 4, rank);
    if (step_done(db, st, err, "recording a shown lesson") < 0)
        return -1;
    if (sqlite3_changes(db) == 0)
        return 0;   /* listed twice: counted once */
    /* Last use is not an edit: updated_at stays. */
    if (sqlite3_prepare_v2(db, "UPDATE lessons SET shown=shown+1, last_used_at=?2 WHERE id=?1", -1,
                           &st, NULL) != SQLITE_OK)
        return kn_db_fail(db, err, "recording a shown lesson");
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_double(st, 2, kn_now());
    return step_done(db, st, err, "recording a shown lesson");
}

int kiln_lessons_shown(sqlite3 *db, const char *run, int candidate, const long long *ids, int n,
                       size_t lesson_chars, size_t prompt_chars, kiln_error *err)
{
    int outcome = 0;
    if (!run || n < 0 || (n > 0 && !ids))
        return kiln_fail(err, "lessons: bad arguments to kiln_lessons_shown");
    if (kn_begin(db, err) < 0)
        return -1;
    int found = prompt_row(db, run, candidate, &outcome, err);
    int rc = found < 0 ? -1 : write_prompt(db, run, candidate, n, lesson_chars, prompt_chars, found, err);
    for (int i = 0; rc == 0 && !found && i < n; i++)
        rc = mark_shown(db, run, candidate, ids[i], i + 1, err);
    if (rc < 0) {
        kn_rollback(db);
        return -1;
    }
    return kn_commit(db, err);
}

static int apply_outcome(sqlite3 *db, const char *run, int candidate, int outcome, kiln_error *err)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "UPDATE lesson_prompts SET outcome=?3 WHERE run=?1 AND candidate=?2",
                           -1, &st, NULL) != SQLITE_OK)
        return kn_db_fail(db, err, "recording an outcome");
    sqlite3_bind_text(st, 1, run, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(st, 2, candidate);
    sqlite3_bind_int(st, 3, outcome);
    if (step_done(db, st, err, "recording an outcome") < 0 || outcome == 0)
        return outcome == 0 ? 0 : -1;
    const char *sql = outcome > 0
        ? "UPDATE lessons SET confidence=min(1.0, confidence + ?3), helped=helped+1, updated_at=?4"
          " WHERE id IN (SELECT lesson FROM lesson_shown WHERE run=?1 AND candidate=?2)"
        : "UPDATE lessons SET confidence=max(0.0, confidence - ?3), hurt=hurt+1, updated_at=?4"
          " WHERE id IN (SELECT lesson FROM lesson_shown WHERE run=?1 AND candidate=?2)";
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return kn_db_fail(db, err, "recording an outcome");
    sqlite3_bind_text(st, 1, run, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(st, 2, candidate);
    sqlite3_bind_double(st, 3, outcome > 0 ? KN_GAIN : KN_LOSS);
    sqlite3_bind_double(st, 4, kn_now());
    return step_done(db, st, err, "recording an outcome");
}

int kiln_lessons_outcome(sqlite3 *db, const char *run, int candidate, int outcome, kiln_error *err)
{
    int prev = 0;
    if (!run)
        return kiln_fail(err, "lessons: an outcome needs a run");
    outcome = outcome > 0 ? 1 : outcome < 0 ? -1 : 0;
    if (kn_begin(db, err) < 0)
        return -1;
    int found = prompt_row(db, run, candidate, &prev, err);
    /* No prompt recorded (nothing shown), or an outcome already counted. */
    if (found <= 0 || prev != 99) {
        kn_rollback(db);
        return found < 0 ? -1 : 0;
    }
    if (apply_outcome(db, run, candidate, outcome, err) < 0) {
        kn_rollback(db);
        return -1;
    }
    return kn_commit(db, err);
}
