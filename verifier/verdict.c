/* verdict.c - the verdict as JSON (docs/verdict.md), built with cJSON; every
 * string it writes is made safe to show (safe_text.h) on the way. */
#include "verdict.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "safe_text.h"

#define CLEAN(field) kiln_safe_text_inplace((field), sizeof(field))

void kiln_verdict_clean(kiln_verdict *v)
{
    CLEAN(v->status);
    CLEAN(v->stage);
    CLEAN(v->code);
    CLEAN(v->reason);
    CLEAN(v->feedback);
    CLEAN(v->task);
    CLEAN(v->backend);
    CLEAN(v->dtype);
    CLEAN(v->group);
    for (int i = 0; i < KILN_MAX_DIMS; i++)
        CLEAN(v->dims[i]);
    for (int i = 0; i < v->nresults && i < KILN_MAX_RESULTS; i++) {
        CLEAN(v->results[i].id);
        CLEAN(v->results[i].code);
    }
    for (int i = 0; i < v->nflags && i < KILN_MAX_FLAGS; i++)
        CLEAN(v->flags[i]);
    CLEAN(v->sandbox);
    CLEAN(v->cpu_model);
    CLEAN(v->cpu_isa);
    CLEAN(v->cpu_caches);
    CLEAN(v->compiler);
    CLEAN(v->hostname);
    CLEAN(v->kernel);
    CLEAN(v->source_sha256);
    CLEAN(v->verifier_version);
    CLEAN(v->baseline_sha256);
    CLEAN(v->gpu);
    CLEAN(v->verifier_host);
    CLEAN(v->verifier_endpoint);
    CLEAN(v->lane);
    for (int i = 0; i < v->nrequire && i < KILN_VERDICT_MAX_REQUIRE; i++)
        CLEAN(v->require[i]);
    for (int i = 0; i < v->nleft_out && i < KILN_MAX_SHAPES; i++)
        CLEAN(v->left_out_id[i]);
}

/* A string made safe (safe_text.h) as JSON: the last line of defence for a
 * verdict that was not cleaned (a daemon's, a test's). Escapes grow a
 * string at most fourfold. */
static cJSON *safe_string(const char *s)
{
    size_t n = strlen(s), cap = 4 * n + 1;
    char small[256], *buf = cap <= sizeof small ? small : malloc(cap);
    if (!buf)
        return cJSON_CreateString("");
    kiln_safe_text(s, n, buf, cap);
    cJSON *o = cJSON_CreateString(buf);
    if (buf != small)
        free(buf);
    return o;
}

static void add_str(cJSON *o, const char *k, const char *s)
{
    cJSON_AddItemToObject(o, k, safe_string(s));
}

void kiln_verdict_flag(kiln_verdict *v, const char *fmt, ...)
{
    if (v->nflags == KILN_MAX_FLAGS)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v->flags[v->nflags++], sizeof v->flags[0], fmt, ap);
    va_end(ap);
}

void kiln_verdict_dims(const kiln_verdict *v, const kiln_shape_result *r, char *buf, size_t len)
{
    size_t u = 0;
    snprintf(buf, len, "%s", r->visible ? "" : "hidden");
    for (int i = 0; r->visible && i < v->ndims && u < len; i++)
        u += (size_t)snprintf(buf + u, len - u, "%s%s=%lld", u ? " " : "", v->dims[i],
                              (long long)r->shape.d[i]);
}

void kiln_verdict_gpu_field(const char *desc, const char *key, char *buf, size_t len)
{
    size_t kl = strlen(key);
    buf[0] = '\0';
    for (const char *p = desc; p && *p; p = strchr(p, '|') ? strchr(p, '|') + 1 : NULL)
        if (strncmp(p, key, kl) == 0 && p[kl] == '=') {
            snprintf(buf, len, "%.*s", (int)strcspn(p + kl + 1, "|"), p + kl + 1);
            return;
        }
}

double kiln_time_half_spread(const kiln_time_stats *t)
{
    return t->median_ns > 0 ? (t->p80_ns - t->p20_ns) / (2 * t->median_ns) : 0;
}

/* JSON has no Inf/NaN: such numbers become null. */
static void add_num(cJSON *o, const char *k, double x)
{
    if (isfinite(x))
        cJSON_AddNumberToObject(o, k, x);
    else
        cJSON_AddNullToObject(o, k);
}

