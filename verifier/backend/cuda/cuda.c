/* cuda.c - the CUDA backend: the candidate is device code with a launch
 * manifest (docs/cuda.md), compiled with NVRTC by kiln-worker-cuda for the
 * device it runs on. Two data paths share the static checks and the
 * compile: device-resident (kiln_backend_cuda: every task with a CUDA
 * reference; inputs drawn, checked and compared on the device, judge.h)
 * and host-resident (kiln_backend_cuda_host: KILN_HOST_DATA=1 or no CUDA
 * reference; buffers through the arena, gold from a reference worker). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bandwidth.h"
#include "cuda_device.h"
#include "fileutil.h"
#include "job.h"
#include "paths.h"
#include "rng.h"
#include "safe_text.h"
#include "timing.h"

static int device_resident(const job *j)
{
    return j->ops == &kiln_backend_cuda;
}

/* Gold from the task's CUDA reference (rather than its C one)? */
static int cuda_reference(const job *j)
{
    return j->t->reference_cuda[0] != '\0';
}

/* The built-in baseline ("cublas") when the job uses one, else NULL. */
static const char *cuda_builtin_baseline(const job *j)
{
    if (j->o->baseline || !j->t->baseline_cuda_builtin[0])
        return NULL;
    return j->t->baseline_cuda_builtin;
}

static const char *cuda_task_baseline(const job *j)
{
    return j->t->baseline_cuda;
}

/* ---- static checks and compile ------------------------------------------ */

/* The manifest of kiln's own CUDA source (a baseline or a reference); an
 * error there is kiln's problem, not the candidate's. */
static int trusted_manifest(job *j, const char *path, kiln_manifest **out, kiln_error *err)
{
    kiln_error merr = {0};
    unsigned char *src = NULL;
    size_t len = 0;
    if (!(*out = calloc(1, sizeof **out)))
        return kiln_fail(err, "out of memory");
    int rc = job_read_source(path, &src, &len, err);
    if (rc == 0 && kiln_manifest_parse((const char *)src, len, j->t, *out, &merr) < 0)
        rc = kiln_fail(err, "%s: %s", path, merr.msg);
    free(src);
    return rc;
}

/* CUDA: the candidate's manifest must parse and fit the task; the
 * baseline's and the CUDA reference's are trusted to, and an error there is
 * kiln's problem. A built-in baseline has none. */
static int static_manifests(job *j, const char *src, size_t len, kiln_error *err)
{
    kiln_error merr = {0};
    if (!(j->man[0] = calloc(1, sizeof *j->man[0])))
        return kiln_fail(err, "out of memory");
    if (cuda_reference(j) && trusted_manifest(j, j->t->reference_cuda, &j->man_ref, err) < 0)
        return -1;
    if (kiln_manifest_parse(src, len, j->t, j->man[0], &merr) < 0)
        return job_conclude(j, "fail", "static", "bad-manifest", "%s", merr.msg);
    /* Launches that no device of this kind could make at a visible shape are
     * a static error; at hidden shapes the call fails instead. */
    kiln_device_limits lim;
    kiln_device_limits_default(&lim);
    kiln_call_req rq;
    for (int i = 0; i < j->g->nvisible; i++) {
        char dims[128];
        if (!kiln_precond_holds(&j->man[0]->require, &j->g->visible[i]))
            continue;   /* left out by the candidate's preconditions */
        if (kiln_manifest_resolve(j->man[0], j->t, j->o->dtype, &j->g->visible[i], &lim, &rq,
                                  &merr) == 0)
            continue;
        kiln_shape_format(j->t, &j->g->visible[i], dims, sizeof dims);
        return job_conclude(j, "fail", "static", "bad-manifest", "at visible shape v%d (%s): %s", i + 1,
                        dims, merr.msg);
    }
    return cuda_builtin_baseline(j) ? 0 : trusted_manifest(j, job_baseline_path(j), &j->man[1], err);
}

