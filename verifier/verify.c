/* verify.c - the stages of one verification job (see verify.h), in the
 * order of DESIGN.md: static checks, compile, smoke, visible, hidden,
 * stability, determinism, timing, plausibility. Stages stop at the first
 * failure. Whatever depends on where and how the candidate runs (building
 * it, its workers, a call, timing, the roofline) goes through the job's
 * backend table (backend/backend.h); this file never asks which backend it
 * has. The job owns a private temporary directory for the backend's
 * workers; gold outputs, seeds and hidden dims stay in this process or in
 * the backend's trusted code. */
#include "verify.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "bandwidth.h"
#include "fileutil.h"
#include "job.h"
#include "machine.h"
#include "paths.h"
#include "rng.h"
#include "safe_text.h"
#include "timing.h"

/* ---- static and compile ------------------------------------------------- */

static int hash_file(const char *path, char out[65], kiln_error *err)
{
    unsigned char *src = NULL;
    size_t len = 0;
    int rc = job_read_source(path, &src, &len, err);
    if (rc == 0)
        kiln_sha256_hex(src, len < SOURCE_LIMIT ? len : SOURCE_LIMIT, out);
    free(src);
    return rc;
}

/* The candidate's preconditions: a CUDA manifest's "require" (parsed by
 * the backend's check, which refuses a require block in a .cu file), else
 * a C candidate's require block. Malformed: bad-manifest, as in the CUDA
 * manifest. */
static int candidate_preconds(job *j, const char *src, size_t len)
{
    kiln_error perr;
    if (kiln_precond_scan(src, len, j->t, &j->pre, &perr) < 0)
        return job_conclude(j, "fail", "static", "bad-manifest", "%s", perr.msg);
    if (j->man[0] && j->man[0]->require.n)
        j->pre = j->man[0]->require;
    kiln_verdict *v = j->v;
    for (v->nrequire = 0; v->nrequire < j->pre.n; v->nrequire++)
        kiln_precond_text(&j->pre.p[v->nrequire], j->t, v->require[v->nrequire],
                          sizeof v->require[0]);
    return 0;
}

/* A source is text: UTF-8 with no control but tab, newline, carriage
 * return and form feed, and no bidirectional-text control. Nothing honest
 * needs more (a string literal spells an escape as \x1b), and what a
 * source holds reaches terminals, notes and prompts: the compiler quotes
 * it, `kiln review` shows it, a model reads it (an ESC or a bidi override
 * can make it read otherwise than it compiles). 1 with why set when not. */
static int not_text(const unsigned char *src, size_t len, char *why, size_t wlen)
{
    char where[128];
    if (!kiln_text_where_unsafe((const char *)src, len, "\r\f", where, sizeof where))
        return 0;
    snprintf(why, wlen, "the source contains %s: a source must be UTF-8 text, with no control "
             "but tab, newline, carriage return and form feed", where);
    return 1;
}

static int stage_static(job *j, kiln_error *err)
{
    unsigned char *src = NULL;
    size_t len = 0;
    j->v->baseline_is_task = j->o->baseline == NULL;
    if (job_builtin_baseline(j))
        kiln_sha256_hex((const unsigned char *)"builtin:cublas", 14, j->v->baseline_sha256);
    else if (hash_file(job_baseline_path(j), j->v->baseline_sha256, err) < 0)
        return -1;
    if (job_read_source(j->o->candidate, &src, &len, err) < 0) {
        free(src);
        return -1;
    }
    kiln_sha256_hex(src, len, j->v->source_sha256);
    int rc = 0;
    char why[300];
    if (len > SOURCE_LIMIT)
        rc = job_conclude(j, "fail", "static", "too-large", "the source is larger than %d KiB",
                      SOURCE_LIMIT / 1024);
    else if (len == 0)
        rc = job_conclude(j, "fail", "static", "empty", "the source file is empty");
    else if (not_text(src, len, why, sizeof why))
        rc = job_conclude(j, "fail", "static", "not-text", "%s", why);
    else if (j->ops->check_source)
        rc = j->ops->check_source(j, (const char *)src, len, err);
    if (rc == 0)
        rc = candidate_preconds(j, (const char *)src, len);
    free(src);
    return rc;
}