static cJSON *stats_json(const kiln_time_stats *s)
{
    cJSON *o = cJSON_CreateObject();
    add_num(o, "median_ns", s->median_ns);
    add_num(o, "p20_ns", s->p20_ns);
    add_num(o, "p80_ns", s->p80_ns);
    cJSON_AddNumberToObject(o, "count", s->count);
    return o;
}

/* Job totals, rounded to 0.1 s. The hidden stage's time is in none of them
 * (verify.c's stage_second): at any precision it could tell how large those
 * shapes are, or whatever a candidate chose to make it say. */
static void add_secs(cJSON *o, const char *k, double s)
{
    add_num(o, k, round(s * 10) / 10);
}

static cJSON *shape_json(const kiln_shape_result *r, const kiln_verdict *v, const kiln_task *t,
                         const char *dtype, int cuda)
{
    cJSON *o = cJSON_CreateObject();
    add_str(o, "id", r->id);
    cJSON_AddBoolToObject(o, "visible", r->visible);
    if (r->visible) {
        cJSON *d = cJSON_AddObjectToObject(o, "dims");
        int nd = t ? t->ndims : v->ndims;
        for (int i = 0; i < nd; i++)
            cJSON_AddNumberToObject(d, t ? t->dims[i] : v->dims[i], (double)r->shape.d[i]);
    }
    add_str(o, "dtype", dtype);
    if (!r->visible) {   /* id, pass or fail, and the code: nothing a dim follows from */
        add_str(o, "status", r->code[0] ? "fail" : "pass");
        if (r->code[0])
            add_str(o, "code", r->code);
        return o;
    }
    if (r->checked) {
        add_num(o, "max_err_ulps", r->max_err_ulps);
        if (r->visible)   /* a hidden shape's budget would reveal its size */
            add_num(o, "budget_ulps", r->budget_ulps);
        add_num(o, "budget_fraction", r->budget_ulps > 0 ? r->max_err_ulps / r->budget_ulps : 0);
        add_num(o, "rel_l2", r->rel_l2);
    }
    if (r->nprofile) {   /* the driver's view of each launch at this shape */
        cJSON *pa = cJSON_AddArrayToObject(o, "profile");
        for (int k = 0; k < r->nprofile; k++) {
            const kiln_kernel_profile *p = &r->profile[k];
            cJSON *e = cJSON_CreateObject();
            add_str(e, "kernel", p->kernel);
            cJSON_AddNumberToObject(e, "registers", p->regs);
            cJSON_AddNumberToObject(e, "local_bytes", p->local_bytes);
            cJSON_AddNumberToObject(e, "static_smem", p->static_smem);
            cJSON_AddNumberToObject(e, "dynamic_smem", p->dynamic_smem);
            cJSON_AddNumberToObject(e, "threads", p->threads);
            cJSON_AddNumberToObject(e, "blocks_per_sm", p->blocks_per_sm);
            cJSON_AddNumberToObject(e, "cluster", p->cluster);
            add_num(e, "occupancy", p->occupancy);
            cJSON_AddItemToArray(pa, e);
        }
    }
    if (r->timed) {
        cJSON *tm = cJSON_AddObjectToObject(o, "time");
        cJSON_AddItemToObject(tm, "candidate", stats_json(&r->cand));
        cJSON_AddItemToObject(tm, "baseline", stats_json(&r->base));
        cJSON *tim = cJSON_AddObjectToObject(o, "timers");
        if (cuda && r->sets) {   /* device-resident: CUPTI's kernel time is the figure */
            add_num(tim, "candidate_kernel_ns", r->cand.median_ns);
            add_num(tim, "candidate_events_ns", r->cand_events_ns);
            add_num(tim, "candidate_cupti_span_ns", r->cand_cupti_ns);
            add_num(tim, "candidate_wall_ns", r->cand_wall_ns);
            add_num(tim, "baseline_kernel_ns", r->base.median_ns);
            add_num(tim, "baseline_events_ns", r->base_events_ns);
            add_num(tim, "baseline_cupti_span_ns", r->base_cupti_ns);
            add_num(tim, "baseline_wall_ns", r->base_wall_ns);
            add_num(tim, "candidate_check_ns", r->cand_check_ns);
            add_num(tim, "baseline_check_ns", r->base_check_ns);
            add_num(tim, "candidate_draw_ns", r->cand_draw_ns);
            add_num(tim, "candidate_setup_ns", r->cand_setup_ns);
            cJSON_AddNumberToObject(tim, "sets", r->sets);
            cJSON_AddNumberToObject(tim, "pairs", r->pairs);
        } else if (cuda) {
            add_num(tim, "candidate_events_ns", r->cand.median_ns);
            add_num(tim, "candidate_cupti_ns", r->cand_cupti_ns);
            add_num(tim, "candidate_wall_ns", r->cand_wall_ns);
            add_num(tim, "baseline_events_ns", r->base.median_ns);
            add_num(tim, "baseline_cupti_ns", r->base_cupti_ns);
            add_num(tim, "baseline_wall_ns", r->base_wall_ns);
        } else {
            add_num(tim, "candidate_reported_ns", r->cand_reported_ns);
            add_num(tim, "candidate_cpu_ns", r->cand_cpu_ns);
            add_num(tim, "baseline_reported_ns", r->base_reported_ns);
            add_num(tim, "baseline_cpu_ns", r->base_cpu_ns);
            add_num(tim, "overhead_cpu_ns", r->overhead_ns);
            if (r->cand_between_ns >= 0)
                add_num(tim, "candidate_between_calls_cpu_ns", r->cand_between_ns);
        }
        add_num(tim, "candidate_round_trip_ns", r->cand_rt_ns);
        add_num(tim, "baseline_round_trip_ns", r->base_rt_ns);
        add_num(o, "speedup", r->speedup);
        if (r->speedup_hi > 0) {
            cJSON *iv = cJSON_AddArrayToObject(o, "speedup_interval");
            cJSON_AddItemToArray(iv, cJSON_CreateNumber(r->speedup_lo));
            cJSON_AddItemToArray(iv, cJSON_CreateNumber(r->speedup_hi));
        }
        add_num(o, "bytes", r->bytes);
        add_num(o, "flops", r->flops);
        add_num(o, "floor_ns", r->floor_ns);
        add_num(o, "roofline_fraction", r->roofline_fraction);
    }
    return o;
}