/* The CUDA reference as the worker compiles it: the run's dtype defined
 * first (kiln_round_to_run in kiln_cuda.h), then the task's file, its
 * lines numbered as in the file. */
static int write_reference(const char *path, const char *src, kiln_dtype dt, kiln_error *err)
{
    size_t n = strlen(src) + 96;
    char *text = malloc(n);
    if (!text)
        return kiln_fail(err, "out of memory for the CUDA reference");
    snprintf(text, n, "#define %s 1\n#line 1 \"reference.cu\"\n%s", kiln_run_dtype_macro(dt), src);
    int rc = kiln_write_text(path, text, err);
    free(text);
    return rc;
}

/* CUDA: kiln-worker-cuda compiles the sources with NVRTC when it starts,
 * for the exact device it runs on; here they are only put in the workers'
 * directories (cand/: candidate and, unless it is built in, baseline; ref/:
 * a CUDA reference). A C reference is built like the CPU backend's. */
static int stage_compile_cuda(job *j, kiln_error *err)
{
    char dir[4200], path[4300];
    kiln_build_result res;
    snprintf(dir, sizeof dir, "%s/cand", j->dir);
    if (kiln_mkdirs(dir, err) < 0)
        return -1;
    const char *from[3] = {j->o->candidate, job_baseline_path(j), j->t->reference_cuda};
    const char *to[3] = {"cand/cand.cu", "cand/base.cu", device_resident(j) ? "cand/ref.cu" : "ref/ref.cu"};
    int use[3] = {1, cuda_builtin_baseline(j) == NULL, cuda_reference(j)};
    snprintf(path, sizeof path, "%s/ref", j->dir);
    if (use[2] && !device_resident(j) && kiln_mkdirs(path, err) < 0)
        return -1;
    for (int i = 0; i < 3; i++) {
        unsigned char *src = NULL;
        size_t len = 0;
        if (!use[i])
            continue;
        int rc = job_read_source(from[i], &src, &len, err);
        if (rc == 0) {
            src[len < SOURCE_LIMIT ? len : SOURCE_LIMIT] = '\0';
            snprintf(path, sizeof path, "%s/%s", j->dir, to[i]);
            rc = i == 2 ? write_reference(path, (const char *)src, j->o->dtype, err)
                        : kiln_write_text(path, (const char *)src, err);
        }
        free(src);
        if (rc < 0)
            return -1;
    }
    /* The second worker's folder (verify.c's stage_second): the candidate,
     * and for device-resident data the reference that checks it there. */
    if (job_copy_artefact(j, "cand/cand.cu", "hid", "cand.cu", NULL, err) < 0 ||
        (device_resident(j) && job_copy_artefact(j, "cand/ref.cu", "hid", "ref.cu", NULL, err) < 0))
        return -1;
    if (use[2])
        return 0;
    if (job_build_one(j, KILN_BUILD_REFERENCE, j->t->reference_cpu, "ref", "ref.so", &res, err) < 0)
        return -1;
    if (!res.ok)
        return job_reference_failed(j, &res, err);
    return 0;
}

/* ---- starting the worker ------------------------------------------------- */

/* The compile log's head, for the agent. */
static void compile_feedback(job *j)
{
    char path[4300], *log = NULL;
    kiln_error err;
    snprintf(path, sizeof path, "%s/cand/compile-0.log", j->dir);
    if (kiln_read_file(path, 1200, &log, NULL, &err) < 0)
        log = NULL;
    char shown[1000];   /* NVRTC quotes the candidate's source */
    const char *text = log && log[0] ? log : j->cand.ready_info;
    kiln_safe_text(text, strnlen(text, 900), shown, sizeof shown);
    snprintf(j->v->feedback, sizeof j->v->feedback, "fail at stage compile: %s", shown);
    free(log);
}

