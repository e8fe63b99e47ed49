/* loop_events.c - what the iteration tells the person or script watching
 * (progress.h: the status line, "step" and "candidate" events) and what
 * it teaches the lessons (knowledge/: a verdict's note or speed lesson,
 * and the confirmed outcome of a decision). A lesson that cannot be
 * stored does not stop the search. */
#include <stdio.h>
#include <string.h>

#include "iteration.h"
#include "lessons.h"

void kiln_say(search *s, const kiln_cand *c, const char *what)
{
    snprintf(s->progress.last, sizeof s->progress.last, "#%d %s", c->n, what);
    kiln_progress_update(&s->progress, 0);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "candidate", c->n);
    cJSON_AddStringToObject(o, "what", what);
    cJSON_AddStringToObject(o, "hypothesis", c->hypothesis);
    kiln_progress_event(&s->progress, "step", o);
}

const char *kiln_run_width_class(const search *s)
{
    const kiln_task *t = &s->task;
    int g = s->run.grp[0] ? kiln_task_group_for(t, s->run.backend, s->run.grp)
                          : kiln_task_default_group_for(t, s->run.backend);
    if (g < 0 || t->ndims <= 0)
        return "";
    /* The row is the reduction's dim when there is one, else the last. */
    int dim = t->reduction_dim >= 0 ? t->reduction_dim : t->ndims - 1;
    long long widest = 0;
    for (int i = 0; i < t->groups[g].nvisible; i++)
        if (t->groups[g].visible[i].d[dim] > widest)
            widest = t->groups[g].visible[i].d[dim];
    return kiln_lesson_width_class(widest);
}

/* What verdict v of candidate c (its speedup against the parent, that
 * speedup's noise and, when pooled, its interval lo..hi) teaches: a failure
 * note for the lineage, or, when v pools the verdict and its re-time
 * (pooled 1), a lesson if the change surely helped or hurt
 * (knowledge/record.c decides). A single measurement teaches no speed
 * lesson. */
void kiln_learn(search *s, const kiln_cand *c, const kiln_verdict *v, double speedup,
                double noise, int pooled, double lo, double hi)
{
    kiln_lesson_event ev = {.run = s->run.id, .candidate = c->n, .task = s->task.name,
                            .dtype = s->run.dtype, .backend = s->run.backend,
                            .group = s->run.grp, .width = kiln_run_width_class(s),
                            .proposer = c->proposer,
                            .hypothesis = c->hypothesis, .status = v->status, .stage = v->stage,
                            .code = v->code, .reason = v->reason, .speedup = speedup,
                            .noise = noise, .decision = c->decision, .verdict = v,
                            .pooled = pooled, .lo = lo, .hi = hi};
    kiln_error e;
    kiln_lessons_record(s->db, &ev, &e);
}

void kiln_learn_baseline(search *s, const kiln_cand *c)
{
    kiln_error e;
    kiln_lessons_baseline(s->db, s->run.id, c->n, c->speedup_vs_baseline,
                          kiln_db_commit_vs_baseline(s->db, c->parent), &e);
}

/* Lessons shown to this candidate's prompt gain confidence when it was
 * kept after its re-time and lose it when it broke the kernel or its
 * pooled re-timed measurement shows it surely slower; a candidate screened
 * out on its one first measurement, and everything else, moves nothing
 * (knowledge/outcome.c decides). */
static void judge_lessons(search *s, const kiln_cand *c)
{
    int pooled = c->pooled_speedup > 0;   /* re-timed: the verdict and its re-time pooled */
    kiln_lesson_decision d = {.run = s->run.id, .candidate = c->n, .status = c->status,
                              .stage = c->stage, .code = c->code, .decision = c->decision,
                              .why = c->why, .speedup_hi = pooled ? c->pooled_hi : 0,
                              .pooled = pooled};
    kiln_error e;
    kiln_lessons_decided(s->db, &d, &e);
}

void kiln_report(search *s, const kiln_cand *c)
{
    judge_lessons(s, c);
    char line[256];
    if (strcmp(c->decision, "keep") == 0)
        snprintf(line, sizeof line, "#%d kept: %.2fx [%.2f, %.2f] vs parent (pooled), %.2fx vs "
                 "baseline", c->n, c->pooled_speedup, c->pooled_lo, c->pooled_hi,
                 c->speedup_vs_baseline);
    else
        snprintf(line, sizeof line, "#%d reverted: %.180s", c->n, c->reason);
    snprintf(s->progress.last, sizeof s->progress.last, "%s", line);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "candidate", c->n);
    cJSON_AddNumberToObject(o, "iteration", c->iteration);
    cJSON_AddStringToObject(o, "proposer", c->proposer);
    cJSON_AddStringToObject(o, "hypothesis", c->hypothesis);
    cJSON_AddStringToObject(o, "status", c->status);
    cJSON_AddStringToObject(o, "stage", c->stage);
    cJSON_AddStringToObject(o, "code", c->code);
    cJSON_AddStringToObject(o, "decision", c->decision);
    cJSON_AddStringToObject(o, "reason", c->reason);
    cJSON_AddNumberToObject(o, "speedup_vs_parent", c->speedup);
    if (c->pooled_speedup > 0)   /* the claim: the verdict and its re-time pooled */
        cJSON_AddNumberToObject(o, "pooled_speedup_vs_parent", c->pooled_speedup);
    if (strcmp(c->decision, "keep") == 0)
        cJSON_AddNumberToObject(o, "speedup_vs_baseline", c->speedup_vs_baseline);
    cJSON_AddStringToObject(o, "why", c->why);
    cJSON_AddStringToObject(o, "commit", c->commit);
    kiln_progress_event(&s->progress, "candidate", o);
}
