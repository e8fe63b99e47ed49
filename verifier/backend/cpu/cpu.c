/* cpu.c - the CPU backend: the candidate is a C function built into a
 * shared object with the task's compile, loaded by kiln-worker; the
 * baseline runs in a worker of its own pinned to the same core, the C
 * reference in a third (docs/sandbox.md). */
#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "bandwidth.h"
#include "cpu_agree.h"
#include "fileutil.h"
#include "job.h"
#include "paths.h"
#include "rng.h"
#include "timing.h"

/* SHA-256 of the built libraries (cand/cand.so, base/base.so). */
static int artefact_hashes(job *j, char out[2][65], kiln_error *err)
{
    const char *rel[2] = {"cand/cand.so", "base/base.so"};
    for (int i = 0; i < 2; i++) {
        char path[4300];
        snprintf(path, sizeof path, "%s/%s", j->dir, rel[i]);
        if (kiln_sha256_file(path, out[i], err) < 0)
            return -1;
    }
    return 0;
}

/* The libraries about to be loaded are the ones that were built: every
 * process between (the confined compilers) could only write its own build
 * directory, and the workers get theirs read-only; this says so. */
static int artefacts_unchanged(job *j, kiln_error *err)
{
    char now[2][65];
    if (artefact_hashes(j, now, err) < 0)
        return -1;
    for (int i = 0; i < 2; i++)
        if (strcmp(now[i], j->built[i]) != 0)
            return kiln_fail(err, "%s changed between its build and its load",
                             i ? "the baseline library" : "the candidate library");
    return 0;
}

/* The compiler's word for a definition that does not match the prototype
 * the shim declares (gcc and clang both say "conflicting types for"). */
static int conflicting_types(const char *log, const char *fn)
{
    char what[KILN_NAME_MAX + 40];
    snprintf(what, sizeof what, "conflicting types for '%s'", fn);
    if (strstr(log, what))
        return 1;
    snprintf(what, sizeof what, "conflicting types for \xE2\x80\x98%s\xE2\x80\x99", fn);
    return strstr(log, what) != NULL;   /* gcc in a UTF-8 locale quotes so */
}

/* A candidate whose function is not the task's signature: the shim
 * declares the task's prototype first, so the compiler reports
 * conflicting types. The verdict names the prototype expected; the
 * compiler's words stay in the feedback. */
static int wrong_signature(job *j, const kiln_build_result *res)
{
    char sig[1024];
    if (!conflicting_types(res->log, j->t->function))
        return 0;
    kiln_task_cpu_signature(j->t, j->o->dtype, sig, sizeof sig);
    job_conclude(j, "fail", "compile", "compile-error", "the candidate's %s() does not match the "
                 "task's signature: expected %s (kiln task show %s)", j->t->function, sig,
                 j->t->name);
    snprintf(j->v->feedback, sizeof j->v->feedback,
             "fail at stage compile: the task's signature is %.400s;\n%.900s", sig, res->log);
    return 1;
}

/* Candidate and baseline are built in separate directories so that one
 * compile cannot see the other's files, and each runs in a worker of its
 * own confined to its directory: nothing the candidate runs can reach the
 * baseline's files, memory or timing. */
static int cpu_build(job *j, kiln_error *err)
{
    kiln_build_result res;
    job_progress(j, "compile", "compiling the candidate");
    if (job_build_one(j, KILN_BUILD_CANDIDATE, j->o->candidate, "cand", "cand.so", &res, err) < 0)
        return -1;
    if (!res.ok && res.resource[0])   /* the source made the compiler run into a limit */
        return job_conclude(j, "fail", "compile", "resource-limit", "the compiler %s",
                            res.resource);
    char missing[KILN_NAME_MAX + 32];
    snprintf(missing, sizeof missing, "undefined reference to `%s'", j->t->function);
    if (!res.ok && strstr(res.log, missing)) {
        job_conclude(j, "fail", "compile", "compile-error", "the candidate does not define %s(), "
                     "the task's function (kiln task show %s)", j->t->function, j->t->name);
        snprintf(j->v->feedback, sizeof j->v->feedback, "fail at stage compile: %.900s", res.log);
        return 1;
    }
    if (!res.ok && wrong_signature(j, &res))
        return 1;
    if (!res.ok) {
        job_conclude(j, "fail", "compile", "compile-error", "%s", "the candidate does not compile");
        snprintf(j->v->feedback, sizeof j->v->feedback, "fail at stage compile: %.900s", res.log);
        return 1;
    }
    const char *base = job_baseline_path(j);
    if (job_build_one(j, KILN_BUILD_CANDIDATE, base, "base", "base.so", &res, err) < 0)
        return -1;
    if (!res.ok)
        return kiln_fail(err, "the baseline %s does not compile:\n%s", base, res.log);
    if (job_build_one(j, KILN_BUILD_REFERENCE, j->t->reference_cpu, "ref", "ref.so", &res, err) < 0)
        return -1;
    if (!res.ok)
        return job_reference_failed(j, &res, err);
    return artefact_hashes(j, j->built, err);
}

