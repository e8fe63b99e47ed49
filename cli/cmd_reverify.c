/* cmd_reverify.c - `kiln reverify`: verify recorded kernels again and
 * compare with what their notes say. Useful after a driver or compiler
 * update, on another machine, or when a number is doubted.
 *
 * The old numbers come from the note on refs/notes/kiln-verdict (the "record"
 * verdict against the task's baseline, else the verdict against the
 * parent); the new verdict is always against the task's baseline. Results
 * are appended, one JSON line each, to the note of the same commit on
 * refs/notes/kiln-reverify: refs/notes/kiln and the commits are never
 * rewritten. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "judge.h"
#include "keep_rule.h"
#include "paths.h"
#include "review.h"
#include "verify.h"
#include "workspace.h"
#include "worker_io.h"

static const char usage[] =
    "usage: kiln reverify [REV... | --run R | --kept | --best] [options]\n"
    "\n"
    "Verify recorded kernels again (against the task's baseline) and print old against\n"
    "new: status, per visible shape the time ratio and the speedup ratio with their\n"
    "noise bands, the geomean's interval, and the machine of each. A status change\n"
    "from pass is a regression (exit status 1), and so is a kernel that got slower:\n"
    "its new geomean interval wholly below the recorded one, or wholly below 1.0x\n"
    "where it was recorded faster than the baseline. Each result is appended to the\n"
    "commit's note on refs/notes/kiln-reverify.\n"
    "\n"
    "  REV...             commits (anything git rev-parse understands)\n"
    "  --run R            the kept candidates of run R (with its start, candidate 0)\n"
    "  --kept             the kept candidates of every run\n"
    "  --best             the commits tagged kiln/best/* (the default)\n"
    "  --workspace DIR    the workspace (default ./kiln-work)\n"
    "  --backend B        only kernels recorded for backend B (cpu or cuda)\n"
    "  --dtype T          only kernels recorded for dtype T\n"
    "  --timing-ms N      timing budget of each verification (default 1000)\n"
    "  --socket ADDR      kilnd to use (default $KILN_SOCKET; started on demand)\n"
    "  --no-daemon        verify in this process\n"
    "  --json             one JSON object with every result\n"
    "\n"
    "Exit status: 0 as recorded, 1 a kernel now fails or regressed, 2 bad input,\n"
    "3 internal error.\n";

typedef struct rv_opts {
    const char *workspace, *run, *backend, *dtype, *socket;
    const char **revs;
    int nrevs, kept, best, json, no_daemon, timing_ms;
} rv_opts;

typedef struct rv_ctx {
    const rv_opts *o;
    kiln_ws ws;
    sqlite3 *db;                /* NULL when the workspace has no database */
    char address[4096];
    char (*commits)[41];
    int ncommits;
} rv_ctx;

/* ---- command line ---------------------------------------------------------- */

static int parse_int(const char *flag, const char *v, int *out)
{
    char *end;
    long n = strtol(v, &end, 10);
    if (!*v || *end || n < 1 || n > 3600000)
        return fprintf(stderr, "kiln reverify: bad value for %s: '%s'\n", flag, v), -1;
    *out = (int)n;
    return 0;
}

static int parse(int argc, char **argv, rv_opts *o)
{
    static const char *strings[] = {"--workspace", "--run", "--backend", "--dtype", "--socket"};
    const char **slots[] = {&o->workspace, &o->run, &o->backend, &o->dtype, &o->socket};
    for (int i = 1; i < argc; i++) {
        int miss = 0, done = 0;
        const char *v;
        if (kiln_is_help(argv[i]))
            return fputs(usage, stdout), 1;
        for (size_t k = 0; k < sizeof strings / sizeof *strings && !done; k++)
            if ((v = kiln_flag_value(argc, argv, &i, strings[k], &miss)))
                *slots[k] = v, done = 1;
        if (!done && (v = kiln_flag_value(argc, argv, &i, "--timing-ms", &miss))) {
            if (parse_int("--timing-ms", v, &o->timing_ms) < 0)
                return -1;
            done = 1;
        }
        if (done)
            continue;
        if (miss)
            return fprintf(stderr, "kiln reverify: %s needs a value\n", argv[i]), -1;
        if (strcmp(argv[i], "--kept") == 0)
            o->kept = 1;
        else if (strcmp(argv[i], "--best") == 0)
            o->best = 1;
        else if (strcmp(argv[i], "--json") == 0)
            o->json = 1;
        else if (strcmp(argv[i], "--no-daemon") == 0)
            o->no_daemon = 1;
        else if (argv[i][0] == '-')
            return kiln_unexpected("reverify", argv[i], usage);
        else
            o->revs[o->nrevs++] = argv[i];
    }
    if ((o->nrevs > 0) + !!o->run + o->kept + o->best > 1)
        return fprintf(stderr, "kiln reverify: give REVs, --run, --kept or --best, not several\n"), -1;
    if (!o->nrevs && !o->run && !o->kept)
        o->best = 1;
    return 0;
}

