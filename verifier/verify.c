/* verify.c - the stages of one verification job (see verify.h).
 *
 * The job owns a private temporary directory with two worker directories:
 * cand/ (candidate and baseline, served by one sandboxed worker so both are
 * timed by the same code in the same process: shared objects for the CPU
 * backend, CUDA sources that kiln-worker-cuda compiles with NVRTC) and ref/
 * (the trusted double-precision reference, in a process of its own: C in a
 * kiln-worker, or for tasks too large for the CPU such as gemm, CUDA in a
 * kiln-worker-cuda of its own). Gold outputs, seeds and hidden dims stay in
 * this process. Stages stop at the first failure. */
#include "verify.h"

#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "bandwidth.h"
#include "call.h"
#include "cpu_build.h"
#include "cuda_device.h"
#include "manifest.h"
#include "fileutil.h"
#include "paths.h"
#include "rng.h"
#include "timing.h"
#include "worker_client.h"

#define SOURCE_LIMIT (256 * 1024)
#define MAX_JOB_SHAPES (2 * KILN_MAX_SHAPES + 16)

typedef struct job {
    const kiln_verify_opts *o;
    const kiln_task *t;
    const kiln_group *g;
    kiln_verdict *v;
    char dir[4096];
    kiln_worker cand, base, ref;   /* base: the CPU baseline's own worker */
    char built[2][65];          /* CPU: SHA-256 of cand.so and base.so as built */
    kiln_callset cs;
    int cs_ready;
    kiln_shape hidden[KILN_MAX_SHAPES + 16];
    int nhidden;
    uint64_t deadline_ns;
    double reported_ns;         /* sum of worker-reported call times */
    int timer_flags;
    int cuda;
    int device;                 /* CUDA with a CUDA reference: device-resident data */
    kiln_manifest *man[2];      /* CUDA: candidate's and baseline's launches
                                   (man[1] NULL for a built-in baseline) */
    kiln_manifest *man_ref;     /* CUDA: the CUDA reference's launches, or NULL */
} job;

int kiln_backend_parse(const char *name)
{
    if (name && strcmp(name, "cpu") == 0)
        return KILN_BACKEND_CPU;
    if (name && strcmp(name, "cuda") == 0)
        return KILN_BACKEND_CUDA;
    return -1;
}

const char *kiln_backend_name(kiln_backend b)
{
    return b == KILN_BACKEND_CUDA ? "cuda" : "cpu";
}

kiln_dtype kiln_backend_default_dtype(const kiln_task *t, kiln_backend b)
{
    if (b == KILN_BACKEND_CUDA)
        return t->ncuda_dtypes ? t->cuda_dtypes[0] : KILN_DT_INVALID;
    return t->ncpu_dtypes ? t->cpu_dtypes[0] : KILN_DT_INVALID;
}

/* The built-in baseline ("cublas") when the job uses one, else NULL. */
static const char *builtin_baseline(const job *j)
{
    if (!j->cuda || j->o->baseline || !j->t->baseline_cuda_builtin[0])
        return NULL;
    return j->t->baseline_cuda_builtin;
}

static const char *baseline_path(const job *j)
{
    if (j->o->baseline)
        return j->o->baseline;
    if (builtin_baseline(j))
        return "(built in: cuBLAS)";
    return j->cuda ? j->t->baseline_cuda : j->t->baseline_cpu;
}

/* Gold from the CUDA reference (rather than the C one)? */
static int cuda_reference(const job *j)
{
    return j->cuda && j->t->reference_cuda[0];
}

/* Device-resident data: the CUDA worker draws, checks and compares on the
 * device (call.h). KILN_HOST_DATA=1 keeps the host-resident path, which is
 * how the "before" figures of the benchmarks are measured. */
static int device_resident(const job *j)
{
    const char *h = getenv("KILN_HOST_DATA");
    return cuda_reference(j) && !(h && strcmp(h, "1") == 0);
}

/* ---- verdict helpers ---------------------------------------------------- */

static void progress(job *j, const char *stage, const char *fmt, ...)
{
    if (!j->o->progress)
        return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    j->o->progress(j->o->progress_ctx, stage, msg);
}

static int conclude(job *j, const char *status, const char *stage, const char *code,
                    const char *fmt, ...)
{
    kiln_verdict *v = j->v;
    snprintf(v->status, sizeof v->status, "%s", status);
    snprintf(v->stage, sizeof v->stage, "%s", stage);
    snprintf(v->code, sizeof v->code, "%s", code);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v->reason, sizeof v->reason, fmt, ap);
    va_end(ap);
    snprintf(v->feedback, sizeof v->feedback, "%s at stage %s (%s): %s", status, stage, code,
             v->reason);
    return 1;
}

static kiln_shape_result *result_for(job *j, const char *id, const kiln_shape *s, int visible)
{
    kiln_verdict *v = j->v;
    for (int i = 0; i < v->nresults; i++)
        if (strcmp(v->results[i].id, id) == 0)
            return &v->results[i];
    if (v->nresults == KILN_MAX_RESULTS)
        return NULL;
    kiln_shape_result *r = &v->results[v->nresults++];
    memset(r, 0, sizeof *r);
    snprintf(r->id, sizeof r->id, "%s", id);
    r->visible = visible;
    r->shape = *s;
    return r;
}

static int out_of_time(job *j)
{
    if (kiln_now_ns() < j->deadline_ns)
        return 0;
    return conclude(j, "fail", "timing", "timeout", "the job exceeded its time limit of %d ms",
                    j->o->job_timeout_ms);
}

/* ---- static and compile ------------------------------------------------- */

static int read_source(const char *path, unsigned char **buf, size_t *len, kiln_error *err)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return kiln_fail(err, "%s: cannot open: %s", path, strerror(errno));
    *buf = malloc(SOURCE_LIMIT + 1);
    *len = *buf ? fread(*buf, 1, SOURCE_LIMIT + 1, f) : 0;
    int bad = ferror(f);
    fclose(f);
    if (!*buf || bad)
        return kiln_fail(err, "%s: cannot read", path);
    return 0;
}

static int hash_file(const char *path, char out[65], kiln_error *err)
{
    unsigned char *src = NULL;
    size_t len = 0;
    int rc = read_source(path, &src, &len, err);
    if (rc == 0)
        kiln_sha256_hex(src, len < SOURCE_LIMIT ? len : SOURCE_LIMIT, out);
    free(src);
    return rc;
}

/* The manifest of kiln's own CUDA source (a baseline or a reference); an
 * error there is kiln's problem, not the candidate's. */
