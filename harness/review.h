/* review.h - what the review commands share (kiln reverify, report, status,
 * export): reading a workspace's records without changing them, a run's
 * candidates as the report and status need them, and small helpers for
 * verdict JSON, times and dates. */
#ifndef KILN_REVIEW_H
#define KILN_REVIEW_H

#include <cjson/cJSON.h>
#include <sqlite3.h>
#include <stddef.h>

#include "kiln_error.h"
#include "rundb.h"
#include "shares.h"
#include "verdict.h"

/* Open WORKSPACE/.kiln/kiln.db read-only: review never writes the
 * database, and works while a search is running (WAL). */
int kiln_rv_db_open(const char *workspace, sqlite3 **db, kiln_error *err);
/* 1 when a search holds the workspace's lock (.kiln/lock) right now. */
int kiln_rv_search_running(const char *workspace);
/* The same, with who holding it: "PID RUN" as the search wrote it ("" from
 * a kiln that wrote nothing there). */
int kiln_rv_lock_holder(const char *workspace, char *who, size_t len);

/* One candidate as the review commands show it: the one candidate struct
 * (rundb.h), its review fields filled (kept, vs_baseline: recorded for
 * kept ones, estimated for the others, see review.c; t; pooled). */
typedef kiln_cand kiln_rv_cand;

typedef struct kiln_rv_run {
    kiln_run run;
    double started_at, updated_at;
    kiln_rv_cand *c;
    int nc;
    long long prompt_tokens, completion_tokens;
    int llm_calls, llm_failed;
    int best;                   /* index in c of the best kept candidate; -1: none */
    kiln_verdict *best_record;  /* its verdict against the task's baseline (decoded):
                                   the pooled one, or its one record (best_pooled 0,
                                   a run from before pooling) */
    int best_pooled;
    kiln_elite *archive;        /* the run's archive by cell (none in older runs) */
    int narchive;
} kiln_rv_run;

/* The lineage of the run's best (the branch's head): indexes into r->c from
 * the start kernel to the head, following each candidate's parent commit.
 * Returns how many (at most cap; 0 when the head is not a candidate). */
int kiln_rv_lineage(const kiln_rv_run *r, int *out, int cap);

/* Candidates per hour and where the run's wall time went (harness/shares.h,
 * docs/search.md "Where the time goes"), counting the candidates that
 * reached a decision, the start kernel aside. Returns 0, or -1 (out left
 * zero) for a run recorded before kiln measured its waits. */
int kiln_rv_shares(const kiln_rv_run *r, kiln_shares *out);

/* Run ids to review: `run` (an id or "last"), every run of `task`, or
 * (both NULL) the latest. *ids is malloc'd. -2 when nothing matches. */
int kiln_rv_run_ids(sqlite3 *db, const char *run, const char *task, char (**ids)[32], int *n,
                    kiln_error *err);
int kiln_rv_run_load(sqlite3 *db, const char *id, kiln_rv_run *r, kiln_error *err);
void kiln_rv_run_free(kiln_rv_run *r);

/* Rejected candidates grouped by stage and code, most frequent first; a
 * passing candidate that was not kept counts as timing/not-faster, as in
 * the search's summary. Returns the number of groups (at most cap). */
typedef struct kiln_rv_reject {
    char stage[16], code[32];
    int count;
} kiln_rv_reject;
int kiln_rv_rejections(const kiln_rv_run *r, kiln_rv_reject *out, int cap);

/* The lessons tables are the knowledge layer's: lessons.h reads them for
 * review (kiln_lessons_run_counts, kiln_lessons_run_created, ...). */

/* JSON: a member by dotted path ("summary.geomean_speedup"), as a number
 * (0 when absent) or string ("" when absent). */
const cJSON *kiln_rv_get(const cJSON *o, const char *path);
double kiln_rv_num(const cJSON *o, const char *path);
const char *kiln_rv_str(const cJSON *o, const char *path);
void kiln_rv_fmt_time(double ns, char *buf, size_t len);
/* A verdict's number as shown: 0 for one it left out (null, NaN). */
double kiln_rv_fin(double x);
/* A speedup with its interval, "1.083x [1.041, 1.126]", or "1.083x" when
 * the interval is unknown (lo or hi 0). */
void kiln_rv_fmt_speedup(double x, double lo, double hi, char *buf, size_t len);
/* A kept candidate's speedups with their intervals (64 bytes each): the
 * claim against its parent (the verdict and the re-time pooled; without a
 * re-time, the first verdict marked "(one measurement)"), the first
 * verdict, the re-time, and against the task's baseline (the pool of two
 * records, or one marked "(one record)"). */
void kiln_rv_fmt_kept(const kiln_rv_cand *c, char claim[64], char first[64], char retimed[64],
                      char base[64]);
/* Seconds since the epoch as "2026-01-31T12:00:00Z". */
void kiln_rv_fmt_date(double epoch_s, char *buf, size_t len);
double kiln_rv_now(void);

#endif
