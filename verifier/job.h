/* job.h - one verification job's state and the helpers (job.c) that the
 * stages in verify.c and the backends under verifier/backend/ share. Not an
 * interface outside the verifier (verify.h is). */
#ifndef KILN_JOB_H
#define KILN_JOB_H

#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"
#include "call.h"
#include "cpu_build.h"
#include "manifest.h"
#include "verify.h"
#include "worker_client.h"

#define SOURCE_LIMIT (256 * 1024)
#define MAX_JOB_SHAPES (2 * KILN_MAX_SHAPES + 16)

typedef struct job {
    const kiln_verify_opts *o;
    const kiln_backend_ops *ops;
    const kiln_task *t;
    const kiln_group *g;
    kiln_verdict *v;
    char dir[4096];
    kiln_worker cand, base, ref;   /* base: the CPU baseline's own worker */
    kiln_worker hid;            /* a fresh candidate worker: determinism's second run,
                                   then the hidden stage (verify.c's stage_second) */
    int second_calls;           /* calls made there, and the time it took: in no figure */
    double largest_bytes;       /* the largest timed shape's bytes, for the verdict's bandwidth */
    uint64_t second_ns;
    char built[2][65];          /* CPU: SHA-256 of cand.so and base.so as built */
    kiln_callset cs;
    int cs_ready;
    kiln_shape hidden[KILN_MAX_SHAPES + 16];
    int nhidden;
    uint64_t deadline_ns;
    double reported_ns;         /* sum of worker-reported call times */
    int timer_flags;
    kiln_manifest *man[2];      /* CUDA: candidate's and baseline's launches
                                   (man[1] NULL for a built-in baseline) */
    kiln_manifest *man_ref;     /* CUDA: the CUDA reference's launches, or NULL */
    kiln_preconds pre;          /* the candidate's preconditions (precond.h) */
    kiln_preconds base_pre;     /* the baseline's (a search's parent may have some) */
    kiln_group kept;            /* the group less the visible shapes pre leaves out;
                                   g points here once the shapes are chosen */
    int vis_id[KILN_MAX_SHAPES];   /* kept.visible[i] is the group's shape v(vis_id[i]) */
} job;

struct samples;
/* A backend's time that counts, per call, from a shape's pairs: n into
 * each of cand and base; *overhead what was taken off each (0: none). */
typedef void (*job_figures_fn)(const job *j, const struct samples *sm, double *cand,
                               double *base, double *overhead);

/* What timed pairs measured, per pair (candidate and baseline). */
typedef struct samples {
    double cand[512], base[512];          /* reported by the worker */
    double cand_rt[512], base_rt[512];    /* round trips seen here */
    double cand_cpu[512], base_cpu[512];  /* CPU the kernel charged each worker over
                                             each call's round trip (0: unknown) */
    job_figures_fn figures;               /* the time that counts (NULL: the report);
                                             set, null_cpu is measured */
    double null_cpu[512];                 /* CPU the kernel charged the trusted
                                             reference worker over a call of no
                                             library, one per pair */
    double prep_cpu[512];                 /* ... and over its scribbling round trip
                                             (KILN_MSG_PREP) before that call */
    double cand_cupti[512], base_cupti[512], cand_wall[512], base_wall[512];   /* CUDA */
    double cand_kern[512], base_kern[512];   /* device-resident: CUPTI kernel time per set */
    double cand_chk[512], base_chk[512];     /* device-resident: the worker's checks per call */
    double cand_draw[512], cand_setup[512];  /* device-resident: drawing; graph, flush */
    int n;
    /* CPU the kernel charged the candidate's worker over all n pairs while
     * none of its calls was in flight (-1: unknown). A worker that should
     * be blocked reading, but runs, takes the core from the baseline. */
    double cand_between_ns;
} samples;

/* A backend's way of checking a shape's timers once its pairs are in:
 * writes what disagrees into why (empty when they agree). */
typedef void (*job_agree_fn)(const job *j, const samples *sm, char *why, size_t len);

/* Visible shape i's id ("v3": its number in the task's group, whichever
 * shapes the preconditions left out). */
void job_visible_id(const job *j, int i, char id[16]);
/* Visible shape i's id and the label of its timed calls. */
void job_timed_label(const job *j, int i, char id[16], char label[200]);

