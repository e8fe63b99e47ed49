/* rundb.h - the search's records in SQLite (.kiln/kiln.db, WAL): runs,
 * candidates and LLM calls. Each candidate moves through states that are
 * written before the step they describe is taken, so a run interrupted at
 * any point resumes without losing a candidate or verifying one twice.
 * Every SQL statement on these tables is here (the lessons tables' are in
 * knowledge/); callers get plain C data back (scripts/deps.py checks). */
#ifndef KILN_RUNDB_H
#define KILN_RUNDB_H

#include <sqlite3.h>
#include <stddef.h>

#include "archive.h"
#include "cand_state.h"
#include "judgement.h"
#include "kiln_error.h"

#define KILN_DB_SCHEMA_VERSION 9   /* 2: lessons (knowledge/lessons.h); 3: the keep
                                      rule's settings and intervals; 4: the model's
                                      raw answer of each candidate; 5: the archive
                                      and runs.parents; 6: where the run's wall
                                      time went (runs.model_wait_s, verify_wait_s)
                                      and pooled measurements (the re-record, the
                                      pooled verdict and figures); 7: how busy
                                      the verifiers' lanes were and what
                                      pipelining did (runs.lane_busy_s, lane_s,
                                      prefetch_asked, prefetch_dropped); 8: what
                                      pipelining weighed and saved (runs.pipe_*);
                                      9: a lesson's structure (lessons.technique,
                                      task, dtype, shape_class, vs_baseline,
                                      baseline_effect, evidence_n) */

/* What pipelining weighs (docs/search.md, "Pipelining"): the model's time
 * and the verification's, iteration by iteration, over the run's sessions
 * (runs.pipe_*, version 8; 0 before). */
typedef struct kiln_pipe_times {
    double model_s;             /* the model calls' time: each batch from its requests to
                                   its last answer, on whichever thread asked */
    int model_n;                /* batches: iterations that asked the model */
    double verify_s;            /* the verify phases' time, the start kernel's included */
    int verify_n;
    int pipelined;              /* iterations whose drafts were asked for ahead and used */
    double saved_s;             /* the model's time that overlapped verification */
    int declined;               /* batches not asked ahead because they would not pay */
} kiln_pipe_times;

typedef struct kiln_run {
    char id[32], task[256], backend[8], dtype[8], grp[32], agent[16], model[128];
    char branch[128], start_commit[41], head_commit[41], status[16];
    long long seed;
    int iterations_done, budget_iterations, drafts;
    double budget_seconds, seconds_used;
    long long budget_tokens, tokens_used;
    double best_speedup;        /* vs the task's baseline, of the head kernel */
    char base_url[512];         /* the model server, for a resumed run */
    char from_path[4096];       /* --from: start file or replay directory */
    /* The keep rule (verifier/measure/keep_rule.h), as the run started with it;
     * -1 and "" in a run recorded before kiln had them. */
    double keep_margin, max_regression;
    char objective[16];
    /* How parents are chosen: "best" or "archive" (docs/search.md,
     * "Population"); "" in a run recorded before kiln had an archive. */
    char parents[8];
    /* Wall seconds, over all sessions, the search waited on the model for
     * proposals and on the verifier for verdicts (docs/search.md, "Where
     * the time goes"); 0 in a run recorded before kiln measured them. */
    double model_wait_s, verify_wait_s;
    /* Over all sessions through kilnd: the seconds the verifiers' lanes of
     * the run's backend were busy, out of lane_s lane-seconds (search
     * lane_busy.h); the batches of drafts asked for ahead (pipelining) and
     * the answers of those never used. 0 before version 7. */
    double lane_busy_s, lane_s;
    int prefetch_asked, prefetch_dropped;
    kiln_pipe_times pipe;       /* pipelining's measures and what it saved (version 8) */
} kiln_run;

/* A candidate: its row in the run database. The one candidate struct: the
 * search moves it through its states (cand_state.h), and the review
 * commands show it (harness/review.h). */
