/* lessons.h - kiln's knowledge layer: scoped lessons (situation -> action)
 * with measured evidence, kept in the workspace database (.kiln/kiln.db).
 *
 * The search loop records a note or a lesson after every verdict
 * (kiln_lessons_record), asks for the few lessons that fit the next prompt
 * (kiln_lessons_for_prompt), remembers what it showed (kiln_lessons_shown)
 * and reports how that candidate fared (kiln_lessons_outcome). Everything
 * else here serves `kiln lessons` (list, edit, export, distill, stats) and
 * what `kiln status` and `kiln report` show of a run's lessons.
 * See docs/knowledge.md for the schema, the confidence rule and the ranking.
 *
 * Functions that write take the write lock first (BEGIN IMMEDIATE), so call
 * them outside a transaction of your own; kiln_lesson_add and
 * kiln_knowledge_schema use savepoints and work either way. Errors are
 * returned in the kiln_error, never printed. */
#ifndef KILN_LESSONS_H
#define KILN_LESSONS_H

#include <sqlite3.h>
#include <stddef.h>

#include "kiln_error.h"

/* Create or upgrade the lessons tables, FTS5 index and triggers; idempotent.
 * Works inside or outside a transaction (it uses a savepoint). */
int kiln_knowledge_schema(sqlite3 *db, kiln_error *err);

/* ---- the search loop's API ------------------------------------------- */

struct kiln_verdict;                   /* verifier/verdict.h */

typedef struct kiln_lesson_event {     /* one verdict in a search */
    const char *run; int candidate;
    const char *task, *dtype, *backend, *group;   /* scope: see kiln_lesson_scope */
    const char *arch;                  /* may be NULL (cpu) */
    /* The run's width class (kiln_lesson_width_class): its lesson applies
     * only to runs of that class. NULL or "": every width. */
    const char *width;
    const char *proposer;              /* tune | openai | anthropic | replay */
    const char *hypothesis;            /* what changed ("UNROLL 1 -> 8" for tune) */
    const char *status, *stage, *code, *reason;   /* the verdict against the parent */
    double speedup;                    /* against the parent; 0 if not timed */
    double noise;                      /* the relative noise of that speedup */
    /* 1: speedup, noise and verdict pool the verdict and its re-time in a
     * fresh worker (verifier/measure/pooled.h). Only such a measurement teaches a
     * speed lesson; a single one teaches only a failure note. */
    int pooled;
    /* The pooled speedup's interval (verifier/measure/pooled.h), or 0 and 0 when
     * there is none. When given, it decides helped (lo > 1) and hurt
     * (hi < 1): the same interval the keep rule judges, so a change the
     * search surely measured as faster is not called noise. */
    double lo, hi;
    const char *decision;              /* keep | revert */
    /* The verdict against the parent, or NULL: its numbers (the largest
     * visible timed shape, its GB/s and fraction of the roofline) go into
     * the lesson's evidence. */
    const struct kiln_verdict *verdict;
} kiln_lesson_event;

/* Failure note (kind 'note') for a failed verdict; a lesson (kind 'lesson')
 * when the measurement is pooled and its interval lies above 1 (helped) or
 * below 1 (hurt); without an interval, when speedup > 1+2*noise or
 * < 1-2*noise. Nothing is stored for a neutral or single (not pooled)
 * measurement or an empty hypothesis. Returns the id stored, 0 if
 * nothing was stored, -1 on error. */
long long kiln_lessons_record(sqlite3 *db, const kiln_lesson_event *ev, kiln_error *err);

typedef struct kiln_lesson_query {
    /* The current scope. A lesson applies when each of its tags equals one
     * of these or is an ancestor of one (op/norm applies to op/norm/rmsnorm;
     * dtype/bf16 does not apply to dtype/f32). A lesson without tags applies
     * everywhere. */
    const char *const *tags; int ntags;
    const char *context;                  /* free text: task summary + the parent's latest failure */
    size_t budget_chars;                  /* 0: 1500 */
    double confidence_floor;              /* 0: 0.3 (pass a tiny positive value to accept all) */
    int max_lessons;                      /* 0: 5 */
} kiln_lesson_query;

