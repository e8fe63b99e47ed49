/* verdict_parse.c - the one decoder of a verdict's JSON (docs/verdict.md)
 * into the kiln_verdict struct that verdict.c encodes. Whatever reads a
 * verdict back (the search, the run database, notes, report, export)
 * parses it here once and then reads plain fields.
 *
 * The decoder is the encoder's inverse on what the JSON holds: encoding a
 * decoded verdict again gives the same JSON (tests/unit/test_verdict.c).
 * What the encoder leaves out on purpose (a hidden shape's dims, sizes
 * and timings) is absent after decoding too. */
#include "verdict.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define GET cJSON_GetObjectItemCaseSensitive

/* A number; NaN for null (the encoder writes non-finite numbers as
 * null), 0 for a key that is not there (not measured). */
static double num(const cJSON *o, const char *k)
{
    const cJSON *x = GET(o, k);
    return cJSON_IsNumber(x) ? x->valuedouble : cJSON_IsNull(x) ? NAN : 0;
}

/* A count: 0 for anything that is not a finite number in int's range. */
static int inum(const cJSON *o, const char *k)
{
    double x = num(o, k);
    return isfinite(x) && x >= 0 && x <= 1e9 ? (int)x : 0;
}

static void str(const cJSON *o, const char *k, char *dst, size_t len)
{
    const char *s = cJSON_GetStringValue(GET(o, k));
    snprintf(dst, len, "%s", s ? s : "");
}

static void stats_of(const cJSON *o, kiln_time_stats *s)
{
    s->median_ns = num(o, "median_ns");
    s->p20_ns = num(o, "p20_ns");
    s->p80_ns = num(o, "p80_ns");
    s->count = (int)num(o, "count");
}

/* The timers object, by which of the encoder's three forms it is in. */
static void timers_of(const cJSON *tim, kiln_shape_result *r)
{
    if (GET(tim, "sets")) {   /* CUDA, device-resident */
        r->cand_events_ns = num(tim, "candidate_events_ns");
        r->cand_cupti_ns = num(tim, "candidate_cupti_span_ns");
        r->base_events_ns = num(tim, "baseline_events_ns");
        r->base_cupti_ns = num(tim, "baseline_cupti_span_ns");
        r->cand_check_ns = num(tim, "candidate_check_ns");
        r->base_check_ns = num(tim, "baseline_check_ns");
        r->cand_draw_ns = num(tim, "candidate_draw_ns");
        r->cand_setup_ns = num(tim, "candidate_setup_ns");
        r->sets = (int)num(tim, "sets");
        r->pairs = (int)num(tim, "pairs");
    } else {   /* CUDA host data, or CPU */
        r->cand_cupti_ns = num(tim, "candidate_cupti_ns");
        r->base_cupti_ns = num(tim, "baseline_cupti_ns");
        r->cand_cpu_ns = num(tim, "candidate_cpu_ns");
        r->base_cpu_ns = num(tim, "baseline_cpu_ns");
        r->cand_reported_ns = num(tim, "candidate_reported_ns");
        r->base_reported_ns = num(tim, "baseline_reported_ns");
        r->overhead_ns = num(tim, "overhead_cpu_ns");
        r->cand_between_ns = GET(tim, "candidate_between_calls_cpu_ns")
                                 ? num(tim, "candidate_between_calls_cpu_ns") : -1;
    }
    r->cand_wall_ns = num(tim, "candidate_wall_ns");
    r->base_wall_ns = num(tim, "baseline_wall_ns");
    r->cand_rt_ns = num(tim, "candidate_round_trip_ns");
    r->base_rt_ns = num(tim, "baseline_round_trip_ns");
}

static void timing_of(const cJSON *o, kiln_shape_result *r)
{
    const cJSON *tm = GET(o, "time");
    r->timed = tm != NULL;
    if (!tm)
        return;
    stats_of(GET(tm, "candidate"), &r->cand);
    stats_of(GET(tm, "baseline"), &r->base);
    timers_of(GET(o, "timers"), r);
    r->speedup = num(o, "speedup");
    const cJSON *iv = GET(o, "speedup_interval");
    if (cJSON_GetArraySize(iv) == 2) {
        r->speedup_lo = cJSON_GetArrayItem(iv, 0)->valuedouble;
        r->speedup_hi = cJSON_GetArrayItem(iv, 1)->valuedouble;
    }
    r->bytes = num(o, "bytes");
    r->flops = num(o, "flops");
    r->floor_ns = num(o, "floor_ns");
    r->roofline_fraction = num(o, "roofline_fraction");
}

