/* iteration.c - one iteration of a search as a state machine.
 *
 * A candidate's states (cand_state.h; the run database stores their
 * names) and, for each move, the function that performs it:
 *
 *   from        to          when                                  by
 *   ----------  ----------  ------------------------------------  ------------------------
 *   (none)      proposed    a proposal: its row and source stored  propose.c add_candidate
 *   (none)      done        a proposal that failed (no code block,  propose.c add_candidate
 *                           the model call failed): reverted
 *   proposed    decided     the same source as one the run          duplicates.c
 *                           verified: reverted, never judged         duplicate_step
 *   proposed    verified    its verdict against its parent          cand_steps.c judge_step
 *   proposed    decided     the start kernel: its record and        measure_start (here)
 *                           re-record against the task's baseline
 *   verified    decided     the rule reverts it (a failure, not     verify_phase,
 *                           clear of the margin, a regression, or    choose_phase (here)
 *                           its re-time falls short); or another
 *                           draft of the iteration was kept
 *   verified    confirmed   its re-time held: the rule asks for     cand_steps.c
 *                           its measurement against the baseline     kiln_cand_advance
 *   confirmed   decided     record and re-record: kept, or          choose_phase (here)
 *                           reverted when one did not pass
 *   decided     committed   committed as a child of its parent      cand_git.c kiln_cand_commit
 *   committed   done        notes; the branch, archive and tag, or  cand_git.c kiln_cand_apply
 *                           refs/kiln/rejected
 *
 * cand_state.c lists these moves and refuses any other (a bug in kiln).
 * Every move goes through cand_move.c (kiln_cand_move; a decision through
 * kiln_cand_decide), which writes the candidate's row before the next step
 * starts, and every job id is written as the verifier accepts it, so a
 * run stopped anywhere resumes where it was: an interrupted iteration
 * starts again from its stored rows, and each phase below skips what their
 * states say is done. The rule's decisions are decide.c's, taken in turn
 * by cand_steps.c's kiln_cand_advance.
 *
 * The iteration's phases, in order:
 *
 *   parent   choose_parent       the stored proposals' parent, the one the
 *                                drafts were asked from ahead, the best,
 *                                or a draw from the archive
 *   propose  propose             the proposer's drafts, handed over in
 *                                memory as propose.c records them
 *   ahead    submit_ahead        through kilnd, every new draft handed over
 *                                before the first is waited for
 *   verify   verify_phase        each draft: a duplicate, or judged against
 *                                its parent and screened by the rule
 *   choose   choose_phase        the contenders in order of speedup, each
 *                                taken through the rule's judgements until
 *                                kept or reverted (decide.h)
 *   finish   finish_phase        the reverted committed and parked first,
 *                                then the winner, so the branch ends on it
 *   report   kiln_report         each candidate's event; the best moved
 *
 * The decisions are decide.h's rule, the judgements go through the judge
 * seam (judge_seam.h). An iteration's candidates, their sources and their
 * verdicts, decoded once, stay in memory (iteration.h): the database is
 * written as they move, and read only to resume. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "iteration.h"
#include "prefetch.h"

/* The stored candidates of iteration it (a resumed one's), with the texts
 * and verdicts of those not done. */
static int load(search *s, kiln_iteration *t, int it, kiln_error *err)
{
    kiln_cand *rows;
    int n;
    *t = (kiln_iteration){.it = it, .parent_n = -1};
    if (kiln_db_cands_of(s->db, s->run.id, it, &rows, &n, err) < 0)
        return -1;
    for (int i = 0; i < n; i++) {
        kiln_draft *d = kiln_iteration_grow(t);
        if (!d) {
            free(rows);
            return kiln_fail(err, "out of memory");
        }
        d->c = rows[i];
        if (d->c.state == KILN_CAND_DONE)
            continue;   /* nothing left to do but report it */
        for (int k = 0; k < KILN_NTEXTS; k++)
            if (k != KILN_TEXT_ANSWER)
                d->text[k] = kiln_db_cand_text(s->db, s->run.id, d->c.n, (kiln_cand_text)k);
        kiln_cand_decode(d);
    }
    free(rows);
    return 0;
}

/* ---- parent and proposals ---------------------------------------------------- */

