/* outcome.c - what a decided candidate means for the lessons: the
 * confirmed outcome of its decision (kept after its re-time, rejected for
 * a fault of its own, or surely slower by its pooled re-timed
 * measurement), which moves the confidence of the lessons its
 * prompt showed, and the outcome written into the evidence of the note or
 * lesson the candidate itself earned. Everything else moves nothing: a
 * model that failed, an answer that did not parse, a duplicate, kiln's or
 * the machine's errors, a timeout, a number that cannot be trusted. */
#include "lessons_int.h"
#include "verdict_codes.h"

#include <stdio.h>
#include <string.h>

static int is(const char *s, const char *want)
{
    return s && strcmp(s, want) == 0;
}

/* A failure code that is the candidate's code's fault (verdict_codes.c):
 * not a timeout (the verifier's budget, or a loaded machine), nor a
 * resource limit (at compile, the compiler's limits), nor any suspect code
 * (the number, not the kernel, is in doubt). */
static int fault_code(const char *code)
{
    const kiln_verdict_code *c = kiln_verdict_code_find(code);
    return c && c->fault;
}

int kiln_lessons_outcome_of(const kiln_lesson_decision *d, const char **why)
{
    const char *w = "not confirmed either way";
    int out = 0;
    if (is(d->stage, "propose"))
        w = is(d->code, "duplicate") ? "a duplicate: not verified" : "no candidate to verify";
    else if (is(d->decision, "keep"))
        w = "kept after its re-time", out = 1;
    else if (is(d->status, "fail") && fault_code(d->code))
        w = "rejected: its own fault", out = -1;
    else if (is(d->status, "fail"))
        w = "failed, not surely its fault";
    else if (is(d->status, "error") || is(d->status, "suspect"))
        w = "kiln or the machine erred, or a number is in doubt";
    else if (is(d->status, "pass") && !d->pooled)
        w = "screened out on one measurement: not confirmed";
    else if (is(d->status, "pass") && d->speedup_hi > 0 && d->speedup_hi < 1)
        w = "rejected: surely slower, re-timed and pooled", out = -1;
    if (why)
        *why = w;
    return out;
}