cJSON *kiln_verdict_gpu_json(const char *desc)
{
    cJSON *g = cJSON_CreateObject();
    char buf[256];
    snprintf(buf, sizeof buf, "%s", desc);
    for (char *save = NULL, *kv = strtok_r(buf, "|", &save); kv; kv = strtok_r(NULL, "|", &save)) {
        char *eq = strchr(kv, '=');
        if (!eq)
            continue;
        *eq = '\0';
        char *end;
        double num = strtod(eq + 1, &end);
        if (*end == '\0' && end != eq + 1 && strcmp(kv, "cc") != 0)
            cJSON_AddNumberToObject(g, kv, num);
        else
            add_str(g, kv, eq + 1);
    }
    return g;
}

static void add_env(cJSON *root, const kiln_verdict *v)
{
    cJSON *env = cJSON_AddObjectToObject(root, "environment");
    add_str(env, "cpu", v->cpu_model);
    if (v->cpu_isa[0])
        add_str(env, "cpu_isa", v->cpu_isa);
    if (v->cpu_caches[0])
        add_str(env, "cpu_caches", v->cpu_caches);
    if (v->compiler[0])
        add_str(env, "compiler", v->compiler);
    add_str(env, "host", v->hostname);
    add_str(env, "kernel", v->kernel);
    add_num(env, "bandwidth_gbps", v->bandwidth_gbps);
    if (v->peak_tflops > 0)
        add_num(env, "peak_tflops", v->peak_tflops);
    if (v->gpu[0])
        cJSON_AddItemToObject(env, "gpu", kiln_verdict_gpu_json(v->gpu));
    cJSON *sb = cJSON_AddObjectToObject(root, "sandbox");
    add_str(sb, "protections", v->sandbox);
    add_str(sb, "trust", v->trust_level_cpu
                                             ? "cpu: the candidate shares the worker's address space, "
                                               "so the time is not what the worker measured but the "
                                               "CPU the kernel charged it, less the overhead of a "
                                               "trusted worker's calls of no library; the worker's "
                                               "reports are only cross-checked (a lie under a quarter "
                                               "of the time or 0.5 us is not flagged, and counts for "
                                               "nothing)"
                                             : "device code only: no candidate host code runs; gold "
                                               "outputs live in another process");
    cJSON *ru = cJSON_AddObjectToObject(root, "rusage");
    add_secs(ru, "worker_user_s", v->worker_user_s);
    add_secs(ru, "worker_sys_s", v->worker_sys_s);
    add_secs(ru, "worker_wall_s", v->worker_wall_s);
    add_secs(ru, "reported_calls_s", v->reported_s);
}