/* The text block for the prompt (malloc'd, "" when none; never longer than
 * budget_chars) and the ids shown, best first (*n <= cap). */
int kiln_lessons_for_prompt(sqlite3 *db, const kiln_lesson_query *q, char **text, long long *ids,
                            int cap, int *n, kiln_error *err);

/* Remember which lessons a candidate's prompt showed, and how many characters
 * they and the whole prompt took (for stats). Calling it again for the same
 * (run, candidate) updates the sizes without counting the lessons twice. */
int kiln_lessons_shown(sqlite3 *db, const char *run, int candidate, const long long *ids, int n,
                       size_t lesson_chars, size_t prompt_chars, kiln_error *err);

/* The candidate's pooled speedup against the task's baseline, and its
 * parent's (0: not known), into the lesson the candidate earned (schema
 * 9): vs_baseline, and baseline_effect = vs_baseline / parent_vs_baseline,
 * the effect of the change against the baseline at the shapes measured
 * (NULL while the parent's figure is not known). */
int kiln_lessons_baseline(sqlite3 *db, const char *run, int candidate, double vs_baseline,
                          double parent_vs_baseline, kiln_error *err);

/* The outcome of that candidate: +1 kept (shown lessons gain confidence,
 * helped++), -1 regressed (lose it, hurt++), 0 neither. Idempotent per
 * (run, candidate): only the first outcome counts. */
int kiln_lessons_outcome(sqlite3 *db, const char *run, int candidate, int outcome, kiln_error *err);

/* A candidate's final decision, as the search loop has it once the
 * candidate is decided (after the re-time, for one that got that far). */
typedef struct kiln_lesson_decision {
    const char *run; int candidate;
    const char *status, *stage, *code;  /* the verdict against the parent */
    const char *decision;               /* keep | revert */
    const char *why;                    /* the decision's reason */
    double speedup_hi;                  /* upper end of the speedup's interval; 0: none */
    int pooled;                         /* 1: speedup_hi is the pooled interval's (the
                                           verdict and its re-time); 0: one measurement */
} kiln_lesson_decision;

/* The confirmed outcome of a decision: +1 kept (after its re-time), -1 the
 * candidate's own fault (wrong output, a crash or another failure of its
 * code: deterministic, so confirmed; or surely slower by the pooled
 * re-timed measurement: its whole interval below 1), 0 anything else (a
 * model or parse failure, a duplicate, an error of kiln or the machine, a
 * timeout, a suspect number, within the noise, and any speed judged from
 * one measurement: a candidate screened out before a re-time). *why (may
 * be NULL) says which, in a few words. */
int kiln_lessons_outcome_of(const kiln_lesson_decision *d, const char **why);

/* Report a decided candidate: applies kiln_lessons_outcome_of's outcome to
 * the lessons its prompt showed (kiln_lessons_outcome) and writes the
 * outcome into the evidence of the note or lesson the candidate earned. */
int kiln_lessons_decided(sqlite3 *db, const kiln_lesson_decision *d, kiln_error *err);

/* The scope tags of a task: op/<family>/<task>, dtype/<dtype>,
 * backend/<backend>, shape/<group> and arch/<arch> (when arch is non-NULL),
 * skipping NULL or empty parts. Returns the count (at most 5). */
#define KILN_TAG_MAX 96
int kiln_lesson_scope(const char *task, const char *dtype, const char *backend, const char *group,
                      const char *arch, char tags[][KILN_TAG_MAX]);

/* ---- lessons as records (for `kiln lessons`) ------------------------- */

#define KILN_LESSON_TEXT 1024   /* situation, action: at most 1023 bytes */
#define KILN_LESSON_TAGS 16

typedef struct kiln_lesson {
    long long id;
    char kind[8];                       /* lesson | note */
    char situation[KILN_LESSON_TEXT], action[KILN_LESSON_TEXT];
    char change[512];                   /* the hypothesis it came from (recorded ones) */
    char evidence[2048];                /* JSON object: effect, noise, run, candidate, the
                                           verdict's numbers, the confirmed outcome ... */
    char run[32];
    int candidate;                      /* -1 when none */
    double effect;                      /* measured speedup; 0 when none */
    char tags[KILN_LESSON_TAGS][KILN_TAG_MAX];
    int ntags;
    char source[12];                    /* measured | model | person */
    char status[12];                    /* active | retired */
    char retired_reason[256];
    int shown, helped, hurt;
    double confidence;                  /* < 0 on add: the source's default */
    double created, updated, last_used; /* Unix seconds; 0 on add: now (last_used: never) */
} kiln_lesson;