/* ---- shapes and workers -------------------------------------------------- */

/* The baseline's preconditions (a search's parent can have them): its
 * manifest's, or its C require block. Trusted code: an error is kiln's. */
static int baseline_preconds(job *j, kiln_error *err)
{
    if (j->man[1]) {
        j->base_pre = j->man[1]->require;
        return 0;
    }
    if (job_builtin_baseline(j))
        return 0;
    unsigned char *src = NULL;
    size_t len = 0;
    int rc = job_read_source(job_baseline_path(j), &src, &len, err);
    if (rc == 0 && kiln_precond_scan((const char *)src, len < SOURCE_LIMIT ? len : SOURCE_LIMIT,
                                     j->t, &j->base_pre, err) < 0)
        rc = kiln_error_prefix(err, "the baseline %s", job_baseline_path(j));
    free(src);
    return rc;
}

/* The shapes the job runs: the visible shapes that satisfy the candidate's
 * preconditions (j->g from here on; the rest named in the verdict) and
 * exactly the group's number of hidden shapes, drawn to satisfy them from a
 * secret seed (precond.c). */
static int select_shapes(job *j, kiln_error *err)
{
    const kiln_group *g = j->g;
    kiln_verdict *v = j->v;
    int kept[KILN_MAX_SHAPES], n = kiln_precond_keep(&j->pre, g, kept), both = 0;
    if (baseline_preconds(j, err) < 0)
        return -1;
    j->kept = *g;
    j->kept.nvisible = n;
    for (int i = 0, k = 0; i < g->nvisible; i++) {
        if (k < n && kept[k] == i) {
            j->vis_id[k] = i;
            j->kept.visible[k++] = g->visible[i];
            both += kiln_precond_holds(&j->base_pre, &g->visible[i]);
            continue;
        }
        snprintf(v->left_out_id[v->nleft_out], sizeof v->left_out_id[0], "v%d", i + 1);
        v->left_out[v->nleft_out++] = g->visible[i];
    }
    j->g = &j->kept;
    j->nhidden = kiln_precond_hidden(&j->pre, j->t, g, kiln_secret_seed(), j->hidden);
    char req[512], breq[512];
    kiln_precond_format(&j->pre, j->t, req, sizeof req);
    kiln_precond_format(&j->base_pre, j->t, breq, sizeof breq);
    if (n == 0)
        return job_conclude(j, "fail", "static", "no-visible-shape", "no visible shape of group "
                            "%s satisfies the candidate's preconditions (%s)", g->name, req);
    if (both == 0)
        return job_conclude(j, "fail", "static", "no-visible-shape", "no visible shape of group "
                            "%s satisfies both the candidate's preconditions (%s) and the "
                            "baseline's (%s), so it cannot be timed against it", g->name,
                            req[0] ? req : "none", breq);
    return 0;
}

/* ---- correctness stages -------------------------------------------------- */

/* Calibrate the per-call timeout on the trusted baseline, so a hang is
 * caught in about a second rather than after the maximum. */
