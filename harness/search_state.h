/* search_state.h - what the parts of `kiln search` share: setup and resume
 * (search_setup.c), the iteration (search_loop.c), proposers (propose.c). */
#ifndef KILN_SEARCH_STATE_H
#define KILN_SEARCH_STATE_H

#include <cjson/cJSON.h>
#include <sqlite3.h>
#include <stdint.h>

#include "archive.h"
#include "daemon_client.h"
#include "judge.h"
#include "judge_seam.h"
#include "lane_busy.h"
#include "keep_rule.h"
#include "llm.h"
#include "progress.h"
#include "rundb.h"
#include "search.h"
#include "task.h"
#include "tune.h"
#include "verify.h"
#include "workspace.h"

typedef struct kiln_prefetch kiln_prefetch;

typedef struct search {
    const kiln_search_opts *o;
    kiln_task task;
    kiln_backend backend;       /* the run's: cpu or cuda */
    kiln_dtype dt;
    kiln_ws ws;
    sqlite3 *db;
    kiln_run run;
    kiln_judge judge;
    kiln_keep_opts keep;        /* the run's keep rule, as recorded */
    int verify_failed;          /* the last verification ended without a verdict */
    char relpath[512];          /* the candidate file in the workspace */
    kiln_tuner tuner;
    char **replay;
    int nreplay;
    kiln_llm_config llm;
    int use_llm;
    double t0;                  /* this session's start (wall budget) */
    double seconds_before;      /* used by earlier sessions of the run */
    double slowest_iteration_s; /* the longest iteration of this session */
    int llm_fail_streak;        /* failed model calls in a row, this session */
    double llm_fail_since;      /* kiln_wall_now() of the first of them */
    char llm_last_error[256];
    char stop_reason[256];
    /* --objective per-shape with --parents best: the shape the iteration's
     * parent was chosen for ("v4, now 21% of its floor, held by #4"; ""
     * for none), which the prompt asks the model to improve. */
    char target[160];
    kiln_progress progress;
    char parent[41];            /* this iteration's parent commit (the head, or an elite) */
    struct kiln_seen *seen;     /* verified sources, read from the database on first use
                                   (duplicates.c) */
    struct kiln_prefetch *prefetch; /* the next iteration's model calls in flight (prefetch.h) */
    int prefetch_asked;         /* batches asked for ahead, this session */
    int prefetch_dropped;       /* answers asked for ahead that became no candidate */
    kiln_client hold;           /* the standing connection that holds kilnd (fd -1: none) */
    kiln_lane_sample lanes_at_start;    /* the verifiers' lane busy seconds as this session
                                           started (lane_busy.h) */
    /* The iteration's state machine (iteration.h): the verifier's table
     * (ops NULL: the real one over judge; a test sets a scripted one), the
     * iteration whose proposals propose.c hands over in memory, whether
     * the last judgement gave up at the deadline, and a test's watch on
     * every move (NULL: none). */
    kiln_judge_seam seam;
    struct kiln_iteration *proposing;
    int past_deadline;
    void (*moved)(void *ctx, const kiln_cand *c);
    void *moved_ctx;
} search;

int kiln_search_setup(search *s, kiln_error *err);
/* Hold the run's one local kilnd (daemon_client.h's kiln_client_hold), or
 * hold it again once the daemon it held has gone; with --no-daemon or many
 * kilnds, nothing. Failing is left to the verification that follows. */
void kiln_search_hold(search *s);
void kiln_search_teardown(search *s);
/* 0 when the run ended (budget, exhausted proposer); -1 on error or Ctrl-C
 * (err's kind says which; after Ctrl-C it has no message). */
int kiln_search_loop(search *s, kiln_error *err);

/* Proposals for iteration `it` as candidate rows (state "proposed" with the
 * source stored, or "done" for an answer that could not be used). 1 when
 * the proposer has nothing left, 0 ok, -1 error (a rejected API key). */
int kiln_propose(search *s, int it, int first_n, const char *parent_source,
                 const char *parent_verdict, kiln_error *err);

/* The parent iteration it gets when it starts now, with none of its
 * proposals stored: the best (the run branch's head), or with --parents
 * archive a seeded draw from the archive. */
int kiln_search_draw_parent(search *s, int it, char parent[41], kiln_error *err);
/* Seconds the next iteration is expected to take, by the time budget's
 * rule (search_loop.c's budget_left and prefetch.c's worth_it). */
double kiln_search_next_iteration_s(const search *s);

void kiln_search_catch_interrupts(void);
/* 1 once Ctrl-C, SIGTERM or SIGHUP came, or stdout's reader went away. */
int kiln_search_should_stop(void);
/* 1 when stdout is a pipe (or socket) nobody reads any more. */
int kiln_search_output_gone(void);
/* Why the search was asked to stop ("Ctrl-C", "SIGHUP, ..."); "" if it was not. */
const char *kiln_search_stop_cause(void);
double kiln_wall_now(void);
double kiln_verdict_noise(const kiln_verdict *v);
void kiln_cand_from_verdict(kiln_cand *c, const kiln_verdict *v);
/* The kept kernel with the highest pooled speedup against the task's
 * baseline into *best (the figure every view reports as the run's best;
 * the head, which a keep of a lower figure can move to, is the lineage the
 * search continues); 0 when one was found, -1 when none (or the database
 * cannot be read). */
int kiln_search_best_kept(search *s, kiln_cand *best);

#endif