/* "preconditions": what the candidate required and which visible shapes
 * that left out; absent when it required nothing. */
static void add_preconditions(cJSON *root, const kiln_verdict *v, const kiln_task *t)
{
    if (!v->nrequire)
        return;
    cJSON *pre = cJSON_AddObjectToObject(root, "preconditions");
    cJSON *req = cJSON_AddArrayToObject(pre, "require");
    for (int i = 0; i < v->nrequire; i++)
        cJSON_AddItemToArray(req, safe_string(v->require[i]));
    cJSON *out = cJSON_AddArrayToObject(pre, "left_out");
    for (int i = 0; i < v->nleft_out; i++) {
        cJSON *o = cJSON_CreateObject();
        add_str(o, "id", v->left_out_id[i]);
        cJSON *d = cJSON_AddObjectToObject(o, "dims");
        int nd = t ? t->ndims : v->ndims;
        for (int k = 0; k < nd; k++)
            cJSON_AddNumberToObject(d, t ? t->dims[k] : v->dims[k], (double)v->left_out[i].d[k]);
        cJSON_AddItemToArray(out, o);
    }
}

cJSON *kiln_verdict_to_cjson(const kiln_verdict *v, const kiln_task *t)
{
    cJSON *root = cJSON_CreateObject();
    add_str(root, "status", v->status);
    add_str(root, "stage", v->stage);
    add_str(root, "code", v->code);
    add_str(root, "reason", v->reason);
    add_str(root, "feedback", v->feedback);
    add_str(root, "task", v->task);
    add_str(root, "backend", v->backend);
    add_str(root, "dtype", v->dtype);
    add_str(root, "group", v->group);
    cJSON *shapes = cJSON_AddArrayToObject(root, "shapes");
    for (int i = 0; i < v->nresults; i++)
        cJSON_AddItemToArray(shapes, shape_json(&v->results[i], v, t, v->dtype,
                                                strcmp(v->backend, "cuda") == 0));
    cJSON *hid = cJSON_AddObjectToObject(root, "hidden");
    cJSON_AddNumberToObject(hid, "shapes", v->nhidden);
    cJSON_AddStringToObject(hid, "status", !v->hidden_ran ? "not run"
                                           : v->hidden_code[0] ? "fail" : "pass");
    if (v->hidden_ran && v->hidden_code[0])
        cJSON_AddStringToObject(hid, "code", v->hidden_code);
    cJSON *sum = cJSON_AddObjectToObject(root, "summary");
    add_num(sum, "geomean_speedup", v->geomean_speedup);
    add_num(sum, "min_speedup", v->min_speedup);
    add_num(sum, "median_roofline_fraction", v->median_roofline);
    cJSON *flags = cJSON_AddArrayToObject(root, "flags");
    for (int i = 0; i < v->nflags; i++)
        cJSON_AddItemToArray(flags, safe_string(v->flags[i]));
    add_preconditions(root, v, t);
    add_env(root, v);
    add_str(root, "source_sha256", v->source_sha256);
    cJSON *base = cJSON_AddObjectToObject(root, "baseline");
    add_str(base, "kind", v->baseline_is_task ? "task" : "given");
    add_str(base, "sha256", v->baseline_sha256);
    add_str(root, "verifier_version",
                            v->verifier_version[0] ? v->verifier_version : KILN_VERIFIER_VERSION);
    if (v->lane[0]) {   /* judged by a daemon: which one, and on which lane */
        cJSON *who = cJSON_AddObjectToObject(root, "verifier");
        add_str(who, "host", v->verifier_host);
        add_str(who, "endpoint", v->verifier_endpoint);
        add_str(who, "lane", v->lane);
    }
    add_secs(root, "seconds", v->seconds);
    cJSON *st = cJSON_AddObjectToObject(root, "stage_seconds");
    add_secs(st, "compile", v->compile_s);
    add_secs(st, "correctness", v->correctness_s);
    add_secs(st, "timing", v->timing_s);
    add_secs(st, "plausibility", v->plausibility_s);
    cJSON_AddNumberToObject(root, "calls", v->calls);
    return root;
}

char *kiln_verdict_json(const kiln_verdict *v, const kiln_task *t, int pretty)
{
    cJSON *root = kiln_verdict_to_cjson(v, t);
    char *s = pretty ? cJSON_Print(root) : cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    return s;
}
