/* call.c - checked calls (see call.h): host-resident (inputs, gold and
 * comparison here, the worker's arena between) or device-resident (a key
 * and a description go to the CUDA worker, a summary comes back). */
#include "call.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "safe_text.h"

const char *kiln_call_code(kiln_call_outcome o)
{
    static const char *codes[] = {"ok", "crash", "guard-corrupted", "input-modified",
                                  "unwritten-output", "non-finite", "wrong-output", "launch-error"};
    return codes[o];
}

static int is_buffer(const kiln_arg *a)
{
    return a->kind == KILN_ARG_INPUT || a->kind == KILN_ARG_OUTPUT;
}

static size_t align64(size_t n)
{
    return (n + 63) & ~(size_t)63;
}

static size_t elem_size(const kiln_arg *a, kiln_dtype dt, int reference)
{
    return reference ? sizeof(double) : kiln_dtype_size(kiln_arg_dtype(a, dt));
}

/* Offsets of each buffer in the arena: guard, data, guard, data, ..., guard. */
static size_t layout(const kiln_task *t, kiln_dtype dt, const kiln_shape *s, int reference,
                     size_t off[KILN_MAX_ARGS])
{
    size_t pos = KILN_GUARD_BYTES;
    for (int i = 0; i < t->nargs; i++) {
        if (!is_buffer(&t->args[i]))
            continue;
        off[i] = pos;
        size_t bytes = (size_t)kiln_arg_elems(&t->args[i], s) * elem_size(&t->args[i], dt, reference);
        pos = align64(pos + bytes) + KILN_GUARD_BYTES;
    }
    return pos;
}

size_t kiln_arena_bytes(const kiln_task *t, kiln_dtype dt, const kiln_shape *shapes, int n,
                        int reference)
{
    size_t off[KILN_MAX_ARGS], max = 0;
    for (int i = 0; i < n; i++) {
        size_t b = layout(t, dt, &shapes[i], reference, off);
        max = b > max ? b : max;
    }
    return max;
}

void kiln_callset_init_device(kiln_callset *cs, const kiln_task *t, kiln_dtype dt, uint64_t seed)
{
    memset(cs, 0, sizeof *cs);
    kiln_device_limits_default(&cs->limits);
    cs->task = t;
    cs->dt = dt;
    cs->device = 1;
    cs->sets = 1;
    kiln_rng_seed(&cs->rng, seed);
}

int kiln_callset_init(kiln_callset *cs, const kiln_task *t, kiln_dtype dt,
                      const kiln_shape *shapes, int nshapes, uint64_t seed, kiln_error *err)
{
    cs->device = 0;
    cs->sets = 1;
    cs->variant = NULL;
    cs->base = NULL;
    memset(cs->in, 0, sizeof cs->in);
    cs->manifest[0] = cs->manifest[1] = cs->ref_manifest = NULL;
    kiln_device_limits_default(&cs->limits);
    memset(cs->bytes, 0, sizeof cs->bytes);
    memset(cs->gold, 0, sizeof cs->gold);
    memset(cs->last_out, 0, sizeof cs->last_out);
    cs->task = t;
    cs->dt = dt;
    cs->calls = 0;
    kiln_rng_seed(&cs->rng, seed);
    for (int a = 0; a < t->nargs; a++) {
        if (!is_buffer(&t->args[a]))
            continue;
        size_t max = 0;
        for (int i = 0; i < nshapes; i++) {
            size_t e = (size_t)kiln_arg_elems(&t->args[a], &shapes[i]);
            max = e > max ? e : max;
        }
        cs->cap_elems[a] = max;
        size_t esz = kiln_dtype_size(kiln_arg_dtype(&t->args[a], dt));
        int in = t->args[a].kind == KILN_ARG_INPUT;
        cs->in[a] = in ? malloc(max * sizeof(double)) : NULL;
        cs->bytes[a] = in ? malloc(max * esz) : NULL;
        cs->gold[a] = in ? NULL : malloc(max * sizeof(double));
        cs->last_out[a] = in ? NULL : malloc(max * esz);
        if ((in && (!cs->in[a] || !cs->bytes[a])) || (!in && (!cs->gold[a] || !cs->last_out[a]))) {
            kiln_callset_free(cs);
            return kiln_fail(err, "out of memory for %zu elements of '%s'", max, t->args[a].name);
        }
    }
    return 0;
}