/* What a CUDA worker's start tells: compiled and loaded, or not. A worker
 * that cannot start for any other reason is kiln's problem (no device, no
 * driver), not the candidate's; a compile that hangs is the candidate's. */
static int cuda_started(job *j, kiln_error *err)
{
    kiln_worker *w = &j->cand;
    snprintf(j->v->gpu, sizeof j->v->gpu, "%s", w->device);
    if (w->fault == KILN_FAULT_TIMEOUT)
        return job_conclude(j, "fail", "compile", "timeout", "compiling and loading took too long");
    if (w->fault)
        return kiln_fail(err, "the CUDA worker could not start (no NVIDIA driver or GPU "
                         "here?): %s", w->fault_msg);
    if ((w->ready_status == KILN_ST_COMPILE || w->ready_status == KILN_ST_RESOURCE) &&
        strncmp(w->ready_info, "lib 1", 5) == 0)
        return kiln_fail(err, "the baseline %s does not compile: %s", job_baseline_path(j), w->ready_info);
    if (w->ready_status == KILN_ST_RESOURCE && strncmp(w->ready_info, "lib 0: ", 7) == 0)
        return job_conclude(j, "fail", "compile", "resource-limit", "%s", w->ready_info + 7);
    if (w->ready_status == KILN_ST_COMPILE) {
        job_conclude(j, "fail", "compile", "compile-error", "the candidate does not compile");
        compile_feedback(j);
        return 1;
    }
    if (w->ready_status != KILN_ST_OK)
        return kiln_fail(err, "the CUDA worker could not start: %s", w->ready_info);
    return 0;
}

/* Start a CUDA worker w with the candidate (and baseline) compiled by NVRTC
 * as it starts, each lib with its NVRTC name expressions. Spawn only: the
 * caller awaits it. */
static int spawn_cuda_worker(job *j, kiln_worker *w, const kiln_worker_opts *co, kiln_error *err)
{
    kiln_worker_opts o = *co;
    char names[2][1024];
    for (int l = 0; l < 2; l++) {
        names[l][0] = '\0';
        if (j->man[l])
            kiln_manifest_name_exprs(j->man[l], names[l], sizeof names[l]);
        o.names[l] = l < o.nlibs ? names[l] : NULL;
    }
    return kiln_worker_spawn(w, &o, err);
}

/* The candidate's CUDA worker, spawned: awaited, 0 loaded, 1 with a
 * verdict, -1 kiln's failure. */
static int await_cuda_worker(job *j, kiln_error *err)
{
    kiln_worker_await(&j->cand);
    snprintf(j->v->sandbox, sizeof j->v->sandbox, "%.255s", j->cand.sandbox);
    return cuda_started(j, err);
}

static int start_cuda_worker(job *j, const kiln_worker_opts *co, kiln_error *err)
{
    job_progress(j, "compile", "starting the CUDA worker and compiling with NVRTC");
    if (spawn_cuda_worker(j, &j->cand, co, err) < 0)
        return -1;
    return await_cuda_worker(j, err);
}

/* The fresh worker (j->hid), spawned: awaited. It compiles what the first
 * one compiled, so a failure now is the candidate's doing (or the
 * device's); it is answered in fixed words. */
static int await_second(job *j, kiln_error *err)
{
    kiln_worker *w = &j->hid;
    kiln_worker_await(w);
    if (w->fault == KILN_FAULT_TIMEOUT || w->ready_status == KILN_ST_RESOURCE ||
        w->ready_status == KILN_ST_COMPILE)
        return job_conclude(j, "fail", "determinism", w->fault ? "timeout" : "resource-limit",
                            "the candidate could not be loaded a second time");
    if (w->fault || w->ready_status != KILN_ST_OK)
        return kiln_fail(err, "the second CUDA worker could not start: %s",
                         w->fault ? w->fault_msg : w->ready_info);
    return 0;
}

/* The second worker's options: the candidate alone in hid/, (device
 * resident) with the reference that checks it. */
