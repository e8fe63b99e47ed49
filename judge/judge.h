/* judge.h - kiln's one client of the verifier: `kiln verify`, `kiln
 * search` and `kiln reverify` all judge a kernel through it. It talks to
 * kilnd (the default: jobs survive a crash of either side and are never
 * run twice) or runs the verification in this process (--no-daemon)
 * behind the same interface, with one retry and timeout policy. */
#ifndef KILN_JUDGE_H
#define KILN_JUDGE_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "kiln_error.h"
#include "task.h"
#include "verdict.h"

/* A progress event: the stage, and where in it. */
typedef void (*kiln_judge_progress)(void *ctx, const char *stage, const char *message);

struct kiln_verifiers;

typedef struct kiln_judge {
    int in_process;
    char address[4096];         /* kilnd socket */
    struct kiln_verifiers *verifiers;   /* many kilnds (kilnd_pool.h), or NULL: the one at
                                   address. Each job goes to the one with the most free
                                   lanes; one that goes down has its jobs sent elsewhere
                                   under the same key; job ids carry "@" and the
                                   verifier's tag */
    const kiln_task *task;
    char task_ref[4096];        /* name or directory, as kilnd resolves it */
    const char *backend;        /* "cpu" (also when NULL or "") or "cuda" */
    const char *dtype, *group;  /* NULL or "": the task's defaults */
    int timing_ms;
    int call_timeout_ms;        /* 0: the verifier's default */
    uint64_t deadline_ns;       /* kiln_mono_ns() after which no verdict is waited for
                                   (0: none); through kilnd only, since a job there
                                   outlives the wait and a resumed run collects it */
    kiln_judge_progress progress;   /* NULL: none */
    void *progress_ctx;
    /* In process only: verify these files as they are (a file that could
     * not be sent, say), keep the job directory, fault injection. */
    const char *candidate_path, *baseline_path;
    int keep_dir;
    double report_scale;
    char daemon_build[17];      /* the build of the kilnd first used (kiln_client_open_keep):
                                   after a rebuild it is still accepted, so one session
                                   judges with one daemon and never stops its own */
    /* out */
    int job_failed;             /* kilnd ended the job with an error, not a verdict */
    int past_deadline;          /* gave up waiting at the deadline */
    char error_code[32];        /* why no verdict came: kilnd's error code, or "bad-input",
                                   "internal", "unreachable" (no kilnd to connect to),
                                   "lost" (kilnd went away for good during a job),
                                   "deadline"; with verifiers, "unreachable" when none
                                   could take the job for a minute */
} kiln_judge;

typedef void (*kiln_judge_accepted)(void *ctx, const char *job);

/* Verify source against baseline (a source text; NULL: the task's). key
 * is the idempotency key (kilnd), or NULL: asking again with the same key
 * gets the same job. When job is non-empty the verdict of that earlier job
 * is fetched instead of submitting again. on_accepted is called with the job id before waiting,
 * so the caller can record it. Returns the verdict, decoded once (free
 * with free()), or NULL with err and j->error_code. */
kiln_verdict *kiln_judge_run(kiln_judge *j, const char *source, const char *baseline,
                             const char *key, char job[32], kiln_judge_accepted on_accepted,
                             void *ctx, kiln_error *err);

/* Through kilnd only: hand source to kilnd and return once it has
 * accepted the job (its id in job, on_accepted called), without waiting
 * for the verdict; kiln_judge_run with that job id collects it later. A
 * search submits an iteration's drafts at once this way, so kilnd compiles
 * one while it times another and keeps every lane busy. 0, or -1 with err
 * (nothing is lost: the caller may still verify it with kiln_judge_run). */
int kiln_judge_submit(kiln_judge *j, const char *source, const char *baseline, const char *key,
                      char job[32], kiln_judge_accepted on_accepted, void *ctx, kiln_error *err);

#endif
