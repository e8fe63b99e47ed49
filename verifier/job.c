/* job.c - what the stages (verify.c) and the backends (backend/) share:
 * the verdict's helpers, the job's sources and shapes, one checked call,
 * and the host-data determinism and timing that the CPU backend and the
 * CUDA backend's host-resident table both use. Depends on nothing above
 * it: it calls a backend only through the job's table. */
#include "job.h"

#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileutil.h"
#include "paths.h"
#include "verdict_codes.h"
#include "timing.h"

const char *job_builtin_baseline(const job *j)
{
    return j->ops->builtin_baseline ? j->ops->builtin_baseline(j) : NULL;
}

const char *job_baseline_path(const job *j)
{
    if (j->o->baseline)
        return j->o->baseline;
    if (job_builtin_baseline(j))
        return "(built in: cuBLAS)";
    return j->ops->task_baseline(j);
}

void job_progress(job *j, const char *stage, const char *fmt, ...)
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

/* The first thing the candidate printed on a visible shape, added to the
 * feedback: device printf is how kernel authors debug. */
void job_feedback_output(job *j)
{
    const kiln_callset *cs = &j->cs;
    kiln_verdict *v = j->v;
    size_t n = strlen(v->feedback);
    if (!cs->out_label[0] || n + 1 >= sizeof v->feedback)
        return;
    size_t shown = strlen(cs->out_text);
    snprintf(v->feedback + n, sizeof v->feedback - n, "\ncandidate output during %s (%zu bytes%s):\n%s",
             cs->out_label, cs->out_bytes, shown < cs->out_bytes ? ", the first shown" : "",
             cs->out_text);
}

int job_conclude(job *j, const char *status, const char *stage, const char *code,
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
    job_feedback_output(j);
    return 1;
}

kiln_shape_result *job_result_for(job *j, const char *id, const kiln_shape *s, int visible)
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
    if (kiln_mono_ns() < j->deadline_ns)
        return 0;
    return job_conclude(j, "fail", "timing", "timeout", "the job exceeded its time limit of %d ms",
                    j->o->job_timeout_ms);
}

int job_read_source(const char *path, unsigned char **buf, size_t *len, kiln_error *err)
{
    char *b;
    int rc = kiln_read_file(path, SOURCE_LIMIT, &b, len, err);
    *buf = NULL;
    if (rc < 0)
        return -1;
    *buf = (unsigned char *)b;
    if (rc == 1)   /* longer than the limit: the static stage says so */
        *len = SOURCE_LIMIT + 1;
    return 0;
}

/* The task's C reference did not build: kiln's problem, unless it is a
 * copied task whose reference still has the old task's name. */
int job_reference_failed(job *j, const kiln_build_result *res, kiln_error *err)
{
    if (strstr(res->log, "undefined reference to") && strstr(res->log, "_reference"))
        return kiln_fail(err, "the task's reference %s defines neither %s_reference nor "
                         "kiln_reference: rename its function to one of them (a copied task "
                         "keeps the old task's function):\n%.600s", j->t->reference_cpu, j->t->function,
                         res->log);
    return kiln_fail(err, "the task's reference %s does not compile:\n%s", j->t->reference_cpu,
                     res->log);
}

int job_build_one(job *j, kiln_build_role role, const char *src, const char *sub,
                  const char *name, kiln_build_result *res, kiln_error *err)
{
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/%s", j->dir, sub);
    if (kiln_mkdirs(dir, err) < 0 ||
        kiln_cpu_build(j->t, j->o->dtype, role, src, dir, name, j->o->build_cache, res, err) < 0)
        return -1;
    return 0;
}

int job_all_shapes(const job *j, kiln_shape *out)
{
    int n = 0;
    for (int i = 0; i < j->g->nvisible; i++)
        out[n++] = j->g->visible[i];
    for (int i = 0; i < j->nhidden; i++)
        out[n++] = j->hidden[i];
    return n;
}

int job_visible_shapes(const job *j, kiln_shape *out)
{
    for (int i = 0; i < j->g->nvisible; i++)
        out[i] = j->g->visible[i];
    return j->g->nvisible;
}

int job_hidden_shapes(const job *j, kiln_shape *out)
{
    for (int i = 0; i < j->nhidden; i++)
        out[i] = j->hidden[i];
    return j->nhidden;
}

int job_copy_artefact(job *j, const char *from_rel, const char *to_sub, const char *name,
                      const char *sha, kiln_error *err)
{
    char from[4300], dir[4200], to[4400], got[65];
    char *buf = NULL;
    size_t len = 0;
    snprintf(from, sizeof from, "%s/%s", j->dir, from_rel);
    snprintf(dir, sizeof dir, "%s/%s", j->dir, to_sub);
    snprintf(to, sizeof to, "%s/%s", dir, name);
    int rc = kiln_read_file(from, (size_t)1 << 30, &buf, &len, err);
    if (rc == 0 && sha)
        kiln_sha256_hex(buf, len, got);
    if (rc == 0 && sha && strcmp(got, sha) != 0)
        rc = kiln_fail(err, "%s changed after its build", from_rel);
    if (rc == 0 && (kiln_mkdirs(dir, err) < 0 || kiln_write_bytes(to, buf, len, err) < 0))
        rc = -1;
    free(buf);
    return rc < 0 ? -1 : 0;
}