static kiln_worker_opts second_opts(const job *j, char dir[4200], char lib[4300], char ref[4300])
{
    snprintf(dir, 4200, "%s/hid", j->dir);
    snprintf(lib, 4300, "%s/cand.cu", dir);
    snprintf(ref, 4300, "%s/ref.cu", dir);
    kiln_worker_opts o = {.dir = dir, .libs = {lib}, .nlibs = 1, .arena_bytes = 4096,
                          .ref = device_resident(j) ? ref : NULL,
                          .cpu_seconds = (unsigned)(j->o->job_timeout_ms / 1000 + 1),
                          .start_timeout_ms = 120000, .cuda = 1,
                          .dtype = kiln_dtype_name(j->o->dtype), .device = j->o->device};
    return o;
}

/* Device-resident: the fresh worker was spawned beside the first, and
 * serves determinism's second run and then the hidden stage: it has no
 * arena, and its device buffers grow only as its calls need, so nothing
 * its determinism call can observe depends on a hidden shape. */
static int device_fresh_worker(job *j, int purpose, kiln_error *err)
{
    (void)purpose;
    if (j->hid.awaited && !j->hid.fault && !j->hid.reaped)
        return 0;   /* awaited already, for determinism */
    return await_second(j, err);
}

/* Host-resident: started now, with an arena for the visible shapes
 * (determinism's second run) or the hidden ones. */
static int host_fresh_worker(job *j, int purpose, kiln_error *err)
{
    kiln_shape shapes[MAX_JOB_SHAPES];
    int n = purpose == KILN_FRESH_HIDDEN ? job_hidden_shapes(j, shapes)
                                         : job_visible_shapes(j, shapes);
    kiln_worker_stop(&j->hid);
    char dir[4200], lib[4300], ref[4300];
    kiln_worker_opts o = second_opts(j, dir, lib, ref);
    o.arena_bytes = kiln_arena_bytes(j->t, j->o->dtype, shapes, n, 0);
    if (spawn_cuda_worker(j, &j->hid, &o, err) < 0)
        return -1;
    return await_second(j, err);
}

/* The callset's workers, launches and limits, once it is initialised. */
static void wire_callset(job *j, kiln_worker *ref)
{
    j->cs_ready = 1;
    j->cs.manifest[0] = j->man[0];
    j->cs.manifest[1] = j->man[1];
    j->cs.ref_manifest = j->man_ref;
    kiln_gpu_limits(j->cand.device, &j->cs.limits);
    j->cs.cand = &j->cand;
    j->cs.ref = ref;
    j->cs.call_timeout_ms = j->o->call_timeout_ms;
}

/* Device-resident: one CUDA worker holds candidate, baseline and the
 * task's reference; no arena, no reference worker. */
static int start_device_worker(job *j, kiln_error *err)
{
    char cdir[4200], clib[4300], blib[4300], rsrc[4300];
    snprintf(cdir, sizeof cdir, "%s/cand", j->dir);
    snprintf(clib, sizeof clib, "%s/cand.cu", cdir);
    snprintf(blib, sizeof blib, "%s/base.cu", cdir);
    snprintf(rsrc, sizeof rsrc, "%s/ref.cu", cdir);
    kiln_worker_opts co = {.dir = cdir, .libs = {clib, blib}, .nlibs = cuda_builtin_baseline(j) ? 1 : 2,
                           .arena_bytes = 4096, .builtin = cuda_builtin_baseline(j), .ref = rsrc,
                           .cpu_seconds = (unsigned)(j->o->job_timeout_ms / 1000 + 1),
                           .start_timeout_ms = 120000, .report_scale = j->o->test_report_scale,
                           .cuda = 1, .dtype = kiln_dtype_name(j->o->dtype), .device = j->o->device};
    /* The second worker starts beside the first, both before the device
     * lane is taken; it is awaited only when the hidden stage needs it. */
    char hdir[4200], hlib[4300], href[4300];
    kiln_worker_opts ho = second_opts(j, hdir, hlib, href);
    job_progress(j, "compile", "starting the CUDA workers and compiling with NVRTC");
    if (spawn_cuda_worker(j, &j->cand, &co, err) < 0 ||
        spawn_cuda_worker(j, &j->hid, &ho, err) < 0)
        return -1;
    int rc = await_cuda_worker(j, err);
    if (rc)
        return rc;
    kiln_callset_init_device(&j->cs, j->t, j->o->dtype, kiln_secret_seed());
    wire_callset(j, NULL);
    return 0;
}