void job_progress(job *j, const char *stage, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Set the verdict (status, stage, code, reason); returns 1. */
void job_feedback_output(job *j);
int job_conclude(job *j, const char *status, const char *stage, const char *code,
                 const char *fmt, ...) __attribute__((format(printf, 5, 6)));
kiln_shape_result *job_result_for(job *j, const char *id, const kiln_shape *s, int visible);
int job_read_source(const char *path, unsigned char **buf, size_t *len, kiln_error *err);
/* The baseline's path ("(built in: cuBLAS)" for a built-in one), and the
 * built-in baseline's name or NULL. */
const char *job_baseline_path(const job *j);
const char *job_builtin_baseline(const job *j);
/* Visible then hidden shapes into out; their number. */
int job_all_shapes(const job *j, kiln_shape *out);
/* The shapes of the workers that run visible shapes only (nothing they
 * can observe may depend on a hidden shape), and the hidden stage's. */
int job_visible_shapes(const job *j, kiln_shape *out);
int job_hidden_shapes(const job *j, kiln_shape *out);
/* Copy the job's file from_rel into its folder to_sub as name (made if
 * missing), first checking its SHA-256 against sha (when not NULL): the
 * second worker loads what the first one did. */
int job_copy_artefact(job *j, const char *from_rel, const char *to_sub, const char *name,
                      const char *sha, kiln_error *err);
/* Build src with the task's C compile into DIR/sub/name, or take the very
 * same build from the job's build cache (if any). */
int job_build_one(job *j, kiln_build_role role, const char *src, const char *sub,
                  const char *name, kiln_build_result *res, kiln_error *err);
/* The task's C reference did not build: the error that says why. */
int job_reference_failed(job *j, const kiln_build_result *res, kiln_error *err);
/* Start the C reference's worker (ref/ref.so) for shapes, on core cpu
 * (-1: any). */
int job_start_reference(job *j, const kiln_shape *shapes, int n, int cpu, kiln_error *err);
/* The verdict code of a failed candidate call. */
const char *job_outcome_code(const job *j, const kiln_call_result *res);
/* One checked call of lib on fresh inputs (through the table's call): 0
 * ok, 1 verdict reached (a failure, or the job out of time), -1 internal. */
int job_checked(job *j, const char *stage, const char *label, const kiln_shape *s,
                const kiln_variant *var, int lib, kiln_call_result *res, kiln_error *err);
/* One call through the callset (call.c): every real backend's call op. */
int job_callset_call(job *j, const kiln_shape *s, const kiln_variant *var, int lib,
                     kiln_call_result *res, kiln_error *err);
/* Determinism's verdicts: the second run failed (res), or its outputs
 * differ. */
int job_second_run_failed(job *j, const char *label, const kiln_call_result *res);
int job_nondeterministic(job *j, const char *label);
/* Determinism with the outputs on the host (the callset's last_out). */
int job_again_host(job *j, const char *label, const kiln_call_result *first,
                   const kiln_shape *s, kiln_error *err);
/* One candidate/baseline pair, alternating who goes first, into sm. */
int job_timed_pair(job *j, const char *label, const kiln_shape *s, samples *sm, kiln_error *err);
/* Timed pairs for one shape (sm->n of them) until settled() says the
 * figures may stop (over_budget: the shape's budget is spent), and at
 * least the job's minimum number of pairs ran. settled() may also
 * update r's figures from sm. */
typedef int (*job_settled_fn)(const job *j, const samples *sm, kiln_shape_result *r,
                              int over_budget);
int job_pairs(job *j, const kiln_shape *s, const char *label, uint64_t budget_ns, samples *sm,
              kiln_shape_result *r, job_settled_fn settled, kiln_error *err);
/* Pairs as job_pairs, then agree() on the timers; a disagreement is
 * measured once more before it becomes the verdict's flag for shape id. */
int job_measure(job *j, const kiln_shape *s, const char *id, const char *label,
                uint64_t budget_ns, samples *sm, kiln_shape_result *r, job_settled_fn settled,
                job_agree_fn agree, kiln_error *err);
/* Host-data timing of visible shape i: pairs until the medians of the
 * time that counts settle, then agree() (measured once more on a
 * disagreement). figures: that time from the pairs (and a call of no
 * library in the reference's worker each pair, to calibrate it); NULL:
 * the worker's report is the time (a worker that runs no candidate host
 * code: the CUDA backend's host data). */
int job_time_host(job *j, int i, uint64_t budget_ns, job_figures_fn figures, job_agree_fn agree,
                  kiln_error *err);

#endif
