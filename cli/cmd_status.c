/* cmd_status.c - `kiln status`: the essentials of a search run on the
 * terminal, the same numbers `kiln report` draws. Reads the database only,
 * so it works while the search runs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "keep_rule.h"
#include "lessons.h"
#include "review.h"
#include "shares.h"

static const char usage[] =
    "usage: kiln status [RUN] [--workspace DIR] [--json]\n"
    "\n"
    "Print the essentials of the latest run (or RUN): progress, the best kernel per\n"
    "shape, each kept candidate's geomean with its interval and why it was kept,\n"
    "the archive's cells and the best's lineage, verdicts per hour of each verifier\n"
    "(kilnd endpoint), rejections by stage and reason, lessons, tokens and time.\n"
    "\n"
    "--json prints one JSON object instead: run, status (as recorded), shown (as\n"
    "the text says it: running, interrupted, ...), resumable, task, backend, dtype,\n"
    "group, agent, model, started_at (ISO 8601), iterations_done, candidates,\n"
    "kept, best (null, or its number, commit, geomean with lo and hi, per-shape\n"
    "times), kept_candidates, rejected, tokens, seconds_used and holder (null, or\n"
    "the pid and run holding the workspace's lock).\n"
    "\n"
    "Exit status: 0 ok, 2 bad input (no workspace or run; a corrupt or lost database:\n"
    "kiln db rebuild), 3 internal error.\n";

static int parse(int argc, char **argv, const char **workspace, const char **run, int *json)
{
    for (int i = 1; i < argc; i++) {
        int miss = 0;
        const char *v;
        if (kiln_is_help(argv[i]))
            return fputs(usage, stdout), 1;
        if (strcmp(argv[i], "--json") == 0) {
            *json = 1;
            continue;
        }
        if ((v = kiln_flag_value(argc, argv, &i, "--workspace", &miss)))
            *workspace = v;
        else if (miss)
            return fprintf(stderr, "kiln status: %s needs a value\n", argv[i]), -1;
        else if (argv[i][0] == '-' || *run)
            return kiln_unexpected("status", argv[i], usage);
        else
            *run = argv[i];
    }
    return 0;
}

/* Who holds the workspace's lock: its pid and run ("-": a kiln command
 * that runs no search, such as kiln reverify; "" when the lock is an older
 * kiln's, which names neither); 0 when nobody does. */
static int holder(const char *workspace, char pid[32], char run[96])
{
    char who[128];
    pid[0] = run[0] = '\0';
    if (!kiln_rv_lock_holder(workspace, who, sizeof who))
        return 0;
    sscanf(who, "%31s %95s", pid, run);
    return 1;
}

/* Whether the run goes on. A run recorded "running" is alive only while a
 * search holds the workspace's lock for it; otherwise the search that ran
 * it was killed or died with its machine, and the run is shown as
 * interrupted. A search stopped by a signal recorded "stopped" itself. 1
 * when it can be resumed. */
static int liveness(const char *workspace, const kiln_run *u, char *shown, size_t len)
{
    char pid[32], run[96];
    int held = holder(workspace, pid, run);
    if (strcmp(u->status, "running") == 0 && held && (!run[0] || strcmp(run, u->id) == 0)) {
        snprintf(shown, len, "running (pid %s)", pid[0] ? pid : "?");
        return 0;
    }
    if (strcmp(u->status, "running") == 0)
        snprintf(shown, len, "interrupted (recorded as running, but no search holds it: the one "
                 "that ran it was killed or died)");
    else if (strcmp(u->status, "stopped") == 0)
        snprintf(shown, len, "stopped (interrupted)");
    else
        snprintf(shown, len, "%s", u->status);
    return strcmp(u->status, "done") != 0;
}

static void print_header(const char *workspace, const kiln_rv_run *r)
{
    const kiln_run *u = &r->run;
    int kept = 0;
    for (int i = 0; i < r->nc; i++)
        kept += r->c[i].kept && r->c[i].n > 0;
    char start[32], shown[160];
    kiln_rv_fmt_date(r->started_at, start, sizeof start);
    int resumable = liveness(workspace, u, shown, sizeof shown);
    printf("run %s: %s, task %s %s/%s group %s, agent %s%s%s\n", u->id, shown, u->task,
           u->backend, u->dtype, u->grp, u->agent, u->model[0] ? " " : "", u->model);
    if (resumable)
        printf("resume with: kiln search --workspace %s --resume %s\n", workspace, u->id);
    printf("started %s; iterations %d", start, u->iterations_done);
    if (u->budget_iterations)
        printf(" of %d", u->budget_iterations);
    printf(", candidates %d, kept %d\n", r->nc, kept);
}