/* Host-resident with a CUDA reference (for tasks too large for the CPU,
 * such as gemm): the reference in a CUDA worker of its own (ref/ref.cu),
 * run over doubles and scrubbed after each call. */
static int start_cuda_reference(job *j, const kiln_shape *shapes, int n, kiln_error *err)
{
    char rdir[4200], rsrc[4300];
    snprintf(rdir, sizeof rdir, "%s/ref", j->dir);
    snprintf(rsrc, sizeof rsrc, "%s/ref.cu", rdir);
    kiln_worker_opts ro = {.dir = rdir, .libs = {rsrc}, .nlibs = 1,
                           .arena_bytes = kiln_arena_bytes(j->t, j->o->dtype, shapes, n, 1),
                           .cpu_seconds = 600, .cuda = 1, .dtype = "f64", .device = j->o->device,
                           .scrub = 1, .start_timeout_ms = 120000};
    job_progress(j, "compile", "starting the CUDA reference");
    if (kiln_worker_start(&j->ref, &ro, err) < 0)
        return -1;
    if (j->ref.fault)
        return kiln_fail(err, "the reference worker failed to start: %s", j->ref.fault_msg);
    if (j->ref.ready_status != KILN_ST_OK)
        return kiln_fail(err, "the CUDA reference %s could not start: %s", j->t->reference_cuda,
                         j->ref.ready_info);
    return 0;
}

/* Host-resident: the reference in a worker of its own, candidate and
 * baseline in one CUDA worker, buffers through the arena. */
static int start_host(job *j, kiln_error *err)
{
    kiln_shape shapes[MAX_JOB_SHAPES], vis[KILN_MAX_SHAPES];
    int n = job_all_shapes(j, shapes), nv = job_visible_shapes(j, vis);
    if ((cuda_reference(j) ? start_cuda_reference(j, shapes, n, err)
                           : job_start_reference(j, shapes, n, -1, err)) < 0)
        return -1;
    char cdir[4200], clib[4300], blib[4300];
    snprintf(cdir, sizeof cdir, "%s/cand", j->dir);
    snprintf(clib, sizeof clib, "%s/cand.cu", cdir);
    snprintf(blib, sizeof blib, "%s/base.cu", cdir);
    kiln_worker_opts co = {.dir = cdir, .libs = {clib, blib},
                           .nlibs = cuda_builtin_baseline(j) ? 1 : 2,
                           .builtin = cuda_builtin_baseline(j),
                           .arena_bytes = kiln_arena_bytes(j->t, j->o->dtype, vis, nv, 0),
                           .cpu_seconds = (unsigned)(j->o->job_timeout_ms / 1000 + 1),
                           .start_timeout_ms = 120000,   /* device start-up and NVRTC */
                           .report_scale = j->o->test_report_scale, .cuda = 1,
                           .dtype = kiln_dtype_name(j->o->dtype), .device = j->o->device};
    int rc = start_cuda_worker(j, &co, err);
    if (rc)
        return rc;
    if (kiln_callset_init(&j->cs, j->t, j->o->dtype, shapes, n, kiln_secret_seed(), err) < 0)
        return -1;
    wire_callset(j, &j->ref);
    return 0;
}

/* ---- determinism and timing ---------------------------------------------- */

