/* cand_git.c - a decided candidate into the workspace (iteration.h): its
 * commit with the verdicts in the message and the notes, then the branch,
 * the archive and the tag for a keep, refs/kiln/rejected for a revert.
 * Everything it writes comes from the candidate in memory. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "iteration.h"

/* Seconds since the epoch, as rundb.c dates rows (not the monotonic clock). */
static double epoch_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The run's settings, in each note: the last note of a run gives a
 * rebuilt database (db_rebuild.c) the run's row as it was then. */
static void add_settings(cJSON *o, const kiln_run *r)
{
    cJSON *t = cJSON_AddObjectToObject(o, "settings");
    cJSON_AddStringToObject(t, "agent", r->agent);
    cJSON_AddStringToObject(t, "model", r->model);
    cJSON_AddStringToObject(t, "base_url", r->base_url);
    cJSON_AddStringToObject(t, "from", r->from_path);
    cJSON_AddNumberToObject(t, "seed", (double)r->seed);
    cJSON_AddNumberToObject(t, "iterations", r->budget_iterations);
    cJSON_AddNumberToObject(t, "budget_s", r->budget_seconds);
    cJSON_AddNumberToObject(t, "max_tokens", (double)r->budget_tokens);
    cJSON_AddNumberToObject(t, "drafts", r->drafts);
    cJSON_AddNumberToObject(t, "keep_margin", r->keep_margin);
    cJSON_AddNumberToObject(t, "max_regression", r->max_regression);
    cJSON_AddStringToObject(t, "objective", r->objective);
    cJSON_AddStringToObject(t, "parents", r->parents);
}

static char *note_json(search *s, const kiln_draft *d)
{
    const kiln_cand *c = &d->c;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "run", s->run.id);
    cJSON_AddNumberToObject(o, "candidate", c->n);
    cJSON_AddStringToObject(o, "proposer", c->proposer);
    cJSON_AddStringToObject(o, "hypothesis", c->hypothesis);
    cJSON_AddStringToObject(o, "decision", c->decision);
    cJSON_AddStringToObject(o, "reason", c->reason);
    cJSON_AddStringToObject(o, "why", c->why);
    /* what `kiln db rebuild` (harness/db_rebuild.c) needs besides the verdicts */
    cJSON_AddNumberToObject(o, "iteration", c->iteration);
    cJSON_AddNumberToObject(o, "draft", c->draft);
    cJSON_AddNumberToObject(o, "updated_at", c->updated_at);   /* its done row's time */
    cJSON *jobs = cJSON_AddObjectToObject(o, "jobs");
    cJSON_AddStringToObject(jobs, "verdict", c->job);
    cJSON_AddStringToObject(jobs, "confirm", c->confirm_job);
    cJSON_AddStringToObject(jobs, "record", c->record_job);
    cJSON_AddStringToObject(jobs, "rerecord", c->rerecord_job);
    add_settings(o, &s->run);
    static const kiln_cand_text which[] = {KILN_TEXT_VERDICT, KILN_TEXT_CONFIRM, KILN_TEXT_RECORD,
                                           KILN_TEXT_RERECORD, KILN_TEXT_POOLED};
    static const char *const names[] = {"verdict", "confirm", "record", "rerecord", "pooled"};
    for (int i = 0; i < 5; i++)   /* the encoder's JSON, as it was stored */
        if (d->text[which[i]])
            cJSON_AddItemToObject(o, names[i], cJSON_CreateRaw(d->text[which[i]]));
    char *s2 = cJSON_Print(o);
    cJSON_Delete(o);
    return s2;
}

int kiln_cand_commit(search *s, kiln_draft *d, kiln_error *err)
{
    kiln_cand *c = &d->c;
    const char *src = d->text[KILN_TEXT_SOURCE];
    if (!src)
        return kiln_fail(err, "candidate %d has no stored source", c->n);
    char msg[2048];
    snprintf(msg, sizeof msg,
             "%s\n\nkiln run %s, candidate %d (iteration %d, draft %d, proposer %s)\n"
             "verdict against parent: %s at %s (%s), %.3fx [%.3f, %.3f]\ndecision: %s%s%.600s\n",
             c->hypothesis[0] ? c->hypothesis : "(no hypothesis given)", s->run.id, c->n,
             c->iteration, c->draft, c->proposer, c->status, c->stage, c->code, c->speedup,
             c->speedup_lo, c->speedup_hi, c->decision, c->why[0] ? " - " : "", c->why);
    if (kiln_ws_commit(&s->ws, c->parent, s->relpath, src, msg, c->commit, err) < 0)
        return -1;
    return kiln_cand_move(s, d, KILN_CAND_COMMITTED, err);
}

/* Tag the kernel when it beats what the tag points to (both measured
 * against the task's baseline, as recorded in their notes: the pooled
 * verdict, or the record of a kernel tagged before pooling). */
static int maybe_tag(search *s, const kiln_cand *c, kiln_error *err)
{
    char tag[256], ref[300], old[41];
    snprintf(tag, sizeof tag, "kiln/best/%s/%s/%s", s->task.name, s->run.backend, s->run.dtype);
    snprintf(ref, sizeof ref, "refs/tags/%s", tag);
    kiln_error e;
    if (kiln_ws_resolve(&s->ws, ref, old, &e) == 0) {
        char *text = kiln_ws_note_read(&s->ws, KILN_VERDICT_NOTES_REF, old);
        double best = 0;
        cJSON *n = text ? cJSON_Parse(text) : NULL;
        kiln_verdict *rec = n ? malloc(sizeof *rec) : NULL;
        const cJSON *p = cJSON_GetObjectItemCaseSensitive(n, "pooled");
        if (!p)
            p = cJSON_GetObjectItemCaseSensitive(n, "record");
        if (rec && kiln_verdict_from_cjson(p, rec, &e) == 0)
            best = rec->geomean_speedup;
        free(rec);
        cJSON_Delete(n);
        free(text);
        if (best >= c->speedup_vs_baseline)
            return 0;
    }
    return kiln_ws_tag(&s->ws, tag, c->commit, err);
}

