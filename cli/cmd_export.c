/* cmd_export.c - `kiln export`: the kept kernels of a task as plain C
 * sources plus a generated dispatch that picks, per shape, the fastest
 * verified one, and decisions.json saying why.
 *
 * A kernel that wins one shape may lose another, so the choice is made per
 * visible shape of every group of the backend (a task's cuda_groups for
 * --backend cuda when it has them). "Fastest" means the highest speedup against
 * the task's baseline measured at that shape, pooled (verifier/measure/pooled.h) over
 * the kernel's records and re-records (a single record is unconfirmed and
 * wins only where no kernel has a confirmed figure): the baseline runs in the same job, interleaved, so the ratio
 * stays comparable across runs made on different days, where raw times do
 * not. Dims that match no visible shape go to the kernel with the best
 * geomean speedup over the shapes where it was measured.
 *
 * The CPU backend's files are written here; --backend cuda's (the chosen
 * .cu files and a .cuh with the dispatch) in export_cuda.c. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "export.h"
#include "fileutil.h"
#include "paths.h"
#include "pooled.h"
#include "review.h"

static const char usage[] =
    "usage: kiln export --task T -o DIR [options]\n"
    "\n"
    "Write the task's kept kernels that win a shape as plain sources (DIR/T_kN.c, the\n"
    "function renamed T_kN), DIR/T_dispatch.h and DIR/T_dispatch.c with one function\n"
    "T_dispatch (the task's signature) that picks a kernel by exact visible-shape\n"
    "dims, else the best geomean, and DIR/decisions.json with every choice and why.\n"
    "With --backend cuda: DIR/kiln_T_D_kN.cu (each chosen .cu, its kernels renamed\n"
    "kiln_T_D_kN_NAME), DIR/kiln_T_D.cuh with kiln_T_D(args, scratch, stream) that picks\n"
    "one the same way and launches it as its manifest says (include it in one .cu file\n"
    "built with nvcc), and DIR/kiln_cuda.h. The files carry the export's date, or\n"
    "SOURCE_DATE_EPOCH's (seconds since 1970) where set: then a workspace exports the\n"
    "same bytes every time.\n"
    "\n"
    "  --task T           the task (required)\n"
    "  -o DIR             output directory (created; must be empty unless --force)\n"
    "  --backend B        cpu (default) or cuda\n"
    "  --dtype T          dtype (default: the task's first for the backend)\n"
    "  --workspace DIR    the workspace (default ./kiln-work)\n"
    "  --force            replace files of an earlier export in DIR\n"
    "  --json             print one JSON object instead of the summary: dir, task,\n"
    "                     backend, dtype, files (DIR's, sorted), shapes (each shape's\n"
    "                     dims, kernel, speedup against the baseline or null where\n"
    "                     not measured, and pooled), fallback and best ({kernel,\n"
    "                     geomean}); the choices and why stay in decisions.json\n"
    "\n"
    "Exit status: 0 written, 2 bad input (nothing to export, DIR in use; a corrupt or\n"
    "lost database: kiln db rebuild), 3 internal error.\n";

/* ---- command line ---------------------------------------------------------------- */

static int parse(int argc, char **argv, export_opts *o)
{
    static const char *flags[] = {"--task", "-o", "--output", "--backend", "--dtype", "--workspace"};
    const char **slots[] = {&o->task, &o->out, &o->out, &o->backend, &o->dtype, &o->workspace};
    for (int i = 1; i < argc; i++) {
        int miss = 0, done = 0;
        const char *v;
        if (kiln_is_help(argv[i]))
            return fputs(usage, stdout), 1;
        for (size_t k = 0; k < sizeof flags / sizeof *flags && !done; k++)
            if ((v = kiln_flag_value(argc, argv, &i, flags[k], &miss)))
                *slots[k] = v, done = 1;
        if (done)
            continue;
        if (miss)
            return fprintf(stderr, "kiln export: %s needs a value\n", argv[i]), -1;
        if (strcmp(argv[i], "--force") == 0)
            o->force = 1;
        else if (strcmp(argv[i], "--json") == 0)
            o->json = 1;
        else
            return kiln_unexpected("export", argv[i], usage);
    }
    if (!o->task || !o->out)
        return fprintf(stderr, "kiln export: need --task T and -o DIR\n\n%s", usage), -1;
    return 0;
}

/* ---- reading the kept kernels ------------------------------------------------------ */

static int add_kernel(ex *x, int mi, const char *source, kiln_error *err)
{
    ex_meas *m = &x->m[mi];
    char sha[80];
    snprintf(sha, sizeof sha, "%s", m->verdict->source_sha256);
    if (!sha[0])   /* an old verdict without the hash: identify it by its candidate */
        snprintf(sha, sizeof sha, "%s/%d", m->run, m->n);
    for (int i = 0; i < x->nk; i++)
        if (strcmp(x->k[i].sha, sha) == 0)
            return m->kernel = i, 0;
    ex_kernel *p = realloc(x->k, (size_t)(x->nk + 1) * sizeof *p);
    if (!p)
        return kiln_fail(err, "out of memory");
    x->k = p;
    memset(&p[x->nk], 0, sizeof *p);
    snprintf(p[x->nk].sha, sizeof p[x->nk].sha, "%s", sha);
    p[x->nk].source = strdup(source);
    p[x->nk].first = mi;
    m->kernel = x->nk++;
    if (!p[m->kernel].source)
        return kiln_fail(err, "out of memory");
    if (kiln_ex_preconds(x, source, &p[m->kernel].pre, err) < 0)
        return kiln_error_prefix(err, "run %s, candidate %d: its preconditions", m->run, m->n);
    return 0;
}