void kiln_callset_free(kiln_callset *cs)
{
    for (int a = 0; a < KILN_MAX_ARGS; a++) {
        free(cs->in[a]);
        free(cs->bytes[a]);
        free(cs->gold[a]);
        free(cs->last_out[a]);
        cs->in[a] = cs->gold[a] = NULL;
        cs->bytes[a] = cs->last_out[a] = NULL;
    }
}

/* The arguments of one call, as the worker will see them. */
static void fill_request(const kiln_callset *cs, const size_t off[], int reference, uint32_t lib,
                         kiln_call_req *rq)
{
    const kiln_task *t = cs->task;
    memset(rq, 0, sizeof *rq);
    rq->magic = KILN_MSG_CALL;
    rq->lib = lib;
    rq->nargs = (uint32_t)t->nargs;
    for (int i = 0; i < t->nargs; i++) {
        const kiln_arg *a = &t->args[i];
        kiln_wire_arg *w = &rq->args[i];
        if (is_buffer(a)) {
            w->kind = KILN_WIRE_BUFFER;
            w->offset = off[i];
            w->bytes = (uint64_t)kiln_arg_elems(a, &cs->shape) * elem_size(a, cs->dt, reference);
        } else if (a->kind == KILN_ARG_DIM) {
            int d = kiln_task_dim(t, a->name);
            w->kind = reference || a->dtype == KILN_DT_I64 ? KILN_WIRE_I64 : KILN_WIRE_I32;
            w->ival = cs->shape.d[d];
        } else {
            /* The reference gets the scalar exactly as the candidate sees it. */
            uint64_t cell = 0;
            kiln_store_from_double(a->dtype, &cell, 0, a->value);
            w->kind = reference || a->dtype == KILN_DT_F64 ? KILN_WIRE_F64 : KILN_WIRE_F32;
            w->fval = kiln_load_as_double(a->dtype, &cell, 0);
        }
    }
}

static int run_reference(kiln_callset *cs, kiln_error *err)
{
    const kiln_task *t = cs->task;
    size_t off[KILN_MAX_ARGS];
    layout(t, cs->dt, &cs->shape, 1, off);
    for (int a = 0; a < t->nargs; a++) {
        if (!is_buffer(&t->args[a]))
            continue;
        size_t n = (size_t)kiln_arg_elems(&t->args[a], &cs->shape);
        double *dst = (double *)(cs->ref->arena + off[a]);
        if (t->args[a].kind == KILN_ARG_INPUT)
            memcpy(dst, cs->in[a], n * sizeof(double));
        else
            kiln_poison_fill(KILN_DT_F64, dst, n);
    }
    kiln_call_req rq;
    kiln_call_resp rs;
    uint64_t rt, cpu;
    fill_request(cs, off, 1, 0, &rq);
    rq.nonce = kiln_rng_next(&cs->rng);
    if (cs->ref_manifest) {   /* the CUDA reference: launches over doubles */
        kiln_error e = {0};
        if (kiln_manifest_resolve(cs->ref_manifest, t, KILN_DT_F64, &cs->shape, &cs->limits, &rq,
                                  &e) < 0)
            return kiln_fail(err, "the CUDA reference cannot run this shape: %s", e.msg);
    }
    if (kiln_worker_call(cs->ref, &rq, 120000, &rs, &rt, &cpu) < 0)
        return kiln_fail(err, "the reference failed: %s", cs->ref->fault_msg);
    if (rs.status != KILN_ST_OK)
        return kiln_fail(err, "the CUDA reference failed: %.300s", rs.info);
    for (int a = 0; a < t->nargs; a++)
        if (t->args[a].kind == KILN_ARG_OUTPUT)
            memcpy(cs->gold[a], cs->ref->arena + off[a],
                   (size_t)kiln_arg_elems(&t->args[a], &cs->shape) * sizeof(double));
    return 0;
}