/* The parent of iteration it into s->parent: the one its stored proposals
 * name (a resumed iteration), else the one its drafts were asked from
 * while the iteration before it was verified (prefetch.h), else the head
 * (--parents best) or a draw from the archive (kiln_archive_pick, seeded
 * by the run's seed). */
static int choose_parent(search *s, const kiln_iteration *t, kiln_error *err)
{
    const char *ahead = t->n > 0 ? NULL : kiln_prefetch_parent(s, t->it);
    if (s->prefetch && !ahead)
        kiln_prefetch_cancel(s);   /* asked for another iteration: never the case, never lost */
    if (t->n > 0 || ahead) {
        snprintf(s->parent, sizeof s->parent, "%s", t->n > 0 ? t->d[0].c.parent : ahead);
        return 0;
    }
    return kiln_search_draw_parent(s, t->it, s->parent, err);
}

/* Iteration it's proposals, into t as they are recorded: the answers
 * asked for during the iteration before it, else asked for now. 0, 1
 * interrupted while waiting for the model, 2 the proposer has nothing
 * left, -1 error. */
static int propose(search *s, kiln_iteration *t, kiln_error *err)
{
    int first = kiln_db_cand_next(s->db, s->run.id, err);
    if (first < 0)
        return -1;
    /* The parent's measurement against the baseline: what the prompt shows. */
    char *verdict = kiln_db_record_verdict_at(s->db, s->run.id, s->parent);
    int rc;
    s->proposing = t;
    if (kiln_prefetch_parent(s, t->it))
        rc = kiln_prefetch_collect(s, t->it, first, err);
    else if ((rc = kiln_propose(s, t->it, first, t->parent_src, verdict, err)) == 1)
        rc = 2;
    s->proposing = NULL;
    free(verdict);
    return rc;
}

/* ---- the phases ---------------------------------------------------------------- */

/* Pipelining: through kilnd, every new proposal of the iteration is handed
 * over before the first is waited for, so kilnd compiles one while it
 * times another and keeps every lane busy; the verify phase then waits
 * for each. */
static void submit_ahead(search *s, kiln_iteration *t)
{
    kiln_judge_seam j = kiln_search_seam(s);
    if (!j.ops->ahead(j.self) || t->n < 2)
        return;
    for (int i = 0; i < t->n && !kiln_search_should_stop(); i++)
        if (kiln_dup_fresh(s, t, i))
            kiln_cand_hand_over(s, t, &t->d[i], KILN_JUDGE_VERDICT);
}

/* Record the rule's decision on d (advance's 1). */
static int decided(search *s, kiln_draft *d, int rc, const kiln_step *final, kiln_error *err)
{
    if (rc <= 0)
        return rc;
    return kiln_cand_decide(s, d, final->what, final->why, err);
}

/* Steps that need no ordering: every proposal judged against its parent
 * (unless its source was verified before), screened by the rule. 0, 1
 * interrupted, -1 error. */
static int verify_phase(search *s, kiln_iteration *t, const kiln_rule *r, kiln_error *err)
{
    for (int i = 0; i < t->n; i++) {
        kiln_draft *d = &t->d[i];
        if (kiln_search_should_stop())
            return 1;
        if (d->c.state == KILN_CAND_PROPOSED) {
            int dup = kiln_dup_check(s, t, d, err);
            if (dup != 0) {
                if (dup < 0)
                    return -1;
                continue;
            }
        }
        if (d->c.state != KILN_CAND_PROPOSED && d->c.state != KILN_CAND_VERIFIED)
            continue;
        kiln_step final;
        int rc = kiln_cand_advance(s, t, d, r, 1, &final, err);
        if (decided(s, d, rc, &final, err) < 0)
            return -1;
    }
    return 0;
}

/* The contenders' order: by speedup against the parent, fastest first; a
 * tie by number, so the order never rests on the sort. */
static int by_speedup(const void *a, const void *b)
{
    const kiln_cand *x = &((const kiln_draft *)a)->c, *y = &((const kiln_draft *)b)->c;
    if (x->speedup != y->speedup)
        return (x->speedup < y->speedup) - (x->speedup > y->speedup);
    return (x->n > y->n) - (x->n < y->n);
}