/* Device-resident: the same key again, and the outputs' hashes compared. */
static int determinism_on_device(job *j, const char *label, uint64_t first)
{
    kiln_call_result res;
    kiln_callset_run(&j->cs, 0, &res);   /* in the second worker (verify.c) */
    if (res.outcome != KILN_CALL_OK)
        return job_second_run_failed(j, label, &res);
    return res.out_hash != first ? job_nondeterministic(j, label) : 0;
}

static int device_again(job *j, const char *label, const kiln_call_result *first,
                        const kiln_shape *s, kiln_error *err)
{
    (void)s;
    (void)err;
    return determinism_on_device(j, label, first->out_hash);
}

/* What lies inside a CUDA call's events but outside its kernels: the gaps
 * between launches and the scratch memsets. */
static int launch_gaps(const kiln_manifest *m)
{
    return m ? m->nlaunches - 1 + m->nscratch : 2;   /* cuBLAS: up to 3 kernels */
}

/* CUDA: do the three timers tell the same story? The events enclose every
 * kernel of the call, so the CUPTI span (first kernel start to last kernel
 * end) may exceed them only by timestamp granularity; the events exceed the
 * span by their own overhead (about 2.4 us on the H200) and by the gaps and
 * memsets between launches. The host clock encloses the events and a
 * device-wide synchronize. Checked for both sides; writes what disagrees
 * into why (empty when they agree). */
static void timers_agree(const samples *sm, int gaps, char *why, size_t len)
{
    const double *ev_of[2] = {sm->cand, sm->base}, *cu_of[2] = {sm->cand_cupti, sm->base_cupti};
    const double *wall_of[2] = {sm->cand_wall, sm->base_wall};
    why[0] = '\0';
    for (int side = 0; side < 2 && !why[0]; side++) {
        double ev = kiln_median(ev_of[side], sm->n), cu = kiln_median(cu_of[side], sm->n);
        double wall = kiln_median(wall_of[side], sm->n);
        if (cu > 1.03 * ev + 1e3 || ev > 1.03 * cu + 4e3 + 4e3 * gaps || wall < 0.98 * ev - 2e3)
            snprintf(why, len, "%s: events %.1f us, CUPTI kernels %.1f us, wall %.1f us",
                     side ? "baseline" : "candidate", ev / 1e3, cu / 1e3, wall / 1e3);
    }
}

/* ---- device-resident timing ------------------------------------------------ */

/* A timed call runs the launches over enough input sets to last about this
 * long, so a short kernel is measured as a kernel, not as a launch, and
 * the events' own overhead (about 2.4 us a call on the H200) is spread
 * over the sets: at 400 us it is under 1 us per set for kernels under
 * 80 us and under 1% above. */
#define BATCH_NS 400000.0
#define BATCH_BYTES ((double)(4ull << 30))   /* at most this much device memory in sets */
/* At most this many sets (KILN_MAX_SETS). kiln's own kernels draw and
 * check all sets of a call in one launch each, so a set costs little more
 * than its data; for a kernel of a few microseconds, a call's figure is
 * steadier over more sets, and fewer pairs reach the interval (on the H200,
 * 16 sets of a 3 us kernel needed 80 pairs, 64 sets 16). But checking costs
 * about 60 ps per element of every set (H200) on top of about 1 ms per
 * call: beyond 16 sets, a call holds at most BATCH_CHECK_ELEMS elements,
 * where more sets would cost more in checks than they save in pairs. */
#define BATCH_SETS 64.0
#define BATCH_SETS_ALWAYS 16.0
#define BATCH_CHECK_ELEMS (32.0 * 1024 * 1024)
/* Stop once the speedup's 95% interval is within this (log units, ~0.4%),
 * and not before DEVICE_MIN_PAIRS pairs: the interval's width is itself an
 * estimate, and a stop on a width from a handful of pairs comes early
 * exactly when the width is underestimated (on the H200, 6 pairs gave
 * intervals that excluded 1.0 for a kernel against itself). */