/* A record verdict decoded, when it is this task's and a pass; else NULL. */
static kiln_verdict *passing(const ex *x, const char *text)
{
    kiln_verdict *v = text ? malloc(sizeof *v) : NULL;
    kiln_error e;
    if (v && (kiln_verdict_parse(text, v, &e) < 0 || strcmp(v->task, x->task->name) != 0 ||
              strcmp(v->status, "pass") != 0)) {
        free(v);
        v = NULL;
    }
    return v;
}

/* One kept candidate: kept only when its verdict is this task's and a
 * pass; its re-record joins it when that passed too. */
static int add_record(ex *x, const kiln_kept_record *k, kiln_error *err)
{
    kiln_verdict *v = passing(x, k->verdict);
    if (!v)
        return 0;
    kiln_verdict *rv = passing(x, k->reverdict);
    ex_meas *p = realloc(x->m, (size_t)(x->nm + 1) * sizeof *p);
    if (!p) {
        free(v);
        free(rv);
        return kiln_fail(err, "out of memory");
    }
    x->m = p;
    ex_meas *m = &p[x->nm++];
    memset(m, 0, sizeof *m);
    snprintf(m->run, sizeof m->run, "%s", k->run);
    m->n = k->n;
    snprintf(m->commit, sizeof m->commit, "%s", k->commit);
    snprintf(m->job, sizeof m->job, "%s", k->job);
    m->date = k->updated_at;
    snprintf(m->rejob, sizeof m->rejob, "%s", k->rejob);
    m->hypothesis = strdup(k->hypothesis);
    m->verdict = v;
    m->reverdict = rv;
    return add_kernel(x, x->nm - 1, k->source, err);
}

static int load(ex *x, sqlite3 *db, kiln_error *err)
{
    kiln_kept_record *k;
    int n;
    if (kiln_db_kept_records(db, kiln_dtype_name(x->dt), x->cuda ? "cuda" : "cpu", &k, &n, err) < 0)
        return -1;
    int rc = 0;
    for (int i = 0; rc == 0 && i < n; i++)
        rc = add_record(x, &k[i], err);
    kiln_kept_records_free(k, n);
    if (rc == 0 && x->nm == 0)
        return kiln_fail(err, "no kept kernel of task %s (%s, %s) has a passing verdict against "
                         "the task's baseline in this workspace", x->task->name,
                         x->cuda ? "cuda" : "cpu", kiln_dtype_name(x->dt)), 1;
    return rc;
}

/* ---- choosing ------------------------------------------------------------------------ */

static void list_shapes(ex *x)
{
    int bit = x->cuda ? KILN_GROUP_CUDA : KILN_GROUP_CPU;   /* the backend's groups only */
    for (int g = 0; g < x->task->ngroups; g++) {
        const kiln_group *gr = &x->task->groups[g];
        if (!(gr->backends & bit))
            continue;
        for (int s = 0; s < gr->nvisible; s++) {
            int k = 0;
            while (k < x->nc && memcmp(&x->c[k].shape, &gr->visible[s], sizeof gr->visible[s]) != 0)
                k++;
            ex_choice *c = &x->c[k];
            if (k == x->nc) {
                memset(c, 0, sizeof *c);
                c->shape = gr->visible[s];
                c->winner = -1;
                x->nc++;
            }
            size_t lg = strlen(c->groups), li = strlen(c->ids);
            snprintf(c->groups + lg, sizeof c->groups - lg, "%s%s", lg ? " " : "", gr->name);
            snprintf(c->ids + li, sizeof c->ids - li, "%sv%d", li ? " " : "", s + 1);
        }
    }
}

/* Per shape, the kernel with the highest pooled speedup there; a
 * confirmed figure (two measurements or more) beats any unconfirmed one,
 * which wins only where no kernel has a confirmed figure (a workspace from
 * before pooling), and is marked so. */
static void choose_winners(ex *x)
{
    for (int c = 0; c < x->nc; c++)
        for (int i = 0; i < x->nm; i++) {
            const kiln_shape *sh = &x->c[c].shape;
            double sp = kiln_ex_speedup_at(x, i, sh);
            int w = x->c[c].winner, conf = kiln_ex_confirmed_at(x, i, sh);
            int wconf = w >= 0 && kiln_ex_confirmed_at(x, w, sh);
            if (sp > 0 && (w < 0 || conf > wconf ||
                           (conf == wconf && sp > kiln_ex_speedup_at(x, w, sh))))
                x->c[c].winner = i;
        }
}

/* Every kept kernel requires something: the task's baseline, which
 * handles every shape, becomes the fallback. It is a measurement with an
 * empty verdict, so it wins no shape; its speedup is 1 by definition. */