/* Contenders in order of speedup, each taken through the rule until it is
 * decided; with one winner an iteration, once one is kept the others are
 * reverted. With incumbents (per-shape), each keep is offered to them
 * before the next contender is decided, so two drafts that win the same
 * shape are judged against each other. 0, 1 interrupted, -1 error. */
static int choose_phase(search *s, kiln_iteration *t, const kiln_rule *r, kiln_incumbents *in,
                        kiln_error *err)
{
    qsort(t->d, (size_t)t->n, sizeof *t->d, by_speedup);
    int won = 0;
    for (int i = 0; i < t->n; i++) {
        kiln_draft *d = &t->d[i];
        if (kiln_search_should_stop())
            return 1;
        int contender = d->c.state == KILN_CAND_VERIFIED && !d->c.decision[0];
        if (contender && won && r->one_winner) {
            if (kiln_cand_decide(s, d, KILN_STEP_REVERT,
                                 "another draft of this iteration was kept", err) < 0)
                return -1;
        } else if (contender || d->c.state == KILN_CAND_CONFIRMED) {
            kiln_step final;
            int rc = kiln_cand_advance(s, t, d, r, 0, &final, err);
            if (rc < 0 || decided(s, d, rc, &final, err) < 0)
                return -1;
            if (in && final.what == KILN_STEP_KEEP)
                kiln_incumbents_offer(in, d->c.n, d->vs_baseline);
        }
        won |= strcmp(d->c.decision, "keep") == 0;
    }
    return 0;
}

static int finish(search *s, kiln_draft *d, kiln_error *err)
{
    if (d->c.state == KILN_CAND_DECIDED && kiln_cand_commit(s, d, err) < 0)
        return -1;
    if (d->c.state == KILN_CAND_COMMITTED && kiln_cand_apply(s, d, err) < 0)
        return -1;
    return 0;
}

/* The keep that ends on the branch: with several (per-shape), the one
 * that becomes the best with the highest speedup against the baseline,
 * else the first. */
static kiln_draft *winner_of(search *s, kiln_iteration *t)
{
    kiln_draft *w = NULL;
    for (int i = 0; i < t->n; i++) {
        kiln_draft *d = &t->d[i];
        if (strcmp(d->c.decision, "keep") != 0)
            continue;
        int best = kiln_cand_becomes_best(s, &d->c);
        if (!w || (best && (!kiln_cand_becomes_best(s, &w->c) ||
                            d->c.speedup_vs_baseline > w->c.speedup_vs_baseline)))
            w = d;
    }
    return w;
}

/* Reverts and the other keeps first, so the branch ends on the winner
 * (*winner; NULL: none). A winner done by a session that stopped before
 * the run's row took it in: the resumed run reset the branch to the row's
 * head, so the branch moves to it again. */
static int finish_phase(search *s, kiln_iteration *t, kiln_draft **winner, kiln_error *err)
{
    *winner = winner_of(s, t);
    for (int i = 0; i < t->n; i++)
        if (&t->d[i] != *winner && finish(s, &t->d[i], err) < 0)
            return -1;
    const kiln_cand *w = *winner ? &(*winner)->c : NULL;
    if (w && w->state == KILN_CAND_DONE && kiln_cand_becomes_best(s, w))
        return kiln_ws_reset_hard(&s->ws, w->commit, err);
    return *winner ? finish(s, *winner, err) : 0;
}

/* Every candidate reported; the run's best moved to the winner when it is
 * the new best. */
static void report_phase(search *s, const kiln_iteration *t, const kiln_draft *winner)
{
    for (int i = 0; i < t->n; i++)
        kiln_report(s, &t->d[i].c);
    if (winner && kiln_cand_becomes_best(s, &winner->c)) {
        snprintf(s->run.head_commit, sizeof s->run.head_commit, "%s", winner->c.commit);
        s->run.best_speedup = winner->c.speedup_vs_baseline;
    }
    /* The live line's best is the best kept kernel's: a keep against its
     * parent (per-shape, an archive elite's child, the head's child) can
     * have a lower pooled figure, and it does not lower the best. */
    for (int i = 0; i < t->n; i++) {
        const kiln_cand *c = &t->d[i].c;
        if (strcmp(c->decision, "keep") == 0 && c->speedup_vs_baseline > s->progress.best_speedup) {
            s->progress.best_speedup = c->speedup_vs_baseline;
            s->progress.best_roofline = c->roofline;
        }
    }
    s->run.iterations_done = t->it;
}