static void print_best(const kiln_rv_run *r)
{
    if (r->best < 0 || !r->best_record) {
        printf("best: none kept\n");
        return;
    }
    const kiln_rv_cand *b = &r->c[r->best];
    const kiln_verdict *v = r->best_record;
    kiln_interval g;
    char gs[64];
    kiln_geomean_interval(v, &g);
    kiln_rv_fmt_speedup(v->geomean_speedup, g.lo, g.hi, gs, sizeof gs);
    printf("best: #%d %.12s, %s against the task's baseline (min %.2fx), %.0f%% of roofline; %s\n",
           b->n, b->commit, gs, kiln_rv_fin(v->min_speedup), 100 * kiln_rv_fin(v->median_roofline),
           r->best_pooled ? "two records pooled" : "one record, unconfirmed (a run from before pooling)");
    printf("  %.200s\n", b->hypothesis);
    for (int i = 0; i < v->nresults; i++) {
        const kiln_shape_result *s = &v->results[i];
        if (!s->timed)
            continue;
        char dims[128], ct[32], bt[32];
        kiln_verdict_dims(v, s, dims, sizeof dims);
        kiln_rv_fmt_time(s->cand.median_ns, ct, sizeof ct);
        kiln_rv_fmt_time(s->base.median_ns, bt, sizeof bt);
        kiln_interval x = kiln_shape_interval(s);
        char sp[64];
        kiln_rv_fmt_speedup(s->speedup, x.lo, x.hi, sp, sizeof sp);
        printf("  %-4s %-22s %10s vs %10s  %-24s %3.0f%% of roofline\n", s->id, dims, ct, bt, sp,
               100 * kiln_rv_fin(s->roofline_fraction));
    }
}

/* Every kept candidate after the start: the geomean it was kept on, with
 * its interval, against its parent (and re-timed) and the task's baseline,
 * and the decision's reason. */
static void print_kept(const kiln_rv_run *r)
{
    const kiln_run *u = &r->run;
    if (u->keep_margin >= 0 && u->objective[0])
        printf("keep rule: %s's lower end above %.3fx, no shape surely below %.3fx\n",
               u->objective, 1 + u->keep_margin, 1 - u->max_regression);
    for (int i = 0; i < r->nc; i++) {
        const kiln_rv_cand *c = &r->c[i];
        if (!c->kept || c->n == 0)
            continue;
        char claim[64], p[64], q[64], b[64];
        kiln_rv_fmt_kept(c, claim, p, q, b);
        printf("kept #%d: geomean %s vs parent, pooled (first %s, re-timed %s), %s vs baseline\n",
               c->n, claim, p, q, b);
        if (c->why[0])
            printf("  %.300s\n", c->why);
    }
}

/* The archive's cells, each elite's objective against the task's baseline
 * with its interval, and the lineage of the best (docs/search.md,
 * "Population"). */
static void print_archive(const kiln_rv_run *r)
{
    if (r->narchive > 0)
        printf("archive (parents: %s): %d cell%s\n", r->run.parents[0] ? r->run.parents : "best",
               r->narchive, r->narchive == 1 ? "" : "s");
    for (int i = 0; i < r->narchive; i++) {
        const kiln_elite *e = &r->archive[i];
        char sp[64];
        kiln_rv_fmt_speedup(e->speedup, e->lo, e->hi, sp, sizeof sp);
        printf("  %-24s #%d %.12s %s vs baseline%s\n", e->cell, e->n, e->commit, sp,
               strcmp(e->commit, r->run.head_commit) == 0 ? " (the best)" : "");
    }
    int line[256];
    int n = kiln_rv_lineage(r, line, 256);
    if (n == 0)
        return;
    printf("lineage of the best:");
    for (int i = 0; i < n; i++)
        printf("%s#%d", i ? " -> " : " ", r->c[line[i]].n);
    printf("\n");
}

/* Throughput per verifier: the verdicts each kilnd endpoint gave this run
 * (against the parent, re-times, records and re-records; from the stored
 * verdicts' "verifier"), per hour of the run's time, and the seconds each
 * took. */