static int trusted_manifest(job *j, const char *path, kiln_manifest **out, kiln_error *err)
{
    kiln_error merr = {{0}};
    unsigned char *src = NULL;
    size_t len = 0;
    if (!(*out = calloc(1, sizeof **out)))
        return kiln_fail(err, "out of memory");
    int rc = read_source(path, &src, &len, err);
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
    kiln_error merr = {{0}};
    if (!(j->man[0] = calloc(1, sizeof *j->man[0])))
        return kiln_fail(err, "out of memory");
    if (cuda_reference(j) && trusted_manifest(j, j->t->reference_cuda, &j->man_ref, err) < 0)
        return -1;
    if (kiln_manifest_parse(src, len, j->t, j->man[0], &merr) < 0)
        return conclude(j, "fail", "static", "bad-manifest", "%s", merr.msg);
    /* Launches that no device of this kind could make at a visible shape are
     * a static error; at hidden shapes the call fails instead. */
    kiln_device_limits lim;
    kiln_device_limits_default(&lim);
    kiln_call_req rq;
    for (int i = 0; i < j->g->nvisible; i++) {
        char dims[128];
        if (kiln_manifest_resolve(j->man[0], j->t, j->o->dtype, &j->g->visible[i], &lim, &rq,
                                  &merr) == 0)
            continue;
        kiln_shape_format(j->t, &j->g->visible[i], dims, sizeof dims);
        return conclude(j, "fail", "static", "bad-manifest", "at visible shape v%d (%s): %s", i + 1,
                        dims, merr.msg);
    }
    return builtin_baseline(j) ? 0 : trusted_manifest(j, baseline_path(j), &j->man[1], err);
}

static int stage_static(job *j, kiln_error *err)
{
    unsigned char *src = NULL;
    size_t len = 0;
    j->v->baseline_is_task = j->o->baseline == NULL;
    if (builtin_baseline(j))
        kiln_sha256_hex((const unsigned char *)"builtin:cublas", 14, j->v->baseline_sha256);
    else if (hash_file(baseline_path(j), j->v->baseline_sha256, err) < 0)
        return -1;
    if (read_source(j->o->candidate, &src, &len, err) < 0) {
        free(src);
        return -1;
    }
    kiln_sha256_hex(src, len, j->v->source_sha256);
    int rc = 0;
    if (len > SOURCE_LIMIT)
        rc = conclude(j, "fail", "static", "too-large", "the source is larger than %d KiB",
                      SOURCE_LIMIT / 1024);
    else if (len == 0)
        rc = conclude(j, "fail", "static", "empty", "the source file is empty");
    else if (memchr(src, 0, len))
        rc = conclude(j, "fail", "static", "not-text", "the source contains NUL bytes");
    else if (j->cuda)
        rc = static_manifests(j, (const char *)src, len, err);
    free(src);
    return rc;
}

/* The task's C reference did not build: kiln's problem, unless it is a
 * copied task whose reference still has the old task's name. */
static int reference_failed(job *j, const kiln_build_result *res, kiln_error *err)
{
    if (strstr(res->log, "undefined reference to") && strstr(res->log, "_reference"))
        return kiln_fail(err, "the task's reference %s defines neither %s_reference nor "
                         "kiln_reference: rename its function to one of them (a copied task "
                         "keeps the old task's name):\n%.600s", j->t->reference_cpu, j->t->name,
                         res->log);
    return kiln_fail(err, "the task's reference %s does not compile:\n%s", j->t->reference_cpu,
                     res->log);
}

static int build_one(job *j, kiln_build_role role, const char *src, const char *sub,
                     const char *name, kiln_build_result *res, kiln_error *err)
{
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/%s", j->dir, sub);
    if (kiln_mkdirs(dir, err) < 0 ||
        kiln_cpu_build(j->t, j->o->dtype, role, src, dir, name, res, err) < 0)
        return -1;
    return 0;
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
    const char *from[3] = {j->o->candidate, baseline_path(j), j->t->reference_cuda};
    const char *to[3] = {"cand/cand.cu", "cand/base.cu", j->device ? "cand/ref.cu" : "ref/ref.cu"};
    int use[3] = {1, builtin_baseline(j) == NULL, cuda_reference(j)};
    snprintf(path, sizeof path, "%s/ref", j->dir);
    if (use[2] && !j->device && kiln_mkdirs(path, err) < 0)
        return -1;
    for (int i = 0; i < 3; i++) {
        unsigned char *src = NULL;
        size_t len = 0;
        if (!use[i])
            continue;
        int rc = read_source(from[i], &src, &len, err);
        if (rc == 0) {
            src[len < SOURCE_LIMIT ? len : SOURCE_LIMIT] = '\0';
            snprintf(path, sizeof path, "%s/%s", j->dir, to[i]);
            rc = kiln_write_text(path, (const char *)src, err);
        }
        free(src);
        if (rc < 0)
            return -1;
    }
    if (use[2])
        return 0;
    if (build_one(j, KILN_BUILD_REFERENCE, j->t->reference_cpu, "ref", "ref.so", &res, err) < 0)
        return -1;
    if (!res.ok)
        return reference_failed(j, &res, err);
    return 0;
}

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

/* Candidate and baseline are built in separate directories so that one
 * compile cannot see the other's files, and each runs in a worker of its
 * own confined to its directory: nothing the candidate runs can reach the
 * baseline's files, memory or timing. */
static int stage_compile(job *j, kiln_error *err)
{
    kiln_build_result res;
    if (j->cuda)
        return stage_compile_cuda(j, err);
    progress(j, "compile", "compiling the candidate");
    if (build_one(j, KILN_BUILD_CANDIDATE, j->o->candidate, "cand", "cand.so", &res, err) < 0)
        return -1;
    if (!res.ok && res.resource[0])   /* the source made the compiler run into a limit */
        return conclude(j, "fail", "compile", "resource-limit", "the compiler %s", res.resource);
    char missing[KILN_NAME_MAX + 32];
    snprintf(missing, sizeof missing, "undefined reference to `%s'", j->t->name);
    if (!res.ok && strstr(res.log, missing)) {
        conclude(j, "fail", "compile", "compile-error", "the candidate does not define %s(), the "
                 "task's function (kiln task show %s)", j->t->name, j->t->name);
        snprintf(j->v->feedback, sizeof j->v->feedback, "fail at stage compile: %.900s", res.log);
        return 1;
    }
    if (!res.ok) {
        conclude(j, "fail", "compile", "compile-error", "%s", "the candidate does not compile");
        snprintf(j->v->feedback, sizeof j->v->feedback, "fail at stage compile: %.900s", res.log);
        return 1;
    }
    const char *base = baseline_path(j);
    if (build_one(j, KILN_BUILD_CANDIDATE, base, "base", "base.so", &res, err) < 0)
        return -1;
    if (!res.ok)
        return kiln_fail(err, "the baseline %s does not compile:\n%s", base, res.log);
    if (build_one(j, KILN_BUILD_REFERENCE, j->t->reference_cpu, "ref", "ref.so", &res, err) < 0)
        return -1;
    if (!res.ok)
        return reference_failed(j, &res, err);
    return artefact_hashes(j, j->built, err);
}

