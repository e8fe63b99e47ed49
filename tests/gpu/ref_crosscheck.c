/* ref_crosscheck.c - the CUDA references over doubles (tasks/<task>/reference.cu)
 * against the C references (reference.c), on a GPU.
 *
 *   ref_crosscheck TASKS_DIR
 *
 * For rmsnorm, softmax, layernorm, rope, rope_interleaved, add_rmsnorm and
 * cross_entropy, at small and odd shapes (one row, one column, prime
 * lengths), for inputs drawn in f32 and bf16 (each reference built for that
 * run dtype), with and without each of the task's stability variants: two
 * callsets with the same seed draw the same inputs, one gets gold from the
 * C reference in a kiln-worker, the other from reference.cu in a
 * kiln-worker-cuda (dtype f64, scrubbed), exactly as verify.c starts them
 * and call.c runs them. Every gold element must agree within 1e-12
 * relative, or 1e-300 absolute (exp underflowing to subnormals), or 1e-12
 * of the magnitude the verifier measures errors at (floor_rel times the
 * output's largest |gold|): below that, the two sums' different orders
 * may differ after a cancellation, and no candidate's error is measured
 * there. Exits 77 (skipped) without an NVIDIA GPU or a kiln-worker-cuda. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <unistd.h>

#include "call.h"
#include "cpu_build.h"
#include "cuda_device.h"
#include "fileutil.h"
#include "manifest.h"
#include "paths.h"
#include "task.h"
#include "worker_client.h"

#define EXIT_SKIP 77
#define REL 1e-12
#define ABS 1e-300
#define SEED 0x6b696c6e2d786368ull

static const char *TASKS[] = {"rmsnorm", "softmax", "layernorm", "rope", "rope_interleaved",
                              "add_rmsnorm", "cross_entropy"};
/* rows x cols, or tokens x heads x half_dim; the last is the largest. */
static const int64_t ROW_SHAPES[][3] = {{1, 1}, {2, 2999}, {7, 257}, {33, 1000}};
static const int64_t ROPE_SHAPES[][3] = {{1, 1, 1}, {3, 5, 7}, {2, 40, 40}, {17, 4, 33}};
#define NSHAPES 4

typedef struct refs {
    kiln_task task;
    kiln_manifest man;            /* reference.cu's */
    kiln_worker cpu, gpu;
    kiln_shape shapes[NSHAPES];
    int checked, floored, bad;    /* elements compared, passed only by the floor, failed */
} refs;

static int read_file(const char *path, char **out, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    size_t cap = 1 << 20;
    *out = malloc(cap + 1);
    *len = *out ? fread(*out, 1, cap, f) : 0;
    fclose(f);
    if (!*out)
        return -1;
    (*out)[*len] = '\0';
    return 0;
}

/* Build and start both reference workers for r->task under dir, for a run
 * of dtype dt: each reference knows it (KILN_RUN_DTYPE_*), as verify.c
 * builds them (the C one through the shim, the CUDA one with the define
 * written before its text, as verifier/backend/cuda/cuda.c writes it). */