static int calibrate(job *j, const kiln_shape *smallest, kiln_error *err)
{
    kiln_call_result res;
    int rc = job_checked(j, "smoke", "baseline", smallest, NULL, 1, &res, err);
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
                       kiln_error *err)
{
    char label[200], dims[128];
    kiln_shape_format(j->t, s, dims, sizeof dims);
    snprintf(label, sizeof label, "shape %s (%s)", id, dims);
    kiln_call_result res;
    int rc = job_checked(j, stage, label, s, NULL, 0, &res, err);
    kiln_shape_result *r = job_result_for(j, id, s, 1);
    if (r && rc > 0)
        snprintf(r->code, sizeof r->code, "%s", j->v->code);
    if (r && rc >= 0 && res.nprofile) {
        r->nprofile = res.nprofile;
        memcpy(r->profile, res.profile, sizeof r->profile);
    }
    if (r && rc >= 0) {
        r->checked = 1;
        r->max_err_ulps = res.max_err_ulps > r->max_err_ulps ? res.max_err_ulps : r->max_err_ulps;
        r->budget_ulps = res.budget_ulps;
        r->rel_l2 = res.rel_l2 > r->rel_l2 ? res.rel_l2 : r->rel_l2;
    }
    return rc;
}

/* The smallest kept shape the baseline's preconditions admit too (one
 * exists: select_shapes checked). */
static const kiln_shape *smallest_for_baseline(const job *j)
{
    const kiln_shape *best = NULL;
    double bn = INFINITY;
    for (int i = 0; i < j->g->nvisible; i++) {
        double n = 1;
        for (int d = 0; d < KILN_MAX_DIMS; d++)
            n *= j->g->visible[i].d[d] ? (double)j->g->visible[i].d[d] : 1;
        if (n < bn && kiln_precond_holds(&j->base_pre, &j->g->visible[i])) {
            bn = n;
            best = &j->g->visible[i];
        }
    }
    return best;
}

static int stage_smoke_visible(job *j, kiln_error *err)
{
    int si;
    const kiln_shape *small = smallest_visible(j->g, &si);
    int rc = calibrate(j, smallest_for_baseline(j), err);
    char id[16];
    job_visible_id(j, si, id);
    job_progress(j, "smoke", "shape %s", id);
    if (rc || (rc = check_shape(j, "smoke", id, small, err)) != 0)
        return rc;
    for (int i = 0; i < j->g->nvisible; i++) {
        job_visible_id(j, i, id);
        job_progress(j, "visible", "shape %s (%d of %d)", id, i + 1, j->g->nvisible);
        if ((rc = check_shape(j, "visible", id, &j->g->visible[i], err)) != 0)
            return rc;
    }
    return 0;
}

/* Each stability variant on the largest visible shape (in the first
 * worker; the hidden stage runs them on the first hidden shape too). */
static int stage_stability(job *j, kiln_error *err)
{
    int li;
    char vid[16];
    const kiln_shape *s = largest_visible(j->g, &li);
    job_visible_id(j, li, vid);
    for (int k = 0; k < j->t->nvariants; k++) {
        const kiln_variant *var = &j->t->variants[k];
        job_progress(j, "stability", "variant %s", var->name);
        char label[200];
        snprintf(label, sizeof label, "variant '%s' on visible shape %s", var->name, vid);
        kiln_call_result res;
        int rc = job_checked(j, "stability", label, s, var, 0, &res, err);
        if (rc)
            return rc;
    }
    return 0;
}

/* The largest visible shape once in the first worker (its outputs kept);
 * the second half, the same inputs in a fresh worker, is stage_second. */
static int determinism_first(job *j, kiln_call_result *res, char label[64], kiln_error *err)
{
    int li;
    const kiln_shape *s = largest_visible(j->g, &li);
    char id[16];
    if (!j->t->deterministic)
        return 0;
    job_visible_id(j, li, id);
    job_progress(j, "determinism", "shape %s in two workers", id);
    snprintf(label, 64, "shape %s", id);
    return job_checked(j, "determinism", label, s, NULL, 0, res, err);
}

/* The hidden shapes, then each stability variant on the first of them, all
 * in the second worker. Whatever fails, the verdict says only that the
 * stage failed and the first failure's code (job.c's fixed words): not
 * which shape or variant, nor any number (docs/sandbox.md). */