/* ---- shapes and workers -------------------------------------------------- */

static void draw_hidden(job *j)
{
    const kiln_group *g = j->g;
    kiln_rng r;
    kiln_rng_seed(&r, kiln_secret_seed());
    j->nhidden = 0;
    for (int i = 0; i < g->nhidden; i++)
        j->hidden[j->nhidden++] = g->hidden[i];
    for (int i = 0; i < g->nrandom; i++) {
        kiln_shape *s = &j->hidden[j->nhidden++];
        memset(s, 0, sizeof *s);
        for (int d = 0; d < j->t->ndims; d++)
            s->d[d] = kiln_rng_range(&r, g->range_lo[d], g->range_hi[d]);
    }
}

static int all_shapes(job *j, kiln_shape *out)
{
    int n = 0;
    for (int i = 0; i < j->g->nvisible; i++)
        out[n++] = j->g->visible[i];
    for (int i = 0; i < j->nhidden; i++)
        out[n++] = j->hidden[i];
    return n;
}

/* The compile log's head, for the agent. */
static void compile_feedback(job *j)
{
    char path[4300], log[1200] = "";
    snprintf(path, sizeof path, "%s/cand/compile-0.log", j->dir);
    FILE *f = fopen(path, "r");
    if (f) {
        size_t n = fread(log, 1, sizeof log - 1, f);
        log[n] = '\0';
        fclose(f);
    }
    snprintf(j->v->feedback, sizeof j->v->feedback, "fail at stage compile: %.900s",
             log[0] ? log : j->cand.ready_info);
}

/* What a CUDA worker's start tells: compiled and loaded, or not. A worker
 * that cannot start for any other reason is kiln's problem (no device, no
 * driver), not the candidate's; a compile that hangs is the candidate's. */
static int cuda_started(job *j, kiln_error *err)
{
    kiln_worker *w = &j->cand;
    snprintf(j->v->gpu, sizeof j->v->gpu, "%s", w->device);
    if (w->fault == KILN_FAULT_TIMEOUT)
        return conclude(j, "fail", "compile", "timeout", "compiling and loading took too long");
    if (w->fault)
        return kiln_fail(err, "the CUDA worker could not start (no NVIDIA driver or GPU "
                         "here?): %s", w->fault_msg);
    if ((w->ready_status == KILN_ST_COMPILE || w->ready_status == KILN_ST_RESOURCE) &&
        strncmp(w->ready_info, "lib 1", 5) == 0)
        return kiln_fail(err, "the baseline %s does not compile: %s", baseline_path(j), w->ready_info);
    if (w->ready_status == KILN_ST_RESOURCE && strncmp(w->ready_info, "lib 0: ", 7) == 0)
        return conclude(j, "fail", "compile", "resource-limit", "%s", w->ready_info + 7);
    if (w->ready_status == KILN_ST_COMPILE) {
        conclude(j, "fail", "compile", "compile-error", "the candidate does not compile");
        compile_feedback(j);
        return 1;
    }
    if (w->ready_status != KILN_ST_OK)
        return kiln_fail(err, "the CUDA worker could not start: %s", w->ready_info);
    return 0;
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
    kiln_worker_opts co = {.dir = cdir, .libs = {clib, blib}, .nlibs = builtin_baseline(j) ? 1 : 2,
                           .arena_bytes = 4096, .builtin = builtin_baseline(j), .ref = rsrc,
                           .cpu_seconds = (unsigned)(j->o->job_timeout_ms / 1000 + 1),
                           .start_timeout_ms = 120000, .report_scale = j->o->test_report_scale,
                           .cuda = 1, .dtype = kiln_dtype_name(j->o->dtype), .device = j->o->device};
    progress(j, "compile", "starting the CUDA worker and compiling with NVRTC");
    if (kiln_worker_start(&j->cand, &co, err) < 0)
        return -1;
    snprintf(j->v->sandbox, sizeof j->v->sandbox, "%.255s", j->cand.sandbox);
    int rc = cuda_started(j, err);
    if (rc)
        return rc;
    kiln_callset_init_device(&j->cs, j->t, j->o->dtype, kiln_secret_seed());
    j->cs_ready = 1;
    j->cs.manifest[0] = j->man[0];
    j->cs.manifest[1] = j->man[1];
    j->cs.ref_manifest = j->man_ref;
    kiln_gpu_limits(j->cand.device, &j->cs.limits);
    j->cs.cand = &j->cand;
    j->cs.ref = NULL;
    j->cs.call_timeout_ms = j->o->call_timeout_ms;
    return 0;
}

/* The CPU baseline in a worker of its own (its directory, its arena, the
 * candidate's core); kiln's code, so a failure is an internal error. */
static int start_cpu_baseline(job *j, const kiln_worker_opts *cand, kiln_error *err)
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