/* "profile": the driver's view of each launch at the shape. */
static void profile_of(const cJSON *a, kiln_shape_result *r)
{
    const cJSON *e;
    r->nprofile = 0;
    cJSON_ArrayForEach(e, a) {
        if (r->nprofile == KILN_MAX_PROFILE || !cJSON_IsObject(e))
            break;
        kiln_kernel_profile *p = &r->profile[r->nprofile++];
        str(e, "kernel", p->kernel, sizeof p->kernel);
        p->regs = inum(e, "registers");
        p->local_bytes = inum(e, "local_bytes");
        p->static_smem = inum(e, "static_smem");
        p->dynamic_smem = inum(e, "dynamic_smem");
        p->threads = inum(e, "threads");
        p->blocks_per_sm = inum(e, "blocks_per_sm");
        p->cluster = inum(e, "cluster");
        p->occupancy = num(e, "occupancy");
    }
}

static int shape_of(const cJSON *o, kiln_verdict *v, kiln_shape_result *r, int i,
                    kiln_error *err)
{
    if (!cJSON_IsObject(o) || !cJSON_IsString(GET(o, "id")))
        return kiln_fail(err, "verdict: shapes[%d] is not an object with an id", i);
    str(o, "id", r->id, sizeof r->id);
    r->visible = cJSON_IsTrue(GET(o, "visible"));
    str(o, "code", r->code, sizeof r->code);
    if (!r->visible)
        return 0;
    const cJSON *d;
    int k = 0;
    cJSON_ArrayForEach(d, GET(o, "dims")) {
        if (k == KILN_MAX_DIMS)
            return kiln_fail(err, "verdict: shapes[%d] has more than %d dims", i, KILN_MAX_DIMS);
        if (k >= v->ndims) {   /* the dims' names, from the first visible shape */
            snprintf(v->dims[k], sizeof v->dims[k], "%s", d->string);
            v->ndims = k + 1;
        }
        r->shape.d[k++] = (int64_t)d->valuedouble;
    }
    r->checked = GET(o, "max_err_ulps") != NULL;
    if (r->checked) {
        r->max_err_ulps = num(o, "max_err_ulps");
        r->budget_ulps = num(o, "budget_ulps");
        r->rel_l2 = num(o, "rel_l2");
    }
    timing_of(o, r);
    profile_of(GET(o, "profile"), r);
    return 0;
}

/* environment.gpu back into the worker's "key=value|..." description. */
static void gpu_of(const cJSON *g, char *dst, size_t len)
{
    size_t n = 0;
    const cJSON *kv;
    dst[0] = '\0';
    cJSON_ArrayForEach(kv, g) {
        const char *sv = cJSON_GetStringValue(kv), *sep = n ? "|" : "";
        int w = cJSON_IsNumber(kv)
                    ? snprintf(dst + n, len - n, "%s%s=%.17g", sep, kv->string, kv->valuedouble)
                    : snprintf(dst + n, len - n, "%s%s=%s", sep, kv->string, sv ? sv : "");
        if (w < 0 || (size_t)w >= len - n)
            return;
        n += (size_t)w;
    }
}

static void env_of(const cJSON *root, kiln_verdict *v)
{
    const cJSON *env = GET(root, "environment");
    str(env, "cpu", v->cpu_model, sizeof v->cpu_model);
    str(env, "cpu_isa", v->cpu_isa, sizeof v->cpu_isa);
    str(env, "cpu_caches", v->cpu_caches, sizeof v->cpu_caches);
    str(env, "compiler", v->compiler, sizeof v->compiler);
    str(env, "host", v->hostname, sizeof v->hostname);
    str(env, "kernel", v->kernel, sizeof v->kernel);
    v->bandwidth_gbps = num(env, "bandwidth_gbps");
    v->peak_tflops = num(env, "peak_tflops");
    gpu_of(GET(env, "gpu"), v->gpu, sizeof v->gpu);
    const cJSON *sb = GET(root, "sandbox");
    str(sb, "protections", v->sandbox, sizeof v->sandbox);
    const char *trust = cJSON_GetStringValue(GET(sb, "trust"));
    v->trust_level_cpu = trust && strncmp(trust, "cpu:", 4) == 0;
    const cJSON *ru = GET(root, "rusage");
    v->worker_user_s = num(ru, "worker_user_s");
    v->worker_sys_s = num(ru, "worker_sys_s");
    v->worker_wall_s = num(ru, "worker_wall_s");
    v->reported_s = num(ru, "reported_calls_s");
}

static void totals_of(const cJSON *root, kiln_verdict *v)
{
    const cJSON *sum = GET(root, "summary");
    v->geomean_speedup = num(sum, "geomean_speedup");
    v->min_speedup = num(sum, "min_speedup");
    v->median_roofline = num(sum, "median_roofline_fraction");
    str(root, "source_sha256", v->source_sha256, sizeof v->source_sha256);
    str(root, "verifier_version", v->verifier_version, sizeof v->verifier_version);
    const cJSON *who = GET(root, "verifier");
    str(who, "host", v->verifier_host, sizeof v->verifier_host);
    str(who, "endpoint", v->verifier_endpoint, sizeof v->verifier_endpoint);
    str(who, "lane", v->lane, sizeof v->lane);
    const cJSON *base = GET(root, "baseline");
    str(base, "sha256", v->baseline_sha256, sizeof v->baseline_sha256);
    const char *kind = cJSON_GetStringValue(GET(base, "kind"));
    v->baseline_is_task = kind && strcmp(kind, "task") == 0;
    v->seconds = num(root, "seconds");
    const cJSON *st = GET(root, "stage_seconds");
    v->compile_s = num(st, "compile");
    v->correctness_s = num(st, "correctness");
    v->timing_s = num(st, "timing");
    v->plausibility_s = num(st, "plausibility");
    v->calls = (int)num(root, "calls");
}