int kiln_callset_prepare(kiln_callset *cs, const kiln_shape *shape, const kiln_variant *v,
                         kiln_error *err)
{
    const kiln_task *t = cs->task;
    cs->shape = *shape;
    cs->variant = v;
    for (int a = 0; a < t->nargs; a++)
        if (t->args[a].kind == KILN_ARG_INPUT &&
            kiln_input_resolve(t, &t->args[a], v && v->arg == a ? v : NULL, shape, &cs->drawn[a],
                               &cs->drawn_variant, err) < 0)
            return -1;
    if (cs->device) {   /* the worker draws from a fresh key */
        cs->key[0] = kiln_rng_next(&cs->rng);
        cs->key[1] = kiln_rng_next(&cs->rng);
        return 0;
    }
    for (int a = 0; a < t->nargs; a++) {
        if (t->args[a].kind != KILN_ARG_INPUT)
            continue;
        const kiln_arg *arg = &cs->drawn[a];
        size_t n = (size_t)kiln_arg_elems(arg, shape);
        kiln_dtype dt = kiln_arg_dtype(arg, cs->dt);
        int64_t row = shape->d[arg->shape[arg->rank - 1]];
        kiln_fill_input(&cs->rng, arg, v && v->arg == a ? &cs->drawn_variant : NULL, dt, row,
                        cs->in[a], cs->bytes[a], n);
    }
    return run_reference(cs, err);
}

/* The worker that serves lib, and the library number it knows it by. */
static kiln_worker *callee(const kiln_callset *cs, int lib, uint32_t *wlib)
{
    if (lib == 1 && cs->base) {
        *wlib = 0;
        return cs->base;
    }
    *wlib = (uint32_t)lib;
    return cs->cand;
}

/* Write guards, inputs and poison into the worker's arena. */
static uint64_t stage_arena(kiln_callset *cs, kiln_worker *w, const size_t off[])
{
    const kiln_task *t = cs->task;
    unsigned char *arena = w->arena;
    uint64_t guard_seed = kiln_rng_next(&cs->rng);
    kiln_guard_fill(arena, KILN_GUARD_BYTES, guard_seed);
    for (int a = 0; a < t->nargs; a++) {
        const kiln_arg *arg = &t->args[a];
        if (!is_buffer(arg))
            continue;
        kiln_dtype dt = kiln_arg_dtype(arg, cs->dt);
        size_t n = (size_t)kiln_arg_elems(arg, &cs->shape), bytes = n * kiln_dtype_size(dt);
        if (arg->kind == KILN_ARG_INPUT)
            memcpy(arena + off[a], cs->bytes[a], bytes);
        else
            kiln_poison_fill(dt, arena + off[a], n);
        size_t gstart = off[a] + bytes, gend = align64(gstart) + KILN_GUARD_BYTES;
        kiln_guard_fill(arena + gstart, gend - gstart, guard_seed + (uint64_t)a + 1);
    }
    return guard_seed;
}

static int check_guards(kiln_callset *cs, kiln_worker *w, const size_t off[], uint64_t seed,
                        kiln_call_result *r)
{
    const kiln_task *t = cs->task;
    unsigned char *arena = w->arena;
    size_t bad;
    if (!kiln_guard_check(arena, KILN_GUARD_BYTES, seed, &bad)) {
        snprintf(r->detail, sizeof r->detail, "wrote %zu bytes before the first buffer",
                 KILN_GUARD_BYTES - bad);
        return -1;
    }
    for (int a = 0; a < t->nargs; a++) {
        const kiln_arg *arg = &t->args[a];
        if (!is_buffer(arg))
            continue;
        size_t bytes = (size_t)kiln_arg_elems(arg, &cs->shape) * kiln_dtype_size(kiln_arg_dtype(arg, cs->dt));
        size_t gstart = off[a] + bytes, gend = align64(gstart) + KILN_GUARD_BYTES;
        if (!kiln_guard_check(arena + gstart, gend - gstart, seed + (uint64_t)a + 1, &bad)) {
            snprintf(r->detail, sizeof r->detail, "wrote past the end of '%s' (byte %zu after it)",
                     arg->name, bad);
            return -1;
        }
    }
    return 0;
}

static int check_inputs(kiln_callset *cs, kiln_worker *w, const size_t off[], kiln_call_result *r)
{
    const kiln_task *t = cs->task;
    for (int a = 0; a < t->nargs; a++) {
        const kiln_arg *arg = &t->args[a];
        if (arg->kind != KILN_ARG_INPUT)
            continue;
        size_t bytes = (size_t)kiln_arg_elems(arg, &cs->shape) * kiln_dtype_size(kiln_arg_dtype(arg, cs->dt));
        if (memcmp(w->arena + off[a], cs->bytes[a], bytes) != 0) {
            snprintf(r->detail, sizeof r->detail, "input '%s' was modified by the call", arg->name);
            return -1;
        }
    }
    return 0;
}