/* ---- choosing commits -------------------------------------------------------- */

static int add_commit(rv_ctx *x, const char *oid, kiln_error *err)
{
    for (int i = 0; i < x->ncommits; i++)
        if (strcmp(x->commits[i], oid) == 0)
            return 0;
    char(*p)[41] = realloc(x->commits, (size_t)(x->ncommits + 1) * sizeof *p);
    if (!p)
        return kiln_fail(err, "out of memory");
    x->commits = p;
    snprintf(p[x->ncommits++], 41, "%s", oid);
    return 0;
}

static int from_db(rv_ctx *x, kiln_error *err)
{
    if (!x->db)
        return kiln_fail(err, "the workspace has no database (.kiln/kiln.db)");
    char(*ids)[41];
    int n, rc = kiln_db_kept_commits(x->db, x->o->run, &ids, &n, err);
    for (int i = 0; rc == 0 && i < n; i++)
        rc = add_commit(x, ids[i], err);
    free(ids);
    return rc;
}

static int from_best_tags(rv_ctx *x, kiln_error *err)
{
    char(*ids)[41];
    int n, rc = kiln_ws_best_commits(&x->ws, &ids, &n, err);
    for (int i = 0; rc == 0 && i < n; i++)
        rc = add_commit(x, ids[i], err);
    free(ids);
    return rc;
}

static int choose_commits(rv_ctx *x, kiln_error *err)
{
    const rv_opts *o = x->o;
    for (int i = 0; i < o->nrevs; i++) {
        char oid[41];
        if (kiln_ws_resolve(&x->ws, o->revs[i], oid, err) < 0 || add_commit(x, oid, err) < 0)
            return kiln_error_as(err, KILN_ERR_BAD_INPUT);
    }
    int rc = o->best ? from_best_tags(x, err) : o->nrevs ? 0 : from_db(x, err);
    if (rc < 0)
        return -1;
    if (x->ncommits == 0)
        return kiln_bad_input(err, o->best ? "no kiln/best tags in this workspace"
                              : o->run ? "run '%s' has no kept candidates" : "no kept candidates%s",
                              o->run ? o->run : "");
    return 0;
}

/* ---- old against new -------------------------------------------------------- */

static cJSON *read_note(rv_ctx *x, const char *ref, const char *commit)
{
    char *text = kiln_ws_note_read(&x->ws, ref, commit);
    cJSON *j = text ? cJSON_Parse(text) : NULL;
    free(text);
    return j;
}

static const kiln_shape_result *find_shape(const kiln_verdict *v, const char *id)
{
    for (int i = 0; i < v->nresults; i++)
        if (strcmp(v->results[i].id, id) == 0)
            return &v->results[i];
    return NULL;
}

/* One visible timed shape: the candidate's time ratio and the speedup
 * ratio, each with the combined relative half 20-80 spread as its band
 * (shown), and whether its speedup is now slower beyond the intervals. */
