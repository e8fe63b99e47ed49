/* search_summary.c - what a finished (or stopped) search prints: iterations,
 * kept candidates, rejections by stage, the best kernel's per-shape
 * results (per-shape: every shape's incumbent), tokens and time; and the
 * same as a JSON event. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "iteration.h"
#include "search_state.h"
#include "shares.h"

void kiln_search_summary(search *s);

/* How many candidates were kept and tried, and the rejected ones by
 * "stage/code" into by_stage (most first). */
static void rejections(search *s, cJSON *by_stage, int *kept, int *total)
{
    kiln_outcome_count *c;
    int n;
    *kept = *total = 0;
    if (kiln_db_outcome_counts(s->db, s->run.id, &c, &n) < 0)
        return;
    for (int i = 0; i < n; i++) {
        *total += c[i].count;
        if (strcmp(c[i].decision, "keep") == 0) {
            *kept += c[i].count;
            continue;
        }
        char key[96];
        snprintf(key, sizeof key, "%s/%s", c[i].stage, c[i].code);
        cJSON_AddNumberToObject(by_stage, key, c[i].count);
    }
    free(c);
}

/* The best kept kernel's pooled verdict against the task's baseline per
 * visible timed shape, decoded from its stored text. */
static void print_best_shapes(FILE *out, const char *text)
{
    kiln_verdict *v = text ? malloc(sizeof *v) : NULL;
    kiln_error e;
    for (int i = 0; v && kiln_verdict_parse(text, v, &e) == 0 && i < v->nresults; i++) {
        const kiln_shape_result *r = &v->results[i];
        if (r->timed)
            fprintf(out, "  %-4s speedup %.2fx, %.0f%% of roofline\n", r->id, r->speedup,
                   100 * r->roofline_fraction);
    }
    free(v);
}

/* Per-shape: every visible shape's incumbent (NULL otherwise, or when
 * the run's kept kernels cannot be read; the summary goes on without). */
static kiln_incumbents *incumbents_of(search *s)
{
    kiln_error e;
    return kiln_search_per_shape(s) ? kiln_per_shape_incumbents(s, &e) : NULL;
}

static void print_incumbents(FILE *out, const kiln_incumbents *in)
{
    if (!in || in->n == 0)
        return;
    fprintf(out, "incumbents (each shape's kept kernel with the highest pooled speedup, which the "
                 "export serves there):\n");
    for (int i = 0; i < in->n; i++)
        fprintf(out, "  %-4s #%-3d %.2fx [%.2f, %.2f], %.0f%% of roofline\n", in->s[i].id,
                in->s[i].n, in->s[i].iv.point, in->s[i].iv.lo, in->s[i].iv.hi,
                100 * in->s[i].roofline);
}

static cJSON *incumbents_json(const kiln_incumbents *in)
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; in && i < in->n; i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "shape", in->s[i].id);
        cJSON_AddNumberToObject(o, "candidate", in->s[i].n);
        cJSON_AddNumberToObject(o, "speedup", in->s[i].iv.point);
        cJSON_AddNumberToObject(o, "lo", in->s[i].iv.lo);
        cJSON_AddNumberToObject(o, "hi", in->s[i].iv.hi);
        cJSON_AddNumberToObject(o, "roofline", in->s[i].roofline);
        cJSON_AddItemToArray(a, o);
    }
    return a;
}