static int start_refs(refs *r, const char *dir, kiln_dtype dt, kiln_error *err)
{
    const kiln_task *t = &r->task;
    char cdir[4200], gdir[4200], clib[4300], gsrc[4300], cu[4300];
    snprintf(cdir, sizeof cdir, "%.4096s/%.31s-%s-cpu", dir, t->name, kiln_dtype_name(dt));
    snprintf(gdir, sizeof gdir, "%.4096s/%.31s-%s-gpu", dir, t->name, kiln_dtype_name(dt));
    snprintf(clib, sizeof clib, "%s/ref.so", cdir);
    snprintf(gsrc, sizeof gsrc, "%s/ref.cu", gdir);
    snprintf(cu, sizeof cu, "%s/reference.cu", t->dir);
    char *src = NULL;
    size_t len = 0;
    if (read_file(cu, &src, &len) < 0) {
        free(src);
        return kiln_fail(err, "cannot read %s", cu);
    }
    kiln_error merr = {0};
    int rc = kiln_manifest_parse(src, len, t, &r->man, &merr);
    char *text = malloc(len + 96);
    if (text)
        snprintf(text, len + 96, "#define %s 1\n#line 1 \"reference.cu\"\n%s",
                 kiln_run_dtype_macro(dt), src);
    if (rc < 0)
        kiln_fail(err, "%s: %s", cu, merr.msg);
    else if (!text || kiln_mkdirs(cdir, err) < 0 || kiln_mkdirs(gdir, err) < 0 ||
             kiln_write_text(gsrc, text, err) < 0)
        rc = -1;
    free(src);
    free(text);
    if (rc < 0)
        return -1;
    kiln_build_result res;
    if (kiln_cpu_build(t, dt, KILN_BUILD_REFERENCE, t->reference_cpu, cdir, "ref.so", NULL,
                       &res, err) < 0)
        return -1;
    if (!res.ok)
        return kiln_fail(err, "%s does not compile:\n%s", t->reference_cpu, res.log);
    size_t arena = kiln_arena_bytes(t, KILN_DT_F32, r->shapes, NSHAPES, 1);
    kiln_worker_opts co = {.dir = cdir, .libs = {clib}, .nlibs = 1, .arena_bytes = arena,
                           .cpu_seconds = 600, .address_bytes = (size_t)4 << 30};
    kiln_worker_opts go = {.dir = gdir, .libs = {gsrc}, .nlibs = 1, .arena_bytes = arena,
                           .cpu_seconds = 600, .cuda = 1, .dtype = "f64", .device = 0,
                           .scrub = 1, .start_timeout_ms = 120000};
    if (kiln_worker_start(&r->cpu, &co, err) < 0)
        return -1;
    if (r->cpu.fault)
        return kiln_fail(err, "the C reference worker failed to start: %s", r->cpu.fault_msg);
    if (kiln_worker_start(&r->gpu, &go, err) < 0)
        return -1;
    if (r->gpu.fault)
        return kiln_fail(err, "the CUDA reference worker failed to start: %s", r->gpu.fault_msg);
    if (r->gpu.ready_status != KILN_ST_OK)
        return kiln_fail(err, "%s could not start: %s", cu, r->gpu.ready_info);
    return 0;
}

/* Compare the gold of every output; count and print disagreements. */
static void compare(refs *r, const kiln_callset *c, const kiln_callset *g, const char *label)
{
    const kiln_task *t = &r->task;
    for (int a = 0; a < t->nargs; a++) {
        if (t->args[a].kind != KILN_ARG_OUTPUT)
            continue;
        size_t n = (size_t)kiln_arg_elems(&t->args[a], &c->shape), shown = 0;
        double gmax = 0;
        for (size_t i = 0; i < n; i++)
            gmax = fabs(c->gold[a][i]) > gmax ? fabs(c->gold[a][i]) : gmax;
        for (size_t i = 0; i < n; i++) {
            double cv = c->gold[a][i], gv = g->gold[a][i], d = fabs(cv - gv);
            double mag = fabs(cv) > fabs(gv) ? fabs(cv) : fabs(gv);
            r->checked++;
            if (d <= ABS || d <= REL * mag)
                continue;
            if (d <= REL * t->floor_rel * gmax) {
                r->floored++;
                continue;
            }
            r->bad++;
            if (shown++ < 5)
                printf("MISMATCH %s %s: %s[%zu]: C %.17g, CUDA %.17g (diff %.3g, max |gold| %.3g)\n",
                       t->name, label, t->args[a].name, i, cv, gv, d, gmax);
        }
    }
}

/* One draw at shape s (variant v or none) through both references. */
static int check_one(refs *r, kiln_callset *c, kiln_callset *g, const kiln_shape *s,
                     const kiln_variant *v, kiln_error *err)
{
    const kiln_task *t = &r->task;
    char dims[128], label[200];
    kiln_shape_format(t, s, dims, sizeof dims);
    snprintf(label, sizeof label, "%s %s%s%s", kiln_dtype_name(c->dt), dims, v ? " variant " : "",
             v ? v->name : "");
    if (kiln_callset_prepare(c, s, v, err) < 0 || kiln_callset_prepare(g, s, v, err) < 0)
        return kiln_error_prefix(err, "%s %s", t->name, label);
    for (int a = 0; a < t->nargs; a++)
        if (t->args[a].kind == KILN_ARG_INPUT &&
            memcmp(c->in[a], g->in[a], (size_t)kiln_arg_elems(&t->args[a], s) * sizeof(double)))
            return kiln_fail(err, "%s %s: the two callsets drew different '%s'", t->name, label,
                             t->args[a].name);
    compare(r, c, g, label);
    return 0;
}