static cJSON *compare_shape(const kiln_verdict *old, const kiln_shape_result *os,
                            const kiln_verdict *new, const kiln_shape_result *ns, double *band)
{
    char od[128], nd[128];
    kiln_verdict_dims(old, os, od, sizeof od);
    kiln_verdict_dims(new, ns, nd, sizeof nd);
    if (strcmp(od, nd) != 0)
        return NULL;   /* the task's shapes changed since: not comparable */
    double hoc = kiln_time_half_spread(&os->cand), hob = kiln_time_half_spread(&os->base);
    double hnc = kiln_time_half_spread(&ns->cand), hnb = kiln_time_half_spread(&ns->base);
    double oc = os->cand.median_ns, nc = ns->cand.median_ns;
    double osp = isfinite(os->speedup) ? os->speedup : 0, nsp = isfinite(ns->speedup) ? ns->speedup : 0;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", os->id);
    cJSON_AddStringToObject(o, "dims", od);
    cJSON_AddNumberToObject(o, "old_median_ns", oc);
    cJSON_AddNumberToObject(o, "new_median_ns", nc);
    cJSON_AddNumberToObject(o, "time_ratio", oc > 0 ? nc / oc : 0);
    cJSON_AddNumberToObject(o, "time_band", sqrt(hoc * hoc + hnc * hnc));
    cJSON_AddNumberToObject(o, "old_speedup", osp);
    cJSON_AddNumberToObject(o, "new_speedup", nsp);
    cJSON_AddNumberToObject(o, "speedup_ratio", osp > 0 ? nsp / osp : 0);
    *band = sqrt(hoc * hoc + hob * hob + hnc * hnc + hnb * hnb);
    cJSON_AddNumberToObject(o, "speedup_band", *band);
    /* Slower: the new interval wholly below the old (keep_rule.c's intervals). */
    kiln_interval oi = kiln_shape_interval(os), ni = kiln_shape_interval(ns);
    cJSON_AddBoolToObject(o, "slower", osp > 0 && ni.hi < oi.lo);
    return o;
}

/* Per-shape comparisons of the visible timed shapes both verdicts have. */
static void compare_shapes(const kiln_verdict *old, const kiln_verdict *new, cJSON *out)
{
    for (int i = 0; i < old->nresults; i++) {
        const kiln_shape_result *os = &old->results[i], *ns = find_shape(new, os->id);
        if (!os->visible || !ns || !os->timed || !ns->timed)
            continue;
        double band;
        cJSON *c = compare_shape(old, os, new, ns, &band);
        if (c)
            cJSON_AddItemToArray(out, c);
    }
}

static cJSON *env_of(const kiln_verdict *v, const char *version)
{
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "cpu", v->cpu_model);
    cJSON_AddStringToObject(e, "host", v->hostname);
    cJSON_AddStringToObject(e, "kernel", v->kernel);
    cJSON_AddStringToObject(e, "verifier_version", version);
    /* CUDA verdicts: the GPU and driver they were measured on. */
    char gpu[128], driver[32];
    kiln_verdict_gpu_field(v->gpu, "name", gpu, sizeof gpu);
    kiln_verdict_gpu_field(v->gpu, "driver", driver, sizeof driver);
    if (gpu[0]) {
        cJSON_AddStringToObject(e, "gpu", gpu);
        cJSON_AddNumberToObject(e, "driver", atof(driver));
    }
    return e;
}

static cJSON *side(const kiln_verdict *v, const char *version, const char *kind, const char *date)
{
    cJSON *o = cJSON_CreateObject();
    if (kind)
        cJSON_AddStringToObject(o, "kind", kind);
    cJSON_AddStringToObject(o, "status", v->status);
    cJSON_AddStringToObject(o, "stage", v->stage);
    cJSON_AddStringToObject(o, "code", v->code);
    cJSON_AddStringToObject(o, "reason", v->reason);
    cJSON_AddNumberToObject(o, "geomean_speedup", isfinite(v->geomean_speedup) ? v->geomean_speedup : 0);
    cJSON_AddStringToObject(o, "source_sha256", v->source_sha256);
    cJSON_AddStringToObject(o, "date", date);
    cJSON_AddItemToObject(o, "environment", env_of(v, version));
    return o;
}

static cJSON *interval_json(const kiln_interval *x)
{
    cJSON *a = cJSON_CreateArray();
    cJSON_AddItemToArray(a, cJSON_CreateNumber(x->lo));
    cJSON_AddItemToArray(a, cJSON_CreateNumber(isfinite(x->hi) ? x->hi : 0));
    return a;
}