static int add_baseline(ex *x, kiln_error *err)
{
    const char *path = x->cuda ? x->task->baseline_cuda : x->task->baseline_cpu;
    if (!path[0])
        return kiln_fail(err, "every kept kernel of task %s has preconditions and the task's "
                         "baseline is built in, so no exported kernel would handle every shape: "
                         "keep a kernel without preconditions", x->task->name);
    char *src = NULL;
    size_t len;
    int rc = kiln_read_file(path, 256 * 1024, &src, &len, err);
    ex_meas *p = rc == 0 ? realloc(x->m, (size_t)(x->nm + 1) * sizeof *p) : NULL;
    if (rc == 0 && p) {
        x->m = p;
        ex_meas *m = &p[x->nm++];
        memset(m, 0, sizeof *m);
        snprintf(m->run, sizeof m->run, "baseline");
        m->hypothesis = strdup("the task's baseline: the fallback, since every kept kernel "
                               "has preconditions");
        m->verdict = calloc(1, sizeof *m->verdict);
        rc = m->verdict ? add_kernel(x, x->nm - 1, src, err) : kiln_fail(err, "out of memory");
    } else if (rc == 0) {
        rc = kiln_fail(err, "out of memory");
    } else if (rc > 0) {
        rc = kiln_fail(err, "the task's baseline %s is larger than 256 KiB", path);
    }
    free(src);
    if (rc < 0)
        return -1;
    ex_kernel *k = &x->k[x->m[x->nm - 1].kernel];
    k->geomean = 1;
    if (k->pre.n)
        return kiln_fail(err, "the task's baseline %s has preconditions itself", path);
    return x->m[x->nm - 1].kernel;
}

/* A kernel measured once, by a record and its re-record: the figure its
 * run recorded, the two pooled as the search pooled them (the lower of two
 * geomeans that disagree beyond their intervals), so that decisions.json
 * says what status and the search's summary say of it. 0: measured
 * otherwise, or the pool does not pass. */
static double recorded_geomean(const ex *x, int k)
{
    const ex_meas *one = NULL;
    for (int i = 0; i < x->nm; i++) {
        if (x->m[i].kernel != k)
            continue;
        if (one)
            return 0;
        one = &x->m[i];
    }
    if (!one || !one->verdict || !one->reverdict)
        return 0;
    kiln_verdict *pooled = malloc(sizeof *pooled);
    char why[320];
    double g = 0;
    if (pooled && kiln_pool_verdicts(one->verdict, one->reverdict, pooled, why, sizeof why) > 0 &&
        strcmp(pooled->status, "pass") == 0)
        g = pooled->geomean_speedup;
    free(pooled);
    return isfinite(g) && g > 0 ? g : 0;
}

/* Each kernel's geomean over the shapes where it was measured (its
 * measurements at each pooled; a kernel measured once, the figure its run
 * recorded). The best is the kernel with the highest; the
 * fallback, for dims no branch takes, the highest of those that require
 * nothing (or the task's baseline), so the dispatch is right at every
 * shape. */
static int choose_fallback(ex *x, kiln_error *err)
{
    x->best = 0;
    x->fallback = -1;
    for (int k = 0; k < x->nk; k++) {
        double logs = 0;
        int n = 0;
        for (int c = 0; c < x->nc; c++) {
            double best = 0;
            for (int i = 0; i < x->nm; i++)
                if (x->m[i].kernel == k)
                    best = fmax(best, kiln_ex_speedup_at(x, i, &x->c[c].shape));
            if (best > 0)
                logs += log(best), n++;
        }
        x->k[k].nshapes = n;
        x->k[k].geomean = n ? exp(logs / n) : kiln_rv_fin(x->m[x->k[k].first].verdict->geomean_speedup);
        double recorded = n ? recorded_geomean(x, k) : 0;
        if (recorded > 0)
            x->k[k].geomean = recorded;
        if (x->k[k].geomean > x->k[x->best].geomean)
            x->best = k;
        if (!x->k[k].pre.n && (x->fallback < 0 || x->k[k].geomean > x->k[x->fallback].geomean))
            x->fallback = k;
    }
    if (x->fallback < 0 && (x->fallback = add_baseline(x, err)) < 0)
        return -1;
    if (x->k[x->fallback].geomean >= x->k[x->best].geomean)
        x->best = x->fallback;
    return 0;
}

/* Names for the kernels that are used, in order of first use: T_kN for
 * the CPU, kiln_T_D_kN for CUDA. */
static void name_kernels(ex *x)
{
    char base[KILN_NAME_MAX + 16];
    int next = 1;
    if (x->cuda)
        kiln_ex_cuda_base(x, base, sizeof base);
    else
        snprintf(base, sizeof base, "%s", x->task->name);
    for (int c = 0; c <= x->nc + 1; c++) {
        int k = c < x->nc ? (x->c[c].winner < 0 ? -1 : x->m[x->c[c].winner].kernel)
                          : c == x->nc ? x->best : x->fallback;
        if (k >= 0 && !x->k[k].name[0])
            snprintf(x->k[k].name, sizeof x->k[k].name, "%s_k%d", base, next++);
    }
}

/* ---- writing -------------------------------------------------------------------------- */

/* x->date (export.h says which). */
static void export_date(char *buf, size_t len)
{
    const char *e = getenv("SOURCE_DATE_EPOCH");
    char *end = NULL;
    errno = 0;
    long long s = e && *e ? strtoll(e, &end, 10) : -1;
    int ok = s > 0 && errno == 0 && end && *end == '\0' && s <= 253402300799LL;   /* < year 10000 */
    kiln_rv_fmt_date(ok ? (double)s : kiln_rv_now(), buf, len);
}

FILE *kiln_ex_open(const ex *x, const char *name, char *path, size_t len, kiln_error *err)
{
    snprintf(path, len, "%s/%s", x->o->out, name);
    FILE *f = fopen(path, "w");
    if (!f)
        kiln_fail(err, "%s: %s", path, strerror(errno));
    return f;
}

int kiln_ex_close(FILE *f, const char *path, kiln_error *err)
{
    int bad = ferror(f);
    if (fclose(f) != 0 || bad)
        return kiln_fail(err, "%s: write error", path);
    return 0;
}