/* The trusted C reference (ref/ref.so) in a worker of its own, pinned to
 * core cpu where cpu >= 0: the CPU backend's, beside the candidate's and
 * the baseline's, since its calls of no library measure their overhead
 * (cpu_agree.c) and a core of a busy host can charge more than another. */
int job_start_reference(job *j, const kiln_shape *shapes, int n, int cpu, kiln_error *err)
{
    char rdir[4200], rlib[4300];
    snprintf(rdir, sizeof rdir, "%s/ref", j->dir);
    snprintf(rlib, sizeof rlib, "%s/ref.so", rdir);
    kiln_worker_opts ro = {.dir = rdir, .libs = {rlib}, .nlibs = 1,
                           .arena_bytes = kiln_arena_bytes(j->t, j->o->dtype, shapes, n, 1),
                           .cpu_seconds = 600, .address_bytes = ((size_t)4 << 30),
                           .pin = cpu >= 0, .cpu = cpu};
    if (kiln_worker_start(&j->ref, &ro, err) < 0)
        return -1;
    if (j->ref.fault)
        return kiln_fail(err, "the reference worker failed to start: %s", j->ref.fault_msg);
    return 0;
}

/* What a failure code means, in fixed words (verdict_codes.c): at a
 * hidden shape this is all the verdict says, since anything the call or
 * the worker wrote (a crash message, a printf, an error of so many ULPs
 * against a budget that grows with the size) could give the shape away. */
static const char *code_words(const char *code)
{
    const kiln_verdict_code *c = kiln_verdict_code_find(code);
    return c && c->words ? c->words : "the call failed";
}

/* The verdict code of a failed candidate call. */
const char *job_outcome_code(const job *j, const kiln_call_result *res)
{
    return res->outcome == KILN_CALL_FAULT ? kiln_fault_code(j->cs.cand->fault)
                                           : kiln_call_code(res->outcome);
}

int job_callset_call(job *j, const kiln_shape *s, const kiln_variant *var, int lib,
                     kiln_call_result *res, kiln_error *err)
{
    if (kiln_callset_prepare(&j->cs, s, var, err) < 0)
        return -1;
    kiln_callset_run(&j->cs, lib, res);
    return 0;
}

/* One checked call of lib, on fresh inputs or (fresh 0) on the inputs and
 * gold the callset holds. 0 ok, 1 verdict reached, -1 internal. */
static int checked_call(job *j, const char *stage, const char *label, const kiln_shape *s,
                        const kiln_variant *var, int lib, int fresh, kiln_call_result *res,
                        kiln_error *err)
{
    if (out_of_time(j))
        return 1;
    if (!fresh)
        kiln_callset_run(&j->cs, lib, res);
    else if (j->ops->call(j, s, var, lib, res, err) < 0)
        return -1;
    if (res->output_bytes && !j->cs.out_label[0]) {
        snprintf(j->cs.out_label, sizeof j->cs.out_label, "%s %.40s", stage, label);
        snprintf(j->cs.out_text, sizeof j->cs.out_text, "%s", res->output);
        j->cs.out_bytes = res->output_bytes;
    }
    if (lib == 0 && j->cs.cand == &j->cand)   /* checked against that worker's CPU time */
        j->reported_ns += (double)res->elapsed_ns;
    if (res->rt_ns + 1000 < res->elapsed_ns)
        j->timer_flags++;
    if (res->outcome == KILN_CALL_OK)
        return 0;
    if (lib == 1)
        return kiln_fail(err, "the baseline failed on %s: %s", label, res->detail);
    const char *code = job_outcome_code(j, res);
    if (j->cs.hidden)
        return job_conclude(j, "fail", stage, code, "%s: %s", label, code_words(code));
    return job_conclude(j, "fail", stage, code, "%s: %s", label, res->detail);
}

int job_checked(job *j, const char *stage, const char *label, const kiln_shape *s,
                const kiln_variant *var, int lib, kiln_call_result *res, kiln_error *err)
{
    return checked_call(j, stage, label, s, var, lib, 1, res, err);
}

int job_second_run_failed(job *j, const char *label, const kiln_call_result *res)
{
    const char *code = job_outcome_code(j, res);
    return job_conclude(j, "fail", "determinism", code, "%s, run again in a second worker: %s",
                        label, res->detail);
}