static void print_text(FILE *out, search *s, const cJSON *by_stage, int kept, int total,
                       const char *best, const kiln_cand *bk)
{
    fprintf(out, "\nrun %s: %s (%s)\n", s->run.id, s->run.status, s->stop_reason);
    if (s->run.budget_iterations > 0 && s->run.iterations_done < s->run.budget_iterations &&
        strcmp(s->run.status, "failed") != 0)   /* a failure's reason is on the line above */
        fprintf(out, "iterations: %d of the %d asked for (stopped early: %s), candidates: %d, kept: %d\n",
               s->run.iterations_done, s->run.budget_iterations,
               s->stop_reason[0] ? s->stop_reason : s->run.status, total, kept);
    else
        fprintf(out, "iterations: %d, candidates: %d, kept: %d\n", s->run.iterations_done, total, kept);
    const cJSON *e;
    cJSON_ArrayForEach(e, by_stage)
        fprintf(out, "  rejected at %-28s %d\n", e->string, (int)e->valuedouble);
    if (s->run.head_commit[0]) {
        fprintf(out, "best: commit %.12s, %.2fx against the task's baseline (two records pooled)\n",
               bk->commit, bk->speedup_vs_baseline);
        if (strcmp(bk->commit, s->run.head_commit) != 0)   /* a keep of a lower figure moved it */
            fprintf(out, "head (the lineage the search continues): commit %.12s, %.2fx against "
                         "the task's baseline\n", s->run.head_commit, s->run.best_speedup);
    } else
        fprintf(out, "best: none (no kernel was verified)\n");
    print_best_shapes(out, best);
    kiln_incumbents *in = incumbents_of(s);
    print_incumbents(out, in);
    free(in);
    fprintf(out, "tokens: %lld, time: %.0f s\n", s->run.tokens_used, s->run.seconds_used);
    if (strstr(s->stop_reason, "disk is full") || strstr(s->stop_reason, "No space left"))
        fprintf(out, "the disk holding %s is full: what was recorded before stays; free space there, "
               "then resume\n", s->ws.dir);
    /* The run keeps the start kernel's source: resumed, it would fail the
     * same compile (iteration.c, start_not_compiled, says what failed). */
    if (strncmp(s->stop_reason, "the start kernel ", 17) == 0 &&
        strstr(s->stop_reason, " does not compile")) {
        fprintf(out, "branch %s in %s; fix the start kernel, then start a new run (resumed, this "
                "one would compile the same source)\n", s->run.branch, s->ws.dir);
        return;
    }
    fprintf(out, "branch %s in %s; resume with: kiln search %s --workspace %s --resume %s\n",
           s->run.branch, s->ws.dir, s->task.name, s->ws.dir, s->run.id);
}

/* Candidates per hour and where the wall time went (shares.h), with what
 * pipelining did this session (docs/search.md, "Pipelining"). */
static void time_shares(search *s, kiln_shares *sh)
{
    kiln_cand *all;
    int n, decided = 0;
    kiln_error e;
    if (kiln_db_cands(s->db, s->run.id, &all, &n, &e) == 0) {
        for (int i = 0; i < n; i++)
            decided += all[i].n > 0 && all[i].decision[0];
        free(all);
    }
    kiln_shares_of(&s->run, decided, sh);
}

/* A model proposer and verification through kilnd: drafts could be asked
 * for ahead (prefetch.h), and the summary says whether they were. */
static int pipelining_possible(search *s)
{
    kiln_judge_seam j = kiln_search_seam(s);
    return s->use_llm && j.ops->ahead(j.self) && s->run.pipe.model_n > 0;
}

static void print_shares(FILE *out, search *s, const kiln_shares *sh)
{
    char line[256];
    kiln_shares_text(sh, line, sizeof line);
    fprintf(out, "%s\n", line);
    if (pipelining_possible(s)) {
        kiln_pipelined_text(&s->run.pipe, s->run.prefetch_dropped,
                            s->run.prefetch_dropped ? " (the run stopped first)" : "", line,
                            sizeof line);
        fprintf(out, "%s\n", line);
    }
}