static int write_kernel(const ex *x, const ex_kernel *k, kiln_error *err)
{
    char name[KILN_NAME_MAX + 48], path[PATH_MAX + 64];
    snprintf(name, sizeof name, "%s.c", k->name);
    FILE *f = kiln_ex_open(x, name, path, sizeof path, err);
    if (!f)
        return -1;
    const ex_meas *m = &x->m[k->first];
    /* Renaming by macro leaves the kernel's text as it was verified; its
     * helpers should be static, as two kernels' global helpers would clash. */
    fprintf(f, "/* %s.c - exported by kiln export: run %s, candidate %d, commit %s.\n"
               " * The kernel's function %s is renamed %s so that several kernels\n"
               " * link together; the dispatch in %s_dispatch.c calls it. */\n"
               "#define %s %s\n\n%s",
            k->name, m->run, m->n, m->commit, x->task->function, k->name, x->task->name,
            x->task->function, k->name, k->source);
    return kiln_ex_close(f, path, err);
}

/* The task's prototype with another function name. */
static void prototype(const ex *x, const char *fname, char *buf, size_t len)
{
    char sig[1024];
    kiln_task_cpu_signature(x->task, x->dt, sig, sizeof sig);
    const char *paren = strchr(sig, '(');
    snprintf(buf, len, "void %s%s", fname, paren ? paren : "(void)");
}

static int needs_kiln_cpu_h(const ex *x)
{
    char sig[1024];
    kiln_task_cpu_signature(x->task, x->dt, sig, sizeof sig);
    if (strstr(sig, "kiln_"))
        return 1;
    for (int k = 0; k < x->nk; k++)
        if (x->k[k].name[0] && strstr(x->k[k].source, "kiln_cpu.h"))
            return 1;
    return 0;
}

static int write_header(const ex *x, kiln_error *err)
{
    char name[KILN_NAME_MAX + 32], path[PATH_MAX + 64], proto[1200];
    snprintf(name, sizeof name, "%s_dispatch.h", x->task->name);
    FILE *f = kiln_ex_open(x, name, path, sizeof path, err);
    if (!f)
        return -1;
    fprintf(f, "/* %s - generated by kiln export (task %s, cpu, %s): the exported\n"
               " * kernels and one dispatch that picks among them by dims; see decisions.json. */\n"
               "#ifndef KILN_EXPORT_%s_DISPATCH_H\n#define KILN_EXPORT_%s_DISPATCH_H\n\n"
               "#include <stdint.h>\n%s\n",
            name, x->task->name, kiln_dtype_name(x->dt), x->task->name, x->task->name,
            needs_kiln_cpu_h(x) ? "#include \"kiln_cpu.h\"\n" : "");
    for (int k = 0; k < x->nk; k++)
        if (x->k[k].name[0]) {
            prototype(x, x->k[k].name, proto, sizeof proto);
            fprintf(f, "%s;\n", proto);
        }
    char fname[KILN_NAME_MAX + 16];
    snprintf(fname, sizeof fname, "%s_dispatch", x->task->name);
    prototype(x, fname, proto, sizeof proto);
    fprintf(f, "\n/* Exact dims of a visible shape: the kernel fastest there; other dims:\n"
               " * %s, the best geomean%s%s%s. */\n%s;\n\n#endif\n",
            x->k[x->best].name, x->best != x->fallback ? " where its preconditions hold, else " : "",
            x->best != x->fallback ? x->k[x->fallback].name : "",
            x->best != x->fallback ? ", which requires nothing" : "", proto);
    return kiln_ex_close(f, path, err);
}

/* "x, w, y, rows, cols, eps" */
static void call_args(const ex *x, char *buf, size_t len)
{
    size_t u = 0;
    buf[0] = '\0';
    for (int i = 0; i < x->task->nargs && u < len; i++)
        u += (size_t)snprintf(buf + u, len - u, "%s%s", i ? ", " : "", x->task->args[i].name);
}

static void write_branches(const ex *x, FILE *f, const char *args)
{
    for (int c = 0; c < x->nc; c++) {
        char cond[512], dims[256];
        kiln_shape_format(x->task, &x->c[c].shape, dims, sizeof dims);
        const ex_choice *ch = &x->c[c];
        if (ch->winner < 0 || !kiln_ex_condition(x, &ch->shape, cond, sizeof cond)) {
            fprintf(f, "    /* %s (%s %s): not measured, the fallback */\n", dims, ch->groups, ch->ids);
            continue;
        }
        const ex_kernel *k = &x->k[x->m[ch->winner].kernel];
        fprintf(f, "    if (%s) { /* %s %s: %.2fx against the baseline */\n        %s(%s);\n"
                   "        return;\n    }\n",
                cond, ch->groups, ch->ids, kiln_ex_speedup_at(x, ch->winner, &ch->shape), k->name, args);
    }
}