int job_nondeterministic(job *j, const char *label)
{
    return job_conclude(j, "fail", "determinism", "nondeterministic",
                        "%s: the same inputs gave bitwise different outputs when run again in a "
                        "second worker", label);
}

/* The outputs of the callset's last call copied, the same inputs run
 * again by the callset's candidate worker (the second one, which verify.c
 * switched to: a fresh process, its arena at another address), and the
 * outputs compared bit for bit. */
int job_again_host(job *j, const char *label, const kiln_call_result *first_res,
                   const kiln_shape *s, kiln_error *err)
{
    (void)first_res;
    (void)err;
    kiln_call_result res;
    int rc;
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
    kiln_callset_run(&j->cs, 0, &res);   /* the same inputs again (verify.c: in a fresh worker) */
    rc = res.outcome != KILN_CALL_OK ? job_second_run_failed(j, label, &res) : 0;
    for (int a = 0; a < j->t->nargs; a++) {
        if (!rc && first[a] && memcmp(first[a], j->cs.last_out[a], bytes[a]) != 0)
            rc = job_nondeterministic(j, label);
        free(first[a]);
    }
    return rc;
}

/* A pair's two calls share their inputs (and so the reference's run) where
 * the baseline has a worker of its own and host-side inputs: the candidate
 * still never sees an input twice, and cannot see the baseline's arena. Where
 * both run in one process, or the worker draws the inputs, each call draws
 * its own: a candidate there could copy the baseline's output. */
