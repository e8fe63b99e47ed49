/* verify.h - one verification job, CPU or CUDA backend: every stage of
 * DESIGN.md from static checks to plausibility, ending in a verdict. */
#ifndef KILN_VERIFY_H
#define KILN_VERIFY_H

#include "kiln_error.h"
#include "task.h"
#include "verdict.h"

typedef void (*kiln_progress_fn)(void *ctx, const char *stage, const char *message);

typedef enum kiln_backend {
    KILN_BACKEND_CPU = 0,       /* a C function in a shared object */
    KILN_BACKEND_CUDA,          /* device code with a launch manifest */
} kiln_backend;

/* "cpu" / "cuda" -> the backend, -1 if unknown. */
int kiln_backend_parse(const char *name);
const char *kiln_backend_name(kiln_backend b);
/* The dtype a backend runs when none is asked for: the task's first. */
kiln_dtype kiln_backend_default_dtype(const kiln_task *t, kiln_backend b);

typedef struct kiln_verify_opts {
    const kiln_task *task;
    kiln_backend backend;
    int device;                 /* CUDA: the device ordinal */
    const char *candidate;      /* path of the candidate source */
    const char *baseline;       /* path of what to time against; NULL: the task's
                                   baseline (a search times against the parent) */
    kiln_dtype dtype;
    int group;                  /* index into task->groups */
    int timing_ms;              /* time budget of the timing stage (default 2000) */
    int call_timeout_ms;        /* most any one call may take (default 10000) */
    int job_timeout_ms;         /* most the whole job may take (default 300000) */
    int min_pairs, max_pairs;   /* timed baseline/candidate pairs per shape (5, 200) */
    double speedup_ceiling;     /* above it: suspect (default 100) */
    int keep_dir;               /* leave the job directory for debugging */
    kiln_progress_fn progress;
    void *progress_ctx;
    /* Called after compiling and before the first run stage, and after the
     * last: kilnd serialises run stages per device with these. */
    void (*lane_acquire)(void *ctx);
    void (*lane_release)(void *ctx);
    void *lane_ctx;
    const char *work_root;      /* where job directories go (default $TMPDIR) */
    const char *build_cache;    /* where built baselines and references are kept
                                   for later jobs (build_cache.h); NULL: none */
    double test_report_scale;   /* fault injection: the worker scales the candidate's
                                   reported times (tests of the timer cross-checks) */
    const struct kiln_backend_ops *backend_ops;   /* tests: a backend of their own
                                   (backend/backend.h); NULL: backend's table */
} kiln_verify_opts;

#define KILN_VERIFY_BAD_INPUT (-2)
#define KILN_VERIFY_INTERNAL (-3)

/* Numeric fields left at zero take the defaults above. Returns 0 when a
 * verdict was reached (see v->status), else KILN_VERIFY_BAD_INPUT or
 * KILN_VERIFY_INTERNAL with err filled. */
int kiln_verify(const kiln_verify_opts *o, kiln_verdict *v, kiln_error *err);

#endif