static int start_workers(job *j, kiln_error *err)
{
    if (j->device)
        return start_device_worker(j, err);
    kiln_shape shapes[MAX_JOB_SHAPES];
    int n = all_shapes(j, shapes);
    char cdir[4200], rdir[4200], clib[4300], blib[4300], rlib[4300];
    snprintf(cdir, sizeof cdir, "%s/cand", j->dir);
    snprintf(rdir, sizeof rdir, "%s/ref", j->dir);
    snprintf(clib, sizeof clib, "%s/cand.so", cdir);
    snprintf(blib, sizeof blib, "%s/base.so", cdir);
    snprintf(rlib, sizeof rlib, "%s/ref.so", rdir);
    kiln_worker_opts ro = {.dir = rdir, .libs = {rlib}, .nlibs = 1,
                           .arena_bytes = kiln_arena_bytes(j->t, j->o->dtype, shapes, n, 1),
                           .cpu_seconds = 600, .address_bytes = ((size_t)4 << 30)};
    if (cuda_reference(j)) {
        snprintf(rlib, sizeof rlib, "%s/ref.cu", rdir);
        ro.cuda = 1;
        ro.dtype = "f64";
        ro.device = j->o->device;
        ro.scrub = 1;
        ro.address_bytes = 0;
        ro.start_timeout_ms = 120000;
        progress(j, "compile", "starting the CUDA reference");
    }
    if (kiln_worker_start(&j->ref, &ro, err) < 0)
        return -1;
    if (j->ref.fault)
        return kiln_fail(err, "the reference worker failed to start: %s", j->ref.fault_msg);
    if (ro.cuda && j->ref.ready_status != KILN_ST_OK)
        return kiln_fail(err, "the CUDA reference %s could not start: %s", j->t->reference_cuda,
                         j->ref.ready_info);
    kiln_worker_opts co = {.dir = cdir, .libs = {clib, blib}, .nlibs = 1,
                           .arena_bytes = kiln_arena_bytes(j->t, j->o->dtype, shapes, n, 0),
                           .cpu_seconds = (unsigned)(j->o->job_timeout_ms / 1000 + 1),
                           .start_timeout_ms = 5000, .report_scale = j->o->test_report_scale};
    /* Room for the arena, the libraries and honest scratch; no more. */
    co.address_bytes = co.arena_bytes + ((size_t)1 << 30);
    if (j->cuda) {
        snprintf(clib, sizeof clib, "%s/cand.cu", cdir);
        snprintf(blib, sizeof blib, "%s/base.cu", cdir);
        co.cuda = 1;
        co.nlibs = builtin_baseline(j) ? 1 : 2;
        co.builtin = builtin_baseline(j);
        co.dtype = kiln_dtype_name(j->o->dtype);
        co.device = j->o->device;
        co.address_bytes = 0;            /* the driver maps far more than it uses */
        co.start_timeout_ms = 120000;    /* device start-up and two NVRTC compiles */
        progress(j, "compile", "starting the CUDA worker and compiling with NVRTC");
    } else {
        if (artefacts_unchanged(j, err) < 0)
            return -1;
        progress(j, "smoke", "starting the workers");
        co.pin = 1;   /* candidate and baseline share one core: a fair race */
        int cpu = sched_getcpu();
        co.cpu = cpu > 0 ? cpu : 0;
    }
    if (kiln_worker_start(&j->cand, &co, err) < 0)
        return -1;
    snprintf(j->v->sandbox, sizeof j->v->sandbox, "%.255s", j->cand.sandbox);
    if (j->cuda) {
        int rc = cuda_started(j, err);
        if (rc)
            return rc;
    } else if (j->cand.fault) {
        return conclude(j, "fail", "smoke", kiln_fault_code(j->cand.fault),
                        "the candidate failed while being loaded: %s", j->cand.fault_msg);
    } else if (start_cpu_baseline(j, &co, err) < 0) {
        return -1;
    }
    if (kiln_callset_init(&j->cs, j->t, j->o->dtype, shapes, n, kiln_secret_seed(), err) < 0)
        return -1;
    j->cs.base = j->cuda ? NULL : &j->base;
    j->cs_ready = 1;
    if (j->cuda) {
        j->cs.manifest[0] = j->man[0];
        j->cs.manifest[1] = j->man[1];
        j->cs.ref_manifest = j->man_ref;
        kiln_gpu_limits(j->cand.device, &j->cs.limits);
    }
    j->cs.cand = &j->cand;
    j->cs.ref = &j->ref;
    j->cs.call_timeout_ms = j->o->call_timeout_ms;
    return 0;
}

/* ---- correctness stages -------------------------------------------------- */

/* What a failure code means, in fixed words: at a hidden shape this is all
 * the verdict says, since anything the call or the worker wrote (a crash
 * message, a printf, an error of so many ULPs against a budget that grows
 * with the size) could give the shape away. */
static const char *code_words(const char *code)
{
    static const char *const words[][2] = {
        {"crash", "the candidate crashed"},
        {"timeout", "a call did not return in time"},
        {"sandbox", "the candidate made a forbidden system call"},
        {"resource", "the candidate ran out of an allowed resource"},
        {"protocol", "the worker broke the call protocol"},
        {"guard-corrupted", "the candidate wrote outside its buffers"},
        {"input-modified", "the candidate modified an input"},
        {"unwritten-output", "output elements were never written"},
        {"non-finite", "outputs are NaN or Inf where the reference is finite"},
        {"wrong-output", "outputs are over the error budget"},
        {"launch-error", "a launch failed"},
    };
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (strcmp(words[i][0], code) == 0)
            return words[i][1];
    return "the call failed";
}

/* The verdict code of a failed candidate call. */
static const char *outcome_code(const job *j, const kiln_call_result *res)
{
    return res->outcome == KILN_CALL_FAULT ? kiln_fault_code(j->cand.fault)
                                           : kiln_call_code(res->outcome);
}

/* One checked call of lib on fresh inputs. 0 ok, 1 verdict reached, -1 internal. */
static int checked(job *j, const char *stage, const char *label, const kiln_shape *s,
                   const kiln_variant *var, int lib, kiln_call_result *res, kiln_error *err)
{
    if (out_of_time(j))
        return 1;
    if (kiln_callset_prepare(&j->cs, s, var, err) < 0)
        return -1;
    kiln_callset_run(&j->cs, lib, res);
    if (lib == 0)   /* the candidate worker's own calls, checked against its CPU time */
        j->reported_ns += (double)res->elapsed_ns;
    if (res->rt_ns + 1000 < res->elapsed_ns)
        j->timer_flags++;
    if (res->outcome == KILN_CALL_OK)
        return 0;
    if (lib == 1)
        return kiln_fail(err, "the baseline failed on %s: %s", label, res->detail);
    const char *code = outcome_code(j, res);
    if (j->cs.hidden)
        return conclude(j, "fail", stage, code, "%s: %s", label, code_words(code));
    return conclude(j, "fail", stage, code, "%s: %s", label, res->detail);
}

/* Calibrate the per-call timeout on the trusted baseline, so a hang is
 * caught in about a second rather than after the maximum. */
static int calibrate(job *j, const kiln_shape *smallest, kiln_error *err)
{
    kiln_call_result res;
    int rc = checked(j, "smoke", "baseline", smallest, NULL, 1, &res, err);
    if (rc)
        return rc;
    double ms = (double)res.elapsed_ns / 1e6 * 200.0;
    int t = ms < 1000 ? 1000 : ms > j->o->call_timeout_ms ? j->o->call_timeout_ms : (int)ms;
    j->cs.call_timeout_ms = t;
    return 0;
}

static const kiln_shape *smallest_visible(const kiln_group *g, int *index)
{
    int best = 0;
    double bn = INFINITY;
    for (int i = 0; i < g->nvisible; i++) {
        double n = 1;
        for (int d = 0; d < KILN_MAX_DIMS; d++)
            n *= g->visible[i].d[d] ? (double)g->visible[i].d[d] : 1;
        if (n < bn) {
            bn = n;
            best = i;
        }
    }
    *index = best;
    return &g->visible[best];
}

static const kiln_shape *largest_visible(const kiln_group *g, int *index)
{
    int best = 0;
    double bn = -1;
    for (int i = 0; i < g->nvisible; i++) {
        double n = 1;
        for (int d = 0; d < KILN_MAX_DIMS; d++)
            n *= g->visible[i].d[d] ? (double)g->visible[i].d[d] : 1;
        if (n > bn) {
            bn = n;
            best = i;
        }
    }
    *index = best;
    return &g->visible[best];
}