#define RATIO_HALF_WIDTH 0.004
#define DEVICE_MIN_PAIRS 10

/* Bytes of one input set, every input and output buffer (elems: 1 for
 * each element instead). */
static double set_size(const job *j, const kiln_shape *s, int elems)
{
    double b = 0;
    for (int a = 0; a < j->t->nargs; a++) {
        const kiln_arg *arg = &j->t->args[a];
        if (arg->kind == KILN_ARG_INPUT || arg->kind == KILN_ARG_OUTPUT)
            b += (double)kiln_arg_elems(arg, s) *
                 (elems ? 1.0 : (double)kiln_dtype_size(kiln_arg_dtype(arg, j->o->dtype)));
    }
    return b;
}

/* Sets per timed call, from one warm-up pair: the faster side's kernel
 * time sets the batch. */
static uint32_t batch_sets(const job *j, const kiln_shape *s, const samples *sm)
{
    double t = fmin(sm->cand_kern[0], sm->base_kern[0]);
    double by_time = t > 0 ? ceil(BATCH_NS / t) : 1;
    double by_mem = floor(BATCH_BYTES / fmax(set_size(j, s, 0), 1.0));
    double by_check = floor(BATCH_CHECK_ELEMS / fmax(set_size(j, s, 1), 1.0));
    by_check = fmin(fmax(by_check, BATCH_SETS_ALWAYS), BATCH_SETS);
    double n = fmin(fmin(by_time, by_mem), by_check);
    return n < 1 ? 1 : (uint32_t)n;
}

/* Per run of the launches, for each side: CUPTI's kernel time must not
 * exceed the events around them, and the events may exceed it only by
 * their own overhead and the gaps between launches; the host clock
 * encloses the events. Writes what disagrees into why. */
static void device_timers_agree(const job *j, const samples *sm, char *why, size_t len)
{
    const double *kern[2] = {sm->cand_kern, sm->base_kern}, *ev[2] = {sm->cand, sm->base};
    const double *wall[2] = {sm->cand_wall, sm->base_wall};
    why[0] = '\0';
    for (int side = 0; side < 2 && !why[0]; side++) {
        double k = kiln_median(kern[side], sm->n), e = kiln_median(ev[side], sm->n);
        double w = kiln_median(wall[side], sm->n);
        int gaps = launch_gaps(j->man[side]) + 1;
        if (k > 1.02 * e + 500 || e > 1.05 * k + 3e3 * gaps || w < 0.98 * e - 2e3)
            snprintf(why, len, "%s: CUPTI kernels %.2f us, events %.2f us, wall %.2f us per run",
                     side ? "baseline" : "candidate", k / 1e3, e / 1e3, w / 1e3);
    }
}

/* The ratio's interval is narrow enough, or the budget is spent. Only
 * after an even number of pairs, so each side went first equally often and
 * an order effect cancels. */
static int ratio_settled(const job *j, const samples *sm, kiln_shape_result *r, int over_budget)
{
    (void)j;
    double hw = kiln_ratio_interval(sm->base_kern, sm->cand_kern, sm->n, &r->speedup,
                                    &r->speedup_lo, &r->speedup_hi);
    return sm->n >= DEVICE_MIN_PAIRS && sm->n % 2 == 0 && (hw <= RATIO_HALF_WIDTH || over_budget);
}