/* The baseline in a worker of its own (its directory, its arena, the
 * candidate's core); kiln's code, so a failure is an internal error. */
static int start_baseline(job *j, const kiln_worker_opts *cand, kiln_error *err)
{
    char bdir[4200], blib[4300];
    snprintf(bdir, sizeof bdir, "%s/base", j->dir);
    snprintf(blib, sizeof blib, "%s/base.so", bdir);
    kiln_worker_opts bo = *cand;
    bo.dir = bdir;
    bo.libs[0] = blib;
    bo.report_scale = 0;
    if (kiln_worker_start(&j->base, &bo, err) < 0)
        return -1;
    if (j->base.fault)
        return kiln_fail(err, "the baseline's worker failed to start: %s", j->base.fault_msg);
    return 0;
}

/* The candidate's worker options for dir (its library dir/cand.so), with
 * an arena for the shapes given and no more. */
static kiln_worker_opts cand_opts(const job *j, const char *dir, const char *lib,
                                  const kiln_shape *shapes, int n)
{
    kiln_worker_opts co = {.dir = dir, .libs = {lib}, .nlibs = 1,
                           .arena_bytes = kiln_arena_bytes(j->t, j->o->dtype, shapes, n, 0),
                           .cpu_seconds = (unsigned)(j->o->job_timeout_ms / 1000 + 1),
                           .start_timeout_ms = 5000, .report_scale = j->o->test_report_scale};
    /* Room for the arena, the libraries and honest scratch; no more. */
    co.address_bytes = co.arena_bytes + ((size_t)1 << 30);
    return co;
}

/* Candidate and baseline workers have room for the visible shapes only: a
 * candidate that probes its arena's size learns nothing of a hidden shape
 * (a fresh worker, cpu_fresh_worker, runs those). */
static int cpu_start(job *j, kiln_error *err)
{
    kiln_shape shapes[MAX_JOB_SHAPES], vis[KILN_MAX_SHAPES];
    int n = job_all_shapes(j, shapes), nv = job_visible_shapes(j, vis);
    /* Candidate, baseline and reference share one core: a fair race, and
     * the reference's calls of no library measure what a call costs there. */
    int cpu = sched_getcpu();
    cpu = cpu > 0 ? cpu : 0;
    if (job_start_reference(j, shapes, n, cpu, err) < 0 || artefacts_unchanged(j, err) < 0)
        return -1;
    char cdir[4200], clib[4300];
    snprintf(cdir, sizeof cdir, "%s/cand", j->dir);
    snprintf(clib, sizeof clib, "%s/cand.so", cdir);
    kiln_worker_opts co = cand_opts(j, cdir, clib, vis, nv);
    job_progress(j, "smoke", "starting the workers");
    co.pin = 1;
    co.cpu = cpu;
    if (kiln_worker_start(&j->cand, &co, err) < 0)
        return -1;
    snprintf(j->v->sandbox, sizeof j->v->sandbox, "%.255s", j->cand.sandbox);
    if (j->cand.fault)
        return job_conclude(j, "fail", "smoke", kiln_fault_code(j->cand.fault),
                            "the candidate failed while being loaded: %s", j->cand.fault_msg);
    if (start_baseline(j, &co, err) < 0 ||
        kiln_callset_init(&j->cs, j->t, j->o->dtype, shapes, n, kiln_secret_seed(), err) < 0)
        return -1;
    j->cs_ready = 1;
    j->cs.base = &j->base;
    j->cs.cand = &j->cand;
    j->cs.ref = &j->ref;
    j->cs.call_timeout_ms = j->o->call_timeout_ms;
    return 0;
}