/* "preconditions" back: the require list and the left-out visible shapes,
 * dims in the order written (the verdict's own dim order). */
static void preconditions_of(const cJSON *root, kiln_verdict *v)
{
    const cJSON *pre = GET(root, "preconditions"), *it;
    cJSON_ArrayForEach(it, GET(pre, "require")) {
        if (cJSON_IsString(it) && v->nrequire < KILN_VERDICT_MAX_REQUIRE)
            snprintf(v->require[v->nrequire++], sizeof v->require[0], "%s", it->valuestring);
    }
    cJSON_ArrayForEach(it, GET(pre, "left_out")) {
        if (v->nleft_out == KILN_MAX_SHAPES)
            break;
        int i = v->nleft_out++, k = 0;
        str(it, "id", v->left_out_id[i], sizeof v->left_out_id[i]);
        const cJSON *d;
        cJSON_ArrayForEach(d, GET(it, "dims")) {
            if (k < KILN_MAX_DIMS)
                v->left_out[i].d[k++] = (int64_t)d->valuedouble;
        }
    }
}

/* "hidden": {"shapes": N, "status": "pass" | "fail" | "not run", "code"}. */
static void hidden_of(const cJSON *h, kiln_verdict *v)
{
    if (!cJSON_IsObject(h))
        return;
    const char *st = cJSON_GetStringValue(GET(h, "status"));
    v->nhidden = (int)num(h, "shapes");
    v->hidden_ran = st && strcmp(st, "not run") != 0;
    v->hidden_code[0] = '\0';
    if (st && strcmp(st, "fail") == 0) {
        str(h, "code", v->hidden_code, sizeof v->hidden_code);
        if (!v->hidden_code[0])   /* a fail always names its code */
            snprintf(v->hidden_code, sizeof v->hidden_code, "fail");
    }
}

int kiln_verdict_from_cjson(const cJSON *root, kiln_verdict *v, kiln_error *err)
{
    memset(v, 0, sizeof *v);
    if (!cJSON_IsObject(root) || !cJSON_IsString(GET(root, "status")))
        return kiln_fail(err, "verdict: not an object with a status");
    str(root, "status", v->status, sizeof v->status);
    str(root, "stage", v->stage, sizeof v->stage);
    str(root, "code", v->code, sizeof v->code);
    str(root, "reason", v->reason, sizeof v->reason);
    str(root, "feedback", v->feedback, sizeof v->feedback);
    str(root, "task", v->task, sizeof v->task);
    str(root, "backend", v->backend, sizeof v->backend);
    str(root, "dtype", v->dtype, sizeof v->dtype);
    str(root, "group", v->group, sizeof v->group);
    const cJSON *s;
    int i = 0;
    cJSON_ArrayForEach(s, GET(root, "shapes")) {
        if (v->nresults == KILN_MAX_RESULTS)
            return kiln_fail(err, "verdict: more than %d shapes", KILN_MAX_RESULTS);
        kiln_shape_result *r = &v->results[v->nresults];
        if (shape_of(s, v, r, i++, err) < 0)
            return -1;
        if (r->visible) {
            v->nresults++;
            continue;
        }
        /* a verdict from before the hidden stage had one outcome: its
         * hidden shapes, folded into that outcome */
        v->nhidden++;
        v->hidden_ran = 1;
        if (r->code[0] && !v->hidden_code[0])
            snprintf(v->hidden_code, sizeof v->hidden_code, "%s", r->code);
    }
    hidden_of(GET(root, "hidden"), v);
    const cJSON *f;
    cJSON_ArrayForEach(f, GET(root, "flags")) {
        if (cJSON_IsString(f) && v->nflags < KILN_MAX_FLAGS)
            snprintf(v->flags[v->nflags++], sizeof v->flags[0], "%s", f->valuestring);
    }
    preconditions_of(root, v);
    env_of(root, v);
    totals_of(root, v);
    kiln_verdict_clean(v);   /* a stored verdict from before cleaning, or a forged one */
    return 0;
}

int kiln_verdict_parse(const char *json, kiln_verdict *v, kiln_error *err)
{
    cJSON *root = json ? cJSON_Parse(json) : NULL;
    if (!root)
        return kiln_fail(err, "verdict: %s", json ? "not valid JSON" : "missing");
    int rc = kiln_verdict_from_cjson(root, v, err);
    cJSON_Delete(root);
    return rc;
}