static int check_task(refs *r, const char *tasks_dir, const char *name, const char *work,
                      kiln_error *err)
{
    char dir[4200];
    snprintf(dir, sizeof dir, "%.4096s/%.31s", tasks_dir, name);
    if (kiln_task_find(dir, &r->task, err) < 0)
        return -1;
    const kiln_task *t = &r->task;
    int rope = t->ndims == 3;
    for (int i = 0; i < NSHAPES; i++) {
        memset(&r->shapes[i], 0, sizeof r->shapes[i]);
        for (int d = 0; d < t->ndims; d++)
            r->shapes[i].d[d] = rope ? ROPE_SHAPES[i][d] : ROW_SHAPES[i][d];
    }
    const kiln_dtype dts[2] = {KILN_DT_F32, KILN_DT_BF16};
    int rc = 0;
    for (int k = 0; k < 2 && rc == 0; k++) {
        kiln_callset c, g;
        kiln_worker_stop(&r->cpu);
        kiln_worker_stop(&r->gpu);
        if (start_refs(r, work, dts[k], err) < 0)
            return -1;
        if (kiln_callset_init(&c, t, dts[k], r->shapes, NSHAPES, SEED, err) < 0)
            return -1;
        if (kiln_callset_init(&g, t, dts[k], r->shapes, NSHAPES, SEED, err) < 0) {
            kiln_callset_free(&c);
            return -1;
        }
        c.ref = &r->cpu;
        c.ref_manifest = NULL;
        g.ref = &r->gpu;
        g.ref_manifest = &r->man;
        kiln_gpu_limits(r->gpu.device, &g.limits);
        for (int i = 0; i < NSHAPES && rc == 0; i++)
            rc = check_one(r, &c, &g, &r->shapes[i], NULL, err);
        for (int v = 0; v < t->nvariants && rc == 0; v++)
            rc = check_one(r, &c, &g, &r->shapes[NSHAPES - 1], &t->variants[v], err);
        kiln_callset_free(&c);
        kiln_callset_free(&g);
    }
    return rc;
}

/* Why this cannot run here, or NULL. */
static const char *skip_reason(void)
{
    char path[4096];
    kiln_error err = {0};
    if (access("/dev/nvidia0", F_OK) != 0 || system("nvidia-smi -L >/dev/null 2>&1") != 0)
        return "no NVIDIA GPU";
    if (kiln_cuda_worker_path(path, sizeof path, &err) < 0 ||
        kiln_worker_path(path, sizeof path, &err) < 0)
        return "no kiln-worker-cuda or kiln-worker (set KILN_CUDA_WORKER and KILN_WORKER)";
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: ref_crosscheck TASKS_DIR\n");
        return 2;
    }
    const char *why = skip_reason();
    if (why) {
        printf("skipped: %s\n", why);
        return EXIT_SKIP;
    }
    char work[4200];
    kiln_error err = {0};
    if (kiln_make_tempdir(NULL, "kiln-xcheck", work, sizeof work, &err) < 0) {
        fprintf(stderr, "ref_crosscheck: %s\n", err.msg);
        return 1;
    }
    int failed = 0;
    for (size_t i = 0; i < sizeof TASKS / sizeof TASKS[0]; i++) {
        refs *r = calloc(1, sizeof *r);
        if (!r) {
            fprintf(stderr, "ref_crosscheck: out of memory\n");
            failed = 1;
            break;
        }
        r->cpu.pid = r->gpu.pid = -1;
        r->cpu.req_fd = r->cpu.resp_fd = r->cpu.arena_fd = -1;
        r->gpu.req_fd = r->gpu.resp_fd = r->gpu.arena_fd = -1;
        err.msg[0] = '\0';
        if (check_task(r, argv[1], TASKS[i], work, &err) < 0) {
            printf("FAIL %s: %s\n", TASKS[i], err.msg);
            failed = 1;
        } else {
            printf("%s %s: %d gold elements compared, %d agree only within the floor, %d disagree\n",
                   r->bad ? "FAIL" : "ok", TASKS[i], r->checked, r->floored, r->bad);
            failed |= r->bad != 0;
        }
        kiln_worker_stop(&r->cpu);
        kiln_worker_stop(&r->gpu);
        free(r);
    }
    kiln_remove_tree(work);
    return failed;
}