/* The verdict: a status change from pass, or slower beyond the intervals:
 * the new geomean's interval lies wholly below the recorded one, or wholly
 * below 1.0 where the record claimed a speedup (keep_rule.c derives both
 * from the shapes' intervals). Speedups against a parent (a candidate that
 * was never measured against the baseline) are not comparable: status only. */
static void judge_change(cJSON *r, const kiln_verdict *old, const kiln_verdict *new,
                         int comparable)
{
    int old_pass = strcmp(old->status, "pass") == 0, new_pass = strcmp(new->status, "pass") == 0;
    kiln_interval o, n;
    kiln_geomean_interval(old, &o);
    kiln_geomean_interval(new, &n);
    char why[512] = "";
    if (old_pass && !new_pass)
        snprintf(why, sizeof why, "status pass -> %s (%s at %s)", new->status, new->code, new->stage);
    else if (comparable && old_pass && new_pass && o.point > 0 && n.hi < o.lo)
        snprintf(why, sizeof why, "slower: geomean %.3fx [%.3f, %.3f] -> %.3fx [%.3f, %.3f], wholly "
                 "below the recorded interval", o.point, o.lo, o.hi, n.point, n.lo, n.hi);
    else if (comparable && old_pass && new_pass && o.point > 1 && n.hi < 1)
        snprintf(why, sizeof why, "slower: geomean %.3fx [%.3f, %.3f] -> %.3fx [%.3f, %.3f], no "
                 "longer faster than the baseline", o.point, o.lo, o.hi, n.point, n.lo, n.hi);
    cJSON_AddItemToObject(r, "old_interval", interval_json(&o));
    cJSON_AddItemToObject(r, "new_interval", interval_json(&n));
    cJSON_AddBoolToObject(r, "regression", why[0] != 0);
    if (why[0])
        cJSON_AddStringToObject(r, "why", why);
}

/* The two sides of a re-verification: the note's verdict (decoded once)
 * and the new one, with the verifier versions that reached them. */
typedef struct rv_pair {
    const cJSON *note;
    const kiln_verdict *old, *new;
    const char *old_version, *kind, *job;
} rv_pair;

static cJSON *build_result(rv_ctx *x, const char *commit, const rv_pair *p)
{
    char date[32], now[32];
    kiln_rv_fmt_date(kiln_ws_commit_time(&x->ws, commit), date, sizeof date);
    kiln_rv_fmt_date(kiln_rv_now(), now, sizeof now);
    cJSON *r = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "commit", commit);
    cJSON_AddStringToObject(r, "date", now);
    cJSON_AddStringToObject(r, "run", kiln_rv_str(p->note, "run"));
    cJSON_AddNumberToObject(r, "candidate", kiln_rv_num(p->note, "candidate"));
    cJSON_AddStringToObject(r, "task", p->old->task);
    cJSON_AddStringToObject(r, "dtype", p->old->dtype);
    cJSON_AddStringToObject(r, "group", p->old->group);
    cJSON_AddItemToObject(r, "old", side(p->old, p->old_version, p->kind, date));
    cJSON *n = side(p->new, KILN_VERIFIER_VERSION, NULL, now);
    cJSON_AddStringToObject(n, "job", p->job);
    cJSON_AddItemToObject(r, "new", n);
    cJSON *shapes = cJSON_AddArrayToObject(r, "shapes");
    compare_shapes(p->old, p->new, shapes);
    judge_change(r, p->old, p->new, strcmp(p->kind, "record") == 0);
    cJSON_AddItemToObject(r, "env", env_of(p->new, KILN_VERIFIER_VERSION));
    return r;
}

/* ---- verifying one commit ----------------------------------------------------- */

/* The backend a verdict was reached on ("cpu" for verdicts that do not say). */
static const char *backend_of(const kiln_verdict *v)
{
    return v->backend[0] ? v->backend : "cpu";
}

static void setup_judge(rv_ctx *x, kiln_judge *j, const kiln_task *t, const kiln_verdict *old)
{
    memset(j, 0, sizeof *j);
    j->in_process = x->o->no_daemon;
    snprintf(j->address, sizeof j->address, "%s", x->address);
    j->task = t;
    snprintf(j->task_ref, sizeof j->task_ref, "%s", t->name);
    j->backend = backend_of(old);
    j->dtype = old->dtype;
    j->group = old->group;
    j->timing_ms = x->o->timing_ms;
}