/* A child of the head that was kept beat the head by the keep rule; a
 * child of another elite must also beat the head's speedup against the
 * task's baseline. Per-shape, a keep won a shape, not the geomean: the
 * branch (the geomean lineage) moves only to one whose pooled geomean
 * against the baseline beats the head's. Decided from the run as it was
 * before this iteration, so a resume decides the same. */
int kiln_cand_becomes_best(const search *s, const kiln_cand *c)
{
    if (!s->run.head_commit[0])
        return 1;
    if (kiln_search_per_shape(s))
        return c->speedup_vs_baseline > s->run.best_speedup;
    return strcmp(c->parent, s->run.head_commit) == 0 || c->speedup_vs_baseline > s->run.best_speedup;
}

/* e's cell and objective from d's pooled verdict against the task's
 * baseline (the record in a run from before pooling) and its source; 0
 * when d has neither (it stays out). */
static int elite_of(search *s, const kiln_draft *d, kiln_elite *e)
{
    const kiln_cand *c = &d->c;
    const kiln_verdict *v = d->vs_baseline ? d->vs_baseline : d->v[KILN_JUDGE_RECORD];
    const char *src = d->text[KILN_TEXT_SOURCE];
    *e = (kiln_elite){.n = c->n, .speedup = c->speedup_vs_baseline, .lo = c->baseline_lo,
                      .hi = c->baseline_hi};
    snprintf(e->commit, sizeof e->commit, "%s", c->commit);
    if (!v || !src)
        return 0;
    kiln_interval iv;
    char why[160];
    kiln_archive_cell(v, src, e->cell, sizeof e->cell);
    if (kiln_objective_interval(v, s->keep.objective, &iv, why, sizeof why) == 0)
        e->speedup = iv.point, e->lo = iv.lo, e->hi = isfinite(iv.hi) ? iv.hi : 0;
    return 1;
}

/* Offer kept candidate d to the archive (the cell update rule); when it
 * takes its cell, refs/kiln/archive/<run>/<cell> points to it. The ref is
 * set before the row, so a crash between them is repaired by offering d
 * again on resume. */
static int archive_offer(search *s, const kiln_draft *d, kiln_error *err)
{
    kiln_elite e, *a;
    int n;
    if (!elite_of(s, d, &e))
        return 0;
    if (kiln_db_archive(s->db, s->run.id, &a, &n, err) < 0)
        return -1;
    kiln_elite *more = realloc(a, (size_t)(n + 1) * sizeof *a);
    if (!more) {
        free(a);
        return kiln_fail(err, "out of memory");
    }
    int at = kiln_archive_offer(more, &n, KILN_ARCHIVE_MAX, &e);
    free(more);
    if (at < 0)
        return 0;
    char ref[256];
    snprintf(ref, sizeof ref, "refs/kiln/archive/%s/%s", s->run.id, e.cell);
    if (kiln_ws_set_ref(&s->ws, ref, d->c.commit, err) < 0)
        return -1;
    return kiln_db_archive_put(s->db, s->run.id, &e, err);
}

/* A kept candidate: into the archive; onto the branch when it is the new
 * best, else under refs/kiln/kept/<run>/<n> (its cell's ref may move on). */
static int apply_keep(search *s, const kiln_draft *d, kiln_error *err)
{
    const kiln_cand *c = &d->c;
    if (archive_offer(s, d, err) < 0)
        return -1;
    if (kiln_cand_becomes_best(s, c))
        return kiln_ws_reset_hard(&s->ws, c->commit, err) < 0 ? -1 : maybe_tag(s, c, err);
    char ref[128];
    snprintf(ref, sizeof ref, "refs/kiln/kept/%s/%d", s->run.id, c->n);
    return kiln_ws_set_ref(&s->ws, ref, c->commit, err);
}

int kiln_cand_apply(search *s, kiln_draft *d, kiln_error *err)
{
    const kiln_cand *c = &d->c;
    /* The done row gets the time the note holds, so a rebuilt database
     * (db_rebuild.c) orders and dates the candidates as this one does. */
    d->c.updated_at = epoch_now();
    char *note = note_json(s, d), line[1024];
    snprintf(line, sizeof line, "kiln: %s (%s at %s, %.3fx vs parent, %.3fx vs baseline); "
             "run %s candidate %d; verdicts: git notes --ref=kiln-verdict show",
             c->decision, c->status, c->stage, c->speedup, c->speedup_vs_baseline, s->run.id, c->n);
    int rc = note ? kiln_ws_note(&s->ws, c->commit, line, note, err) : kiln_fail(err, "out of memory");
    free(note);
    if (rc < 0)
        return -1;
    if (strcmp(c->decision, "keep") == 0) {
        if (apply_keep(s, d, err) < 0)
            return -1;
    } else {
        /* The branch stays on the best, whichever elite was the parent. */
        char ref[128];
        snprintf(ref, sizeof ref, "refs/kiln/rejected/%s/%d", s->run.id, c->n);
        if (kiln_ws_set_ref(&s->ws, ref, c->commit, err) < 0 ||
            kiln_ws_reset_hard(&s->ws, s->run.head_commit[0] ? s->run.head_commit : c->parent,
                               err) < 0)
            return -1;
    }
    return kiln_cand_move(s, d, KILN_CAND_DONE, err);
}