static int stage_hidden(job *j, kiln_error *err)
{
    job_progress(j, "hidden", "%d hidden shapes", j->nhidden);
    int rc = 0;
    for (int i = 0; i < j->nhidden && rc == 0; i++) {
        kiln_call_result res;
        rc = job_checked(j, "hidden", "hidden shapes", &j->hidden[i], NULL, 0, &res, err);
    }
    for (int k = 0; k < j->t->nvariants && rc == 0 && j->nhidden > 0; k++) {
        kiln_call_result res;
        rc = job_checked(j, "hidden", "hidden shapes", &j->hidden[0], &j->t->variants[k], 0, &res,
                         err);
    }
    j->v->nhidden = j->nhidden;
    j->v->hidden_ran = rc >= 0;
    if (rc > 0)
        snprintf(j->v->hidden_code, sizeof j->v->hidden_code, "%s", j->v->code);
    return rc;
}

/* Determinism's second half and the hidden stage, each in a fresh worker:
 * determinism's, so that a cache kept in the first worker cannot answer
 * for it (its inputs lie at other addresses there); the hidden stage's, so
 * that the first worker, which times the shapes next, never sees a hidden
 * shape, and what does see one leaves only as the stage's one status and
 * code. Both are stopped before timing; their calls and time are in no
 * figure of the verdict. */
static int stage_second(job *j, const kiln_call_result *first, const char *label, kiln_error *err)
{
    uint64_t t0 = kiln_mono_ns();
    int calls0 = j->cs.calls, rc = 0;
    if (j->t->deterministic && (rc = j->ops->fresh_worker(j, KILN_FRESH_AGAIN, err)) == 0) {
        j->cs.cand = &j->hid;
        rc = j->ops->again(j, label, first, largest_visible(j->g, &(int){0}), err);
        j->cs.cand = &j->cand;
    }
    if (rc == 0 && (rc = j->ops->fresh_worker(j, KILN_FRESH_HIDDEN, err)) == 0) {
        j->cs.cand = &j->hid;
        j->cs.hidden = 1;
        rc = stage_hidden(j, err);
        j->cs.hidden = 0;
        j->cs.cand = &j->cand;
    }
    /* Killed and reaped before timing: a CUDA worker's context is torn down
     * as it exits, and a teardown while the first worker times moved an
     * identical kernel's ratio by up to 3% on the H200. */
    kiln_worker_kill(&j->hid);
    kiln_worker_stop(&j->hid);
    j->second_calls = j->cs.calls - calls0;
    j->second_ns = kiln_mono_ns() - t0;
    return rc;
}

/* ---- timing and plausibility --------------------------------------------- */

/* Every kept shape, but those the baseline's own preconditions exclude:
 * the speedup compares both on the same shapes. */
static int stage_timing(job *j, kiln_error *err)
{
    int n = 0, done = 0;
    for (int i = 0; i < j->g->nvisible; i++)
        n += kiln_precond_holds(&j->base_pre, &j->g->visible[i]);
    uint64_t per_shape = (uint64_t)j->o->timing_ms * 1000000u / (uint64_t)n;
    for (int i = 0; i < j->g->nvisible; i++) {
        char id[16];
        if (!kiln_precond_holds(&j->base_pre, &j->g->visible[i]))
            continue;
        job_visible_id(j, i, id);
        job_progress(j, "timing", "shape %s (%d of %d), at most %.1f s of the timing budget left",
                     id, done + 1, n, (double)per_shape * (n - done) / 1e9);
        done++;
        int rc = j->ops->time_shape(j, i, per_shape, err);
        if (rc)
            return rc;
    }
    return 0;
}

/* Fault injection for the tests of the floor (tests/integration/
 * roofline_test.sh): KILN_TEST_BANDWIDTH_SCALE in (0, 1) scales the measured
 * bandwidth down, as a machine busy through every reading would measure
 * it. Only down: it can make a floor stricter, never more lenient. */
static double bandwidth_scale(void)
{
    const char *s = getenv("KILN_TEST_BANDWIDTH_SCALE");
    double x = s ? strtod(s, NULL) : 1;
    return x > 0 && x < 1 ? x : 1;
}