/* A fresh worker: the same library, copied into a folder of its own (its
 * log and directory are its own) after its hash is checked, with an arena
 * for the visible shapes (determinism's second run) or the hidden ones. */
static int cpu_fresh_worker(job *j, int purpose, kiln_error *err)
{
    kiln_shape shapes[MAX_JOB_SHAPES];
    int n = purpose == KILN_FRESH_HIDDEN ? job_hidden_shapes(j, shapes)
                                         : job_visible_shapes(j, shapes);
    kiln_worker_stop(&j->hid);
    const char *sub = purpose == KILN_FRESH_HIDDEN ? "hid" : "again";
    if (job_copy_artefact(j, "cand/cand.so", sub, "cand.so", j->built[0], err) < 0)
        return -1;
    char dir[4200], lib[4300];
    snprintf(dir, sizeof dir, "%s/%s", j->dir, sub);
    snprintf(lib, sizeof lib, "%s/cand.so", dir);
    kiln_worker_opts o = cand_opts(j, dir, lib, shapes, n);
    o.report_scale = 0;   /* it times nothing */
    if (kiln_worker_start(&j->hid, &o, err) < 0)
        return -1;
    if (j->hid.fault)   /* it loaded once already: a load that fails now is chosen */
        return job_conclude(j, "fail", purpose == KILN_FRESH_HIDDEN ? "hidden" : "determinism",
                            kiln_fault_code(j->hid.fault), "%s",
                            purpose == KILN_FRESH_HIDDEN
                                ? "the candidate could not be loaded a second time"
                                : "the candidate failed while being loaded a second time");
    return 0;
}

static kiln_cpu_timers cpu_timers(const samples *sm)
{
    kiln_cpu_timers t = {.cand_cpu = sm->cand_cpu, .base_cpu = sm->base_cpu,
                         .null_cpu = sm->null_cpu, .prep_cpu = sm->prep_cpu,
                         .cand = sm->cand, .base = sm->base, .n = sm->n,
                         .cand_between_ns = sm->cand_between_ns};
    return t;
}

/* The time that counts: the CPU the kernel charged, less the overhead
 * measured on trusted code (cpu_agree.c says how, and why). */
static void cpu_figures(const job *j, const samples *sm, double *cand, double *base,
                        double *overhead)
{
    (void)j;
    kiln_cpu_timers t = cpu_timers(sm);
    kiln_cpu_figures(&t, cand, base);
    *overhead = kiln_cpu_overhead(&t);
}

/* The worker's reports agree with that time. */
static void cpu_agree(const job *j, const samples *sm, char *why, size_t len)
{
    (void)j;
    kiln_cpu_timers t = cpu_timers(sm);
    kiln_cpu_timers_agree(&t, why, len);
}

static int cpu_time_shape(job *j, int i, uint64_t budget_ns, kiln_error *err)
{
    return job_time_host(j, i, budget_ns, cpu_figures, cpu_agree, err);
}

/* Copy bandwidth at the working set's size, whatever the mix. */
static int cpu_roofline(job *j, double read_bytes, double write_bytes, int again, double *bw,
                        double *peak, kiln_error *err)
{
    (void)j;
    double bytes = read_bytes + write_bytes;
    *peak = 0;
    return again ? kiln_cpu_bandwidth_again((size_t)bytes, bw, err)
                 : kiln_cpu_bandwidth((size_t)bytes, bw, err);
}

static const char *cpu_task_baseline(const job *j)
{
    return j->t->baseline_cpu;
}

const kiln_backend_ops kiln_backend_cpu = {
    .name = "cpu",
    .kind = KILN_BACKEND_CPU,
    .candidate_host_code = 1,
    .task_baseline = cpu_task_baseline,
    .build = cpu_build,
    .start = cpu_start,
    .fresh_worker = cpu_fresh_worker,
    .call = job_callset_call,
    .again = job_again_host,
    .time_shape = cpu_time_shape,
    .roofline = cpu_roofline,
};