static cJSON *skipped(const char *commit, const char *why)
{
    cJSON *r = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "commit", commit);
    cJSON_AddStringToObject(r, "skipped", why);
    return r;
}

/* The new verdict of commit's kernel against the task's baseline. */
static kiln_verdict *verify_again(rv_ctx *x, const char *commit, const kiln_verdict *old,
                                  char job[32], kiln_error *err)
{
    kiln_task *t = calloc(1, sizeof *t);
    if (!t)
        return kiln_fail(err, "out of memory"), NULL;
    kiln_verdict *v = NULL;
    char rel[KILN_NAME_MAX + 32], *src = NULL;
    if (kiln_task_find(old->task, t, err) == 0) {
        int cuda = strcmp(backend_of(old), "cuda") == 0;
        snprintf(rel, sizeof rel, "%s/%s", t->name, cuda ? "cuda/kernel.cu" : "cpu/kernel.c");
        if (kiln_ws_read(&x->ws, commit, rel, &src, err) == 0) {
            kiln_judge j;
            setup_judge(x, &j, t, old);
            v = kiln_judge_run(&j, src, NULL, NULL, job, NULL, NULL, err);
        }
    }
    free(src);
    free(t);
    return v;
}

/* Why commit is not re-verified, or NULL: it is. */
static const char *skip_reason(rv_ctx *x, const cJSON *oldj, const kiln_verdict *old, int decoded)
{
    if (!oldj || !decoded || !old->task[0])
        return "the note holds no verdict";
    if (x->o->dtype && strcmp(x->o->dtype, old->dtype) != 0)
        return "another dtype";
    if (x->o->backend && strcmp(x->o->backend, backend_of(old)) != 0)
        return "another backend";
    return NULL;
}

/* Returns the result (a skip says why), or NULL with err on an internal error. */
static cJSON *reverify_one(rv_ctx *x, const char *commit, kiln_error *err)
{
    cJSON *note = read_note(x, KILN_VERDICT_NOTES_REF, commit);
    if (!note)
        return skipped(commit, "no verdict note on refs/notes/kiln-verdict");
    const char *kind = kiln_rv_get(note, "record") ? "record" : "verdict";
    const cJSON *oldj = kiln_rv_get(note, kind);
    kiln_verdict *old = calloc(1, sizeof *old), *new = NULL;
    kiln_error e;
    int decoded = old && oldj && kiln_verdict_from_cjson(oldj, old, &e) == 0;
    const char *why = old ? skip_reason(x, oldj, old, decoded) : NULL;
    cJSON *r = NULL;
    char job[32] = "";
    if (!old)
        kiln_fail(err, "out of memory");
    else if (why)
        r = skipped(commit, why);
    else if ((new = verify_again(x, commit, old, job, err)) != NULL) {
        rv_pair p = {note, old, new, old->verifier_version, kind, job};
        r = build_result(x, commit, &p);
    }
    free(new);
    free(old);
    cJSON_Delete(note);
    return r;
}

/* Append one JSON line to the commit's note on refs/notes/kiln-reverify. */
static int append_note(rv_ctx *x, const char *commit, const cJSON *result, kiln_error *err)
{
    char *line = cJSON_PrintUnformatted(result);
    int rc = kiln_ws_reverify_note_append(&x->ws, commit, line, err);
    free(line);
    return rc;
}

/* ---- printing -------------------------------------------------------------------- */

static void print_env(const char *label, const cJSON *side)
{
    const char *gpu = kiln_rv_str(side, "environment.gpu");
    if (gpu[0])
        printf("  %-8s GPU %s, driver %.0f, ", label, gpu, kiln_rv_num(side, "environment.driver"));
    else
        printf("  %-8s ", label);
    printf("%s, host %s, %s (verifier %s), %s\n", kiln_rv_str(side, "environment.cpu"),
           kiln_rv_str(side, "environment.host"), kiln_rv_str(side, "environment.kernel"),
           kiln_rv_str(side, "environment.verifier_version"), kiln_rv_str(side, "date"));
}