static double budget_for(const kiln_callset *cs)
{
    const kiln_task *t = cs->task;
    const kiln_tolerance_spec *ts = kiln_task_tolerance(t, cs->dt);
    int64_t len = t->reduction_dim >= 0 ? cs->shape.d[t->reduction_dim] : 1;
    double n = (double)(len > 1 ? len : 1);
    return kiln_reduction_budget(ts->ulps, ts->per_sqrt, len) + ts->per_n * n +
           (cs->variant ? ts->per_n_variants * n + ts->ulps_variants : 0);
}

/* Fold one output's comparison into r: the first failing output decides. */
static void judge_output(kiln_callset *cs, const kiln_arg *arg, const kiln_compare_result *cr,
                         kiln_call_result *r)
{
    r->max_err_ulps = cr->max_err_ulps > r->max_err_ulps ? cr->max_err_ulps : r->max_err_ulps;
    r->rel_l2 = cr->rel_l2 > r->rel_l2 ? cr->rel_l2 : r->rel_l2;
    if (cr->pass || r->outcome != KILN_CALL_OK)
        return;
    if (cr->unwritten) {
        r->outcome = KILN_CALL_UNWRITTEN;
        if (cs->hidden)
            snprintf(r->detail, sizeof r->detail, "elements of '%s' were never written", arg->name);
        else
            snprintf(r->detail, sizeof r->detail, "%zu elements of '%s' were never written",
                     cr->unwritten, arg->name);
    } else if (cr->nonfinite) {
        r->outcome = KILN_CALL_NONFINITE;
        snprintf(r->detail, sizeof r->detail,
                 "elements of '%s' are NaN or Inf where the reference is finite", arg->name);
    } else {
        r->outcome = KILN_CALL_WRONG;
        if (cs->hidden)   /* no budget (it grows with the size), no reference values */
            snprintf(r->detail, sizeof r->detail,
                     "elements of '%s' over budget: worst error %.3g times the budget",
                     arg->name, cr->max_err_ulps / r->budget_ulps);
        else
            snprintf(r->detail, sizeof r->detail,
                     "%zu elements of '%s' over budget: worst error %.3g ULPs (budget %.0f), "
                     "got %.9g where %.9g was expected",
                     cr->over_budget, arg->name, cr->max_err_ulps, r->budget_ulps,
                     cr->worst_candidate, cr->worst_gold);
    }
}

static void check_outputs(kiln_callset *cs, kiln_worker *w, const size_t off[],
                          kiln_call_result *r)
{
    const kiln_task *t = cs->task;
    r->budget_ulps = budget_for(cs);
    kiln_tolerance tol = {r->budget_ulps, t->floor_rel, t->floor_abs};
    for (int a = 0; a < t->nargs && r->outcome == KILN_CALL_OK; a++) {
        const kiln_arg *arg = &t->args[a];
        if (arg->kind != KILN_ARG_OUTPUT)
            continue;
        kiln_dtype dt = kiln_arg_dtype(arg, cs->dt);
        size_t n = (size_t)kiln_arg_elems(arg, &cs->shape);
        const unsigned char *out = w->arena + off[a];
        memcpy(cs->last_out[a], out, n * kiln_dtype_size(dt));
        kiln_compare_result cr;
        kiln_compare(dt, out, cs->gold[a], n, &tol, &cr);
        judge_output(cs, arg, &cr, r);
    }
}

/* CUDA: the manifest's launches at this shape. A launch the device cannot
 * make (a zero grid, too many threads) fails the call; at a hidden shape
 * without the numbers that would give the shape away. */
static int resolve_launches(const kiln_callset *cs, int lib, kiln_call_req *rq,
                            kiln_call_result *r)
{
    kiln_error err = {0};
    if (kiln_manifest_resolve(cs->manifest[lib], cs->task, cs->dt, &cs->shape, &cs->limits, rq,
                              &err) == 0)
        return 0;
    r->outcome = KILN_CALL_LAUNCH;
    if (cs->hidden)
        snprintf(r->detail, sizeof r->detail,
                 "the manifest gives a launch the device cannot make at this shape");
    else
        snprintf(r->detail, sizeof r->detail, "%.300s", err.msg);
    return -1;
}