/* Initialise a lesson to "nothing set" (source person, confidence default). */
void kiln_lesson_init(kiln_lesson *l);

/* Validate and store a new lesson; *id is its id. A lesson needs a situation
 * and an action; tags must be paths of [a-z0-9_.+-] segments. */
int kiln_lesson_add(sqlite3 *db, const kiln_lesson *l, long long *id, kiln_error *err);
/* 1 found, 0 not found, -1 error. */
int kiln_lesson_get(sqlite3 *db, long long id, kiln_lesson *l, kiln_error *err);

/* Change the given fields (NULL / ntags < 0 / confidence < 0: keep). 1 changed, 0 no such lesson. */
int kiln_lesson_edit(sqlite3 *db, long long id, const char *situation, const char *action,
                     const char *const *tags, int ntags, double confidence, kiln_error *err);
/* 1 retired, 0 no such lesson (or already retired), -1 error. */
int kiln_lesson_retire(sqlite3 *db, long long id, const char *reason, kiln_error *err);

typedef struct kiln_lesson_filter {
    const char *const *tags; int ntags; /* each must have a tag equal to it or below it */
    const char *status;                 /* active (NULL), retired, all */
    const char *kind;                   /* lesson (NULL), note, all */
    const char *sort;                   /* confidence (NULL), recent, uses, id */
    const char *query;                  /* full-text search (ranked by BM25), NULL for none */
    int limit;                          /* 0: no limit */
} kiln_lesson_filter;

/* Matching lessons, *out malloc'd (free it). */
int kiln_lessons_list(sqlite3 *db, const kiln_lesson_filter *f, kiln_lesson **out, int *n,
                      kiln_error *err);

/* Export in the import format: {"format":"kiln-lessons","version":1,"lessons":[...]}. */
char *kiln_lessons_export_json(const kiln_lesson *ls, int n);
char *kiln_lessons_export_md(const kiln_lesson *ls, int n);
/* One lesson as a JSON object (cJSON *, returned as void * to keep cJSON out of this header). */
void *kiln_lesson_json(const kiln_lesson *l);
/* Import an export (all or nothing); lessons already present (same kind,
 * situation, action and tags) are skipped, so importing twice adds nothing. */
int kiln_lessons_import_json(sqlite3 *db, const char *text, int *added, int *skipped,
                             kiln_error *err);

/* ---- distill --------------------------------------------------------- */

/* Rewrite a merged lesson into one: kept is the lesson kept, merged[0..n-1]
 * the near-duplicates merged into it. Writes the new action (at most cap-1
 * bytes) and returns 0, or returns -1 with err set: the distill then keeps
 * the plain merge and reports why. */
typedef int (*kiln_distill_rewrite_fn)(void *ctx, const kiln_lesson *kept, const kiln_lesson *merged,
                                       int n, char *action, size_t cap, kiln_error *err);

typedef struct kiln_distill_opts {
    double floor;          /* 0: 0.3 */
    double decay_days;     /* 0: 30 */
    double decay_factor;   /* 0: 0.9 */
    double now;            /* 0: the clock (tests pass a time) */
    int dry_run;           /* compute and report, change nothing */
    kiln_distill_rewrite_fn rewrite;   /* NULL: merges keep the kept lesson's text */
    void *rewrite_ctx;
} kiln_distill_opts;

typedef struct kiln_distill_change {
    long long id;
    char what[8];          /* merge | rewrite | retire | decay */
    long long into;        /* merge: the lesson kept */
    double before, after;  /* confidence */
    char reason[1280];     /* rewrite: the new action, or why the plain merge stays */
} kiln_distill_change;

/* Merge near-duplicates (same tags and polarity), retire contradicted and
 * low-confidence lessons unless their confirmed outcomes support them,
 * decay unused ones; every change reported in *changes (malloc'd). */
int kiln_lessons_distill(sqlite3 *db, const kiln_distill_opts *o, kiln_distill_change **changes,
                         int *n, kiln_error *err);