int job_timed_pair(job *j, const char *label, const kiln_shape *s, samples *sm, kiln_error *err)
{
    int order[2] = {sm->n % 2, 1 - sm->n % 2};   /* alternate who goes first */
    int share = j->cs.base != NULL && !j->cs.device;
    if (sm->figures) {
        /* The overhead, on trusted code: the reference's worker runs the
         * same kiln-worker and nothing of the candidate's or the parent's. */
        uint64_t prep = 0, cpu = 0;
        if (kiln_worker_prepare(&j->ref, 0, j->cs.call_timeout_ms, &prep) < 0 ||
            kiln_worker_null_call(&j->ref, j->cs.call_timeout_ms, &cpu) < 0)
            return kiln_fail(err, "the reference's worker failed: %s", j->ref.fault_msg);
        sm->prep_cpu[sm->n] = (double)prep;
        sm->null_cpu[sm->n] = (double)cpu;
    }
    for (int k = 0; k < 2; k++) {
        kiln_call_result res;
        int rc = checked_call(j, "timing", label, s, NULL, order[k], k == 0 || !share, &res, err);
        if (rc)
            return rc;
        int c = order[k] == 0;
        (c ? sm->cand : sm->base)[sm->n] = (double)res.elapsed_ns;
        (c ? sm->cand_cpu : sm->base_cpu)[sm->n] = (double)res.cpu_ns;
        (c ? sm->cand_rt : sm->base_rt)[sm->n] = (double)res.rt_ns;
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

/* While the CPU is the time, this thread runs on the workers' core. A
 * worker woken from another core was charged about 15 us more CPU per
 * round trip on a KVM guest (4 us from its own), and a thread that moved
 * between the calls of a pair made the overhead two-valued: the calls of
 * no library that calibrate it must see what the timed calls see.
 * Returns whether *saved holds the affinity to restore. */
static int pin_here(const job *j, const samples *sm, cpu_set_t *saved)
{
    if (!sm->figures || j->cand.core < 0 || sched_getaffinity(0, sizeof *saved, saved) != 0)
        return 0;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(j->cand.core, &one);
    return sched_setaffinity(0, sizeof one, &one) == 0;
}

int job_pairs(job *j, const kiln_shape *s, const char *label, uint64_t budget_ns, samples *sm,
              kiln_shape_result *r, job_settled_fn settled, kiln_error *err)
{
    uint64_t c0 = kiln_worker_cpu_ns(&j->cand);
    int known = c0 != 0;   /* the candidate's worker has a CPU clock */
    if (sm->figures && (!known || !kiln_worker_cpu_ns(&j->base) || !kiln_worker_cpu_ns(&j->ref)))
        return kiln_fail(err, "the kernel shows no CPU time for the workers (neither "
                         "/proc/PID/schedstat nor a process CPU clock), and without it a CPU "
                         "candidate cannot be timed");
    /* The kernel's CPU time of a short call spreads more than the worker's
     * clock did (its round trip's overhead is in it): where it is the time,
     * as many pairs as the samples hold, while the shape's budget lasts. */
    int maxp = sm->figures ? 512 : j->o->max_pairs < 512 ? j->o->max_pairs : 512, rc = 0;
    double in_calls = 0;
    cpu_set_t saved;
    int pinned = pin_here(j, sm, &saved);
    uint64_t t0 = kiln_mono_ns();
    sm->n = 0;
    while (sm->n < maxp) {
        if ((rc = job_timed_pair(j, label, s, sm, err)) != 0)
            break;
        in_calls += sm->cand_cpu[sm->n - 1];
        if (settled(j, sm, r, kiln_mono_ns() - t0 > budget_ns) && sm->n >= j->o->min_pairs)
            break;
    }
    uint64_t c1 = kiln_worker_cpu_ns(&j->cand);
    sm->cand_between_ns = known && sm->n > 0 && c1 >= c0 ? fmax(0, (double)(c1 - c0) - in_calls) : -1;
    if (pinned)
        sched_setaffinity(0, sizeof saved, &saved);
    return rc;
}

int job_measure(job *j, const kiln_shape *s, const char *id, const char *label,
                uint64_t budget_ns, samples *sm, kiln_shape_result *r, job_settled_fn settled,
                job_agree_fn agree, kiln_error *err)
{
    /* A disagreement is measured once more on fresh calls before it counts:
     * a burst of load passes, a worker that lies does it again. */
    int rc = 0;
    char why[200] = "";
    for (int attempt = 0; attempt < 2 && rc == 0; attempt++) {
        rc = job_pairs(j, s, label, budget_ns, sm, r, settled, err);
        if (rc == 0)
            agree(j, sm, why, sizeof why);
        if (rc || !why[0])
            break;
    }
    if (rc == 0 && why[0])
        kiln_verdict_flag(j->v, "timer-disagreement: shape %s: %s (measured twice)", id, why);
    return rc;
}

/* The time that counts per call, into r's stats (and the figures into
 * cand and base, and the overhead taken off each into *overhead). */
static void host_stats(const job *j, const samples *sm, kiln_shape_result *r, double *cand,
                       double *base, double *overhead)
{
    *overhead = 0;
    if (sm->figures) {
        sm->figures(j, sm, cand, base, overhead);
    } else {
        memcpy(cand, sm->cand, (size_t)sm->n * sizeof *cand);
        memcpy(base, sm->base, (size_t)sm->n * sizeof *base);
    }
    kiln_time_stats_of(cand, sm->n, &r->cand);
    kiln_time_stats_of(base, sm->n, &r->base);
}

/* Host data: the medians have settled, or the budget is spent. */
static int medians_settled(const job *j, const samples *sm, kiln_shape_result *r, int over_budget)
{
    double cand[512], base[512], o;
    host_stats(j, sm, r, cand, base, &o);
    return over_budget || kiln_timing_converged(&r->cand, &r->base);
}

void job_visible_id(const job *j, int i, char id[16])
{
    snprintf(id, 16, "v%d", (j->g == &j->kept ? j->vis_id[i] : i) + 1);
}

void job_timed_label(const job *j, int i, char id[16], char label[200])
{
    char dims[128];
    job_visible_id(j, i, id);
    kiln_shape_format(j->t, &j->g->visible[i], dims, sizeof dims);
    snprintf(label, 200, "timed call on shape %s (%s)", id, dims);
}

int job_time_host(job *j, int i, uint64_t budget_ns, job_figures_fn figures, job_agree_fn agree,
                  kiln_error *err)
{
    const kiln_shape *s = &j->g->visible[i];
    char id[16], label[200];
    job_timed_label(j, i, id, label);
    samples *sm = calloc(1, sizeof *sm);
    if (!sm)
        return kiln_fail(err, "out of memory");
    sm->figures = figures;
    kiln_shape_result *r = job_result_for(j, id, s, 1);
    int rc = job_measure(j, s, id, label, budget_ns, sm, r, medians_settled, agree, err);
    if (rc == 0 && r) {
        double cand[512], base[512];
        host_stats(j, sm, r, cand, base, &r->overhead_ns);
        r->timed = 1;
        r->speedup = r->cand.median_ns > 0 ? r->base.median_ns / r->cand.median_ns : 0;
        r->cand_reported_ns = kiln_median(sm->cand, sm->n);
        r->base_reported_ns = kiln_median(sm->base, sm->n);
        r->cand_rt_ns = kiln_median(sm->cand_rt, sm->n);
        r->base_rt_ns = kiln_median(sm->base_rt, sm->n);
        r->cand_cpu_ns = kiln_median(sm->cand_cpu, sm->n);
        r->base_cpu_ns = kiln_median(sm->base_cpu, sm->n);
        r->cand_between_ns = sm->cand_between_ns >= 0 ? sm->cand_between_ns / sm->n : -1;
        r->cand_cupti_ns = kiln_median(sm->cand_cupti, sm->n);
        r->base_cupti_ns = kiln_median(sm->base_cupti, sm->n);
        r->cand_wall_ns = kiln_median(sm->cand_wall, sm->n);
        r->base_wall_ns = kiln_median(sm->base_wall, sm->n);
    }
    free(sm);
    return rc;
}