/* CUDA: a failure the worker reported. A fault ends the worker (its
 * context is lost); a refused launch or a failed allocation does not. */
static int cuda_failure(kiln_callset *cs, const kiln_call_resp *rs, kiln_call_result *r)
{
    char info[sizeof rs->info];   /* the CUDA worker quotes NVRTC and the driver */
    memcpy(info, rs->info, sizeof info);
    info[sizeof info - 1] = '\0';
    kiln_safe_text_inplace(info, sizeof info);
    if (rs->status == KILN_ST_GUARD) {
        r->outcome = KILN_CALL_GUARD;
        snprintf(r->detail, sizeof r->detail, "%.300s", info);
        return -1;
    }
    if (rs->status == KILN_ST_LAUNCH) {
        r->outcome = KILN_CALL_LAUNCH;
        snprintf(r->detail, sizeof r->detail, "%.300s", info);
        return -1;
    }
    kiln_fault f = rs->status == KILN_ST_RESOURCE ? KILN_FAULT_RESOURCE : KILN_FAULT_CRASH;
    kiln_worker_fault(cs->cand, f, info);
    r->outcome = KILN_CALL_FAULT;
    snprintf(r->detail, sizeof r->detail, "%.300s", info);
    return -1;
}

/* The driver's view of the candidate's launches, named by the manifest. */
static void take_profile(const kiln_call_req *rq, const kiln_call_resp *rs, kiln_call_result *r)
{
    r->nprofile = 0;
    for (uint32_t l = 0; l < rs->nprofile && l < rq->nlaunches && r->nprofile < KILN_MAX_PROFILE;
         l++) {
        const kiln_wire_profile *w = &rs->profile[l];
        kiln_kernel_profile *p = &r->profile[r->nprofile++];
        snprintf(p->kernel, sizeof p->kernel, "%.63s", rq->launches[l].kernel);
        p->regs = (int)w->regs;
        p->local_bytes = (int)w->local_bytes;
        p->static_smem = (int)w->static_smem;
        p->dynamic_smem = (int)w->dynamic_smem;
        p->threads = (int)w->threads;
        p->blocks_per_sm = (int)w->blocks_per_sm;
        p->cluster = (int)w->cluster;
        p->occupancy = w->max_threads_sm ? (double)w->blocks_per_sm * w->threads / w->max_threads_sm
                                         : 0;
    }
}

static void run_device(kiln_callset *cs, int lib, kiln_call_result *r);

/* One call of the worker, and what the candidate (lib 0) printed during
 * it, where a verdict may show it (kiln_callset's out_ fields). */
static int call_worker(kiln_callset *cs, kiln_worker *w, int lib, const kiln_call_req *rq,
                       int timeout_ms, kiln_call_resp *rs, kiln_call_result *r)
{
    cs->hidden_seen |= cs->hidden;
    int capture = lib == 0 && !cs->hidden_seen;
    long long from = capture ? kiln_worker_log_size(w) : -1;
    int rc = kiln_worker_call(w, rq, timeout_ms, rs, &r->rt_ns, &r->cpu_ns);
    r->wait_ns = w->last_wait_ns;
    if (capture && from >= 0)
        r->output_bytes = kiln_worker_log_since(w, from, r->output, sizeof r->output);
    return rc;
}