static int write_dispatch(const ex *x, kiln_error *err)
{
    char name[KILN_NAME_MAX + 32], path[PATH_MAX + 64], proto[1200], fname[KILN_NAME_MAX + 16], args[512];
    snprintf(name, sizeof name, "%s_dispatch.c", x->task->name);
    FILE *f = kiln_ex_open(x, name, path, sizeof path, err);
    if (!f)
        return -1;
    snprintf(fname, sizeof fname, "%s_dispatch", x->task->name);
    prototype(x, fname, proto, sizeof proto);
    call_args(x, args, sizeof args);
    fprintf(f, "/* %s - generated by kiln export: calls the kernel chosen for the\n"
               " * dims (see decisions.json for every choice and its reasons). */\n"
               "#include \"%s_dispatch.h\"\n\n%s\n{\n",
            name, x->task->name, proto);
    write_branches(x, f, args);
    char pre[512];
    if (x->best != x->fallback) {
        if (kiln_ex_precond_c(x, &x->k[x->best].pre, pre, sizeof pre, err) < 0) {
            fclose(f);
            return -1;
        }
        fprintf(f, "    if (%s) { /* %s's preconditions: the best geomean, %.2fx against "
                   "the task's baseline */\n"
                   "        %s(%s);\n        return;\n    }\n", pre, x->k[x->best].name,
                x->k[x->best].geomean, x->k[x->best].name, args);
    }
    fprintf(f, "    %s(%s); /* %s: %.2fx against the task's baseline */\n}\n", x->k[x->fallback].name, args,
            x->best != x->fallback ? "requires nothing" : "the best geomean",
            x->k[x->fallback].geomean);
    return kiln_ex_close(f, path, err);
}

/* ---- decisions.json --------------------------------------------------------------------- */

static cJSON *dims_json(const ex *x, const kiln_shape *sh)
{
    cJSON *o = cJSON_CreateObject();
    for (int d = 0; d < x->task->ndims; d++)
        cJSON_AddNumberToObject(o, x->task->dims[d], (double)sh->d[d]);
    return o;
}

/* A measurement at a shape: times, noise, verdict ids, machine, date. */
static cJSON *measurement_json(const ex *x, int mi, const kiln_shape *sh)
{
    const ex_meas *m = &x->m[mi];
    const kiln_shape_result *s = kiln_ex_measured_at(x, m->verdict, sh);
    static const kiln_shape_result none;
    if (!s)
        s = &none;
    char date[32];
    kiln_rv_fmt_date(m->date, date, sizeof date);
    cJSON *o = cJSON_CreateObject();
    const char *kname = x->k[m->kernel].name;
    if (kname[0])
        cJSON_AddStringToObject(o, "kernel", kname);
    else
        cJSON_AddNullToObject(o, "kernel");
    cJSON_AddStringToObject(o, "source_sha256", x->k[m->kernel].sha);
    double med = s->cand.median_ns;
    cJSON_AddNumberToObject(o, "speedup", kiln_rv_fin(s->speedup));   /* this record's own */
    const kiln_shape_result *rs = m->reverdict ? kiln_ex_measured_at(x, m->reverdict, sh) : NULL;
    if (rs)
        cJSON_AddNumberToObject(o, "rerecord_speedup", kiln_rv_fin(rs->speedup));
    cJSON_AddNumberToObject(o, "candidate_median_ns", kiln_rv_fin(med));
    cJSON_AddNumberToObject(o, "baseline_median_ns", kiln_rv_fin(s->base.median_ns));
    cJSON_AddNumberToObject(o, "candidate_half_spread", kiln_rv_fin(kiln_time_half_spread(&s->cand)));
    cJSON_AddNumberToObject(o, "roofline_fraction", kiln_rv_fin(s->roofline_fraction));
    cJSON *v = cJSON_AddObjectToObject(o, "verdict");
    cJSON_AddStringToObject(v, "run", m->run);
    cJSON_AddNumberToObject(v, "candidate", m->n);
    cJSON_AddStringToObject(v, "commit", m->commit);
    cJSON_AddStringToObject(v, "job", m->job);
    cJSON_AddStringToObject(v, "rerecord_job", m->rejob);
    cJSON_AddStringToObject(v, "date", date);
    cJSON_AddStringToObject(v, "verifier_version", m->verdict->verifier_version);
    cJSON *e = cJSON_AddObjectToObject(o, "environment");
    cJSON_AddStringToObject(e, "cpu", m->verdict->cpu_model);
    cJSON_AddStringToObject(e, "host", m->verdict->hostname);
    cJSON_AddStringToObject(e, "kernel", m->verdict->kernel);
    if (m->verdict->gpu[0])   /* name, cc, driver, clocks, ... as the worker saw them */
        cJSON_AddItemToObject(e, "gpu", kiln_verdict_gpu_json(m->verdict->gpu));
    return o;
}

static cJSON *choice_json(const ex *x, const ex_choice *c)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "groups", c->groups);
    cJSON_AddStringToObject(o, "ids", c->ids);
    cJSON_AddItemToObject(o, "dims", dims_json(x, &c->shape));
    cJSON *alts = cJSON_CreateArray();
    int n = 0;
    for (int i = 0; i < x->nm; i++)
        if (i != c->winner && kiln_ex_speedup_at(x, i, &c->shape) > 0)
            cJSON_AddItemToArray(alts, measurement_json(x, i, &c->shape)), n++;
    char why[256];
    if (c->winner < 0) {
        cJSON_AddStringToObject(o, "kernel", x->k[x->fallback].name);
        cJSON_AddStringToObject(o, "reason", "no kept kernel was measured at these dims: the fallback");
    } else {
        kiln_interval iv;
        int pooled;
        kiln_ex_pooled_at(x, c->winner, &c->shape, &iv, &pooled);
        snprintf(why, sizeof why, "the highest pooled speedup against the task's baseline at "
                 "these dims, of %d kept candidate%s%s", n + 1, n ? "s" : "",
                 pooled >= 2 ? "" : "; unconfirmed: one record, no re-record (a run from before "
                                    "pooling) and no kernel confirmed here");
        cJSON_AddStringToObject(o, "kernel", x->k[x->m[c->winner].kernel].name);
        cJSON_AddStringToObject(o, "reason", why);
        cJSON *p = cJSON_AddObjectToObject(o, "pooled");
        cJSON_AddNumberToObject(p, "speedup", kiln_rv_fin(iv.point));
        cJSON_AddNumberToObject(p, "lo", kiln_rv_fin(iv.lo));
        cJSON_AddNumberToObject(p, "hi", kiln_rv_fin(iv.hi));
        cJSON_AddNumberToObject(p, "measurements", pooled);
        cJSON_AddBoolToObject(p, "confirmed", pooled >= 2);
        cJSON_AddItemToObject(o, "chosen", measurement_json(x, c->winner, &c->shape));
    }
    cJSON_AddItemToObject(o, "alternatives", alts);
    return o;
}