/* The phases from verify on, under the run's rule: the objective's, or
 * per-shape's with every shape's incumbent. */
static int judge_phases(search *s, kiln_iteration *t, kiln_error *err)
{
    kiln_rule rule;
    kiln_incumbents *in = NULL;
    kiln_verdict *parent_pooled = NULL;
    kiln_per_shape_ctx ctx = {0};
    if (kiln_search_per_shape(s)) {
        if (!(in = malloc(sizeof *in)))
            return kiln_fail(err, "out of memory");
        if (kiln_per_shape_load(s, t, in, &parent_pooled, err) < 0) {
            free(in);
            return -1;
        }
        ctx = (kiln_per_shape_ctx){.in = in, .parent_pooled = parent_pooled};
        kiln_rule_per_shape(&rule, &s->keep, &ctx);
    } else {
        kiln_rule_objective(&rule, &s->keep);
    }
    int rc = verify_phase(s, t, &rule, err);
    if (rc == 0)
        rc = choose_phase(s, t, &rule, in, err);
    free(in);
    free(parent_pooled);
    kiln_draft *winner = NULL;
    if (rc == 0)
        rc = finish_phase(s, t, &winner, err);
    if (rc == 0)
        report_phase(s, t, winner);
    return rc;
}

int kiln_search_iteration(search *s, int it, kiln_error *err)
{
    double started = kiln_wall_now();
    kiln_iteration t;
    int rc = load(s, &t, it, err);
    if (rc == 0 && (rc = choose_parent(s, &t, err)) == 0)
        rc = kiln_ws_read(&s->ws, s->parent, s->relpath, &t.parent_src, err);
    if (rc == 0 && t.n == 0)
        rc = propose(s, &t, err);
    if (rc == 0 && t.n > 0)
        rc = kiln_db_cand_at(s->db, s->run.id, t.d[0].c.parent, &t.parent_n, err);
    if (rc == 0) {
        /* Pipelining: the drafts go to kilnd, then the next iteration's are
         * asked for while these are verified (prefetch.h). */
        submit_ahead(s, &t);
        kiln_prefetch_start(s, it + 1, started);
        /* Verifying, choosing and recording (re-timings included): what
         * a batch asked ahead overlaps, for pipelining's rule (shares.h). */
        double t0 = kiln_wall_now();
        if ((rc = judge_phases(s, &t, err)) == 0) {
            s->run.pipe.verify_s += kiln_wall_now() - t0;
            s->run.pipe.verify_n++;
        }
    }
    kiln_iteration_free(&t);
    return rc;
}

/* ---- the start kernel ---------------------------------------------------------- */

/* The start kernel got no verdict. On the CUDA backend that almost always
 * means no usable GPU or driver where kernels are verified (the message
 * under it says); the run is kept and can be resumed where there is one. */
static int start_unverified(search *s, kiln_error *err)
{
    kiln_judge_seam j = kiln_search_seam(s);
    if (s->backend != KILN_BACKEND_CUDA || !s->verify_failed)
        return -1;
    kiln_error_prefix(err, "the CUDA backend is unavailable%s: the start kernel could not be "
                      "verified", j.ops->ahead(j.self) ? " to kilnd" : " here");
    return kiln_error_as(err, KILN_ERR_RESOURCE);
}

/* The compiler's messages in the verdict that failed at compile (its
 * feedback, past the "fail at stage compile: " the verifier puts first). */
static const char *compile_log(const kiln_draft *d)
{
    const kiln_verdict *v = d->vs_baseline;
    for (int k = 0; k < KILN_NJUDGEMENTS && !(v && strcmp(v->stage, "compile") == 0); k++)
        v = d->v[k];
    if (!v || strcmp(v->stage, "compile") != 0)
        return "";
    const char *log = v->feedback, *colon = strstr(log, "compile: ");
    return colon && strncmp(log, "fail at stage", 13) == 0 ? colon + 9 : log;
}

/* A start kernel that does not compile is the user's file (or the task's),
 * not kiln's fault: bad input, naming the file, with the compiler's first
 * lines so there is something to fix. */