void kiln_callset_run(kiln_callset *cs, int lib, kiln_call_result *r)
{
    size_t off[KILN_MAX_ARGS];
    memset(r, 0, sizeof *r);
    if (cs->device) {
        run_device(cs, lib, r);
        return;
    }
    layout(cs->task, cs->dt, &cs->shape, 0, off);
    uint32_t wlib;
    kiln_worker *w = callee(cs, lib, &wlib);
    /* The stack and heap scribbled before the data are staged, in a round
     * trip of its own: nothing of it is in the call's, and nothing of the
     * call's inputs is there yet while the worker runs for it. */
    uint32_t scribble = (uint32_t)(kiln_rng_next(&cs->rng) & 0xff);
    if (kiln_worker_prepare(w, scribble, cs->call_timeout_ms, NULL) < 0) {
        r->outcome = KILN_CALL_FAULT;
        snprintf(r->detail, sizeof r->detail, "%.300s", w->fault_msg);
        return;
    }
    uint64_t seed = stage_arena(cs, w, off);
    kiln_call_req rq;
    kiln_call_resp rs;
    fill_request(cs, off, 0, wlib, &rq);
    rq.nonce = kiln_rng_next(&cs->rng);
    rq.scribble = scribble;
    if (cs->manifest[lib] && resolve_launches(cs, lib, &rq, r) < 0)
        return;
    cs->calls++;
    if (call_worker(cs, w, lib, &rq, cs->call_timeout_ms, &rs, r) < 0) {
        r->outcome = KILN_CALL_FAULT;
        snprintf(r->detail, sizeof r->detail, "%.300s", w->fault_msg);
        return;
    }
    if (rs.status != KILN_ST_OK && cuda_failure(cs, &rs, r) < 0)
        return;
    r->elapsed_ns = rs.elapsed_ns;
    r->cupti_ns = rs.cupti_ns;
    r->wall_ns = rs.wall_ns;
    r->kernels = rs.kernels;
    if (lib == 0 && cs->manifest[0])
        take_profile(&rq, &rs, r);
    if (check_guards(cs, w, off, seed, r) < 0)
        r->outcome = KILN_CALL_GUARD;
    else if (check_inputs(cs, w, off, r) < 0)
        r->outcome = KILN_CALL_INPUT;
    else
        check_outputs(cs, w, off, r);
}

/* ---- device-resident calls ------------------------------------------------ */

/* How the worker draws each buffer, and the reference's view of the args. */
static void describe_data(const kiln_callset *cs, kiln_call_req *rq)
{
    const kiln_task *t = cs->task;
    const kiln_variant *v = cs->variant;
    size_t off[KILN_MAX_ARGS] = {0};
    kiln_call_req ref;
    fill_request(cs, off, 1, 0, &ref);
    memcpy(rq->dev.ref_args, ref.args, sizeof rq->dev.ref_args);
    for (int a = 0; a < t->nargs; a++) {
        const kiln_arg *arg = &t->args[a];
        kiln_wire_data *d = &rq->dev.data[a];
        if (!is_buffer(arg))
            continue;
        d->role = arg->kind == KILN_ARG_INPUT ? 1 : 2;
        d->dtype = (uint32_t)kiln_arg_dtype(arg, cs->dt);
        d->elems = (uint64_t)kiln_arg_elems(arg, &cs->shape);
        d->row_len = (uint64_t)cs->shape.d[arg->shape[arg->rank - 1]];
        d->scale = 1.0;
        if (arg->kind != KILN_ARG_INPUT)
            continue;
        const kiln_arg *in = &cs->drawn[a];   /* integer bounds resolved at the shape */
        d->dist = (uint32_t)in->dist;
        d->a = in->dist_a;
        d->b = in->dist_b;
        d->share = in->has_ignore ? in->ignore_share : 0;
        d->ignore = in->ignore_value;
        if (v && v->arg == a) {
            d->pattern = (uint32_t)v->pattern;
            d->scale = v->scale;
            d->offset = v->offset;
        }
    }
}

/* The reference's launches over doubles, into rq->dev. */
static int reference_launches(const kiln_callset *cs, kiln_call_req *rq, kiln_call_result *r)
{
    kiln_call_req tmp;
    kiln_error e = {0};
    memset(&tmp, 0, sizeof tmp);
    if (kiln_manifest_resolve(cs->ref_manifest, cs->task, KILN_DT_F64, &cs->shape, &cs->limits,
                              &tmp, &e) < 0 || tmp.nscratch > 0) {
        r->outcome = KILN_CALL_FAULT;
        snprintf(r->detail, sizeof r->detail, "the CUDA reference cannot run this shape%s%.200s",
                 cs->hidden ? "" : ": ", cs->hidden ? "" : e.msg);
        return -1;
    }
    rq->dev.ref_nlaunches = tmp.nlaunches;
    memcpy(rq->dev.ref_launches, tmp.launches, sizeof rq->dev.ref_launches);
    return 0;
}