/* The shape's floor: its compulsory bytes at the measured bandwidth (or
 * its flops at the device's peak, where that takes longer), *measured_ns;
 * and r->floor_ns, the same but never above the baseline's median. The
 * baseline is trusted code or an accepted parent: when it moved the bytes
 * faster, the machine can, and the measurement read low. So a fast
 * baseline only ever lowers the floor the candidate is held to; it is
 * never itself a reason to reject the candidate (docs/decisions.md). */
static int floor_for(job *j, kiln_shape_result *r, int again, double *measured_ns,
                     kiln_error *err)
{
    double bw, rd, wr;
    if (kiln_task_cost_rw(j->t, &r->shape, j->o->dtype, &rd, &wr, err) < 0 ||
        kiln_task_cost(j->t, j->t->cost_flops, &r->shape, j->o->dtype, &r->flops, err) < 0)
        return kiln_error_prefix(err, "%s: cost", j->t->name);
    r->bytes = rd + wr;
    double peak = 0;
    if (j->ops->roofline(j, rd, wr, again, &bw, &peak, err) < 0)
        return -1;
    bw *= bandwidth_scale();
    if (r->bytes >= j->largest_bytes) {   /* the verdict's: at the largest timed shape */
        j->largest_bytes = r->bytes;
        j->v->bandwidth_gbps = bw / 1e9;
    }
    *measured_ns = r->bytes / bw * 1e9;
    /* The compute half: flops at the device's theoretical peak. */
    j->v->peak_tflops = peak / 1e12;
    if (peak > 0 && r->flops / peak * 1e9 > *measured_ns)
        *measured_ns = r->flops / peak * 1e9;
    r->floor_ns = *measured_ns;
    if (r->base.median_ns > 0 && r->base.median_ns < r->floor_ns)
        r->floor_ns = r->base.median_ns;
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
        double measured;
        if (floor_for(j, r, 0, &measured, err) < 0)
            return -1;
        /* The candidate under the floor, or the baseline under the measured
         * one: the bandwidth is measured once more, with more readings,
         * before it counts (a measurement taken while the machine was busy
         * reads low and puts the floor too high). */
        int under = r->cand.median_ns < 0.8 * r->floor_ns || r->base.median_ns < measured;
        if (under && floor_for(j, r, 1, &measured, err) < 0)
            return -1;
        if (r->cand.median_ns < 0.8 * r->floor_ns && r->floor_ns < measured)
            kiln_verdict_flag(v, "below-roofline: shape %s ran in %.1f us, under 0.8 of the "
                              "baseline's %.1f us, which already beat the measured floor (%.1f us)",
                              r->id, r->cand.median_ns / 1e3, r->floor_ns / 1e3, measured / 1e3);
        else if (r->cand.median_ns < 0.8 * r->floor_ns)
            kiln_verdict_flag(v, "below-roofline: shape %s ran in %.1f us, under 0.8 of the %.1f "
                              "us that moving its bytes (at the measured bandwidth) or its flops "
                              "(at peak) takes", r->id, r->cand.median_ns / 1e3, r->floor_ns / 1e3);
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

/* The kernel's own accounting of the candidate's worker, next to what it
 * reported; the backend adds what its accounting says. */
static void account_worker(job *j)
{
    kiln_verdict *v = j->v;
    kiln_worker_stop(&j->cand);
    v->worker_user_s = (double)j->cand.ru.ru_utime.tv_sec + j->cand.ru.ru_utime.tv_usec / 1e6;
    v->worker_sys_s = (double)j->cand.ru.ru_stime.tv_sec + j->cand.ru.ru_stime.tv_usec / 1e6;
    v->worker_wall_s = (double)j->cand.lifetime_ns / 1e9;
    v->worker_maxrss_kb = j->cand.ru.ru_maxrss;
    v->reported_s = j->reported_ns / 1e9;
    if (j->ops->finish)
        j->ops->finish(j);
}

/* ---- the job ------------------------------------------------------------ */

static void describe_env(kiln_verdict *v)
{
    struct utsname u;
    kiln_cpu_model(v->cpu_model, sizeof v->cpu_model);
    if (strcmp(v->backend, "cpu") == 0) {   /* what a C candidate's author needs */
        kiln_cpu_isa(v->cpu_isa, sizeof v->cpu_isa);
        kiln_cpu_caches(v->cpu_caches, sizeof v->cpu_caches);
        kiln_cpu_compiler(v->compiler, sizeof v->compiler);
    }
    gethostname(v->hostname, sizeof v->hostname - 1);
    if (uname(&u) == 0)
        snprintf(v->kernel, sizeof v->kernel, "%.40s %.50s", u.sysname, u.release);
}

/* Seconds since *t, and *t moved to now. */
static double lap(uint64_t *t)
{
    uint64_t now = kiln_mono_ns();
    double s = (double)(now - *t) / 1e9;
    *t = now;
    return s;
}

/* Stop the workers and give the lane back (if it was taken). */
static int finish_stages(job *j, int rc, int had_lane)
{
    account_worker(j);
    kiln_worker_stop(&j->hid);
    kiln_worker_stop(&j->base);
    kiln_worker_stop(&j->ref);
    if (had_lane && j->o->lane_release)
        j->o->lane_release(j->o->lane_ctx);
    return rc;
}

static int run_stages(job *j, kiln_error *err)
{
    int rc;
    uint64_t t = kiln_mono_ns();
    if ((rc = stage_static(j, err)) != 0 || (rc = select_shapes(j, err)) != 0 ||
        (rc = j->ops->build(j, err)) != 0)
        return rc;
    j->v->compile_s = lap(&t);
    /* Device-resident jobs start their worker (process, context, NVRTC)
     * before queueing for the device, so that start-up overlaps the job
     * that holds it; the worker then idles until its first call. */
    int early = j->ops->start_before_lane;
    if (early && (rc = j->ops->start(j, err)) != 0)
        return finish_stages(j, rc, 0);
    j->v->compile_s += lap(&t);
    if (j->o->lane_acquire) {
        job_progress(j, "queued", "waiting for the device");
        j->o->lane_acquire(j->o->lane_ctx);
    }
    lap(&t);   /* waiting for the lane is no stage's time */
    j->deadline_ns = kiln_mono_ns() + (uint64_t)j->o->job_timeout_ms * 1000000u;
    if (early || (rc = j->ops->start(j, err)) == 0) {
        j->v->compile_s += lap(&t);
        kiln_call_result first;
        char label[64];
        if ((rc = stage_smoke_visible(j, err)) == 0 && (rc = stage_stability(j, err)) == 0 &&
            (rc = determinism_first(j, &first, label, err)) == 0 &&
            (rc = stage_second(j, &first, label, err)) == 0) {
            j->v->correctness_s = lap(&t) - (double)j->second_ns / 1e9;
            if ((rc = stage_timing(j, err)) == 0) {
                j->v->timing_s = lap(&t);
                job_progress(j, "plausibility", "roofline and timers");
                rc = stage_plausibility(j, err);
                j->v->plausibility_s = lap(&t);
            }
        }
    }
    return finish_stages(j, rc, 1);
}

/* "every shape with cols % 8 == 0 (left out: v3 rows=33 cols=1000)". */
static void admitted(const job *j, char *buf, size_t len)
{
    const kiln_verdict *v = j->v;
    char req[256];
    kiln_precond_format(&j->pre, j->t, req, sizeof req);
    size_t u = (size_t)snprintf(buf, len, "every shape with %s (left out: %s", req,
                                v->nleft_out ? "" : "none");
    for (int i = 0; i < v->nleft_out && u < len; i++) {
        char dims[128];
        kiln_shape_format(j->t, &v->left_out[i], dims, sizeof dims);
        u += (size_t)snprintf(buf + u, len - u, "%s%s %s", i ? ", " : "", v->left_out_id[i], dims);
    }
    if (u < len)
        snprintf(buf + u, len - u, ")");
}

static void finish_status(job *j)
{
    kiln_verdict *v = j->v;
    if (v->status[0])
        return;
    if (v->nflags) {
        char code[32];
        snprintf(code, sizeof code, "%.*s", (int)strcspn(v->flags[0], ":"), v->flags[0]);
        job_conclude(j, "suspect", "plausibility", code, "%s", v->flags[0]);
        return;
    }
    snprintf(v->status, sizeof v->status, "pass");
    snprintf(v->stage, sizeof v->stage, "plausibility");
    snprintf(v->code, sizeof v->code, "ok");
    char where[400] = "every shape";
    if (v->nrequire)
        admitted(j, where, sizeof where);
    snprintf(v->reason, sizeof v->reason,
             "correct on %s; geomean speedup %.2fx (min %.2fx), median %.0f%% of roofline",
             where, v->geomean_speedup, v->min_speedup, 100 * v->median_roofline);
    snprintf(v->feedback, sizeof v->feedback, "pass: %s", v->reason);
    job_feedback_output(j);
}

static void init_verdict(job *j)
{
    kiln_verdict *v = j->v;
    memset(v, 0, sizeof *v);
    snprintf(v->task, sizeof v->task, "%s", j->t->name);
    v->ndims = j->t->ndims;
    memcpy(v->dims, j->t->dims, sizeof v->dims);
    snprintf(v->backend, sizeof v->backend, "%s", kiln_backend_name(j->o->backend));
    snprintf(v->dtype, sizeof v->dtype, "%s", kiln_dtype_name(j->o->dtype));
    snprintf(v->group, sizeof v->group, "%s", j->g->name);
    v->trust_level_cpu = j->ops->candidate_host_code;
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
    j->ops = o->backend_ops ? o->backend_ops : kiln_backend_ops_for(o->backend, o->task);
    j->cand.pid = j->base.pid = j->ref.pid = j->hid.pid = -1;
    j->cand.req_fd = j->cand.resp_fd = j->cand.arena_fd = -1;
    j->hid.req_fd = j->hid.resp_fd = j->hid.arena_fd = -1;
    j->base.req_fd = j->base.resp_fd = j->base.arena_fd = -1;
    j->ref.req_fd = j->ref.resp_fd = j->ref.arena_fd = -1;
    j->deadline_ns = kiln_mono_ns() + (uint64_t)o->job_timeout_ms * 1000000u;
    if (j->ops)
        init_verdict(j);
    uint64_t t0 = kiln_mono_ns();
    int rc = 0;
    if (!j->ops)
        rc = kiln_fail(err, "no backend %d", (int)o->backend);
    else if (!kiln_task_supports_backend(j->t, kiln_backend_name(o->backend), o->dtype))
        rc = kiln_fail(err, "task %s has no %s variant for dtype %s", j->t->name,
                       kiln_backend_name(o->backend), kiln_dtype_name(o->dtype));
    else if (kiln_make_tempdir(o->work_root, "kiln-job", j->dir, sizeof j->dir, err) < 0)
        rc = -1;
    else
        rc = run_stages(j, err);
    int bad_input = rc < 0 && !v->source_sha256[0] && access(o->candidate, R_OK) != 0;
    if (j->cs_ready) {
        v->calls = j->cs.calls - j->second_calls;
        kiln_callset_free(&j->cs);
    }
    if (rc >= 0)
        finish_status(j);
    kiln_verdict_clean(v);   /* no candidate bytes leave raw (safe_text.h) */
    v->seconds = (double)(kiln_mono_ns() - t0 - j->second_ns) / 1e9;
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