static cJSON *kernels_json(const ex *x)
{
    cJSON *a = cJSON_CreateArray();
    for (int k = 0; k < x->nk; k++) {
        if (!x->k[k].name[0])
            continue;
        const ex_meas *m = &x->m[x->k[k].first];
        char file[KILN_NAME_MAX + 48];
        snprintf(file, sizeof file, "%s.%s", x->k[k].name, x->cuda ? "cu" : "c");
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "name", x->k[k].name);
        cJSON_AddStringToObject(o, "file", file);
        cJSON_AddStringToObject(o, "source_sha256", x->k[k].sha);
        cJSON_AddStringToObject(o, "run", m->run);
        cJSON_AddNumberToObject(o, "candidate", m->n);
        cJSON_AddStringToObject(o, "commit", m->commit);
        cJSON_AddStringToObject(o, "hypothesis", m->hypothesis ? m->hypothesis : "");
        cJSON_AddNumberToObject(o, "geomean_speedup", x->k[k].geomean);
        cJSON_AddNumberToObject(o, "shapes_measured", x->k[k].nshapes);
        cJSON *req = cJSON_AddArrayToObject(o, "requires");
        for (int i = 0; i < x->k[k].pre.n; i++) {
            char text[96];
            kiln_precond_text(&x->k[k].pre.p[i], x->task, text, sizeof text);
            cJSON_AddItemToArray(req, cJSON_CreateString(text));
        }
        if (x->cuda)
            kiln_ex_cuda_kernel_json(x, &x->k[k], o);
        cJSON_AddItemToArray(a, o);
    }
    return a;
}

static int write_decisions(const ex *x, kiln_error *err)
{
    char path[PATH_MAX + 64], sig[1024], why[256];
    if (x->cuda)
        kiln_ex_cuda_signature(x, sig, sizeof sig);
    else
        kiln_task_cpu_signature(x->task, x->dt, sig, sizeof sig);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "task", x->task->name);
    cJSON_AddStringToObject(o, "backend", x->cuda ? "cuda" : "cpu");
    cJSON_AddStringToObject(o, "dtype", kiln_dtype_name(x->dt));
    cJSON_AddStringToObject(o, "date", x->date);
    cJSON_AddStringToObject(o, "signature", sig);
    cJSON_AddStringToObject(o, "rule", "dims equal to a visible shape's: the kept kernel with the highest "
                            "pooled speedup against the task's baseline measured there (its records and "
                            "re-records pooled; a confirmed figure, of two or more, before any "
                            "unconfirmed one); other dims: the fallback");
    cJSON_AddItemToObject(o, "kernels", kernels_json(x));
    cJSON *shapes = cJSON_AddArrayToObject(o, "shapes");
    for (int c = 0; c < x->nc; c++)
        cJSON_AddItemToArray(shapes, choice_json(x, &x->c[c]));
    cJSON *fb = cJSON_AddObjectToObject(o, "fallback");
    cJSON_AddStringToObject(fb, "kernel", x->k[x->fallback].name);
    cJSON_AddNumberToObject(fb, "geomean_speedup", x->k[x->fallback].geomean);
    if (x->m[x->k[x->fallback].first].verdict->nresults == 0)
        snprintf(why, sizeof why, "the task's baseline: every kept kernel has preconditions");
    else
        snprintf(why, sizeof why, "the best geomean speedup over the shapes where it was measured "
                 "(%d)%s", x->k[x->fallback].nshapes,
                 x->best != x->fallback ? " of the kernels without preconditions" : "");
    cJSON_AddStringToObject(fb, "reason", why);
    if (x->best != x->fallback) {   /* other dims try the best first, where it may run */
        cJSON *g = cJSON_AddObjectToObject(o, "guarded");
        char pre[512];
        kiln_precond_format(&x->k[x->best].pre, x->task, pre, sizeof pre);
        cJSON_AddStringToObject(g, "kernel", x->k[x->best].name);
        cJSON_AddStringToObject(g, "when", pre);
        cJSON_AddNumberToObject(g, "geomean_speedup", x->k[x->best].geomean);
    }
    char *text = cJSON_Print(o);
    cJSON_Delete(o);
    FILE *f = text ? kiln_ex_open(x, "decisions.json", path, sizeof path, err) : NULL;
    if (f)
        fprintf(f, "%s\n", text);
    free(text);
    return f ? kiln_ex_close(f, path, err) : -1;
}

static int copy_kiln_cpu_h(const ex *x, kiln_error *err)
{
    char src[PATH_MAX], path[PATH_MAX + 64];
    snprintf(src, sizeof src, "%s/kiln_cpu.h", kiln_cpu_include_dir());
    FILE *in = fopen(src, "rb");
    if (!in)
        return kiln_fail(err, "%s: %s", src, strerror(errno));
    FILE *f = kiln_ex_open(x, "kiln_cpu.h", path, sizeof path, err);
    char buf[8192];
    size_t n;
    while (f && (n = fread(buf, 1, sizeof buf, in)) > 0)
        fwrite(buf, 1, n, f);
    fclose(in);
    return f ? kiln_ex_close(f, path, err) : -1;
}

