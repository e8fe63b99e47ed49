/* judge.h - verification for the search: through kilnd (the default: jobs
 * survive a crash of either side and are never run twice), or in this
 * process with --no-daemon. */
#ifndef KILN_JUDGE_H
#define KILN_JUDGE_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "kiln_error.h"
#include "task.h"

typedef struct kiln_judge {
    int in_process;
    char address[4096];         /* kilnd socket */
    const kiln_task *task;
    char task_ref[4096];        /* name or directory, as kilnd resolves it */
    const char *backend;        /* "cpu" (also when NULL or "") or "cuda" */
    const char *dtype, *group;
    int timing_ms;
    const char *key;            /* idempotency key for the next request (kilnd), or NULL:
                                   asking again with the same key gets the same job */
    uint64_t deadline_ns;       /* kiln_mono_ns() after which no verdict is waited for
                                   (0: none); through kilnd only, since a job there
                                   outlives the wait and a resumed run collects it */
    int job_failed;             /* out: kilnd ended the job with an error, not a verdict */
    int past_deadline;          /* out: gave up waiting at the deadline */
} kiln_judge;

typedef void (*kiln_judge_accepted)(void *ctx, const char *job);

/* Verify source against baseline (a source text; NULL: the task's). When
 * job is non-empty the verdict of that earlier job is fetched instead of
 * submitting again. on_accepted is called with the job id before waiting,
 * so the caller can record it. Returns the verdict (free with cJSON_Delete)
 * or NULL with err. */
cJSON *kiln_judge_run(kiln_judge *j, const char *source, const char *baseline, char job[32],
                      kiln_judge_accepted on_accepted, void *ctx, kiln_error *err);

#endif