static void print_shapes(const cJSON *shapes)
{
    printf("  %-4s %-22s %9s %7s %9s %9s %8s %7s\n", "id", "dims", "time n/o", "band", "old",
           "new", "sp n/o", "band");
    const cJSON *s;
    cJSON_ArrayForEach(s, shapes) {
        printf("  %-4s %-22s %9.3f %6.1f%% %8.2fx %8.2fx %8.3f %6.1f%%%s\n", kiln_rv_str(s, "id"),
               kiln_rv_str(s, "dims"), kiln_rv_num(s, "time_ratio"), 100 * kiln_rv_num(s, "time_band"),
               kiln_rv_num(s, "old_speedup"), kiln_rv_num(s, "new_speedup"),
               kiln_rv_num(s, "speedup_ratio"), 100 * kiln_rv_num(s, "speedup_band"),
               cJSON_IsTrue(kiln_rv_get(s, "slower")) ? "  slower" : "");
    }
}

static double interval_end(const cJSON *r, const char *key, int i)
{
    const cJSON *a = kiln_rv_get(r, key), *x = cJSON_IsArray(a) ? cJSON_GetArrayItem(a, i) : NULL;
    return cJSON_IsNumber(x) ? x->valuedouble : 0;
}

static void print_result(const cJSON *r)
{
    const char *commit = kiln_rv_str(r, "commit");
    if (kiln_rv_get(r, "skipped")) {
        printf("%.12s  skipped: %s\n\n", commit, kiln_rv_str(r, "skipped"));
        return;
    }
    printf("%.12s  %s %s %s, run %s candidate %.0f (old: %s verdict)\n", commit, kiln_rv_str(r, "task"),
           kiln_rv_str(r, "dtype"), kiln_rv_str(r, "group"), kiln_rv_str(r, "run"),
           kiln_rv_num(r, "candidate"), kiln_rv_str(r, "old.kind"));
    printf("  status   %s -> %s (%s)\n", kiln_rv_str(r, "old.status"), kiln_rv_str(r, "new.status"),
           kiln_rv_str(r, "new.reason"));
    printf("  geomean  %.3fx -> %.3fx against the task's baseline (intervals [%.3f, %.3f] -> "
           "[%.3f, %.3f])%s\n", kiln_rv_num(r, "old.geomean_speedup"),
           kiln_rv_num(r, "new.geomean_speedup"), interval_end(r, "old_interval", 0),
           interval_end(r, "old_interval", 1), interval_end(r, "new_interval", 0),
           interval_end(r, "new_interval", 1),
           strcmp(kiln_rv_str(r, "old.kind"), "record") ? " - old speedup is against its parent" : "");
    print_env("old", kiln_rv_get(r, "old"));
    print_env("new", kiln_rv_get(r, "new"));
    print_shapes(kiln_rv_get(r, "shapes"));
    if (cJSON_IsTrue(kiln_rv_get(r, "regression")))
        printf("  REGRESSION: %s\n\n", kiln_rv_str(r, "why"));
    else
        printf("  ok: no regression beyond the intervals\n\n");
}

/* ---- entry ---------------------------------------------------------------------- */

static int open_ctx(rv_ctx *x, kiln_error *err)
{
    const char *dir = x->o->workspace ? x->o->workspace : "kiln-work";
    char git[PATH_MAX + 8], db[PATH_MAX + 32];
    snprintf(git, sizeof git, "%s/.git", dir);
    if (access(git, F_OK) != 0)
        return kiln_bad_input(err, "%s is not a kiln workspace (no git repository)", dir);
    if (kiln_rv_search_running(dir))
        return kiln_bad_input(err, "a search is running in this workspace (%s); try again when it ends", dir);
    if (kiln_ws_open(&x->ws, dir, 0, err) < 0)
        return kiln_error_as(err, KILN_ERR_BAD_INPUT);
    snprintf(db, sizeof db, "%s/.kiln/kiln.db", x->ws.dir);
    if (access(db, F_OK) == 0 && kiln_rv_db_open(x->ws.dir, &x->db, err) < 0)
        return -1;
    if (x->o->no_daemon)
        return 0;
    const char *sock = x->o->socket ? x->o->socket : getenv("KILN_SOCKET");
    if (sock && *sock) {
        snprintf(x->address, sizeof x->address, "%s", sock);
        return 0;
    }
    return kiln_default_socket(x->address, sizeof x->address, err);
}