static int start_not_compiled(search *s, const kiln_draft *d, kiln_error *err)
{
    /* As search_setup.c chose it: --from (or the tunable kernel), except
     * for replay, whose --from is the directory of candidates to come. */
    int from_file = s->run.from_path[0] && strcmp(s->run.agent, "replay") != 0;
    const char *file = from_file ? s->run.from_path
                       : s->backend == KILN_BACKEND_CUDA ? s->task.starter_cuda : s->task.baseline_cpu;
    const char *log = compile_log(d), *end = log;
    for (int lines = 0; *end && lines < 20; lines++)
        end += strcspn(end, "\n") + (end[strcspn(end, "\n")] == '\n');
    int n = (int)(end - log);
    while (n > 0 && log[n - 1] == '\n')
        n--;
    /* The verifier's own words only where they add to "does not compile"
     * (a missing function, a compiler limit). */
    const char *why = d->c.reason;
    int plain = strcmp(why, "the candidate does not compile") == 0 || !*why;
    int cut = end[strspn(end, "\n")] != '\0';
    return kiln_bad_input(err, "the start kernel %s does not compile%s%s%s%.*s%s", file,
                          plain ? "" : ": ", plain ? "" : why,
                          n ? cut ? "\nthe compiler said (its first 20 lines):\n" : "\nthe compiler said:\n" : "",
                          n, log, cut ? "\n[...]" : "");
}

/* Measured against the task's baseline (the start rule); a kernel that
 * does not pass stops the run, undecided, so a resumed run measures it
 * again. */
static int measure_start(search *s, kiln_iteration *t, kiln_draft *d, kiln_error *err)
{
    kiln_rule rule;
    kiln_step final;
    kiln_rule_start(&rule);
    if (kiln_cand_advance(s, t, d, &rule, 0, &final, err) < 0)
        return s->verify_failed ? start_unverified(s, err) : -1;
    kiln_cand *c = &d->c;
    if (d->vs_baseline)
        kiln_cand_from_verdict(c, d->vs_baseline);
    if (final.what != KILN_STEP_KEEP && strcmp(c->stage, "compile") == 0)
        return start_not_compiled(s, d, err);
    if (final.what != KILN_STEP_KEEP)
        return kiln_fail(err, "the start kernel does not pass verification: %s at %s (%s): %s",
                         c->status, c->stage, c->code, c->reason);
    return kiln_cand_decide(s, d, KILN_STEP_KEEP, final.why, err);
}

int kiln_search_start(search *s, kiln_error *err)
{
    kiln_iteration t;
    if (load(s, &t, 0, err) < 0)
        return -1;
    kiln_draft *d = t.n > 0 ? &t.d[0] : NULL;
    int rc = d ? 0 : kiln_fail(err, "run %s has no start kernel", s->run.id);
    /* Done, and the run knows it; a run stopped after the start kernel's
     * last move but before the run's row took it in still needs the row. */
    if (rc == 0 && d->c.state == KILN_CAND_DONE && s->run.start_commit[0]) {
        kiln_iteration_free(&t);
        return 0;
    }
    if (rc == 0 && d->c.state != KILN_CAND_DONE)
        rc = kiln_ws_resolve(&s->ws, "HEAD", d->c.parent, err);
    if (rc == 0 && d->c.state == KILN_CAND_PROPOSED) {
        /* The start kernel's verification is the first measure of what
         * verifying an iteration takes (pipelining's rule, shares.h). */
        double t0 = kiln_wall_now();
        if ((rc = measure_start(s, &t, d, err)) == 0) {
            s->run.pipe.verify_s += kiln_wall_now() - t0;
            s->run.pipe.verify_n++;
        }
    }
    if (rc == 0)
        rc = finish(s, d, err);
    if (rc == 0) {
        const kiln_cand *c = &d->c;
        snprintf(s->run.head_commit, sizeof s->run.head_commit, "%s", c->commit);
        snprintf(s->run.start_commit, sizeof s->run.start_commit, "%s", c->commit);
        s->run.best_speedup = c->speedup_vs_baseline;
        s->progress.best_speedup = c->speedup_vs_baseline;
        s->progress.best_roofline = c->roofline;
        rc = kiln_db_run_update(s->db, &s->run, err);
    }
    kiln_iteration_free(&t);
    return rc;
}