/* The outcome in the evidence of the candidate's own note or lesson. */
static int note_outcome(sqlite3 *db, const kiln_lesson_decision *d, int outcome, const char *why,
                        kiln_error *err)
{
    char text[480];
    snprintf(text, sizeof text, "%s%s%.400s", d->decision ? d->decision : "",
             d->why && *d->why ? ": " : "", d->why ? d->why : "");
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "UPDATE lessons SET evidence=json_set(evidence, '$.outcome', ?3,"
                           " '$.confirmed', ?4, '$.confirmed_why', ?5)"
                           " WHERE run=?1 AND candidate=?2 AND json_valid(evidence)",
                           -1, &st, NULL) != SQLITE_OK)
        return kn_db_fail(db, err, "recording a candidate's outcome");
    sqlite3_bind_text(st, 1, d->run, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(st, 2, d->candidate);
    sqlite3_bind_text(st, 3, text, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(st, 4, outcome);
    sqlite3_bind_text(st, 5, why, -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : kn_db_fail(db, err, "recording a candidate's outcome");
}

/* Confidence steps, as record.c's (docs/knowledge.md). */
#define KN_GAIN 0.10
#define KN_LOSS 0.15

/* The other active lessons of the technique a decided candidate tried (the
 * same change and tag set as the candidate's own note or lesson), from
 * this run or an earlier one in the workspace: a confirmed outcome that
 * agrees with a lesson (kept, for "made it faster"; a fault or a surely
 * slower re-time, for "slower; avoid") raises it, one that disagrees lowers
 * it. Lessons the candidate's prompt showed were moved already
 * (kiln_lessons_outcome) and are left alone; the candidate's own entry is
 * its evidence, not a confirmation of it. Once per candidate: its own
 * entry's evidence gets `confirmed` right after (note_outcome). */
static const char technique_sql[] =
    "WITH own AS (SELECT id, change FROM lessons WHERE run=?1 AND candidate=?2 AND change<>''"
    "   AND json_valid(evidence) AND json_extract(evidence, '$.confirmed') IS NULL"
    "   ORDER BY kind='lesson' DESC LIMIT 1),"
    " own_tags AS (SELECT group_concat(tag, ' ') AS t FROM (SELECT tag FROM lesson_tags"
    "   WHERE lesson=(SELECT id FROM own) ORDER BY tag))"
    " UPDATE lessons SET"
    "  confidence = CASE WHEN (effect >= 1) = (?3 > 0) THEN min(1.0, confidence + ?4)"
    "                    ELSE max(0.0, confidence - ?5) END,"
    "  helped = helped + ((effect >= 1) = (?3 > 0)),"
    "  hurt = hurt + ((effect >= 1) <> (?3 > 0)), evidence_n = evidence_n + 1, updated_at = ?6"
    " WHERE kind='lesson' AND status='active' AND effect > 0"
    "  AND id <> (SELECT id FROM own) AND change = (SELECT change FROM own)"
    "  AND id NOT IN (SELECT lesson FROM lesson_shown WHERE run=?1 AND candidate=?2)"
    "  AND (SELECT group_concat(tag, ' ') FROM (SELECT tag FROM lesson_tags"
    "       WHERE lesson=lessons.id ORDER BY tag)) IS (SELECT t FROM own_tags)";

static int technique_outcome(sqlite3 *db, const kiln_lesson_decision *d, int outcome,
                             kiln_error *err)
{
    if (outcome == 0)
        return 0;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, technique_sql, -1, &st, NULL) != SQLITE_OK)
        return kn_db_fail(db, err, "confirming a technique's lessons");
    sqlite3_bind_text(st, 1, d->run, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(st, 2, d->candidate);
    sqlite3_bind_int(st, 3, outcome);
    sqlite3_bind_double(st, 4, KN_GAIN);
    sqlite3_bind_double(st, 5, KN_LOSS);
    sqlite3_bind_double(st, 6, kn_now());
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : kn_db_fail(db, err, "confirming a technique's lessons");
}

int kiln_lessons_decided(sqlite3 *db, const kiln_lesson_decision *d, kiln_error *err)
{
    const char *why = NULL;
    if (!d || !d->run)
        return kiln_fail(err, "lessons: a decision needs a run");
    int outcome = kiln_lessons_outcome_of(d, &why);
    if (kiln_lessons_outcome(db, d->run, d->candidate, outcome, err) < 0)
        return -1;
    if (kn_begin(db, err) < 0)
        return -1;
    if (technique_outcome(db, d, outcome, err) < 0 || note_outcome(db, d, outcome, why, err) < 0) {
        kn_rollback(db);
        return -1;
    }
    return kn_commit(db, err);
}

int kiln_lessons_baseline(sqlite3 *db, const char *run, int candidate, double vs_baseline,
                          double parent_vs_baseline, kiln_error *err)
{
    sqlite3_stmt *st = NULL;
    if (!run || !(vs_baseline > 0))
        return 0;
    if (sqlite3_prepare_v2(db, "UPDATE lessons SET vs_baseline=?3, baseline_effect=?4"
                           " WHERE run=?1 AND candidate=?2 AND kind='lesson'", -1, &st,
                           NULL) != SQLITE_OK)
        return kn_db_fail(db, err, "recording a lesson's effect against the baseline");
    sqlite3_bind_text(st, 1, run, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(st, 2, candidate);
    sqlite3_bind_double(st, 3, vs_baseline);
    if (parent_vs_baseline > 0)
        sqlite3_bind_double(st, 4, vs_baseline / parent_vs_baseline);
    else
        sqlite3_bind_null(st, 4);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : kn_db_fail(db, err, "recording a lesson's effect against the baseline");
}