static int check_shape(job *j, const char *stage, const char *id, const kiln_shape *s,
                       int visible, kiln_error *err)
{
    char label[200];
    if (visible) {
        char dims[128];
        kiln_shape_format(j->t, s, dims, sizeof dims);
        snprintf(label, sizeof label, "shape %s (%s)", id, dims);
    } else {
        snprintf(label, sizeof label, "hidden shape %s", id);
    }
    kiln_call_result res;
    j->cs.hidden = !visible;
    int rc = checked(j, stage, label, s, NULL, 0, &res, err);
    j->cs.hidden = 0;
    kiln_shape_result *r = result_for(j, id, s, visible);
    if (r && rc > 0)
        snprintf(r->code, sizeof r->code, "%s", j->v->code);
    if (r && rc >= 0) {
        r->checked = 1;
        r->max_err_ulps = res.max_err_ulps > r->max_err_ulps ? res.max_err_ulps : r->max_err_ulps;
        r->budget_ulps = res.budget_ulps;
        r->rel_l2 = res.rel_l2 > r->rel_l2 ? res.rel_l2 : r->rel_l2;
    }
    return rc;
}

static int stage_smoke_visible(job *j, kiln_error *err)
{
    int si;
    const kiln_shape *small = smallest_visible(j->g, &si);
    int rc = calibrate(j, small, err);
    char id[16];
    snprintf(id, sizeof id, "v%d", si + 1);
    progress(j, "smoke", "shape %s", id);
    if (rc || (rc = check_shape(j, "smoke", id, small, 1, err)) != 0)
        return rc;
    for (int i = 0; i < j->g->nvisible; i++) {
        snprintf(id, sizeof id, "v%d", i + 1);
        progress(j, "visible", "shape %s of %d", id, j->g->nvisible);
        if ((rc = check_shape(j, "visible", id, &j->g->visible[i], 1, err)) != 0)
            return rc;
    }
    return 0;
}

static int stage_hidden(job *j, kiln_error *err)
{
    char id[16];
    for (int i = 0; i < j->nhidden; i++) {
        snprintf(id, sizeof id, "h%d", i + 1);
        progress(j, "hidden", "shape %s of %d", id, j->nhidden);
        int rc = check_shape(j, "hidden", id, &j->hidden[i], 0, err);
        if (rc)
            return rc;
    }
    return 0;
}

/* Each variant on the largest visible shape and on the first hidden one. */
static int stage_stability(job *j, kiln_error *err)
{
    int li;
    const kiln_shape *shapes[2] = {largest_visible(j->g, &li), &j->hidden[0]};
    for (int k = 0; k < j->t->nvariants; k++) {
        const kiln_variant *var = &j->t->variants[k];
        progress(j, "stability", "variant %s", var->name);
        for (int s = 0; s < 2; s++) {
            char label[200];
            snprintf(label, sizeof label, "variant '%s' on %s shape %s%d", var->name,
                     s ? "hidden" : "visible", s ? "h" : "v", s ? 1 : li + 1);
            kiln_call_result res;
            j->cs.hidden = s == 1;
            int rc = checked(j, "stability", label, shapes[s], var, 0, &res, err);
            j->cs.hidden = 0;
            kiln_shape_result *r = s == 1 && rc > 0 ? result_for(j, "h1", shapes[1], 0) : NULL;
            if (r)
                snprintf(r->code, sizeof r->code, "%s", j->v->code);
            if (rc)
                return rc;
        }
    }
    return 0;
}

/* Device-resident: the same key again, and the outputs' hashes compared. */
static int determinism_on_device(job *j, const char *label, uint64_t first)
{
    kiln_call_result res;
    kiln_callset_run(&j->cs, 0, &res);
    j->reported_ns += (double)res.elapsed_ns;
    if (res.outcome != KILN_CALL_OK) {
        const char *code = outcome_code(j, &res);
        return conclude(j, "fail", "determinism", code, "%s, second run: %s", label, res.detail);
    }
    if (res.out_hash != first)
        return conclude(j, "fail", "determinism", "nondeterministic",
                        "%s: the same inputs gave bitwise different outputs on a second call",
                        label);
    return 0;
}

static int stage_determinism(job *j, kiln_error *err)
{
    if (!j->t->deterministic)
        return 0;
    int li;
    const kiln_shape *s = largest_visible(j->g, &li);
    progress(j, "determinism", "shape v%d twice", li + 1);
    kiln_call_result res;
    char label[64];
    snprintf(label, sizeof label, "shape v%d", li + 1);
    int rc = checked(j, "determinism", label, s, NULL, 0, &res, err);
    if (rc)
        return rc;
    if (j->device)
        return determinism_on_device(j, label, res.out_hash);
    unsigned char *first[KILN_MAX_ARGS] = {0};
    size_t bytes[KILN_MAX_ARGS] = {0};
    for (int a = 0; a < j->t->nargs; a++) {
        const kiln_arg *arg = &j->t->args[a];
        if (arg->kind != KILN_ARG_OUTPUT)
            continue;
        bytes[a] = (size_t)kiln_arg_elems(arg, s) * kiln_dtype_size(kiln_arg_dtype(arg, j->o->dtype));
        first[a] = malloc(bytes[a]);
        if (first[a])
            memcpy(first[a], j->cs.last_out[a], bytes[a]);
    }
    kiln_callset_run(&j->cs, 0, &res);   /* the same inputs again */
    j->reported_ns += (double)res.elapsed_ns;
    rc = 0;
    if (res.outcome != KILN_CALL_OK) {
        const char *code = outcome_code(j, &res);
        rc = conclude(j, "fail", "determinism", code, "%s, second run: %s", label, res.detail);
    }
    for (int a = 0; a < j->t->nargs; a++) {
        if (!rc && first[a] && memcmp(first[a], j->cs.last_out[a], bytes[a]) != 0)
            rc = conclude(j, "fail", "determinism", "nondeterministic",
                          "%s: the same inputs gave bitwise different '%s' on a second call",
                          label, j->t->args[a].name);
        free(first[a]);
    }
    return rc;
}

/* ---- timing and plausibility --------------------------------------------- */

typedef struct samples {
    double cand[512], base[512];          /* reported by the worker */
    double cand_rt[512], base_rt[512];    /* round trips seen here */
    double cand_gap[512], base_gap[512];  /* kernel-charged CPU time minus the report */
    double cand_cupti[512], base_cupti[512], cand_wall[512], base_wall[512];   /* CUDA */
    double cand_kern[512], base_kern[512];   /* device-resident: CUPTI kernel time per set */
    double cand_chk[512], base_chk[512];     /* device-resident: the worker's checks per call */
    double cand_draw[512], cand_setup[512];  /* device-resident: drawing; graph, flush */
    int n;
} samples;