typedef struct kiln_cand {
    char run[32];
    int n, iteration, draft;
    char parent[41], commit[41], proposer[16];
    kiln_cand_state state;     /* stored by name */
    char hypothesis[512], job[32], confirm_job[32], record_job[32], rerecord_job[32];
    char status[12], stage[16], code[32], reason[640], decision[24];
    /* speedup, confirm_speedup: the first verdict's and the re-time's
     * geomeans against the parent; speedup_vs_baseline, roofline: the pool
     * of the record and the re-record against the task's baseline (search
     * pooled.h; one record in a run from before version 6). */
    double speedup, confirm_speedup, speedup_vs_baseline, roofline;
    /* The intervals of speedup, confirm_speedup and speedup_vs_baseline
     * (geomeans; 0 when not measured), and why it was kept or reverted. */
    double speedup_lo, speedup_hi, confirm_lo, confirm_hi, baseline_lo, baseline_hi;
    char why[400];
    /* The claim against the parent: the verdict and its re-time pooled,
     * with its interval (0 when it was not re-timed). */
    double pooled_speedup, pooled_lo, pooled_hi;
    /* As the review shows it (kiln_db_cand_rows and harness/review.c fill
     * these; the search leaves them 0 but updated_at, which it sets when
     * it writes the note, cand_git.c): kept (its decision is keep);
     * vs_baseline, against the task's baseline: recorded for kept ones,
     * estimated for the others; pooled, 1 when that pools two records (0:
     * one, a run from before pooling); t, seconds from the run's start to
     * updated_at, its row's last update (seconds since the epoch). */
    int kept, pooled;
    double vs_baseline, t, updated_at;
} kiln_cand;

/* A candidate's stored texts: its judgements' verdicts (in kiln_judgement's
 * order: kiln_cand_text of a judgement is the judgement's number), the
 * record and re-record pooled (what every claim against the baseline
 * reads), its source (stored before it is verified) and the model's raw
 * answer (kept even when it did not parse). */
typedef enum kiln_cand_text {
    KILN_TEXT_VERDICT = KILN_JUDGE_VERDICT,
    KILN_TEXT_CONFIRM = KILN_JUDGE_CONFIRM,
    KILN_TEXT_RECORD = KILN_JUDGE_RECORD,
    KILN_TEXT_RERECORD = KILN_JUDGE_RERECORD,
    KILN_TEXT_POOLED = KILN_NJUDGEMENTS,
    KILN_TEXT_SOURCE,
    KILN_TEXT_ANSWER,
    KILN_NTEXTS
} kiln_cand_text;

/* The text of a name ("verdict", "confirm", "record", "rerecord",
 * "pooled", "source", "answer"), or -1: an unknown name is no column. */
int kiln_cand_text_parse(const char *name);

/* Open (creating or upgrading) the database; a corrupt or foreign file is
 * an error naming the file. */
int kiln_db_open(sqlite3 **db, const char *path, kiln_error *err);
void kiln_db_close(sqlite3 *db);

int kiln_db_run_insert(sqlite3 *db, const kiln_run *r, kiln_error *err);
int kiln_db_run_update(sqlite3 *db, const kiln_run *r, kiln_error *err);
/* 1 found, 0 not found, -1 error. */
int kiln_db_run_get(sqlite3 *db, const char *id, kiln_run *r, kiln_error *err);
/* The pooled speedup against the task's baseline of the candidate that
 * made commit (any run of the workspace; a lesson's baseline_effect divides
 * by it), or 0 when no candidate row has one (the start kernel). */
double kiln_db_commit_vs_baseline(sqlite3 *db, const char *commit);

/* The row's updated_at: c->updated_at where set (> 0), else now. */
int kiln_db_cand_upsert(sqlite3 *db, const kiln_cand *c, kiln_error *err);
/* Candidates of a run in order; *out malloc'd. */
int kiln_db_cands(sqlite3 *db, const char *run, kiln_cand **out, int *n, kiln_error *err);
/* The candidates of run's iteration it, in order; *out malloc'd. */
int kiln_db_cands_of(sqlite3 *db, const char *run, int it, kiln_cand **out, int *n,
                     kiln_error *err);
/* The number the run's next candidate gets (0 for none yet); -1 with err. */
int kiln_db_cand_next(sqlite3 *db, const char *run, kiln_error *err);
/* *n: the candidate of run committed as commit (the first), -1 none. */
int kiln_db_cand_at(sqlite3 *db, const char *run, const char *commit, int *n, kiln_error *err);
/* Store or read a candidate's text (kiln_cand_text); NULL when it has none. */
int kiln_db_cand_text_put(sqlite3 *db, const char *run, int n, kiln_cand_text which,
                          const char *text, kiln_error *err);
char *kiln_db_cand_text(sqlite3 *db, const char *run, int n, kiln_cand_text which);
/* The same by the text's name (kiln_cand_text_parse): a name that is none
 * is an error storing, and NULL reading, never another column's text. */
int kiln_db_cand_verdict(sqlite3 *db, const char *run, int n, const char *which,
                         const char *json, kiln_error *err);
char *kiln_db_cand_get_verdict(sqlite3 *db, const char *run, int n, const char *which);