/* An earlier export's files are replaced only with --force; anything else
 * in DIR is left alone, but DIR must then hold nothing else of ours. */
static int prepare_dir(const ex *x, kiln_error *err)
{
    if (kiln_mkdirs(x->o->out, err) < 0)
        return -1;
    DIR *d = opendir(x->o->out);
    if (!d)
        return kiln_fail(err, "%s: %s", x->o->out, strerror(errno));
    struct dirent *e;
    int busy = 0;
    char base[KILN_NAME_MAX + 16];
    if (x->cuda)
        kiln_ex_cuda_base(x, base, sizeof base);
    else
        snprintf(base, sizeof base, "%s_", x->task->name);   /* T_kN.c, T_dispatch.[ch] */
    size_t lb = strlen(base);
    while ((e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        busy = 1;
        int ours = strncmp(e->d_name, base, lb) == 0 || strcmp(e->d_name, "decisions.json") == 0 ||
                   strcmp(e->d_name, "kiln_cpu.h") == 0 || strcmp(e->d_name, "kiln_cuda.h") == 0;
        if (x->o->force && ours) {
            char p[PATH_MAX + 300];
            snprintf(p, sizeof p, "%s/%s", x->o->out, e->d_name);
            unlink(p);
        }
    }
    closedir(d);
    return busy && !x->o->force ? kiln_fail(err, "%s is not empty (--force replaces an earlier export)", x->o->out) : 0;
}

static int write_file(const ex *x, const ex_file *f, kiln_error *err)
{
    char path[PATH_MAX + 64];
    FILE *out = kiln_ex_open(x, f->name, path, sizeof path, err);
    if (!out)
        return -1;
    fwrite(f->text, 1, f->len, out);
    return kiln_ex_close(out, path, err);
}

/* Everything is rendered before DIR is touched: a manifest that cannot be
 * translated leaves an earlier export as it was. */
static int write_all_cuda(const ex *x, kiln_error *err)
{
    ex_file *files = NULL;
    int n = 0;
    if (kiln_ex_cuda_render(x, &files, &n, err) < 0)
        return kiln_error_as(err, KILN_ERR_BAD_INPUT);   /* a kernel this export cannot write */
    int rc = prepare_dir(x, err) < 0 ? kiln_error_as(err, KILN_ERR_BAD_INPUT) : 0;
    for (int i = 0; i < n && rc == 0; i++)
        rc = write_file(x, &files[i], err);
    kiln_ex_files_free(files, n);
    return rc == 0 ? write_decisions(x, err) : rc;
}

static int write_all(const ex *x, kiln_error *err)
{
    if (x->cuda)
        return write_all_cuda(x, err);
    if (prepare_dir(x, err) < 0)
        return kiln_error_as(err, KILN_ERR_BAD_INPUT);
    for (int k = 0; k < x->nk; k++)
        if (x->k[k].name[0] && write_kernel(x, &x->k[k], err) < 0)
            return -1;
    if (write_header(x, err) < 0 || write_dispatch(x, err) < 0 || write_decisions(x, err) < 0)
        return -1;
    return needs_kiln_cpu_h(x) ? copy_kiln_cpu_h(x, err) : 0;
}

static void print_summary(const ex *x)
{
    for (int c = 0; c < x->nc; c++) {
        char dims[256];
        kiln_shape_format(x->task, &x->c[c].shape, dims, sizeof dims);
        int w = x->c[c].winner;
        if (w < 0)
            printf("  %-22s -> %s (not measured: the fallback)\n", dims, x->k[x->fallback].name);
        else
            printf("  %-22s -> %s, %.2fx against the baseline%s\n", dims,
                   x->k[x->m[w].kernel].name, kiln_ex_speedup_at(x, w, &x->c[c].shape),
                   kiln_ex_confirmed_at(x, w, &x->c[c].shape) ? " (pooled)"
                                                              : " (unconfirmed: one record)");
    }
    if (x->best != x->fallback) {
        char pre[256];
        kiln_precond_format(&x->k[x->best].pre, x->task, pre, sizeof pre);
        printf("  other dims, %s -> %s, geomean %.2fx against the baseline\n", pre, x->k[x->best].name,
               x->k[x->best].geomean);
    }
    printf("  other dims             -> %s, geomean %.2fx against the baseline%s\n", x->k[x->fallback].name,
           x->k[x->fallback].geomean, x->best != x->fallback ? " (requires nothing)" : "");
    char base[KILN_NAME_MAX + 16];
    if (x->cuda) {
        kiln_ex_cuda_base(x, base, sizeof base);
        printf("wrote %s: %s.cuh, the kernels (%s_kN.cu), kiln_cuda.h, decisions.json\n",
               x->o->out, base, base);
    } else {
        printf("wrote %s: %s_dispatch.h, %s_dispatch.c, the kernels, decisions.json\n", x->o->out,
               x->task->name, x->task->name);
    }
}

/* ---- --json: the summary as one object -------------------------------------------------- */

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The files in DIR once written, sorted (DIR held none but an earlier
 * export's: prepare_dir refuses others). */
static cJSON *files_json(const char *dir)
{
    cJSON *a = cJSON_CreateArray();
    DIR *d = opendir(dir);
    char *names[512];
    int n = 0;
    for (struct dirent *e; d && n < 512 && (e = readdir(d)) != NULL;)
        if (e->d_name[0] != '.' && (names[n] = strdup(e->d_name)) != NULL)
            n++;
    if (d)
        closedir(d);
    qsort(names, (size_t)n, sizeof *names, by_name);
    for (int i = 0; i < n; i++) {
        cJSON_AddItemToArray(a, cJSON_CreateString(names[i]));
        free(names[i]);
    }
    return a;
}

static cJSON *pick_json(const ex *x, int k)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "kernel", x->k[k].name);
    cJSON_AddNumberToObject(o, "geomean", x->k[k].geomean);
    return o;
}