static int timed_pair(job *j, const char *label, const kiln_shape *s, samples *sm, kiln_error *err)
{
    int order[2] = {sm->n % 2, 1 - sm->n % 2};   /* alternate who goes first */
    for (int k = 0; k < 2; k++) {
        kiln_call_result res;
        int rc = checked(j, "timing", label, s, NULL, order[k], &res, err);
        if (rc)
            return rc;
        double gap = res.cpu_ns ? (double)res.cpu_ns - (double)res.elapsed_ns : 0;
        int c = order[k] == 0;
        (c ? sm->cand : sm->base)[sm->n] = (double)res.elapsed_ns;
        (c ? sm->cand_rt : sm->base_rt)[sm->n] = (double)res.rt_ns;
        (c ? sm->cand_gap : sm->base_gap)[sm->n] = gap;
        (c ? sm->cand_cupti : sm->base_cupti)[sm->n] = (double)res.cupti_ns;
        (c ? sm->cand_wall : sm->base_wall)[sm->n] = (double)res.wall_ns;
        (c ? sm->cand_kern : sm->base_kern)[sm->n] = (double)res.kernel_ns;
        (c ? sm->cand_chk : sm->base_chk)[sm->n] = (double)res.check_ns;
        if (c) {
            sm->cand_draw[sm->n] = (double)res.draw_ns;
            sm->cand_setup[sm->n] = (double)res.setup_ns;
        }
    }
    sm->n++;
    return 0;
}

/* A worker that under-reports the candidate's time cannot hide the CPU time
 * the kernel charges it: the gap between that and the report grows for the
 * candidate but not for the baseline. CPU time, unlike a round trip, does not
 * grow while the worker waits for a core, so this holds on a busy machine. */
/* The excess CPU per candidate call over what was reported, or 0 when it
 * is within the noise. */