static int time_shape_device(job *j, int i, uint64_t budget_ns, kiln_error *err)
{
    const kiln_shape *s = &j->g->visible[i];
    char id[16], label[200];
    job_timed_label(j, i, id, label);
    samples *sm = calloc(1, sizeof *sm);
    if (!sm)
        return kiln_fail(err, "out of memory");
    kiln_shape_result *r = job_result_for(j, id, s, 1);
    j->cs.sets = 1;
    int rc = job_timed_pair(j, label, s, sm, err);   /* warm-up: sizes the batch */
    j->cs.sets = rc ? 1 : batch_sets(j, s, sm);
    if (rc == 0)
        rc = job_measure(j, s, id, label, budget_ns, sm, r, ratio_settled, device_timers_agree, err);
    if (rc == 0 && r) {
        r->timed = 1;
        r->sets = (int)j->cs.sets;
        r->pairs = sm->n;
        kiln_time_stats_of(sm->cand_kern, sm->n, &r->cand);
        kiln_time_stats_of(sm->base_kern, sm->n, &r->base);
        r->cand_events_ns = kiln_median(sm->cand, sm->n);
        r->base_events_ns = kiln_median(sm->base, sm->n);
        r->cand_cupti_ns = kiln_median(sm->cand_cupti, sm->n);
        r->base_cupti_ns = kiln_median(sm->base_cupti, sm->n);
        r->cand_wall_ns = kiln_median(sm->cand_wall, sm->n);
        r->base_wall_ns = kiln_median(sm->base_wall, sm->n);
        r->cand_rt_ns = kiln_median(sm->cand_rt, sm->n);
        r->base_rt_ns = kiln_median(sm->base_rt, sm->n);
        r->cand_check_ns = kiln_median(sm->cand_chk, sm->n);
        r->base_check_ns = kiln_median(sm->base_chk, sm->n);
        r->cand_draw_ns = kiln_median(sm->cand_draw, sm->n);
        r->cand_setup_ns = kiln_median(sm->cand_setup, sm->n);
    }
    j->cs.sets = 1;
    free(sm);
    return rc;
}

static void host_agree(const job *j, const samples *sm, char *why, size_t len)
{
    int g0 = launch_gaps(j->man[0]), g1 = launch_gaps(j->man[1]);
    timers_agree(sm, g0 > g1 ? g0 : g1, why, len);
}

static int host_time_shape(job *j, int i, uint64_t budget_ns, kiln_error *err)
{
    return job_time_host(j, i, budget_ns, NULL, host_agree, err);
}

/* The worker's probe, best of five 1 GiB copies and of five 1 GiB reads on
 * an idle device, weighed by the shape's mix of reads and writes. */
static int gpu_roofline(job *j, double rd, double wr, int again, double *bw, double *peak,
                        kiln_error *err)
{
    (void)again;   /* measured on an idle device: no busy moment to measure again */
    double copy, read;
    *peak = kiln_gpu_peak_flops(j->cand.device, j->o->dtype);
    if (kiln_gpu_bandwidths(j->cand.device, &copy, &read, err) < 0)
        return -1;
    *bw = kiln_gpu_mix_bandwidth(copy, read, rd, wr);
    return 0;
}

static void cuda_finish(job *j)
{
    (void)j;   /* no host code of the candidate's to account for */
}

const kiln_backend_ops kiln_backend_cuda = {
    .name = "cuda",
    .kind = KILN_BACKEND_CUDA,
    .start_before_lane = 1,
    .task_baseline = cuda_task_baseline,
    .builtin_baseline = cuda_builtin_baseline,
    .check_source = static_manifests,
    .build = stage_compile_cuda,
    .start = start_device_worker,
    .fresh_worker = device_fresh_worker,
    .call = job_callset_call,
    .again = device_again,
    .time_shape = time_shape_device,
    .roofline = gpu_roofline,
    .finish = cuda_finish,
};

const kiln_backend_ops kiln_backend_cuda_host = {
    .name = "cuda",
    .kind = KILN_BACKEND_CUDA,
    .task_baseline = cuda_task_baseline,
    .builtin_baseline = cuda_builtin_baseline,
    .check_source = static_manifests,
    .build = stage_compile_cuda,
    .start = start_host,
    .fresh_worker = host_fresh_worker,
    .call = job_callset_call,
    .again = job_again_host,
    .time_shape = host_time_shape,
    .roofline = gpu_roofline,
    .finish = cuda_finish,
};