typedef struct vstat {
    char endpoint[256], host[128], lanes[128];
    int verdicts;
    double seconds;
} vstat;

static void count_verdict(const char *text, vstat *vs, int *n, int cap)
{
    cJSON *o = text ? cJSON_Parse(text) : NULL;
    const cJSON *who = cJSON_GetObjectItemCaseSensitive(o, "verifier");
    const char *ep = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(who, "endpoint"));
    const char *host = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(who, "host"));
    const char *lane = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(who, "lane"));
    int i = 0;
    while (ep && i < *n && strcmp(vs[i].endpoint, ep) != 0)
        i++;
    if (ep && i == *n && *n < cap) {
        memset(&vs[i], 0, sizeof vs[i]);
        snprintf(vs[i].endpoint, sizeof vs[i].endpoint, "%s", ep);
        snprintf(vs[i].host, sizeof vs[i].host, "%s", host ? host : "?");
        (*n)++;
    }
    if (ep && i < *n) {
        vs[i].verdicts++;
        vs[i].seconds += kiln_rv_num(o, "seconds");
        char *l = vs[i].lanes;
        size_t used = strlen(l), ll = lane ? strlen(lane) : 0;
        int have = 0;
        for (const char *p = l; lane && (p = strstr(p, lane)); p += ll)
            have |= (p == l || p[-1] == ',') && (p[ll] == ',' || !p[ll]);
        if (lane && *lane && !have && used + ll + 2 < sizeof vs[i].lanes)
            snprintf(l + used, sizeof vs[i].lanes - used, "%s%s", used ? "," : "", lane);
    }
    cJSON_Delete(o);
}

static void print_verifiers(sqlite3 *db, const kiln_rv_run *r)
{
    static const char *which[] = {"verdict", "confirm", "record", "rerecord"};   /* not "pooled": made here */
    vstat vs[64];
    int n = 0;
    for (int i = 0; i < r->nc; i++)
        for (int k = 0; k < 4; k++) {
            char *text = kiln_db_cand_get_verdict(db, r->run.id, r->c[i].n, which[k]);
            count_verdict(text, vs, &n, 64);
            free(text);
        }
    if (n == 0)
        return;
    double span = r->run.seconds_used > 0 ? r->run.seconds_used : r->updated_at - r->started_at;
    printf("verifiers: %d (verdicts per hour of the run's %.0f s)\n", n, span);
    for (int i = 0; i < n; i++)
        printf("  %-40s %s, lanes %s: %d verdict%s, %.0f/h, %.1f s each\n", vs[i].endpoint,
               vs[i].host, vs[i].lanes[0] ? vs[i].lanes : "?", vs[i].verdicts,
               vs[i].verdicts == 1 ? "" : "s", span > 0 ? vs[i].verdicts * 3600.0 / span : 0,
               vs[i].seconds / vs[i].verdicts);
}

/* Candidates per hour and where the wall time went (docs/search.md,
 * "Where the time goes"); a run recorded before kiln measured it has no
 * waits to show. */
static void print_shares(const kiln_rv_run *r)
{
    kiln_shares sh;
    char line[256];
    if (kiln_rv_shares(r, &sh) < 0)
        return;
    kiln_shares_text(&sh, line, sizeof line);
    printf("  %s\n", line);
    if (r->run.prefetch_asked > 0) {
        kiln_asked_ahead_text(r->run.prefetch_asked, r->run.prefetch_dropped, "", line, sizeof line);
        printf("  %s\n", line);
    }
}

static void print_rest(sqlite3 *db, const kiln_rv_run *r)
{
    kiln_rv_reject rej[64];
    int n = kiln_rv_rejections(r, rej, 64);
    for (int i = 0; i < n; i++)
        printf("%s %s/%s %d\n", i ? "         " : "rejected:", rej[i].stage, rej[i].code, rej[i].count);
    int created, shown;
    kiln_lessons_run_counts(db, r->run.id, &created, &shown);
    if (created < 0 && shown < 0)
        printf("lessons: no lessons recorded\n");
    else
        printf("lessons: %d created, %d shown in prompts\n", created < 0 ? 0 : created, shown < 0 ? 0 : shown);
    printf("tokens: %lld (%lld prompt + %lld answer) in %d model call%s, %d failed\n",
           r->prompt_tokens + r->completion_tokens, r->prompt_tokens, r->completion_tokens,
           r->llm_calls, r->llm_calls == 1 ? "" : "s", r->llm_failed);
    printf("time: %.0f s", r->run.seconds_used);
    if (r->run.budget_seconds > 0)
        printf(" of %.0f s", r->run.budget_seconds);
    printf("\n");
    print_shares(r);
}