static void close_ctx(rv_ctx *x)
{
    if (x->db)
        kiln_db_close(x->db);
    if (x->ws.repo || x->ws.lock_fd >= 0)
        kiln_ws_close(&x->ws);
    free(x->commits);
}

/* The live line on a terminal: which commit of how many, and once one is
 * done an estimate of the time left from the average so far. */
static void live_line(int i, int n, const char *commit, uint64_t t0)
{
    double el = (double)(kiln_mono_ns() - t0) / 1e9;
    char eta[48] = "";
    if (i > 0)
        snprintf(eta, sizeof eta, ", about %.0f s left", el / i * (n - i));
    kiln_live_line(t0, "reverify", "commit %d of %d (%.12s)%s", i + 1, n, commit, eta);
}

/* Reverify every chosen commit; *regressions counts them. */
static int run_all(rv_ctx *x, cJSON *all, int *regressions, int *done, kiln_error *err)
{
    int tty = !x->o->json && isatty(STDERR_FILENO);
    uint64_t t0 = kiln_mono_ns();
    for (int i = 0; i < x->ncommits; i++) {
        if (tty)
            live_line(i, x->ncommits, x->commits[i], t0);
        cJSON *r = reverify_one(x, x->commits[i], err);
        if (tty)
            kiln_live_clear();
        if (!r)
            return kiln_error_prefix(err, "%.12s", x->commits[i]);
        if (!kiln_rv_get(r, "skipped") && append_note(x, x->commits[i], r, err) < 0) {
            cJSON_Delete(r);
            return -1;
        }
        *regressions += cJSON_IsTrue(kiln_rv_get(r, "regression"));
        *done += !kiln_rv_get(r, "skipped");
        if (!x->o->json) {
            print_result(r);
            fflush(stdout);
        }
        cJSON_AddItemToArray(all, r);
    }
    if (*done == 0)   /* asked for something, checked nothing: say so */
        return kiln_bad_input(err, "none of the chosen commits has a verdict note to reverify "
                              "(for this dtype and backend)");
    return 0;
}

static void print_total(const rv_ctx *x, cJSON *all, int done, int regressions)
{
    if (x->o->json) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemReferenceToObject(o, "results", all);
        cJSON_AddNumberToObject(o, "regressions", regressions);
        char *s = cJSON_PrintUnformatted(o);
        if (s)
            puts(s);
        free(s);
        cJSON_Delete(o);
        return;
    }
    printf("%d commit%s reverified, %d skipped, %d regression%s; results appended to %s\n", done,
           done == 1 ? "" : "s", x->ncommits - done, regressions, regressions == 1 ? "" : "s",
           KILN_REVERIFY_NOTES_REF);
}

int kiln_cmd_reverify(int argc, char **argv)
{
    const char **revs = calloc((size_t)argc + 1, sizeof *revs);
    rv_opts o = {.revs = revs, .timing_ms = 1000};
    rv_ctx x = {.o = &o};
    kiln_error err = {0};
    int rc = revs ? parse(argc, argv, &o) : -1;
    if (rc != 0) {
        free(revs);
        return rc > 0 ? KILN_EXIT_OK : KILN_EXIT_BAD_INPUT;
    }
    if (o.backend && kiln_backend_parse(o.backend) < 0) {
        fprintf(stderr, "kiln reverify: unknown backend '%s' (cpu, cuda)\n", o.backend);
        free(revs);
        return KILN_EXIT_BAD_INPUT;
    }
    x.ws.lock_fd = -1;
    int regressions = 0, done = 0;
    cJSON *all = cJSON_CreateArray();
    if ((rc = open_ctx(&x, &err)) == 0 && (rc = choose_commits(&x, &err)) == 0)
        rc = run_all(&x, all, &regressions, &done, &err);
    if (rc == 0)
        print_total(&x, all, done, regressions);
    else
        fprintf(stderr, "kiln reverify: %s\n", err.msg);
    cJSON_Delete(all);
    close_ctx(&x);
    free(revs);
    if (rc != 0)
        return kiln_exit_status(&err);
    return regressions ? KILN_EXIT_FAIL : KILN_EXIT_OK;
}