static cJSON *summary_json(const ex *x)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "dir", x->o->out);
    cJSON_AddStringToObject(o, "task", x->task->name);
    cJSON_AddStringToObject(o, "backend", x->cuda ? "cuda" : "cpu");
    cJSON_AddStringToObject(o, "dtype", kiln_dtype_name(x->dt));
    cJSON_AddItemToObject(o, "files", files_json(x->o->out));
    cJSON *shapes = cJSON_AddArrayToObject(o, "shapes");
    for (int c = 0; c < x->nc; c++) {
        char dims[256];
        kiln_shape_format(x->task, &x->c[c].shape, dims, sizeof dims);
        int w = x->c[c].winner;
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "dims", dims);
        cJSON_AddStringToObject(e, "kernel", x->k[w < 0 ? x->fallback : x->m[w].kernel].name);
        if (w < 0)
            cJSON_AddNullToObject(e, "speedup");
        else
            cJSON_AddNumberToObject(e, "speedup", kiln_ex_speedup_at(x, w, &x->c[c].shape));
        cJSON_AddBoolToObject(e, "pooled", w >= 0 && kiln_ex_confirmed_at(x, w, &x->c[c].shape));
        cJSON_AddItemToArray(shapes, e);
    }
    cJSON_AddItemToObject(o, "fallback", pick_json(x, x->fallback));
    cJSON_AddItemToObject(o, "best", pick_json(x, x->best));
    return o;
}

/* ---- entry ------------------------------------------------------------------------------ */

static int setup(ex *x, kiln_error *err)
{
    const char *be = x->o->backend ? x->o->backend : "cpu";
    if (strcmp(be, "cpu") != 0 && strcmp(be, "cuda") != 0)
        return kiln_bad_input(err, "unknown backend '%s' (cpu or cuda)", be);
    x->cuda = strcmp(be, "cuda") == 0;
    x->task = calloc(1, sizeof *x->task);
    if (!x->task)
        return kiln_fail(err, "out of memory");
    if (kiln_task_find(x->o->task, x->task, err) < 0)
        return kiln_error_as(err, KILN_ERR_BAD_INPUT);
    int nd = x->cuda ? x->task->ncuda_dtypes : x->task->ncpu_dtypes;
    if (nd == 0)
        return kiln_bad_input(err, "task %s has no %s backend", x->task->name, be);
    x->dt = x->o->dtype ? kiln_dtype_parse(x->o->dtype)
                        : x->cuda ? x->task->cuda_dtypes[0] : x->task->cpu_dtypes[0];
    if (!kiln_task_supports_backend(x->task, be, x->dt))
        return kiln_bad_input(err, "task %s has no %s variant for dtype '%s'", x->task->name, be,
                              x->o->dtype ? x->o->dtype : "?");
    return 0;
}

static void teardown(ex *x)
{
    for (int i = 0; i < x->nm; i++) {
        free(x->m[i].verdict);
        free(x->m[i].reverdict);
        free(x->m[i].hypothesis);
    }
    for (int k = 0; k < x->nk; k++)
        free(x->k[k].source);
    free(x->m);
    free(x->k);
    free(x->task);
}

int kiln_cmd_export(int argc, char **argv)
{
    export_opts o = {0};
    int rc = parse(argc, argv, &o);
    if (rc != 0)
        return rc > 0 ? KILN_EXIT_OK : KILN_EXIT_BAD_INPUT;
    ex *x = calloc(1, sizeof *x);
    if (!x)
        return KILN_EXIT_INTERNAL;
    x->o = &o;
    export_date(x->date, sizeof x->date);
    kiln_error err = {0};
    sqlite3 *db = NULL;
    rc = setup(x, &err);
    if (rc == 0)
        rc = kiln_rv_db_open(o.workspace ? o.workspace : "kiln-work", &db, &err) < 0
                 ? kiln_error_as(&err, KILN_ERR_BAD_INPUT) : 0;
    if (rc == 0)
        rc = load(x, db, &err);
    if (rc == 0) {
        list_shapes(x);
        choose_winners(x);
        rc = choose_fallback(x, &err) < 0 ? kiln_error_as(&err, KILN_ERR_BAD_INPUT) : 0;
    }
    if (rc == 0) {
        name_kernels(x);
        rc = write_all(x, &err);
    }
    if (rc == 0 && o.json && kiln_print_json("export", summary_json(x)) < 0)
        rc = -1, err.kind = KILN_ERR_INTERNAL;   /* said on stderr */
    else if (rc == 0 && !o.json)
        print_summary(x);
    else if (rc != 0)
        fprintf(stderr, "kiln export: %s\n", err.msg);
    kiln_db_close(db);
    teardown(x);
    free(x);
    return rc == 0 ? KILN_EXIT_OK : rc == 1 ? KILN_EXIT_FAIL : kiln_exit_status(&err);
}