int kiln_db_llm_call(sqlite3 *db, const char *run, int n, int draft, const char *provider,
                     const char *model, long prompt_tokens, long completion_tokens,
                     double latency_s, int attempts, long http_status, int ok, const char *error,
                     kiln_error *err);

/* The run's archive (archive.h): store e in its cell, replacing the
 * cell's elite; read every cell of run, by cell name (*out malloc'd,
 * none is not an error). */
int kiln_db_archive_put(sqlite3 *db, const char *run, const kiln_elite *e, kiln_error *err);
int kiln_db_archive(sqlite3 *db, const char *run, kiln_elite **out, int *n, kiln_error *err);

/* ---- reading for the review commands and the search's summary ---------- */

/* Open an existing database read-only (review never writes it; WAL lets
 * it read while a search writes). */
int kiln_db_open_readonly(sqlite3 **db, const char *path, kiln_error *err);

/* Run ids: every run of task (by start), the run id (0 or 1 of it), or
 * (both NULL, or run "last") the latest. *ids malloc'd; none is not an error. */
int kiln_db_run_ids(sqlite3 *db, const char *run, const char *task, char (**ids)[32], int *n,
                    kiln_error *err);
/* The latest run's id into id; 1 found, 0 none (or unreadable). */
int kiln_db_latest_run(sqlite3 *db, char *id, size_t len);
/* When the run started and was last updated (left as they are when unknown). */
void kiln_db_run_times(sqlite3 *db, const char *run, double *started, double *updated);

typedef struct kiln_llm_totals {
    int calls, failed;
    long long prompt_tokens, completion_tokens;
} kiln_llm_totals;
/* A run's LLM calls summed (zeros when unreadable). */
void kiln_db_llm_totals(sqlite3 *db, const char *run, kiln_llm_totals *t);

/* A run's candidates in order, as the review commands show them (the
 * review fields of kiln_cand filled, but t): no state check, so a row
 * kiln_db_cands would refuse still shows; *out malloc'd. */
int kiln_db_cand_rows(sqlite3 *db, const char *run, kiln_cand **out, int *n, kiln_error *err);

/* Candidates of a run by outcome: how many of each (decision, stage, code),
 * a passing one as timing/not-faster, start candidate left out, most first.
 * *out malloc'd; -1 when unreadable. */
typedef struct kiln_outcome_count {
    char decision[24], stage[32], code[64];
    int count;
} kiln_outcome_count;
int kiln_db_outcome_counts(sqlite3 *db, const char *run, kiln_outcome_count **out, int *n);

/* The verdict against the task's baseline of run's candidate at commit:
 * the pooled one, else (a run from before pooling) the record; malloc'd,
 * NULL when there is none. */
char *kiln_db_record_verdict_at(sqlite3 *db, const char *run, const char *commit);

/* Commits of kept candidates: of run (in order) or, run NULL, of every
 * run (by last update); *out malloc'd. */
int kiln_db_kept_commits(sqlite3 *db, const char *run, char (**out)[41], int *n,
                         kiln_error *err);

/* A kept candidate with a record verdict and its source, for kiln export. */
typedef struct kiln_kept_record {
    char run[32], commit[41], job[32], rejob[32];
    int n;
    double updated_at;
    char *verdict, *source, *hypothesis;   /* malloc'd */
    char *reverdict;            /* the re-record (malloc'd), NULL: none (an older run) */
} kiln_kept_record;
/* Every kept candidate of runs with this dtype and backend that has a
 * record verdict and a source, oldest first; *out malloc'd. */
int kiln_db_kept_records(sqlite3 *db, const char *dtype, const char *backend,
                         kiln_kept_record **out, int *n, kiln_error *err);
/* Free what kiln_db_kept_records returned. */
void kiln_kept_records_free(kiln_kept_record *k, int n);

/* ---- kiln db rebuild (harness/db_rebuild.h) ------------------------------ */

/* The times kiln_db_run_insert, kiln_db_cand_upsert and kiln_db_archive_put
 * set to now, set to those a rebuild read from git (seconds since the
 * epoch): the order of updates is what `kiln export` and `kiln status` go by. */
int kiln_db_run_set_times(sqlite3 *db, const char *id, double started, double updated,
                          kiln_error *err);
int kiln_db_cand_set_time(sqlite3 *db, const char *run, int n, double updated, kiln_error *err);
int kiln_db_archive_set_time(sqlite3 *db, const char *run, const char *cell, double updated,
                             kiln_error *err);

/* 0 when the database reads whole (SQLite's quick check, and a runs
 * table); -1 with err saying what SQLite found (the caller names the file). */
int kiln_db_check(sqlite3 *db, kiln_error *err);

#endif