/* The worker's summary as the host-side comparison would have put it. */
static void summary_result(kiln_callset *cs, const kiln_call_resp *rs, kiln_call_result *r)
{
    const kiln_task *t = cs->task;
    r->budget_ulps = budget_for(cs);
    for (int a = 0; a < t->nargs; a++) {
        const kiln_arg *arg = &t->args[a];
        if (!is_buffer(arg))
            continue;
        if (r->outcome == KILN_CALL_OK && (rs->guard_before | rs->guard_after) & (1u << a)) {
            r->outcome = KILN_CALL_GUARD;
            snprintf(r->detail, sizeof r->detail, "wrote %s '%s'",
                     rs->guard_before & (1u << a) ? "before the start of" : "past the end of",
                     arg->name);
        }
    }
    for (int a = 0; a < t->nargs && r->outcome == KILN_CALL_OK; a++)
        if (t->args[a].kind == KILN_ARG_INPUT && rs->input_changed & (1u << a)) {
            r->outcome = KILN_CALL_INPUT;
            snprintf(r->detail, sizeof r->detail, "input '%s' was modified by the call",
                     t->args[a].name);
        }
    for (int a = 0; a < t->nargs; a++) {
        if (t->args[a].kind != KILN_ARG_OUTPUT)
            continue;
        const kiln_wire_check *c = &rs->check[a];
        kiln_compare_result cr = {
            .n = (size_t)kiln_arg_elems(&t->args[a], &cs->shape), .nonfinite = c->nonfinite,
            .unwritten = c->unwritten, .over_budget = c->over_budget, .worst_index = c->worst_index,
            .max_err_ulps = c->max_err_ulps, .rel_l2 = c->rel_l2,
            .worst_candidate = c->worst_cand, .worst_gold = c->worst_gold};
        cr.pass = !cr.unwritten && !cr.nonfinite && cr.max_err_ulps <= r->budget_ulps;
        r->out_hash = r->out_hash * 31 + c->hash;
        if (r->outcome == KILN_CALL_OK || !cr.pass)
            judge_output(cs, &t->args[a], &cr, r);
    }
}

static void run_device(kiln_callset *cs, int lib, kiln_call_result *r)
{
    kiln_call_req rq;
    kiln_call_resp rs;
    size_t off[KILN_MAX_ARGS] = {0};
    fill_request(cs, off, 0, (uint32_t)lib, &rq);
    rq.nonce = kiln_rng_next(&cs->rng);
    rq.dev.on = 1;
    rq.dev.sets = cs->sets ? cs->sets : 1;
    rq.dev.check = 1;
    const char *ng = getenv("KILN_NO_GRAPH");   /* measuring what graphs change */
    rq.dev.graph = !(ng && strcmp(ng, "1") == 0);
    rq.dev.key[0] = cs->key[0];
    rq.dev.key[1] = cs->key[1];
    rq.dev.budget_ulps = budget_for(cs);
    rq.dev.floor_rel = cs->task->floor_rel;
    rq.dev.floor_abs = cs->task->floor_abs;
    describe_data(cs, &rq);
    if (reference_launches(cs, &rq, r) < 0)
        return;
    if (cs->manifest[lib] && resolve_launches(cs, lib, &rq, r) < 0)
        return;
    cs->calls++;
    int timeout = cs->call_timeout_ms * (int)rq.dev.sets;
    if (call_worker(cs, cs->cand, lib, &rq, timeout, &rs, r) < 0) {
        r->outcome = KILN_CALL_FAULT;
        snprintf(r->detail, sizeof r->detail, "%.300s", cs->cand->fault_msg);
        return;
    }
    if (rs.status != KILN_ST_OK && rs.status != KILN_ST_GUARD && cuda_failure(cs, &rs, r) < 0)
        return;
    uint32_t sets = rs.sets ? rs.sets : 1;
    r->sets = sets;
    r->elapsed_ns = rs.elapsed_ns / sets;
    r->cupti_ns = rs.cupti_ns / sets;
    r->kernel_ns = rs.kernel_sum_ns / sets;
    r->wall_ns = rs.wall_ns / sets;
    r->check_ns = rs.check_ns;
    r->draw_ns = rs.draw_ns;
    r->setup_ns = rs.setup_ns;
    r->kernels = rs.kernels;
    if (lib == 0)
        take_profile(&rq, &rs, r);
    if (rs.status == KILN_ST_GUARD) {   /* a scratch guard: the worker's words */
        r->outcome = KILN_CALL_GUARD;
        rs.info[sizeof rs.info - 1] = '\0';
        kiln_safe_text(rs.info, strnlen(rs.info, 300), r->detail, sizeof r->detail);
    }
    summary_result(cs, &rs, r);
}