/* ---- --json: the same essentials as one object ------------------------------ */

static cJSON *best_json(const kiln_rv_run *r)
{
    if (r->best < 0 || !r->best_record)
        return cJSON_CreateNull();
    const kiln_rv_cand *b = &r->c[r->best];
    const kiln_verdict *v = r->best_record;
    kiln_interval g;
    kiln_geomean_interval(v, &g);
    cJSON *o = cJSON_CreateObject(), *shapes = cJSON_AddArrayToObject(o, "shapes");
    cJSON_AddNumberToObject(o, "n", b->n);
    cJSON_AddStringToObject(o, "commit", b->commit);
    cJSON_AddNumberToObject(o, "geomean", kiln_rv_fin(v->geomean_speedup));
    cJSON_AddNumberToObject(o, "lo", kiln_rv_fin(g.lo));
    cJSON_AddNumberToObject(o, "hi", kiln_rv_fin(g.hi));
    cJSON_AddNumberToObject(o, "min_speedup", kiln_rv_fin(v->min_speedup));
    cJSON_AddNumberToObject(o, "roofline", kiln_rv_fin(v->median_roofline));
    cJSON_AddBoolToObject(o, "pooled", r->best_pooled);
    cJSON_AddStringToObject(o, "hypothesis", b->hypothesis);
    for (int i = 0; i < v->nresults; i++) {
        const kiln_shape_result *sr = &v->results[i];
        if (!sr->timed)
            continue;
        char dims[128];
        kiln_verdict_dims(v, sr, dims, sizeof dims);
        kiln_interval x = kiln_shape_interval(sr);
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "id", sr->id);
        cJSON_AddStringToObject(e, "dims", dims);
        cJSON_AddNumberToObject(e, "candidate_ns", kiln_rv_fin(sr->cand.median_ns));
        cJSON_AddNumberToObject(e, "baseline_ns", kiln_rv_fin(sr->base.median_ns));
        cJSON_AddNumberToObject(e, "speedup", kiln_rv_fin(sr->speedup));
        cJSON_AddNumberToObject(e, "lo", kiln_rv_fin(x.lo));
        cJSON_AddNumberToObject(e, "hi", kiln_rv_fin(x.hi));
        cJSON_AddNumberToObject(e, "roofline", kiln_rv_fin(sr->roofline_fraction));
        cJSON_AddItemToArray(shapes, e);
    }
    return o;
}

/* Each kept candidate after the start: the claim it was kept on (against
 * its parent, pooled with the re-time when there was one), against the
 * task's baseline, and why. */
static cJSON *kept_json(const kiln_rv_run *r)
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < r->nc; i++) {
        const kiln_rv_cand *c = &r->c[i];
        if (!c->kept || c->n == 0)
            continue;
        int pooled = c->pooled_speedup > 0;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "n", c->n);
        cJSON_AddStringToObject(o, "commit", c->commit);
        cJSON_AddNumberToObject(o, "vs_parent", kiln_rv_fin(pooled ? c->pooled_speedup : c->speedup));
        cJSON_AddNumberToObject(o, "vs_parent_lo", kiln_rv_fin(pooled ? c->pooled_lo : c->speedup_lo));
        cJSON_AddNumberToObject(o, "vs_parent_hi", kiln_rv_fin(pooled ? c->pooled_hi : c->speedup_hi));
        cJSON_AddNumberToObject(o, "vs_baseline", kiln_rv_fin(c->speedup_vs_baseline));
        cJSON_AddStringToObject(o, "why", c->why);
        cJSON_AddItemToArray(a, o);
    }
    return a;
}

static cJSON *rest_json(const kiln_rv_run *r, cJSON *o)
{
    kiln_rv_reject rej[64];
    int n = kiln_rv_rejections(r, rej, 64);
    cJSON *a = cJSON_AddArrayToObject(o, "rejected"), *t = cJSON_AddObjectToObject(o, "tokens");
    for (int i = 0; i < n; i++) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "stage", rej[i].stage);
        cJSON_AddStringToObject(e, "code", rej[i].code);
        cJSON_AddNumberToObject(e, "count", rej[i].count);
        cJSON_AddItemToArray(a, e);
    }
    cJSON_AddNumberToObject(t, "prompt", (double)r->prompt_tokens);
    cJSON_AddNumberToObject(t, "answer", (double)r->completion_tokens);
    cJSON_AddNumberToObject(t, "calls", r->llm_calls);
    cJSON_AddNumberToObject(t, "failed", r->llm_failed);
    cJSON_AddNumberToObject(o, "seconds_used", r->run.seconds_used);
    cJSON_AddNumberToObject(o, "budget_seconds", r->run.budget_seconds);
    return o;
}

