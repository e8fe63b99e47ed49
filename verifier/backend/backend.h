/* backend.h - one table of operations per verification backend. verify.c
 * runs the stages (static checks, compile, smoke, visible, hidden,
 * stability, determinism, timing, plausibility) and calls the table for
 * everything that depends on where and how a candidate runs; it never asks
 * which backend it has. A backend is a folder under verifier/backend/ with
 * one such table, listed once in backend.c (like SQLite's VFS: a struct
 * of function pointers per implementation). tests/unit/test_backend.c
 * verifies with a backend of its own that runs nothing.
 *
 * Every operation returns 0 to go on, 1 when it reached a verdict (with
 * job_conclude), or -1 for kiln's own failure with err set. */
#ifndef KILN_BACKEND_H
#define KILN_BACKEND_H

#include <stdint.h>

#include "call.h"
#include "kiln_error.h"
#include "task.h"
#include "verify.h"

struct job;

enum { KILN_FRESH_AGAIN = 1, KILN_FRESH_HIDDEN = 2 };

typedef struct kiln_backend_ops {
    const char *name;
    kiln_backend kind;          /* what kiln_verify_opts.backend names it by */
    int candidate_host_code;    /* the candidate runs code on the host (the verdict's
                                   trust level says so) */
    int start_before_lane;      /* workers start before the device lane is taken, so
                                   their start overlaps the job holding the device */
    /* The task's baseline source for this backend, and the built-in
     * baseline it would use instead (or NULL). */
    const char *(*task_baseline)(const struct job *j);
    const char *(*builtin_baseline)(const struct job *j);
    /* Checks of the candidate's source beyond the common ones (size, text). */
    int (*check_source)(struct job *j, const char *src, size_t len, kiln_error *err);
    /* Build what is built before any worker starts. */
    int (*build)(struct job *j, kiln_error *err);
    /* Start the workers with candidate, baseline and reference loaded, and
     * make j->cs ready for calls. */
    int (*start)(struct job *j, kiln_error *err);
    /* One call of lib (0 candidate, 1 baseline) on fresh inputs of shape s
     * (with the stability variant var, or NULL), checked against the gold. */
    int (*call)(struct job *j, const kiln_shape *s, const kiln_variant *var, int lib,
                kiln_call_result *res, kiln_error *err);
    /* Make j->hid a fresh candidate worker for purpose: one that has run
     * nothing the first worker ran, with the candidate (and what checks it)
     * loaded. For KILN_FRESH_AGAIN (determinism's second run) nothing it can
     * observe may depend on a hidden shape (an arena for the visible shapes);
     * for KILN_FRESH_HIDDEN it has room for the hidden shapes. A backend may
     * keep the same process for both where nothing it can observe differs
     * (device-resident CUDA: no arena). Its calls go through j->cs with
     * cs.cand pointed at it (verify.c). */
    int (*fresh_worker)(struct job *j, int purpose, kiln_error *err);
    /* Determinism: the candidate once more on the inputs of its last call,
     * in the callset's worker (the second one); 1 with a verdict when it
     * fails or its outputs differ from first's. */
    int (*again)(struct job *j, const char *label, const kiln_call_result *first,
                 const kiln_shape *s, kiln_error *err);
    /* Time candidate against baseline on visible shape i within budget_ns. */
    int (*time_shape)(struct job *j, int i, uint64_t budget_ns, kiln_error *err);
    /* The roofline's two slopes for a shape that reads read_bytes and
     * writes write_bytes: bytes (read + written) per second for that mix,
     * and the peak flops for the job's dtype (0: no compute floor). again:
     * measure once more rather than trust a cached figure (a kernel under
     * the floor is measured twice before it counts). */
    int (*roofline)(struct job *j, double read_bytes, double write_bytes, int again,
                    double *bytes_per_s, double *peak_flops, kiln_error *err);
    /* After the last stage: stop what the backend started; add any flags
     * its own accounting raises (j->v). May be NULL. */
    void (*finish)(struct job *j);
} kiln_backend_ops;

extern const kiln_backend_ops kiln_backend_cpu, kiln_backend_cuda, kiln_backend_cuda_host;

/* The table for a backend kind (for CUDA, the device-resident one unless
 * KILN_HOST_DATA=1 asks for the host-resident path), or NULL. */
const kiln_backend_ops *kiln_backend_ops_for(kiln_backend kind, const kiln_task *t);

#endif