static double cross_check(const samples *sm)
{
    /* Pairs run back to back under the same conditions: compare within each
     * pair, then take the median over pairs. */
    double d[512];
    for (int i = 0; i < sm->n; i++)
        d[i] = sm->cand_gap[i] - sm->base_gap[i];
    double excess = kiln_median(d, sm->n), dev[512];
    for (int i = 0; i < sm->n; i++)
        dev[i] = fabs(d[i] - excess);
    /* Allow for the noise actually seen: a robust standard error of the
     * median difference, plus a floor for clock granularity. */
    double se = 1.4826 * kiln_median(dev, sm->n) * 1.2533 / sqrt((double)sm->n);
    /* A quarter of the reported time: a lie that claims more than 1.25x is
     * caught once it stands out of the noise; honest calls on a loaded
     * machine were seen up to 16% apart. */
    double allowed = fmax(fmax(5e3, 4 * se), 0.25 * kiln_median(sm->cand, sm->n));
    return excess > allowed ? excess : 0;
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

/* Timed pairs for one shape until the median settles or its budget is spent. */
static int time_pairs(job *j, const kiln_shape *s, const char *label, uint64_t budget_ns,
                      samples *sm, kiln_shape_result *r, kiln_error *err)
{
    uint64_t t0 = kiln_now_ns();
    int maxp = j->o->max_pairs < 512 ? j->o->max_pairs : 512, rc = 0;
    sm->n = 0;
    while (sm->n < maxp) {
        if ((rc = timed_pair(j, label, s, sm, err)) != 0)
            break;
        kiln_time_stats_of(sm->cand, sm->n, &r->cand);
        kiln_time_stats_of(sm->base, sm->n, &r->base);
        if (sm->n >= j->o->min_pairs &&
            (kiln_now_ns() - t0 > budget_ns || kiln_timing_converged(&r->cand, &r->base)))
            break;
    }
    return rc;
}

static int time_shape(job *j, int i, uint64_t budget_ns, kiln_error *err)
{
    const kiln_shape *s = &j->g->visible[i];
    char id[16], label[200], dims[128];
    snprintf(id, sizeof id, "v%d", i + 1);
    kiln_shape_format(j->t, s, dims, sizeof dims);
    snprintf(label, sizeof label, "timed call on shape %s (%s)", id, dims);
    samples *sm = calloc(1, sizeof *sm);
    if (!sm)
        return kiln_fail(err, "out of memory");
    kiln_shape_result *r = result_for(j, id, s, 1);
    /* A disagreement is measured once more on fresh calls before it counts:
     * a burst of load passes, a worker that lies does it again. */
    double excess = 0;
    int rc = 0;
    char why[200] = "";
    for (int attempt = 0; attempt < 2 && rc == 0; attempt++) {
        rc = time_pairs(j, s, label, budget_ns, sm, r, err);
        if (rc == 0 && j->cuda) {
            int g0 = launch_gaps(j->man[0]), g1 = launch_gaps(j->man[1]);
            timers_agree(sm, g0 > g1 ? g0 : g1, why, sizeof why);
            if (!why[0])
                break;
        } else if (rc == 0 && (excess = cross_check(sm)) == 0) {
            break;
        }
    }
    if (rc == 0) {
        r->timed = 1;
        r->speedup = r->cand.median_ns > 0 ? r->base.median_ns / r->cand.median_ns : 0;
        r->cand_rt_ns = kiln_median(sm->cand_rt, sm->n);
        r->base_rt_ns = kiln_median(sm->base_rt, sm->n);
        r->cand_cpu_ns = r->cand.median_ns + kiln_median(sm->cand_gap, sm->n);
        r->base_cpu_ns = r->base.median_ns + kiln_median(sm->base_gap, sm->n);
        if (j->cuda) {
            r->cand_cupti_ns = kiln_median(sm->cand_cupti, sm->n);
            r->base_cupti_ns = kiln_median(sm->base_cupti, sm->n);
            r->cand_wall_ns = kiln_median(sm->cand_wall, sm->n);
            r->base_wall_ns = kiln_median(sm->base_wall, sm->n);
            r->cand_cpu_ns = r->base_cpu_ns = 0;
        }
        if (why[0])
            kiln_verdict_flag(j->v, "timer-disagreement: shape %s: %s (measured twice)", id, why);
        if (excess > 0)
            kiln_verdict_flag(j->v, "timer-disagreement: shape %s: the kernel charged the worker "
                              "%.0f us more CPU per candidate call than it reported (measured "
                              "twice)", id, excess / 1e3);
    }
    free(sm);
    return rc;
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

/* Pairs until the ratio's interval is narrow enough or the budget is spent. */
static int device_pairs(job *j, const kiln_shape *s, const char *label, uint64_t budget_ns,
                        samples *sm, kiln_shape_result *r, kiln_error *err)
{
    uint64_t t0 = kiln_now_ns();
    int maxp = j->o->max_pairs < 512 ? j->o->max_pairs : 512, rc = 0;
    sm->n = 0;
    while (sm->n < maxp) {
        if ((rc = timed_pair(j, label, s, sm, err)) != 0)
            break;
        double hw = kiln_ratio_interval(sm->base_kern, sm->cand_kern, sm->n, &r->speedup,
                                        &r->speedup_lo, &r->speedup_hi);
        /* Stop only after an even number of pairs, so each side went first
         * equally often and an order effect cancels. */
        if (sm->n >= j->o->min_pairs && sm->n >= DEVICE_MIN_PAIRS && sm->n % 2 == 0 &&
            (hw <= RATIO_HALF_WIDTH || kiln_now_ns() - t0 > budget_ns))
            break;
    }
    return rc;
}

static int time_shape_device(job *j, int i, uint64_t budget_ns, kiln_error *err)
{
    const kiln_shape *s = &j->g->visible[i];
    char id[16], label[200], dims[128], why[200] = "";
    snprintf(id, sizeof id, "v%d", i + 1);
    kiln_shape_format(j->t, s, dims, sizeof dims);
    snprintf(label, sizeof label, "timed call on shape %s (%s)", id, dims);
    samples *sm = calloc(1, sizeof *sm);
    if (!sm)
        return kiln_fail(err, "out of memory");
    kiln_shape_result *r = result_for(j, id, s, 1);
    j->cs.sets = 1;
    int rc = timed_pair(j, label, s, sm, err);   /* warm-up: sizes the batch */
    j->cs.sets = rc ? 1 : batch_sets(j, s, sm);
    for (int attempt = 0; attempt < 2 && rc == 0; attempt++) {
        rc = device_pairs(j, s, label, budget_ns, sm, r, err);
        if (rc == 0)
            device_timers_agree(j, sm, why, sizeof why);
        if (rc || !why[0])
            break;
    }
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
        if (why[0])
            kiln_verdict_flag(j->v, "timer-disagreement: shape %s: %s (measured twice)", id, why);
    }
    j->cs.sets = 1;
    free(sm);
    return rc;
}

static int stage_timing(job *j, kiln_error *err)
{
    uint64_t per_shape = (uint64_t)j->o->timing_ms * 1000000u / (uint64_t)j->g->nvisible;
    for (int i = 0; i < j->g->nvisible; i++) {
        progress(j, "timing", "shape v%d of %d, at most %.1f s of the timing budget left", i + 1,
                 j->g->nvisible, (double)per_shape * (j->g->nvisible - i) / 1e9);
        int rc = j->device ? time_shape_device(j, i, per_shape, err) : time_shape(j, i, per_shape, err);
        if (rc)
            return rc;
    }
    return 0;
}

static int floor_for(job *j, kiln_shape_result *r, kiln_error *err)
{
    double bw;
    if (kiln_task_cost(j->t, j->t->cost_bytes, &r->shape, j->o->dtype, &r->bytes, err) < 0 ||
        kiln_task_cost(j->t, j->t->cost_flops, &r->shape, j->o->dtype, &r->flops, err) < 0)
        return kiln_error_prefix(err, "%s: cost", j->t->name);
    if ((j->cuda ? kiln_gpu_bandwidth(j->cand.device, &bw, err)
                 : kiln_cpu_bandwidth((size_t)r->bytes, &bw, err)) < 0)
        return -1;
    j->v->bandwidth_gbps = bw / 1e9;
    r->floor_ns = r->bytes / bw * 1e9;
    /* The compute half: flops at the device's theoretical peak. */
    double peak = j->cuda ? kiln_gpu_peak_flops(j->cand.device, j->o->dtype) : 0;
    j->v->peak_tflops = peak / 1e12;
    if (peak > 0 && r->flops / peak * 1e9 > r->floor_ns)
        r->floor_ns = r->flops / peak * 1e9;
    r->roofline_fraction = r->cand.median_ns > 0 ? r->floor_ns / r->cand.median_ns : 0;
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int stage_plausibility(job *j, kiln_error *err)
{
    kiln_verdict *v = j->v;
    double logsum = 0, minsp = INFINITY, fr[KILN_MAX_RESULTS];
    int n = 0;
    for (int i = 0; i < v->nresults; i++) {
        kiln_shape_result *r = &v->results[i];
        if (!r->timed)
            continue;
        if (floor_for(j, r, err) < 0)
            return -1;
        if (r->cand.median_ns < 0.8 * r->floor_ns)
            kiln_verdict_flag(v, "below-roofline: shape %s ran in %.1f us, under the %.1f us that "
                              "moving its bytes (at the measured bandwidth) or its flops (at the "
                              "device's peak) takes", r->id, r->cand.median_ns / 1e3,
                              r->floor_ns / 1e3);
        if (r->base.median_ns < 0.8 * r->floor_ns)
            kiln_verdict_flag(v, "baseline-below-roofline: shape %s: the measurement is not "
                              "trustworthy", r->id);
        if (r->speedup > j->o->speedup_ceiling)
            kiln_verdict_flag(v, "speedup-ceiling: shape %s is %.1fx faster than the baseline "
                              "(ceiling %.0fx)", r->id, r->speedup, j->o->speedup_ceiling);
        logsum += log(r->speedup);
        minsp = r->speedup < minsp ? r->speedup : minsp;
        fr[n++] = r->roofline_fraction;
    }
    if (j->timer_flags)
        kiln_verdict_flag(v, "timer-disagreement: %d calls were reported as longer than their "
                          "round trip", j->timer_flags);
    if (n) {
        v->geomean_speedup = exp(logsum / n);
        v->min_speedup = minsp;
        qsort(fr, (size_t)n, sizeof fr[0], cmp_double);
        v->median_roofline = n % 2 ? fr[n / 2] : 0.5 * (fr[n / 2 - 1] + fr[n / 2]);
    }
    return 0;
}

/* The kernel's own accounting of the worker, next to what it reported. */
static void account_worker(job *j)
{
    kiln_verdict *v = j->v;
    kiln_worker_stop(&j->cand);
    v->worker_user_s = (double)j->cand.ru.ru_utime.tv_sec + j->cand.ru.ru_utime.tv_usec / 1e6;
    v->worker_sys_s = (double)j->cand.ru.ru_stime.tv_sec + j->cand.ru.ru_stime.tv_usec / 1e6;
    v->worker_wall_s = (double)j->cand.lifetime_ns / 1e9;
    v->worker_maxrss_kb = j->cand.ru.ru_maxrss;
    v->reported_s = j->reported_ns / 1e9;
    double cpu = v->worker_user_s + v->worker_sys_s;
    if (!j->cuda && !v->status[0] && j->cand.reaped && v->reported_s > 2.0 * cpu + 0.1)
        kiln_verdict_flag(v, "timer-disagreement: the worker reported %.3f s of calls but the "
                          "kernel accounted only %.3f s of CPU time to it", v->reported_s, cpu);
}

/* ---- the job ------------------------------------------------------------ */

static void describe_env(kiln_verdict *v)
{
    struct utsname u;
    kiln_cpu_model(v->cpu_model, sizeof v->cpu_model);
    gethostname(v->hostname, sizeof v->hostname - 1);
    if (uname(&u) == 0)
        snprintf(v->kernel, sizeof v->kernel, "%.40s %.50s", u.sysname, u.release);
}

/* Seconds since *t, and *t moved to now. */
static double lap(uint64_t *t)
{
    uint64_t now = kiln_now_ns();
    double s = (double)(now - *t) / 1e9;
    *t = now;
    return s;
}

/* Stop the workers and give the lane back (if it was taken). */
static int finish_stages(job *j, int rc, int had_lane)
{
    account_worker(j);
    kiln_worker_stop(&j->base);
    kiln_worker_stop(&j->ref);
    if (had_lane && j->o->lane_release)
        j->o->lane_release(j->o->lane_ctx);
    return rc;
}

static int run_stages(job *j, kiln_error *err)
{
    int rc;
    uint64_t t = kiln_now_ns();
    if ((rc = stage_static(j, err)) != 0 || (rc = stage_compile(j, err)) != 0)
        return rc;
    j->v->compile_s = lap(&t);
    draw_hidden(j);
    /* Device-resident jobs start their worker (process, context, NVRTC)
     * before queueing for the device, so that start-up overlaps the job
     * that holds it; the worker then idles until its first call. */
    int early = j->device;
    if (early && (rc = start_workers(j, err)) != 0)
        return finish_stages(j, rc, 0);
    j->v->compile_s += lap(&t);
    if (j->o->lane_acquire) {
        progress(j, "queued", "waiting for the device");
        j->o->lane_acquire(j->o->lane_ctx);
    }
    lap(&t);   /* waiting for the lane is no stage's time */
    j->deadline_ns = kiln_now_ns() + (uint64_t)j->o->job_timeout_ms * 1000000u;
    if (early || (rc = start_workers(j, err)) == 0) {
        j->v->compile_s += lap(&t);
        if ((rc = stage_smoke_visible(j, err)) == 0 && (rc = stage_hidden(j, err)) == 0 &&
            (rc = stage_stability(j, err)) == 0 && (rc = stage_determinism(j, err)) == 0) {
            j->v->correctness_s = lap(&t);
            if ((rc = stage_timing(j, err)) == 0) {
                j->v->timing_s = lap(&t);
                progress(j, "plausibility", "roofline and timers");
                rc = stage_plausibility(j, err);
                j->v->plausibility_s = lap(&t);
            }
        }
    }
    return finish_stages(j, rc, 1);
}

static void finish_status(job *j)
{
    kiln_verdict *v = j->v;
    if (v->status[0])
        return;
    if (v->nflags) {
        char code[32];
        snprintf(code, sizeof code, "%.*s", (int)strcspn(v->flags[0], ":"), v->flags[0]);
        conclude(j, "suspect", "plausibility", code, "%s", v->flags[0]);
        return;
    }
    snprintf(v->status, sizeof v->status, "pass");
    snprintf(v->stage, sizeof v->stage, "plausibility");
    snprintf(v->code, sizeof v->code, "ok");
    snprintf(v->reason, sizeof v->reason,
             "correct on every shape; geomean speedup %.2fx (min %.2fx), median %.0f%% of roofline",
             v->geomean_speedup, v->min_speedup, 100 * v->median_roofline);
    snprintf(v->feedback, sizeof v->feedback, "pass: %s", v->reason);
}

static void init_verdict(job *j)
{
    kiln_verdict *v = j->v;
    memset(v, 0, sizeof *v);
    snprintf(v->task, sizeof v->task, "%s", j->t->name);
    snprintf(v->backend, sizeof v->backend, "%s", kiln_backend_name(j->o->backend));
    snprintf(v->dtype, sizeof v->dtype, "%s", kiln_dtype_name(j->o->dtype));
    snprintf(v->group, sizeof v->group, "%s", j->g->name);
    v->trust_level_cpu = !j->cuda;
    describe_env(v);
}

/* The defaults verify.h promises, for every field left at zero. */
static void with_defaults(const kiln_verify_opts *in, kiln_verify_opts *o)
{
    *o = *in;
    o->timing_ms = o->timing_ms > 0 ? o->timing_ms : 2000;
    o->call_timeout_ms = o->call_timeout_ms > 0 ? o->call_timeout_ms : 10000;
    o->job_timeout_ms = o->job_timeout_ms > 0 ? o->job_timeout_ms : 300000;
    o->min_pairs = o->min_pairs > 0 ? o->min_pairs : 5;
    o->max_pairs = o->max_pairs > 0 ? o->max_pairs : 200;
    o->speedup_ceiling = o->speedup_ceiling > 0 ? o->speedup_ceiling : 100;
}

int kiln_verify(const kiln_verify_opts *given, kiln_verdict *v, kiln_error *err)
{
    job *j = calloc(1, sizeof *j);
    if (!j)
        return kiln_fail(err, "out of memory"), KILN_VERIFY_INTERNAL;
    kiln_verify_opts opts;
    with_defaults(given, &opts);
    const kiln_verify_opts *o = &opts;
    j->o = o;
    j->t = o->task;
    j->g = &o->task->groups[o->group];
    j->v = v;
    j->cuda = o->backend == KILN_BACKEND_CUDA;
    j->device = device_resident(j);
    j->cand.pid = j->base.pid = j->ref.pid = -1;
    j->cand.req_fd = j->cand.resp_fd = j->cand.arena_fd = -1;
    j->base.req_fd = j->base.resp_fd = j->base.arena_fd = -1;
    j->ref.req_fd = j->ref.resp_fd = j->ref.arena_fd = -1;
    j->deadline_ns = kiln_now_ns() + (uint64_t)o->job_timeout_ms * 1000000u;
    init_verdict(j);
    uint64_t t0 = kiln_now_ns();
    int rc = 0;
    if (!kiln_task_supports_backend(j->t, kiln_backend_name(o->backend), o->dtype))
        rc = kiln_fail(err, "task %s has no %s variant for dtype %s", j->t->name,
                       j->cuda ? "CUDA" : "CPU", kiln_dtype_name(o->dtype));
    else if (kiln_make_tempdir(o->work_root, "kiln-job", j->dir, sizeof j->dir, err) < 0)
        rc = -1;
    else
        rc = run_stages(j, err);
    int bad_input = rc < 0 && !v->source_sha256[0] && access(o->candidate, R_OK) != 0;
    if (j->cs_ready) {
        v->calls = j->cs.calls;
        kiln_callset_free(&j->cs);
    }
    if (rc >= 0)
        finish_status(j);
    v->seconds = (double)(kiln_now_ns() - t0) / 1e9;
    if (j->dir[0] && !o->keep_dir)
        kiln_remove_tree(j->dir);
    free(j->man[0]);
    free(j->man[1]);
    free(j->man_ref);
    free(j);
    if (rc < 0)
        return bad_input ? KILN_VERIFY_BAD_INPUT : KILN_VERIFY_INTERNAL;
    return 0;
}