static void add_shares(search *s, cJSON *o, const kiln_shares *sh)
{
    cJSON_AddNumberToObject(o, "candidates_per_hour", sh->per_hour);
    cJSON_AddNumberToObject(o, "model_wait_seconds", s->run.model_wait_s);
    cJSON_AddNumberToObject(o, "verify_wait_seconds", s->run.verify_wait_s);
    cJSON *sh_o = cJSON_AddObjectToObject(o, "shares");
    cJSON_AddNumberToObject(sh_o, "model", sh->model);
    cJSON_AddNumberToObject(sh_o, "verification", sh->verify);
    cJSON_AddNumberToObject(sh_o, "kiln", sh->kiln);
    if (sh->lanes_busy >= 0)
        cJSON_AddNumberToObject(sh_o, "lanes_busy", sh->lanes_busy);
    cJSON *p = cJSON_AddObjectToObject(o, "pipelined");
    cJSON_AddNumberToObject(p, "asked_ahead", s->prefetch_asked);
    cJSON_AddNumberToObject(p, "answers_not_used", s->prefetch_dropped);
    cJSON_AddNumberToObject(p, "iterations", s->run.pipe.pipelined);
    cJSON_AddNumberToObject(p, "of_iterations", s->run.pipe.model_n);
    cJSON_AddNumberToObject(p, "saved_seconds", s->run.pipe.saved_s);
    cJSON_AddNumberToObject(p, "declined", s->run.pipe.declined);
    cJSON_AddNumberToObject(p, "model_seconds_per_iteration",
                            s->run.pipe.model_n ? s->run.pipe.model_s / s->run.pipe.model_n : 0);
    cJSON_AddNumberToObject(p, "verify_seconds_per_iteration",
                            s->run.pipe.verify_n ? s->run.pipe.verify_s / s->run.pipe.verify_n : 0);
}

void kiln_search_summary(search *s)
{
    kiln_shares sh;
    time_shares(s, &sh);
    cJSON *by_stage = cJSON_CreateObject();
    int kept, total;
    rejections(s, by_stage, &kept, &total);
    /* The best kept kernel (the head where none is found): its pooled
     * verdict against the task's baseline, as stored. */
    kiln_cand *bk = calloc(1, sizeof *bk);
    if (!bk) {
        cJSON_Delete(by_stage);
        return;
    }
    if (kiln_search_best_kept(s, bk) < 0) {
        snprintf(bk->commit, sizeof bk->commit, "%s", s->run.head_commit);
        bk->speedup_vs_baseline = s->run.best_speedup;
        bk->n = -1;
    }
    char *best = kiln_db_record_verdict_at(s->db, s->run.id, bk->commit);
    /* Where stdout's reader went away (kiln search | head), the summary
     * goes to stderr, as text: it may still reach the terminal. */
    int gone = kiln_search_output_gone();
    if (s->o->json && !gone) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "status", s->run.status);
        cJSON_AddStringToObject(o, "reason", s->stop_reason);
        cJSON_AddNumberToObject(o, "iterations", s->run.iterations_done);
        cJSON_AddNumberToObject(o, "candidates", total);
        cJSON_AddNumberToObject(o, "kept", kept);
        cJSON_AddItemToObject(o, "rejected", by_stage);
        cJSON_AddStringToObject(o, "best_commit", bk->commit);
        cJSON_AddNumberToObject(o, "best_speedup", bk->speedup_vs_baseline);
        cJSON_AddNumberToObject(o, "best_candidate", bk->n);
        cJSON_AddStringToObject(o, "head_commit", s->run.head_commit);
        cJSON_AddNumberToObject(o, "head_speedup", s->run.best_speedup);
        cJSON_AddItemToObject(o, "best_verdict", best ? cJSON_CreateRaw(best) : cJSON_CreateNull());
        if (kiln_search_per_shape(s)) {
            kiln_incumbents *in = incumbents_of(s);
            cJSON_AddItemToObject(o, "incumbents", incumbents_json(in));
            free(in);
        }
        free(best);
        cJSON_AddNumberToObject(o, "tokens", (double)s->run.tokens_used);
        cJSON_AddNumberToObject(o, "seconds", s->run.seconds_used);
        add_shares(s, o, &sh);
        kiln_progress_event(&s->progress, "summary", o);
        free(bk);
        return;
    }
    FILE *out = gone ? stderr : stdout;
    print_text(out, s, by_stage, kept, total, best, bk);
    print_shares(out, s, &sh);
    fflush(out);
    cJSON_Delete(by_stage);
    free(best);
    free(bk);
}
