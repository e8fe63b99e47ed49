/* rundb.h - the search's records in SQLite (.kiln/kiln.db, WAL): runs,
 * candidates and LLM calls. Each candidate moves through states that are
 * written before the step they describe is taken, so a run interrupted at
 * any point resumes without losing a candidate or verifying one twice. */
#ifndef KILN_RUNDB_H
#define KILN_RUNDB_H

#include <sqlite3.h>

#include "cand_state.h"
#include "kiln_error.h"

#define KILN_DB_SCHEMA_VERSION 2   /* 2: lessons (knowledge/lessons.h) */

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
} kiln_run;

typedef struct kiln_cand {
    char run[32];
    int n, iteration, draft;
    char parent[41], commit[41], proposer[16];
    kiln_cand_state state;     /* stored by name */
    char hypothesis[512], job[32], confirm_job[32], record_job[32];
    char status[12], stage[16], code[32], reason[640], decision[24];
    double speedup, confirm_speedup, speedup_vs_baseline, roofline;
} kiln_cand;

/* Open (creating or upgrading) the database; a corrupt or foreign file is
 * an error naming the file. */
int kiln_db_open(sqlite3 **db, const char *path, kiln_error *err);
void kiln_db_close(sqlite3 *db);

int kiln_db_run_insert(sqlite3 *db, const kiln_run *r, kiln_error *err);
int kiln_db_run_update(sqlite3 *db, const kiln_run *r, kiln_error *err);
/* 1 found, 0 not found, -1 error. */
int kiln_db_run_get(sqlite3 *db, const char *id, kiln_run *r, kiln_error *err);

int kiln_db_cand_upsert(sqlite3 *db, const kiln_cand *c, kiln_error *err);
/* Candidates of a run in order; *out malloc'd. */
int kiln_db_cands(sqlite3 *db, const char *run, kiln_cand **out, int *n, kiln_error *err);
int kiln_db_cand_verdict(sqlite3 *db, const char *run, int n, const char *which,
                         const char *json, kiln_error *err);
/* Store or read a candidate's text column. which: "source" (the candidate's
 * code, stored before it is verified), "verdict" (against its parent),
 * "confirm" (the re-time) or "record" (against the task's baseline). */
char *kiln_db_cand_get_verdict(sqlite3 *db, const char *run, int n, const char *which);

int kiln_db_llm_call(sqlite3 *db, const char *run, int n, int draft, const char *provider,
                     const char *model, long prompt_tokens, long completion_tokens,
                     double latency_s, int attempts, long http_status, int ok, const char *error,
                     kiln_error *err);

#endif