static cJSON *status_json(const char *workspace, const kiln_rv_run *r)
{
    const kiln_run *u = &r->run;
    char start[32], shown[160], pid[32], run[96];
    kiln_rv_fmt_date(r->started_at, start, sizeof start);
    int resumable = liveness(workspace, u, shown, sizeof shown), kept = 0;
    for (int i = 0; i < r->nc; i++)
        kept += r->c[i].kept && r->c[i].n > 0;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "run", u->id);
    cJSON_AddStringToObject(o, "status", u->status);
    cJSON_AddStringToObject(o, "shown", shown);
    cJSON_AddBoolToObject(o, "resumable", resumable);
    cJSON_AddStringToObject(o, "task", u->task);
    cJSON_AddStringToObject(o, "backend", u->backend);
    cJSON_AddStringToObject(o, "dtype", u->dtype);
    cJSON_AddStringToObject(o, "group", u->grp);
    cJSON_AddStringToObject(o, "agent", u->agent);
    cJSON_AddStringToObject(o, "model", u->model);
    cJSON_AddStringToObject(o, "started_at", start);
    cJSON_AddNumberToObject(o, "iterations_done", u->iterations_done);
    cJSON_AddNumberToObject(o, "budget_iterations", u->budget_iterations);
    cJSON_AddNumberToObject(o, "candidates", r->nc);
    cJSON_AddNumberToObject(o, "kept", kept);
    cJSON_AddItemToObject(o, "best", best_json(r));
    cJSON_AddItemToObject(o, "kept_candidates", kept_json(r));
    rest_json(r, o);
    if (holder(workspace, pid, run)) {
        cJSON *h = cJSON_AddObjectToObject(o, "holder");
        cJSON_AddStringToObject(h, "pid", pid);
        cJSON_AddStringToObject(h, "run", run);
    } else {
        cJSON_AddNullToObject(o, "holder");
    }
    return o;
}

int kiln_cmd_status(int argc, char **argv)
{
    const char *workspace = "kiln-work", *run = NULL;
    int json = 0;
    int rc = parse(argc, argv, &workspace, &run, &json);
    if (rc != 0)
        return rc > 0 ? KILN_EXIT_OK : KILN_EXIT_BAD_INPUT;
    kiln_error err = {0};
    sqlite3 *db = NULL;
    char(*ids)[32] = NULL;
    int nids = 0;
    kiln_rv_run r = {.best = -1};
    rc = kiln_rv_db_open(workspace, &db, &err) < 0 ? kiln_error_as(&err, KILN_ERR_BAD_INPUT)
                                                   : 0;
    if (rc == 0)
        rc = kiln_rv_run_ids(db, run, NULL, &ids, &nids, &err);
    if (rc == 0)
        rc = kiln_rv_run_load(db, ids[0], &r, &err);
    if (rc == 0 && json) {
        rc = kiln_print_json("status", status_json(workspace, &r)) < 0
                 ? kiln_fail(&err, "out of memory") : 0;
    } else if (rc == 0) {
        print_header(workspace, &r);
        print_best(&r);
        print_kept(&r);
        print_archive(&r);
        print_verifiers(db, &r);
        print_rest(db, &r);
        char pid[32], run_id[96];
        int held = holder(workspace, pid, run_id);
        if (held && strcmp(run_id, "-") == 0)
            printf("a kiln command that is not a search (pid %s) holds this workspace\n", pid);
        else if (held && run_id[0])
            printf("a search is running in this workspace (pid %s, run %s)\n", pid, run_id);
        else if (held)
            printf("a search is running in this workspace\n");
    } else {
        fprintf(stderr, "kiln status: %s\n", err.msg);
    }
    kiln_rv_run_free(&r);
    free(ids);
    kiln_db_close(db);
    return rc == 0 ? KILN_EXIT_OK : kiln_exit_status(&err);
}