/* ---- stats ----------------------------------------------------------- */

typedef struct kiln_tag_count {
    char tag[KILN_TAG_MAX];
    int active, retired;
} kiln_tag_count;

typedef struct kiln_lesson_stats {
    int active, retired, notes;         /* lessons by status; failure notes */
    int measured, model, person;        /* active lessons by source */
    long long prompts;                  /* prompts that reported their sizes */
    long long shown;                    /* lessons shown, summed over prompts */
    long long lesson_chars, prompt_chars;
    long long kept, regressed;          /* outcomes of those prompts */
    kiln_tag_count *tags;               /* malloc'd, by tag */
    int ntags;
} kiln_lesson_stats;

int kiln_lessons_stats(sqlite3 *db, kiln_lesson_stats *s, kiln_error *err);
void kiln_lessons_stats_free(kiln_lesson_stats *s);

/* ---- one run's lessons, for kiln status and kiln report --------------- */
/* These read a database opened read-only that may predate the lessons
 * tables or hold an older form of them: what is not there reads as
 * nothing, and they never fail. */

/* 1 when the database has the lessons table. */
int kiln_lessons_present(sqlite3 *db);
/* Lessons the run created and lessons its prompts showed; -1 each when
 * the tables (or their run column) are not there. */
void kiln_lessons_run_counts(sqlite3 *db, const char *run, int *created, int *shown);

/* Rows as the database gave them, to show as they are. */
typedef struct kiln_lesson_table {
    int ncol, nrow;
    char **names;                       /* ncol column names */
    char **text;                        /* nrow * ncol cells, row by row; NULL: SQL NULL */
    double *num;                        /* the same cells as numbers (dates: *_at) */
} kiln_lesson_table;

/* The lessons the run created: those of the columns id, kind, situation,
 * action, status, confidence, created_at the table has, at most 200 rows.
 * Returns the number of rows. */
int kiln_lessons_run_created(sqlite3 *db, const char *run, kiln_lesson_table *t);
/* The lessons shown to the run's prompts: lesson, prompts (how many),
 * situation, action; most shown first, at most 200 rows. Returns the
 * number of rows. */
int kiln_lessons_run_shown(sqlite3 *db, const char *run, kiln_lesson_table *t);
/* Free a table's contents (t itself is the caller's) and empty it. */
void kiln_lesson_table_free(kiln_lesson_table *t);

/* ---- helpers exposed for tests --------------------------------------- */

/* An FTS5 MATCH expression for free text: every token double-quoted
 * (embedded quotes doubled), joined by OR (any) or AND. NULL when the text
 * has no tokens or memory ran out. malloc'd. */
char *kiln_fts_query(const char *text, int any);
/* Does a lesson tag apply to a scope tag (equal, or an ancestor path)? */
int kiln_tag_applies(const char *lesson_tag, const char *scope_tag);
/* Is a tag well formed? */
int kiln_tag_valid(const char *tag);

/* ---- technique and shape class (knowledge/technique.c) ----------------- */

/* 1 when a hypothesis is a tuner's knob changes: "NAME a -> b" items
 * joined by commas ("ACC 4 -> 16, ROWS 4 -> 1"). */
int kiln_lesson_is_knobs(const char *hypothesis);
/* The technique a hypothesis names, on one line (whitespace runs become one
 * space): whole when it fits in limit bytes (0: cap-1), else cut after the
 * last whole word that fits with "..." appended (never mid-word). */
void kiln_lesson_technique(const char *hypothesis, size_t limit, char *out, size_t cap);
/* Width classes of the widest row (columns) a run measures. */
#define KILN_WIDTH_NARROW 1024   /* <= this: narrow */
#define KILN_WIDTH_WIDE 8192     /* >= this: wide; between: mid */
/* "narrow", "mid" or "wide"; "" when cols <= 0 (not known). */
const char *kiln_lesson_width_class(long long cols);
/* Append the scope tag width/<width> to tags[0..n-1] when width is a class
 * (not NULL or ""); returns the new count. tags needs room for n+1. */
int kiln_lesson_scope_width(const char *width, char tags[][KILN_TAG_MAX], int n);

#endif
