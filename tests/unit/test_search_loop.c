/* test_search_loop.c - the search loop's decisions, end to end through its
 * state machine (harness/iteration.c), with scripted verdicts: the judge
 * seam's scripted table (judge/judge_script.h) answers every judgement,
 * so nothing is compiled or timed. Each test runs real searches (setup,
 * loop, teardown) on the rmsnorm task with the replay proposer, in a git
 * workspace and a run database in a temporary directory, and checks what
 * they recorded and what they asked the verifier for:
 *
 *   keep; revert on the margin; revert on a regression; a suspect re-time;
 *   a re-time short of the margin; pooled intervals that do not overlap
 *   (against the parent and the baseline); one winner an iteration and the
 *   contenders' order; a record or re-record that fails (the re-record
 *   handed over with it is cancelled); a duplicate of a verified source and
 *   of the parent; proposals that fail (an unreadable replay file, a model
 *   server that keeps failing, tests/fake_llm); a job that ended in an error
 *   submitted again under a key of its own; a verifier error; the start
 *   kernel failing; the time budget running out mid-judgement (then
 *   collected on resume); Ctrl-C; and resume at every state: a reference
 *   run's every move is a crash point (a child process exits right after
 *   the move is recorded) and every judgement a deadline, and each resumed
 *   run must decide exactly as the reference did, judging nothing twice.
 *
 * argv[1], when given: tests/fake_llm, for the model failure test (which
 * is skipped without it). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fileutil.h"
#include "iteration.h"
#include "archive.h"
#include "judge_script.h"
#include "kiln_exit.h"
#include "paths.h"

static const char *g_fake;   /* tests/fake_llm, or NULL */
static const char *g_what = "";   /* the variant under test, for the messages */

/* ---- verdicts --------------------------------------------------------------- */

#define MAX_VERDICTS 4096
static kiln_verdict *made[MAX_VERDICTS];
static int nmade;

/* A verdict of status at stage with code; shapes v1..vn at the speedups
 * given, each with a measured interval of +-w. */
static kiln_verdict *verdict(const char *status, const char *code, double w, int n, ...)
{
    kiln_verdict *v = calloc(1, sizeof *v);
    assert_non_null(v);
    assert_true(nmade < MAX_VERDICTS);
    made[nmade++] = v;
    snprintf(v->status, sizeof v->status, "%s", status);
    snprintf(v->stage, sizeof v->stage, "%s", strcmp(status, "fail") ? "plausibility" : "visible");
    snprintf(v->code, sizeof v->code, "%s", code);
    snprintf(v->reason, sizeof v->reason, "scripted: %s", code);
    snprintf(v->task, sizeof v->task, "rmsnorm");
    va_list ap;
    va_start(ap, n);
    double logsum = 0;
    for (int i = 0; i < n; i++) {
        double sp = va_arg(ap, double);
        kiln_shape_result *r = &v->results[v->nresults];
        snprintf(r->id, sizeof r->id, "v%d", ++v->nresults);
        r->visible = r->timed = r->checked = 1;
        r->speedup = sp;
        r->speedup_lo = sp * (1 - w);
        r->speedup_hi = sp * (1 + w);
        r->cand = (kiln_time_stats){1000, 995, 1005, 40};
        r->base = (kiln_time_stats){1000 * sp, 995 * sp, 1005 * sp, 40};
        r->roofline_fraction = 0.25;
        logsum += log(sp);
    }
    va_end(ap);
    v->geomean_speedup = n ? exp(logsum / n) : 0;
    v->median_roofline = n ? 0.25 : 0;
    return v;
}

/* Passing at sp on three shapes, +-1%. */
static kiln_verdict *pass(double sp)
{
    return verdict("pass", "ok", 0.01, 3, sp, sp, sp);
}

static kiln_verdict *failed(const char *code)
{
    return verdict("fail", code, 0, 0);
}

/* ---- a workspace, a replay directory and searches over them --------------- */

typedef struct fx fx;
struct fx {
    char dir[256], ws[300], replay[300], out[300];
    char err[1024];
    int status;                 /* the last session's exit status (kiln_exit_status) */
    kiln_search_opts o;
    kiln_judge_script js;       /* the script of the next session */
    void (*before_loop)(fx *f);   /* between setup and the loop, or NULL */
};

static void put(const char *path, const char *text)
{
    kiln_error e;
    assert_int_equal(kiln_write_text(path, text, &e), 0);
}

/* Replay file i (0-based: the proposal that becomes candidate i + 1). */
static void replay_file(fx *f, int i, const char *text)
{
    char path[400];
    snprintf(path, sizeof path, "%s/%03d.c", f->replay, i);
    put(path, text);
}

/* The source of kernel k (distinct programs, as far as the search is concerned). */
static void replay_kernel(fx *f, int i, int k)
{
    char src[160];
    snprintf(src, sizeof src, "/* kernel %d */\nint kernel_%d(int x) { return x + %d; }\n", k, k, k);
    replay_file(f, i, src);
}

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    assert_non_null(f);
    /* $TMPDIR, else a memory file system where there is one: each search
     * here makes a few hundred SQLite commits and git writes, and their
     * fsyncs on a disk took 50 s of the test's 57 (what is checked is
     * what they wrote, not the disk). */
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp)
        tmp = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(f->dir, sizeof f->dir, "%s/kiln-loop-XXXXXX", tmp);
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->ws, sizeof f->ws, "%s/ws", f->dir);
    snprintf(f->replay, sizeof f->replay, "%s/replay", f->dir);
    snprintf(f->out, sizeof f->out, "%s/out.jsonl", f->dir);
    assert_int_equal(mkdir(f->replay, 0755), 0);
    f->o = (kiln_search_opts){.task = "rmsnorm", .agent = "replay", .from = f->replay,
                              .drafts = 1, .iterations = 1, .workspace = f->ws, .no_daemon = 1,
                              .json = 1, .keep_margin = -1, .max_regression = -1, .seed = 7};
    kiln_judge_script_init(&f->js, 1, 1);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    g_what = "";
    fx *f = *state;
    kiln_remove_tree(f->dir);
    free(f);
    for (int i = 0; i < nmade; i++)
        free(made[i]);
    nmade = 0;
    return 0;
}

/* The start kernel's record and re-record, passing at 1x. */
static void start_passes(kiln_judge_script *js)
{
    kiln_judge_script_add(js, 0, KILN_JUDGE_RECORD, pass(1.0), 0);
    kiln_judge_script_add(js, 0, KILN_JUDGE_RERECORD, pass(1.0), 0);
}

/* Candidate n's four judgements, all passing: kept. */
static void kept(kiln_judge_script *js, int n, double sp)
{
    kiln_judge_script_add(js, n, KILN_JUDGE_VERDICT, pass(sp), 0);
    kiln_judge_script_add(js, n, KILN_JUDGE_CONFIRM, pass(sp), 0);
    kiln_judge_script_add(js, n, KILN_JUDGE_RECORD, pass(sp), 0);
    kiln_judge_script_add(js, n, KILN_JUDGE_RERECORD, pass(sp), 0);
}

typedef struct watch {
    void (*fn)(void *ctx, const kiln_cand *c);
    void *ctx;
} watch;

/* One session of the search (resume: "last"), its stdout into f->out: the
 * loop's return, or setup's when it failed. */
static int session(fx *f, kiln_judge_script *js, const char *resume, const watch *w)
{
    search *s = calloc(1, sizeof *s);
    assert_non_null(s);
    f->o.resume = resume;
    s->o = &f->o;
    s->ws.lock_fd = -1;
    kiln_error err = {0};
    fflush(stdout);
    int saved = dup(1), fd = open(f->out, O_WRONLY | O_CREAT | O_APPEND, 0644);
    assert_true(saved >= 0 && fd >= 0);
    dup2(fd, 1);
    close(fd);
    int rc = kiln_search_setup(s, &err);
    if (rc == 0 && f->before_loop)
        f->before_loop(f);
    if (rc == 0) {
        s->seam = kiln_judge_script_seam(js);
        s->llm.max_retries = 0;   /* a failing model server fails at once */
        if (w) {
            s->moved = w->fn;
            s->moved_ctx = w->ctx;
        }
        rc = kiln_search_loop(s, &err);
    }
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    snprintf(f->err, sizeof f->err, "%s", err.msg);
    f->status = rc == 0 ? 0 : kiln_exit_status(&err);
    kiln_search_teardown(s);
    free(s);
    return rc;
}

/* A session that must return want (its error said when it does not). */
static void run_expect(fx *f, kiln_judge_script *js, const char *resume, const watch *w, int want)
{
    int rc = session(f, js, resume, w);
    if (rc != want)
        fail_msg("%s%sthe search returned %d, not %d: %s", g_what, g_what[0] ? ": " : "", rc,
                 want, f->err);
}

/* ---- what a search recorded -------------------------------------------------- */

typedef struct result {
    kiln_run run;
    kiln_cand *c;
    int n;
    int head;                   /* the candidate at the run's head commit (-1: none) */
} result;

static void load(fx *f, result *r)
{
    char path[400];
    sqlite3 *db;
    kiln_error e = {0};
    snprintf(path, sizeof path, "%s/.kiln/kiln.db", f->ws);
    assert_int_equal(kiln_db_open_readonly(&db, path, &e), 0);
    assert_int_equal(kiln_db_latest_run(db, r->run.id, sizeof r->run.id), 1);
    assert_int_equal(kiln_db_run_get(db, r->run.id, &r->run, &e), 1);
    assert_int_equal(kiln_db_cands(db, r->run.id, &r->c, &r->n, &e), 0);
    assert_int_equal(kiln_db_cand_at(db, r->run.id, r->run.head_commit, &r->head, &e), 0);
    kiln_db_close(db);
}

static const kiln_cand *cand(const result *r, int n)
{
    for (int i = 0; i < r->n; i++)
        if (r->c[i].n == n)
            return &r->c[i];
    fail_msg("no candidate %d", n);
    return r->c;   /* not reached */
}

/* Candidate n's stored text, malloc'd (NULL: none). */
static char *text_of(fx *f, const result *r, int n, kiln_cand_text which)
{
    char path[400];
    sqlite3 *db;
    kiln_error e = {0};
    snprintf(path, sizeof path, "%s/.kiln/kiln.db", f->ws);
    assert_int_equal(kiln_db_open_readonly(&db, path, &e), 0);
    char *t = kiln_db_cand_text(db, r->run.id, n, which);
    kiln_db_close(db);
    return t;
}

static void assert_contains(const char *text, const char *words)
{
    if (!text || !strstr(text, words))
        fail_msg("'%s' does not say '%s'", text ? text : "(null)", words);
}

static void assert_decided(const result *r, int n, const char *decision, const char *words)
{
    const kiln_cand *c = cand(r, n);
    assert_int_equal(c->state, KILN_CAND_DONE);
    assert_string_equal(c->decision, decision);
    assert_contains(c->why, words);
}

/* How many times candidate n's judgement k was collected with a verdict. */
static int answered(const kiln_judge_script *js, int n, kiln_judgement k)
{
    int count = 0;
    for (int i = 0; i < js->nlog; i++)
        count += js->log[i].op == KILN_SCRIPT_COLLECT && js->log[i].n == n &&
                 js->log[i].kind == k && js->log[i].answered;
    return count;
}

/* The git ref's commit, "" when it does not exist. */
static void ref_of(fx *f, const char *ref, char out[41])
{
    kiln_ws ws = {.lock_fd = -1};
    kiln_error e = {0};
    out[0] = '\0';
    assert_int_equal(kiln_ws_open(&ws, f->ws, 0, &e), 0);
    if (kiln_ws_resolve(&ws, ref, out, &e) < 0)
        out[0] = '\0';
    kiln_ws_close(&ws);
}

/* The summary event's stop reason must start with words ("words\"":
 * be them). */
static void assert_stopped_for(fx *f, const char *words)
{
    char *out = NULL, want[256];
    kiln_error e;
    assert_int_equal(kiln_read_file(f->out, 4 << 20, &out, NULL, &e), 0);
    snprintf(want, sizeof want, "\"reason\":\"%s", words);
    char *summary = strstr(out, "\"event\":\"summary\"");
    assert_non_null(summary);
    *summary = '\0';   /* the summary's line: from the line before's end */
    char *line = strrchr(out, '\n');
    assert_contains(line ? line : out, want);
    free(out);
}

/* ---- the decision paths -------------------------------------------------------- */

static void keep(void **state)
{
    fx *f = *state;
    replay_kernel(f, 0, 1);
    start_passes(&f->js);
    kept(&f->js, 1, 1.5);
    run_expect(f, &f->js, NULL, NULL, 0);
    result r;
    load(f, &r);
    assert_int_equal(r.n, 2);
    assert_decided(&r, 0, "keep", "kept: the start kernel");
    assert_decided(&r, 1, "keep", "kept: geomean 1.500x");
    assert_contains(cand(&r, 1)->why, "(re-timed in a fresh worker; pooled 1.500x");
    assert_int_equal(r.head, 1);
    assert_float_equal(r.run.best_speedup, 1.5, 1e-9);
    assert_float_equal(cand(&r, 1)->pooled_speedup, 1.5, 1e-9);
    assert_float_equal(cand(&r, 1)->speedup_vs_baseline, 1.5, 1e-9);
    /* Each judgement asked once: against the parent (with its source), then
     * against the task's baseline (none). */
    for (int k = 0; k < KILN_NJUDGEMENTS; k++)
        assert_int_equal(answered(&f->js, 1, (kiln_judgement)k), 1);
    for (int i = 0; i < f->js.nlog; i++)
        assert_int_equal(f->js.log[i].baseline_is_task,
                         !kiln_judgement_vs_parent(f->js.log[i].kind) || f->js.log[i].n == 0);
    char tag[41], branch[41];
    ref_of(f, "refs/tags/kiln/best/rmsnorm/cpu/f32", tag);
    ref_of(f, r.run.branch, branch);
    assert_string_equal(tag, cand(&r, 1)->commit);
    assert_string_equal(branch, cand(&r, 1)->commit);
    char *pooled = text_of(f, &r, 1, KILN_TEXT_POOLED);
    assert_non_null(pooled);
    free(pooled);
    free(r.c);
}

/* A keep of a lower pooled figure than the best (#2, the head's child at
 * 1.2x against the task's baseline, after #1 at 1.5x) moves the head, not
 * the best: the live line and the summary still show #1's 1.50x, and name
 * the head for what it is. */
static void keep_lower_leaves_best(void **state)
{
    fx *f = *state;
    f->o.json = 0;   /* the live lines and the summary as text */
    f->o.iterations = 2;
    replay_kernel(f, 0, 1);
    replay_kernel(f, 1, 2);
    start_passes(&f->js);
    kept(&f->js, 1, 1.5);
    kept(&f->js, 2, 1.2);
    run_expect(f, &f->js, NULL, NULL, 0);
    result r;
    load(f, &r);
    assert_decided(&r, 2, "keep", "kept: geomean 1.200x");
    assert_int_equal(r.head, 2);
    assert_float_equal(r.run.best_speedup, 1.2, 1e-9);   /* the head's, which the branch follows */
    char *out = NULL, want[160];
    kiln_error e;
    assert_int_equal(kiln_read_file(f->out, 4 << 20, &out, NULL, &e), 0);
    assert_contains(out, "] it 1/2 ");
    const char *second = strstr(out, "] it 2/2 ");
    assert_non_null(second);
    assert_true(strncmp(strstr(second, "best "), "best 1.50x", 10) == 0);
    snprintf(want, sizeof want, "best: commit %.12s, 1.50x against the task's baseline",
             cand(&r, 1)->commit);
    assert_contains(out, want);
    snprintf(want, sizeof want, "head (the lineage the search continues): commit %.12s, 1.20x",
             cand(&r, 2)->commit);
    assert_contains(out, want);
    free(out);
    free(r.c);
}

static void revert_on_margin(void **state)
{
    fx *f = *state;
    f->o.json = 0;   /* the text lines, once */
    replay_kernel(f, 0, 1);
    start_passes(&f->js);
    kiln_judge_script_add(&f->js, 1, KILN_JUDGE_VERDICT,
                          verdict("pass", "ok", 0.03, 3, 1.01, 1.01, 1.01), 0);
    run_expect(f, &f->js, NULL, NULL, 0);
    result r;
    load(f, &r);
    assert_decided(&r, 1, "revert", "reverted: geomean 1.010x");
    assert_contains(cand(&r, 1)->reason, "does not clear 2%");
    assert_int_equal(kiln_judge_script_count(&f->js, KILN_SCRIPT_COLLECT, 1, KILN_JUDGE_CONFIRM),
                     0);   /* screened out on its one measurement */
    assert_int_equal(r.head, 0);
    char ref[128], at[41];
    snprintf(ref, sizeof ref, "refs/kiln/rejected/%s/1", r.run.id);
    ref_of(f, ref, at);
    assert_string_equal(at, cand(&r, 1)->commit);
    free(r.c);
}

static void revert_on_regression(void **state)
{
    fx *f = *state;
    replay_kernel(f, 0, 1);
    start_passes(&f->js);
    kiln_judge_script_add(&f->js, 1, KILN_JUDGE_VERDICT,
                          verdict("pass", "ok", 0.01, 3, 1.6, 1.6, 0.9), 0);
    run_expect(f, &f->js, NULL, NULL, 0);
    result r;
    load(f, &r);
    assert_decided(&r, 1, "revert", "v3 0.900x [0.891, 0.909] regresses by more than 3%");
    free(r.c);
}

static void suspect_retime(void **state)
{
    fx *f = *state;
    replay_kernel(f, 0, 1);
    start_passes(&f->js);
    kiln_judge_script_add(&f->js, 1, KILN_JUDGE_VERDICT, pass(1.5), 0);
    kiln_verdict *sus = verdict("suspect", "timer-disagreement", 0.01, 3, 1.5, 1.5, 1.5);
    kiln_judge_script_add(&f->js, 1, KILN_JUDGE_CONFIRM, sus, 0);
    run_expect(f, &f->js, NULL, NULL, 0);
    result r;
    load(f, &r);
    assert_decided(&r, 1, "revert", "reverted: suspect at plausibility (timer-disagreement) "
                                    "(re-timed in a fresh worker");
    assert_int_equal(kiln_judge_script_count(&f->js, KILN_SCRIPT_COLLECT, 1, KILN_JUDGE_RECORD),
                     0);
    free(r.c);
}

static void retime_short_of_margin(void **state)
{
    fx *f = *state;
    replay_kernel(f, 0, 1);
    start_passes(&f->js);
    kiln_judge_script_add(&f->js, 1, KILN_JUDGE_VERDICT, pass(1.5), 0);
    kiln_judge_script_add(&f->js, 1, KILN_JUDGE_CONFIRM, pass(1.0), 0);
    run_expect(f, &f->js, NULL, NULL, 0);
    result r;
    load(f, &r);
    assert_decided(&r, 1, "revert", "does not clear 2% (re-timed in a fresh worker; pooled 1.000x");
    assert_contains(cand(&r, 1)->why, "do not overlap");
    assert_float_equal(cand(&r, 1)->confirm_speedup, 1.0, 1e-9);
    free(r.c);
}

/* The verdict and its re-time do not overlap, nor do the record and its
 * re-record: each pool takes the lower figure and the why says so. */
static void pools_that_do_not_overlap(void **state)
{
    fx *f = *state;
    replay_kernel(f, 0, 1);
    start_passes(&f->js);
    kiln_judge_script_add(&f->js, 1, KILN_JUDGE_VERDICT, pass(1.8), 0);
    kiln_judge_script_add(&f->js, 1, KILN_JUDGE_CONFIRM, pass(1.4), 0);
    kiln_judge_script_add(&f->js, 1, KILN_JUDGE_RECORD, pass(2.0), 0);
    kiln_judge_script_add(&f->js, 1, KILN_JUDGE_RERECORD, pass(1.6), 0);
    run_expect(f, &f->js, NULL, NULL, 0);
    result r;
    load(f, &r);
    const kiln_cand *c = cand(&r, 1);
    assert_decided(&r, 1, "keep", "pooled 1.400x");
    assert_float_equal(c->pooled_speedup, 1.4, 1e-9);
    assert_float_equal(c->speedup_vs_baseline, 1.6, 1e-9);
    assert_contains(c->why, "; vs baseline: ");
    assert_contains(strstr(c->why, "; vs baseline: "), "do not overlap");
    free(r.c);
}

/* Two contenders: the faster is re-timed first and kept; the other is
 * reverted without a re-time. Then the first contender's re-time falls
 * short and the second is kept. */
static void one_winner_in_order(void **state)
{
    fx *f = *state;
    f->o.drafts = 3;
    f->o.iterations = 2;
    for (int i = 0; i < 6; i++)
        replay_kernel(f, i, i + 1);
    start_passes(&f->js);
    kiln_judge_script_add(&f->js, 1, KILN_JUDGE_VERDICT, pass(1.3), 0);
    kept(&f->js, 2, 1.5);
    kiln_judge_script_add(&f->js, 3, KILN_JUDGE_VERDICT, failed("wrong-output"), 0);
    kiln_judge_script_add(&f->js, 4, KILN_JUDGE_VERDICT, pass(1.9), 0);
    kiln_judge_script_add(&f->js, 4, KILN_JUDGE_CONFIRM, pass(1.0), 0);
    kept(&f->js, 5, 1.2);
    kiln_judge_script_add(&f->js, 6, KILN_JUDGE_VERDICT, pass(1.1), 0);
    run_expect(f, &f->js, NULL, NULL, 0);
    result r;
    load(f, &r);
    assert_decided(&r, 2, "keep", "kept: geomean 1.500x");
    assert_decided(&r, 1, "revert", "another draft of this iteration was kept");
    assert_decided(&r, 3, "revert", "fail at visible (wrong-output): scripted: wrong-output");
    assert_decided(&r, 4, "revert", "(re-timed in a fresh worker");
    assert_decided(&r, 5, "keep", "kept: geomean 1.200x");
    assert_decided(&r, 6, "revert", "another draft of this iteration was kept");
    assert_int_equal(kiln_judge_script_count(&f->js, KILN_SCRIPT_COLLECT, 1, KILN_JUDGE_CONFIRM),
                     0);
    assert_int_equal(r.head, 5);
    assert_string_equal(cand(&r, 5)->parent, cand(&r, 2)->commit);
    assert_float_equal(r.run.best_speedup, 1.2, 1e-9);   /* against the task's baseline */
    /* Through "kilnd" (the script hands jobs over) every draft of an
     * iteration was handed over before the first was waited for. */
    int first_collect = -1, last_submit = -1;
    for (int i = 0; i < f->js.nlog; i++) {
        const kiln_script_call *c = &f->js.log[i];
        if (c->n < 1 || c->n > 3 || c->kind != KILN_JUDGE_VERDICT)
            continue;
        if (c->op == KILN_SCRIPT_SUBMIT)
            last_submit = i;
        else if (first_collect < 0)
            first_collect = i;
    }
    assert_true(last_submit >= 0 && last_submit < first_collect);
    assert_string_equal(f->js.log[first_collect].job, cand(&r, 1)->job);
    free(r.c);
}

/* --objective per-shape through the whole loop: two drafts of one
 * iteration kept, each for the shape it wins (one of them slower than the
 * start kernel on the geomean); a draft the screen reverts; the branch on
 * the keep with the best geomean against the baseline, the specialist
 * parked; the next iteration's specialist judged against the incumbents
 * the first made. No re-time against the parent is asked for. */
static void per_shape_search(void **state)
{
    fx *f = *state;
    f->o.drafts = 3;
    f->o.iterations = 2;
    f->o.objective = "per-shape";
    for (int i = 0; i < 6; i++)
        replay_kernel(f, i, i + 1);
    start_passes(&f->js);
    kiln_verdict *v3 = verdict("pass", "ok", 0.01, 3, 0.8, 0.9, 1.3);
    kiln_verdict *v1 = verdict("pass", "ok", 0.01, 3, 1.4, 0.9, 0.9);
    kiln_judge_script_add(&f->js, 1, KILN_JUDGE_VERDICT, v3, 0);
    kiln_judge_script_add(&f->js, 1, KILN_JUDGE_RECORD, v3, 0);
    kiln_judge_script_add(&f->js, 1, KILN_JUDGE_RERECORD, v3, 0);
    kiln_judge_script_add(&f->js, 2, KILN_JUDGE_VERDICT, v1, 0);
    kiln_judge_script_add(&f->js, 2, KILN_JUDGE_RECORD, v1, 0);
    kiln_judge_script_add(&f->js, 2, KILN_JUDGE_RERECORD, v1, 0);
    kiln_judge_script_add(&f->js, 3, KILN_JUDGE_VERDICT, pass(1.01), 0);
    /* against #2: 1.35 at v3 is 1.215x of the baseline, short of #1's 1.3 */
    kiln_judge_script_add(&f->js, 4, KILN_JUDGE_VERDICT,
                          verdict("pass", "ok", 0.01, 3, 1.0, 1.0, 1.35), 0);
    kiln_judge_script_add(&f->js, 5, KILN_JUDGE_VERDICT,
                          verdict("pass", "ok", 0.01, 3, 1.0, 1.0, 1.6), 0);
    kiln_verdict *v5 = verdict("pass", "ok", 0.01, 3, 1.4, 0.9, 1.44);
    kiln_judge_script_add(&f->js, 5, KILN_JUDGE_RECORD, v5, 0);
    kiln_judge_script_add(&f->js, 5, KILN_JUDGE_RERECORD, v5, 0);
    kiln_judge_script_add(&f->js, 6, KILN_JUDGE_VERDICT, failed("wrong-output"), 0);
    run_expect(f, &f->js, NULL, NULL, 0);
    result r;
    load(f, &r);
    assert_decided(&r, 1, "keep", "kept: surely fastest at 1 shape: v3 1.300x");
    assert_decided(&r, 2, "keep", "kept: surely fastest at 1 shape: v1 1.400x");
    assert_decided(&r, 3, "revert", "reverted: no shape where it may beat the incumbent by 2%");
    assert_decided(&r, 4, "revert", "at best v1, est. 1.000x of its incumbent");
    assert_decided(&r, 5, "keep", "v3 1.440x [1.426, 1.454] over #1's 1.300x");
    assert_decided(&r, 6, "revert", "fail at visible (wrong-output)");
    for (int n = 1; n <= 6; n++)
        assert_int_equal(kiln_judge_script_count(&f->js, KILN_SCRIPT_COLLECT, n,
                                                 KILN_JUDGE_CONFIRM), 0);
    /* #1 is slower than the start kernel on the geomean: parked, not the head */
    assert_int_equal(r.head, 5);
    assert_string_equal(cand(&r, 5)->parent, cand(&r, 2)->commit);
    assert_float_equal(r.run.best_speedup, pow(1.4 * 0.9 * 1.44, 1.0 / 3), 1e-6);
    free(r.c);
}

/* The record fails: reverted, and the re-record handed over with it is
 * given up. Then a re-record that fails reverts as well. */
static void record_fails(void **state)
{
    fx *f = *state;
    f->o.iterations = 2;
    replay_kernel(f, 0, 1);
    replay_kernel(f, 1, 2);
    start_passes(&f->js);
    kiln_judge_script_add(&f->js, 1, KILN_JUDGE_VERDICT, pass(1.5), 0);
    kiln_judge_script_add(&f->js, 1, KILN_JUDGE_CONFIRM, pass(1.5), 0);
    kiln_judge_script_add(&f->js, 1, KILN_JUDGE_RECORD, failed("nondeterministic"), 0);
    kiln_judge_script_add(&f->js, 1, KILN_JUDGE_RERECORD, pass(1.5), 0);
    kiln_judge_script_add(&f->js, 2, KILN_JUDGE_VERDICT, pass(1.5), 0);
    kiln_judge_script_add(&f->js, 2, KILN_JUDGE_CONFIRM, pass(1.5), 0);
    kiln_judge_script_add(&f->js, 2, KILN_JUDGE_RECORD, pass(1.5), 0);
    kiln_judge_script_add(&f->js, 2, KILN_JUDGE_RERECORD, failed("timeout"), 0);
    run_expect(f, &f->js, NULL, NULL, 0);
    result r;
    load(f, &r);
    assert_decided(&r, 1, "revert", "failed its measurement against the task's baseline");
    assert_decided(&r, 2, "revert", "failed its measurement against the task's baseline");
    assert_int_equal(kiln_judge_script_count(&f->js, KILN_SCRIPT_SUBMIT, 1, KILN_JUDGE_RERECORD),
                     1);
    assert_int_equal(kiln_judge_script_count(&f->js, KILN_SCRIPT_CANCEL, 1, KILN_JUDGE_RERECORD),
                     1);
    assert_int_equal(answered(&f->js, 1, KILN_JUDGE_RERECORD), 0);
    assert_int_equal(kiln_judge_script_count(&f->js, KILN_SCRIPT_CANCEL, 2, KILN_JUDGE_RERECORD),
                     0);
    assert_int_equal(r.head, 0);
    free(r.c);
}

/* A reformatted copy of a verified source is a duplicate, never judged:
 * of an earlier draft of the same iteration, of a candidate of an earlier
 * iteration, and of the parent. */
static void duplicates(void **state)
{
    fx *f = *state;
    f->o.drafts = 2;
    f->o.iterations = 2;
    char *start;
    kiln_error e;
    kiln_task *t = calloc(1, sizeof *t);
    assert_non_null(t);
    assert_int_equal(kiln_task_find("rmsnorm", t, &e), 0);
    assert_int_equal(kiln_read_file(t->baseline_cpu, 1 << 20, &start, NULL, &e), 0);
    free(t);
    replay_kernel(f, 0, 1);
    replay_file(f, 1, "/* the same */ int kernel_1(int x)\n{\n  return x + 1;  }\n");
    char copy[1 << 16];
    snprintf(copy, sizeof copy, "// a copy of the parent\n%s", start);
    replay_file(f, 2, copy);
    replay_file(f, 3, "int kernel_1(int x) { return x + 1; } // once more\n");
    free(start);
    start_passes(&f->js);
    kiln_judge_script_add(&f->js, 1, KILN_JUDGE_VERDICT, failed("wrong-output"), 0);
    run_expect(f, &f->js, NULL, NULL, 0);
    result r;
    load(f, &r);
    assert_decided(&r, 2, "revert", "same source as candidate #1, comments, whitespace and knob "
                                    "lists aside: not verified again; #1's verdict: fail at "
                                    "visible (wrong-output)");
    assert_string_equal(cand(&r, 2)->code, "duplicate");
    assert_string_equal(cand(&r, 2)->stage, "propose");
    assert_decided(&r, 3, "revert", "same source as its parent (#0)");
    assert_decided(&r, 4, "revert", "same source as candidate #1");
    for (int n = 2; n <= 4; n++) {
        assert_int_equal(kiln_judge_script_count(&f->js, KILN_SCRIPT_COLLECT, n,
                                                 KILN_JUDGE_VERDICT), 0);
        assert_int_equal(kiln_judge_script_count(&f->js, KILN_SCRIPT_SUBMIT, n,
                                                 KILN_JUDGE_VERDICT), 0);
    }
    free(r.c);
}

/* The replay file of candidate 1 gone once the files were listed. */
static void lose_the_file(fx *f)
{
    char path[400];
    snprintf(path, sizeof path, "%s/000.c", f->replay);
    assert_int_equal(unlink(path), 0);
}

/* A proposal that failed (its replay file could not be read) is recorded
 * done and reverted, never judged. */
static void proposal_fails(void **state)
{
    fx *f = *state;
    replay_kernel(f, 0, 1);
    f->before_loop = lose_the_file;
    start_passes(&f->js);
    run_expect(f, &f->js, NULL, NULL, 0);
    result r;
    load(f, &r);
    const kiln_cand *c = cand(&r, 1);
    assert_int_equal(c->state, KILN_CAND_DONE);
    assert_string_equal(c->code, "bad-answer");
    assert_string_equal(c->decision, "revert");
    assert_contains(c->reason, "the replay file could not be read");
    assert_int_equal(kiln_judge_script_count(&f->js, KILN_SCRIPT_COLLECT, 1, KILN_JUDGE_VERDICT),
                     0);
    assert_int_equal(r.run.iterations_done, 1);
    free(r.c);
}

/* tests/fake_llm answering script (its lines; files relative to f->dir);
 * the search pointed at it. Returns its pid. */
static pid_t fake_model(fx *f, const char *script_text)
{
    char script[400], port_file[400], log[400];
    snprintf(script, sizeof script, "%s/fake.script", f->dir);
    snprintf(port_file, sizeof port_file, "%s/port", f->dir);
    snprintf(log, sizeof log, "%s/fake.log", f->dir);
    put(script, script_text);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        execl(g_fake, g_fake, "--port-file", port_file, "--script", script, "--log", log,
              (char *)NULL);
        _exit(127);
    }
    int port = 0;
    for (int i = 0; i < 500 && !port; i++) {
        FILE *p = fopen(port_file, "r");
        if (p && fscanf(p, "%d", &port) != 1)
            port = 0;
        if (p)
            fclose(p);
        if (!port)
            usleep(10000);
    }
    assert_true(port > 0);
    static char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/v1", port);
    unsetenv("OPENAI_API_KEY");
    f->o.agent = "openai";
    f->o.model = "fake-gpt";
    f->o.base_url = url;
    f->o.from = NULL;
    return pid;
}

static void stop_model(pid_t pid)
{
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
}

/* A model server that fails every call: each failed call is a candidate
 * recorded done (llm-error), and N in a row end the run with an error
 * naming the server; an answer without code is a bad answer. */
static void model_failure(void **state)
{
    fx *f = *state;
    if (!g_fake)
        skip();
    char noanswer[400];
    snprintf(noanswer, sizeof noanswer, "%s/noanswer.txt", f->dir);
    put(noanswer, "HYPOTHESIS: nothing to show\nno code here\n");
    pid_t pid = fake_model(f, "ok noanswer.txt\nstatus 500\n");
    f->o.iterations = 5;
    f->o.model_failures = 2;
    f->o.model_failure_window_s = 1e-9;
    start_passes(&f->js);
    int rc = session(f, &f->js, NULL, NULL);
    stop_model(pid);
    assert_int_equal(rc, -1);
    assert_contains(f->err, "failed 2 calls in a row");
    assert_int_equal(f->status, KILN_EXIT_INTERNAL);   /* the machine's (resource): exit 3 */
    result r;
    load(f, &r);
    assert_string_equal(r.run.status, "failed");
    assert_string_equal(cand(&r, 1)->code, "bad-answer");
    assert_string_equal(cand(&r, 2)->code, "llm-error");
    assert_string_equal(cand(&r, 3)->code, "llm-error");
    for (int n = 1; n <= 3; n++)
        assert_int_equal(cand(&r, n)->state, KILN_CAND_DONE);
    for (int i = 0; i < f->js.nlog; i++)   /* the start kernel's: nothing else was judged */
        if (f->js.log[i].n != 0)
            fail_msg("candidate %d's %s was judged", f->js.log[i].n,
                     kiln_judgement_name(f->js.log[i].kind));
    free(r.c);
}

/* f->dir/answer.md: a model's answer holding the starter with one line
 * more, hypothesis "add one". */
static void model_answer(fx *f)
{
    char answer[400], *start, text[1 << 16];
    kiln_error e;
    kiln_task *t = calloc(1, sizeof *t);
    assert_non_null(t);
    assert_int_equal(kiln_task_find("rmsnorm", t, &e), 0);
    assert_int_equal(kiln_read_file(t->baseline_cpu, 1 << 20, &start, NULL, &e), 0);
    free(t);
    snprintf(answer, sizeof answer, "%s/answer.md", f->dir);
    snprintf(text, sizeof text, "Faster:\n\n```c\n%s\nstatic int one_more;\n```\n\n"
             "HYPOTHESIS: add one\n", start);
    free(start);
    put(answer, text);
}

/* Pipelining: with a verifier that takes jobs ahead, the next iteration's
 * drafts are asked for while this one's are judged, and used. */
static void model_asked_ahead(void **state)
{
    fx *f = *state;
    if (!g_fake)
        skip();
    model_answer(f);
    pid_t pid = fake_model(f, "ok answer.md\n");
    f->o.iterations = 2;
    f->o.pipeline_min_saving = -1;   /* the scripted verifier takes no wall time */
    start_passes(&f->js);
    kiln_judge_script_add(&f->js, 1, KILN_JUDGE_VERDICT, failed("compile-error"), 0);
    int rc = session(f, &f->js, NULL, NULL);
    stop_model(pid);
    if (rc != 0)
        fail_msg("%s", f->err);
    result r;
    load(f, &r);
    assert_int_equal(r.run.prefetch_asked, 1);    /* iteration 2's, during iteration 1 */
    assert_int_equal(r.run.prefetch_dropped, 0);
    assert_int_equal(r.run.iterations_done, 2);
    assert_decided(&r, 2, "revert", "same source as candidate #1");
    free(r.c);
}

/* Pipelining that would not pay (shares.h): a model that takes 0.3 s
 * beside a verifier that takes no time saves nothing but costs stale
 * prompts, so iteration 2 asks after iteration 1's verdicts. */
static void model_not_asked_ahead(void **state)
{
    fx *f = *state;
    if (!g_fake)
        skip();
    model_answer(f);
    pid_t pid = fake_model(f, "slow 300 answer.md\n");
    f->o.iterations = 2;
    start_passes(&f->js);
    kiln_judge_script_add(&f->js, 1, KILN_JUDGE_VERDICT, failed("compile-error"), 0);
    int rc = session(f, &f->js, NULL, NULL);
    stop_model(pid);
    if (rc != 0)
        fail_msg("%s", f->err);
    result r;
    load(f, &r);
    assert_int_equal(r.run.prefetch_asked, 0);
    assert_int_equal(r.run.iterations_done, 2);
    assert_decided(&r, 2, "revert", "same source as candidate #1");
    free(r.c);
}

/* The token budget: the model's answer is judged, then the run stops. */
static void token_budget(void **state)
{
    fx *f = *state;
    if (!g_fake)
        skip();
    model_answer(f);
    pid_t pid = fake_model(f, "ok answer.md\n");
    f->o.iterations = 5;
    f->o.max_tokens = 1;
    start_passes(&f->js);
    kiln_judge_script_add(&f->js, 1, KILN_JUDGE_VERDICT, failed("compile-error"), 0);
    int rc = session(f, &f->js, NULL, NULL);
    stop_model(pid);
    if (rc != 0)
        fail_msg("%s", f->err);
    result r;
    load(f, &r);
    assert_int_equal(r.n, 2);
    assert_decided(&r, 1, "revert", "fail at visible (compile-error)");
    assert_string_equal(cand(&r, 1)->hypothesis, "add one");
    assert_true(r.run.tokens_used > 1);
    assert_stopped_for(f, "token budget reached");
    free(r.c);
}

/* A verification that ended in an error: a job recorded by an earlier
 * session is submitted again under a key of its own; a new one's error
 * fails the run. */
static void job_error(void **state)
{
    fx *f = *state;
    f->o.budget_s = 1e5;
    replay_kernel(f, 0, 1);
    start_passes(&f->js);
    kiln_judge_script_add(&f->js, 1, KILN_JUDGE_VERDICT, pass(1.5), 1e6);   /* past the budget */
    run_expect(f, &f->js, NULL, NULL, 0);
    result r;
    load(f, &r);
    char job[32];
    snprintf(job, sizeof job, "%s", cand(&r, 1)->job);
    assert_true(job[0] != '\0');
    assert_int_equal(cand(&r, 1)->state, KILN_CAND_PROPOSED);
    assert_contains(r.run.status, "done");
    free(r.c);
    kiln_judge_script_init(&f->js, 1, 100);
    kiln_judge_script_add(&f->js, 1, KILN_JUDGE_VERDICT, NULL, 0);   /* that job: an error */
    kiln_judge_script_add(&f->js, 1, KILN_JUDGE_VERDICT, failed("crash"), 0);
    run_expect(f, &f->js, "last", NULL, 0);
    load(f, &r);
    assert_decided(&r, 1, "revert", "fail at visible (crash)");
    assert_int_equal(f->js.nlog, 2);
    assert_string_equal(f->js.log[0].job, job);   /* asked for by its id first */
    assert_string_equal(f->js.log[1].job, "");    /* then sent again ... */
    char after[64];
    snprintf(after, sizeof after, ":verdict:after:%s", job);
    assert_contains(f->js.log[1].key, after);    /* ... under a key of its own */
    free(r.c);
    /* A fresh job's error is the run's. */
    f->o.iterations = 2;
    replay_kernel(f, 1, 2);
    kiln_judge_script_init(&f->js, 1, 200);
    kiln_judge_script_add(&f->js, 2, KILN_JUDGE_VERDICT, NULL, 0);
    run_expect(f, &f->js, "last", NULL, -1);
    assert_contains(f->err, "ended in an error");
    load(f, &r);
    assert_string_equal(r.run.status, "failed");
    assert_int_equal(cand(&r, 2)->state, KILN_CAND_PROPOSED);
    free(r.c);
}

/* The start kernel must pass: a failing one stops the run, undecided. */
static void start_kernel_fails(void **state)
{
    fx *f = *state;
    replay_kernel(f, 0, 1);
    kiln_judge_script_add(&f->js, 0, KILN_JUDGE_RECORD, failed("compile-error"), 0);
    run_expect(f, &f->js, NULL, NULL, -1);
    assert_contains(f->err, "the start kernel does not pass verification: fail at visible "
                            "(compile-error)");
    result r;
    load(f, &r);
    assert_int_equal(cand(&r, 0)->state, KILN_CAND_PROPOSED);
    assert_string_equal(cand(&r, 0)->decision, "");
    free(r.c);
}

/* A start kernel that does not compile is the user's input: exit 2, the
 * file named, the compiler's lines from the verdict's feedback. */
static void start_kernel_does_not_compile(void **state)
{
    fx *f = *state;
    replay_kernel(f, 0, 1);
    kiln_verdict *v = failed("compile-error");
    snprintf(v->stage, sizeof v->stage, "compile");
    snprintf(v->reason, sizeof v->reason, "the candidate does not compile");
    snprintf(v->feedback, sizeof v->feedback, "fail at stage compile: source.c:3:1: error: boom\n");
    kiln_judge_script_add(&f->js, 0, KILN_JUDGE_RECORD, v, 0);
    run_expect(f, &f->js, NULL, NULL, -1);
    assert_int_equal(f->status, 2);
    assert_contains(f->err, "the start kernel /");   /* replay's: the task's starter */
    assert_contains(f->err, "/starter.c does not compile");
    assert_contains(f->err, " does not compile\nthe compiler said:\nsource.c:3:1: error: boom");
    assert_null(strstr(f->err, "[...]"));
}

/* The time budget runs out while a verdict is waited for: the run stops on
 * time and says so; --resume collects that job by its id, judging nothing
 * again. */
static void budget_expires_mid_judgement(void **state)
{
    fx *f = *state;
    f->o.budget_s = 60;
    replay_kernel(f, 0, 1);
    start_passes(&f->js);
    kiln_judge_script_add(&f->js, 1, KILN_JUDGE_VERDICT, pass(1.5), 0);
    kiln_judge_script_add(&f->js, 1, KILN_JUDGE_CONFIRM, pass(1.5), 3600);
    run_expect(f, &f->js, NULL, NULL, 0);
    result r;
    load(f, &r);
    assert_int_equal(cand(&r, 1)->state, KILN_CAND_VERIFIED);
    assert_true(cand(&r, 1)->confirm_job[0] != '\0');
    assert_int_equal(r.run.iterations_done, 0);
    char confirm_job[32];
    snprintf(confirm_job, sizeof confirm_job, "%s", cand(&r, 1)->confirm_job);
    free(r.c);
    kiln_judge_script_init(&f->js, 1, 100);
    kiln_judge_script_add(&f->js, 1, KILN_JUDGE_CONFIRM, pass(1.5), 0);
    kiln_judge_script_add(&f->js, 1, KILN_JUDGE_RECORD, pass(1.5), 0);
    kiln_judge_script_add(&f->js, 1, KILN_JUDGE_RERECORD, pass(1.5), 0);
    run_expect(f, &f->js, "last", NULL, 0);
    load(f, &r);
    assert_decided(&r, 1, "keep", "kept: geomean 1.500x");
    assert_string_equal(f->js.log[0].job, confirm_job);
    assert_int_equal(kiln_judge_script_count(&f->js, KILN_SCRIPT_COLLECT, 1, KILN_JUDGE_VERDICT),
                     0);
    assert_int_equal(r.run.iterations_done, 1);
    free(r.c);
}

/* Bad input is refused before the run exists, exit 2; a resumed run keeps
 * its keep rule. */
static void bad_input(void **state)
{
    fx *f = *state;
    f->o.agent = "nonesuch";
    run_expect(f, &f->js, NULL, NULL, -2);
    assert_contains(f->err, "unknown agent 'nonesuch'");
    assert_int_equal(f->status, KILN_EXIT_BAD_INPUT);
    f->o.agent = "replay";
    replay_kernel(f, 0, 1);
    start_passes(&f->js);
    kiln_judge_script_add(&f->js, 1, KILN_JUDGE_VERDICT, pass(1.0), 0);
    run_expect(f, &f->js, NULL, NULL, 0);
    f->o.keep_margin = 0.05;
    run_expect(f, &f->js, "last", NULL, -2);
    assert_contains(f->err, "keeps candidates with --keep-margin 2%");
    assert_int_equal(f->status, KILN_EXIT_BAD_INPUT);
}

/* The replay files run out: the proposer has nothing left and says so. */
static void proposer_exhausted(void **state)
{
    fx *f = *state;
    f->o.iterations = 3;
    replay_kernel(f, 0, 1);
    start_passes(&f->js);
    kiln_judge_script_add(&f->js, 1, KILN_JUDGE_VERDICT, pass(1.0), 0);
    run_expect(f, &f->js, NULL, NULL, 0);
    result r;
    load(f, &r);
    assert_int_equal(r.n, 2);
    assert_int_equal(r.run.iterations_done, 1);
    assert_string_equal(r.run.status, "done");
    assert_stopped_for(f, "every replay file has been judged");
    free(r.c);
}

/* A time budget spent by the start kernel: no iteration starts. */
static void time_budget_spent(void **state)
{
    fx *f = *state;
    f->o.budget_s = 1e-6;
    replay_kernel(f, 0, 1);
    start_passes(&f->js);
    run_expect(f, &f->js, NULL, NULL, 0);
    result r;
    load(f, &r);
    assert_int_equal(r.n, 1);
    assert_int_equal(r.run.iterations_done, 0);
    assert_stopped_for(f, "time budget reached\"");   /* spent: not the estimate's */
    free(r.c);
}

/* On the CUDA backend a start kernel without a verdict means no GPU where
 * kernels are verified: the run says so and is kept. */
static void cuda_unavailable(void **state)
{
    fx *f = *state;
    f->o.backend = "cuda";
    kiln_judge_script_add(&f->js, 0, KILN_JUDGE_RECORD, NULL, 0);
    run_expect(f, &f->js, NULL, NULL, -1);
    assert_contains(f->err, "the CUDA backend is unavailable to kilnd: the start kernel could "
                            "not be verified");
    result r;
    load(f, &r);
    assert_string_equal(r.run.backend, "cuda");
    assert_int_equal(cand(&r, 0)->state, KILN_CAND_PROPOSED);
    free(r.c);
}

/* The archive will hold all.noknob (#1) and none.noknob (#0), in that
 * order: a seed that draws #0 for iterations 2 and 3 while #0 may be drawn
 * (no intervals here: nobody is surely beaten). */
static unsigned long long seed_drawing_the_start(void)
{
    kiln_elite a[2] = {{.cell = "all.noknob", .n = 1, .speedup = 1.5},
                       {.cell = "none.noknob", .n = 0, .speedup = 1.0}};
    unsigned long long seed = 1;
    while (kiln_archive_pick(a, 2, KILN_PARENT_BEST_P, seed, 2) != 1 ||
           kiln_archive_pick(a, 2, KILN_PARENT_BEST_P, seed, 3) != 1)
        seed++;
    return seed;
}

/* --parents archive: a draw picks an elite other than the head; its kept
 * child moves the branch only when it beats the head against the task's
 * baseline, else it is kept under refs/kiln/kept. A kept kernel that does
 * not beat its cell's elite leaves the archive as it was. #1's record
 * against the baseline is 1.5x +-50%: its lower end (0.75) is not above
 * the start kernel's upper end (1.01), so #0 is not surely beaten and can
 * be drawn (parents_never_surely_beaten is the other side). */
static void parents_from_the_archive(void **state)
{
    fx *f = *state;
    f->o.seed = seed_drawing_the_start();
    f->o.parents = "archive";
    f->o.iterations = 3;
    for (int i = 0; i < 3; i++)
        replay_kernel(f, i, i + 1);
    start_passes(&f->js);
    kiln_judge_script_add(&f->js, 1, KILN_JUDGE_VERDICT, pass(1.5), 0);
    kiln_judge_script_add(&f->js, 1, KILN_JUDGE_CONFIRM, pass(1.5), 0);
    kiln_verdict *wide = verdict("pass", "ok", 0.5, 3, 1.5, 1.5, 1.5);
    kiln_judge_script_add(&f->js, 1, KILN_JUDGE_RECORD, wide, 0);
    kiln_judge_script_add(&f->js, 1, KILN_JUDGE_RERECORD, wide, 0);
    kiln_judge_script_add(&f->js, 2, KILN_JUDGE_VERDICT, pass(1.5), 0);
    kiln_judge_script_add(&f->js, 2, KILN_JUDGE_CONFIRM, pass(1.5), 0);
    kiln_judge_script_add(&f->js, 2, KILN_JUDGE_RECORD, pass(1.2), 0);
    kiln_judge_script_add(&f->js, 2, KILN_JUDGE_RERECORD, pass(1.2), 0);
    kiln_judge_script_add(&f->js, 3, KILN_JUDGE_VERDICT, pass(1.5), 0);
    kiln_judge_script_add(&f->js, 3, KILN_JUDGE_CONFIRM, pass(1.5), 0);
    kiln_judge_script_add(&f->js, 3, KILN_JUDGE_RECORD, pass(2.0), 0);
    kiln_judge_script_add(&f->js, 3, KILN_JUDGE_RERECORD, pass(2.0), 0);
    run_expect(f, &f->js, NULL, NULL, 0);
    result r;
    load(f, &r);
    assert_string_equal(cand(&r, 2)->parent, cand(&r, 0)->commit);
    assert_string_equal(cand(&r, 3)->parent, cand(&r, 0)->commit);
    assert_decided(&r, 2, "keep", "kept");
    assert_decided(&r, 3, "keep", "kept");
    char ref[128], at[41];
    snprintf(ref, sizeof ref, "refs/kiln/kept/%s/2", r.run.id);
    ref_of(f, ref, at);
    assert_string_equal(at, cand(&r, 2)->commit);   /* slower than the head: parked */
    assert_int_equal(r.head, 3);                     /* faster: the new best */
    ref_of(f, "refs/tags/kiln/best/rmsnorm/cpu/f32", at);
    assert_string_equal(at, cand(&r, 3)->commit);
    snprintf(ref, sizeof ref, "refs/kiln/archive/%s/all.noknob", r.run.id);
    ref_of(f, ref, at);
    assert_string_equal(at, cand(&r, 3)->commit);   /* #2 (1.2x) did not take #1's cell */
    free(r.c);
}

/* The same seed, but #1 is 1.5x +-1% against the baseline: every other
 * elite (#1) surely beats the start kernel (1.0x +-1%), so it is never a
 * parent: iterations 2 and 3 start from the head (issue 35: a model re-beat
 * the 1.00x start kernel while an 8.7x kernel existed). */
static void parents_never_surely_beaten(void **state)
{
    fx *f = *state;
    f->o.seed = seed_drawing_the_start();
    f->o.parents = "archive";
    f->o.iterations = 3;
    for (int i = 0; i < 3; i++)
        replay_kernel(f, i, i + 1);
    start_passes(&f->js);
    kept(&f->js, 1, 1.5);
    kept(&f->js, 2, 1.5);
    kept(&f->js, 3, 1.5);
    run_expect(f, &f->js, NULL, NULL, 0);
    result r;
    load(f, &r);
    /* The draws that took #0 take the only elite left open, #1 (#2 tied
     * it and did not take its cell): the head at iteration 2, not at 3. */
    assert_string_equal(cand(&r, 2)->parent, cand(&r, 1)->commit);
    assert_string_equal(cand(&r, 3)->parent, cand(&r, 1)->commit);
    assert_decided(&r, 2, "keep", "kept");
    assert_decided(&r, 3, "keep", "kept");
    free(r.c);
}

/* A session stopped after a verdict was stored but before the move it
 * leads to (here: the budget ran out waiting for the re-time, and the
 * re-time's verdict is then written as a crash right after storing it would
 * leave it): the resumed run takes the stored verdict, never asking again. */
static void stored_but_not_moved(void **state)
{
    fx *f = *state;
    f->o.budget_s = 1e5;
    replay_kernel(f, 0, 1);
    start_passes(&f->js);
    kiln_judge_script_add(&f->js, 1, KILN_JUDGE_VERDICT, pass(1.5), 0);
    kiln_judge_script_add(&f->js, 1, KILN_JUDGE_CONFIRM, pass(1.5), 1e6);
    run_expect(f, &f->js, NULL, NULL, 0);
    result r;
    load(f, &r);
    assert_int_equal(cand(&r, 1)->state, KILN_CAND_VERIFIED);
    char path[400], *json = kiln_verdict_json(pass(1.4), NULL, 0);
    sqlite3 *db;
    kiln_error e = {0};
    snprintf(path, sizeof path, "%s/.kiln/kiln.db", f->ws);
    assert_int_equal(kiln_db_open(&db, path, &e), 0);
    assert_int_equal(kiln_db_cand_text_put(db, r.run.id, 1, KILN_TEXT_CONFIRM, json, &e), 0);
    kiln_db_close(db);
    free(json);
    free(r.c);
    kiln_judge_script_init(&f->js, 1, 100);
    kiln_judge_script_add(&f->js, 1, KILN_JUDGE_RECORD, pass(1.5), 0);
    kiln_judge_script_add(&f->js, 1, KILN_JUDGE_RERECORD, pass(1.5), 0);
    run_expect(f, &f->js, "last", NULL, 0);
    load(f, &r);
    assert_decided(&r, 1, "keep", "pooled 1.400x");   /* the stored re-time, pooled */
    assert_float_equal(cand(&r, 1)->confirm_speedup, 1.4, 1e-9);
    assert_int_equal(kiln_judge_script_count(&f->js, KILN_SCRIPT_COLLECT, 1, KILN_JUDGE_CONFIRM),
                     0);
    free(r.c);
}

/* A fresh workspace for the next variant. */
static void fresh(fx *f)
{
    kiln_remove_tree(f->ws);
    unlink(f->out);
}

/* A stored verdict that cannot be read back (a damaged database): the
 * candidate is reverted saying so, never judged again. */
static void unreadable_verdict(void **state)
{
    fx *f = *state;
    f->o.budget_s = 1e5;
    replay_kernel(f, 0, 1);
    start_passes(&f->js);
    kiln_judge_script_add(&f->js, 1, KILN_JUDGE_VERDICT, pass(1.5), 0);
    kiln_judge_script_add(&f->js, 1, KILN_JUDGE_CONFIRM, pass(1.5), 1e6);
    run_expect(f, &f->js, NULL, NULL, 0);
    result r;
    load(f, &r);
    char path[400];
    sqlite3 *db;
    kiln_error e = {0};
    snprintf(path, sizeof path, "%s/.kiln/kiln.db", f->ws);
    assert_int_equal(kiln_db_open(&db, path, &e), 0);
    assert_int_equal(kiln_db_cand_text_put(db, r.run.id, 1, KILN_TEXT_VERDICT, "{not json", &e), 0);
    kiln_db_close(db);
    free(r.c);
    kiln_judge_script_init(&f->js, 1, 100);
    run_expect(f, &f->js, "last", NULL, 0);
    load(f, &r);
    assert_decided(&r, 1, "revert", "its verdict against the parent cannot be read back");
    assert_int_equal(f->js.nlog, 0);
    free(r.c);
}

/* ---- Ctrl-C ---------------------------------------------------------------------- */

typedef struct at_move {
    int target, count;          /* act on the target-th move (from 1) */
    int sig;                    /* raise it there; 0: exit at once (a crash) */
} at_move;

static void act(void *p, const kiln_cand *c)
{
    at_move *a = p;
    (void)c;
    if (++a->count != a->target)
        return;
    if (!a->sig)
        _exit(0);   /* killed right after the move was recorded */
    raise(a->sig);
}

/* A child process runs one session acting at move m; its exit status. */
static int session_in_child(fx *f, kiln_judge_script *js, int m, int sig)
{
    fflush(stdout);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        at_move a = {.target = m, .sig = sig};
        watch w = {act, &a};
        kiln_search_catch_interrupts();
        session(f, js, NULL, &w);
        exit(f->status);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    return WEXITSTATUS(status);
}

/* Ctrl-C after the first draft is verified: the run stops after that step
 * (exit 130, "stopped"), the second draft's job handed over is recorded,
 * and --resume collects it instead of verifying it again. */
static void interrupted_and_resumed(void **state)
{
    fx *f = *state;
    f->o.drafts = 2;
    replay_kernel(f, 0, 1);
    replay_kernel(f, 1, 2);
    start_passes(&f->js);
    kiln_judge_script_add(&f->js, 1, KILN_JUDGE_VERDICT, pass(1.3), 0);
    kiln_judge_script_add(&f->js, 2, KILN_JUDGE_VERDICT, pass(1.4), 0);
    /* moves: #0 decided, committed, done; #1 verified */
    assert_int_equal(session_in_child(f, &f->js, 4, SIGINT), 130);
    result r;
    load(f, &r);
    assert_string_equal(r.run.status, "stopped");
    assert_int_equal(cand(&r, 1)->state, KILN_CAND_VERIFIED);
    assert_int_equal(cand(&r, 2)->state, KILN_CAND_PROPOSED);
    char job[32];
    snprintf(job, sizeof job, "%s", cand(&r, 2)->job);
    assert_true(job[0] != '\0');
    free(r.c);
    kiln_judge_script_init(&f->js, 1, 100);
    kiln_judge_script_add(&f->js, 2, KILN_JUDGE_VERDICT, pass(1.4), 0);
    kept(&f->js, 1, 1.3);
    kiln_judge_script_add(&f->js, 2, KILN_JUDGE_CONFIRM, pass(1.4), 0);
    kiln_judge_script_add(&f->js, 2, KILN_JUDGE_RECORD, pass(1.4), 0);
    kiln_judge_script_add(&f->js, 2, KILN_JUDGE_RERECORD, pass(1.4), 0);
    run_expect(f, &f->js, "last", NULL, 0);
    load(f, &r);
    assert_string_equal(f->js.log[0].job, job);   /* collected by its id, never sent again */
    assert_int_equal(kiln_judge_script_count(&f->js, KILN_SCRIPT_SUBMIT, 2, KILN_JUDGE_VERDICT),
                     0);
    assert_int_equal(kiln_judge_script_count(&f->js, KILN_SCRIPT_COLLECT, 1, KILN_JUDGE_VERDICT),
                     0);
    assert_decided(&r, 2, "keep", "kept: geomean 1.400x");
    assert_decided(&r, 1, "revert", "another draft of this iteration was kept");
    free(r.c);
}

/* Ctrl-C is heeded between the phases and between iterations: after the
 * last draft is verified no contender is re-timed; after an iteration's
 * last move the next proposes nothing. */
static void interrupted_between_phases(void **state)
{
    fx *f = *state;
    f->o.drafts = 2;
    f->o.iterations = 2;
    for (int i = 0; i < 4; i++)
        replay_kernel(f, i, i + 1);
    start_passes(&f->js);
    kiln_judge_script_add(&f->js, 1, KILN_JUDGE_VERDICT, pass(1.3), 0);
    kiln_judge_script_add(&f->js, 2, KILN_JUDGE_VERDICT, pass(1.4), 0);
    /* moves: #0's three, #1 verified, #2 verified */
    assert_int_equal(session_in_child(f, &f->js, 5, SIGINT), 130);
    result r;
    load(f, &r);
    assert_int_equal(cand(&r, 1)->state, KILN_CAND_VERIFIED);
    assert_int_equal(cand(&r, 2)->state, KILN_CAND_VERIFIED);
    assert_string_equal(cand(&r, 2)->confirm_job, "");   /* never re-timed */
    free(r.c);
    fresh(f);
    f->o.drafts = 1;
    kiln_judge_script_init(&f->js, 1, 1);
    start_passes(&f->js);
    kept(&f->js, 1, 1.5);
    /* moves: #0's three; #1 verified, confirmed, decided, committed, done */
    assert_int_equal(session_in_child(f, &f->js, 8, SIGINT), 130);
    load(f, &r);
    assert_int_equal(r.n, 2);                  /* iteration 2 proposed nothing */
    assert_int_equal(r.run.iterations_done, 1);
    assert_string_equal(r.run.status, "stopped");
    free(r.c);
}

/* ---- resume at every state --------------------------------------------------------- */

/* Two iterations of three drafts that go through every state and most
 * decisions: #1 failing, #2's re-time short of the margin, #3 confirmed
 * and then its record failing (its re-record given up); #4 a duplicate of
 * #1, #6 kept over #5 (another draft kept), in the last iteration. */
static void scenario_files(fx *f)
{
    f->o.drafts = 3;
    f->o.iterations = 2;
    replay_kernel(f, 0, 1);
    replay_kernel(f, 1, 2);
    replay_kernel(f, 2, 3);
    replay_file(f, 3, "int kernel_1(int x) { return x + 1; } /* again */\n");
    replay_kernel(f, 4, 5);
    replay_kernel(f, 5, 6);
}

/* Its script; delayed: the (n, k) whose answer comes after the deadline
 * (n -1: none). */
static void scenario_script(kiln_judge_script *js, int first_job, int delayed_n,
                            kiln_judgement delayed_k)
{
    kiln_judge_script_init(js, 1, first_job);
    start_passes(js);
    kiln_judge_script_add(js, 1, KILN_JUDGE_VERDICT, failed("wrong-output"), 0);
    kiln_judge_script_add(js, 2, KILN_JUDGE_VERDICT, pass(1.25), 0);
    kiln_judge_script_add(js, 2, KILN_JUDGE_CONFIRM, pass(1.0), 0);
    kiln_judge_script_add(js, 3, KILN_JUDGE_VERDICT, pass(1.1), 0);
    kiln_judge_script_add(js, 3, KILN_JUDGE_CONFIRM, pass(1.1), 0);
    kiln_judge_script_add(js, 3, KILN_JUDGE_RECORD, failed("nondeterministic"), 0);
    kiln_judge_script_add(js, 3, KILN_JUDGE_RERECORD, pass(1.1), 0);
    kiln_judge_script_add(js, 5, KILN_JUDGE_VERDICT, pass(1.3), 0);
    kept(js, 6, 1.5);
    for (int i = 0; i < js->nsteps; i++)
        if (js->step[i].n == delayed_n && js->step[i].kind == delayed_k)
            js->step[i].delay_s = 1e6;
}

/* The candidate committed as commit in r, -1: none. */
static int n_at(const result *r, const char *commit)
{
    for (int i = 0; commit[0] && i < r->n; i++)
        if (strcmp(r->c[i].commit, commit) == 0)
            return r->c[i].n;
    return -1;
}

/* got decided as ref did, candidate by candidate, and git agrees. */
static void assert_same(fx *f, const result *ref, const result *got, const char *what)
{
    if (got->n != ref->n)
        fail_msg("%s: %d candidates, not %d", what, got->n, ref->n);
    for (int i = 0; i < ref->n; i++) {
        const kiln_cand *a = &ref->c[i], *b = &got->c[i];
        int same = a->n == b->n && a->state == b->state && !strcmp(a->decision, b->decision) &&
                   !strcmp(a->status, b->status) && !strcmp(a->stage, b->stage) &&
                   !strcmp(a->code, b->code) && !strcmp(a->why, b->why) &&
                   !strcmp(a->reason, b->reason) && a->speedup == b->speedup &&
                   a->confirm_speedup == b->confirm_speedup &&
                   a->speedup_vs_baseline == b->speedup_vs_baseline &&
                   a->pooled_speedup == b->pooled_speedup &&
                   n_at(ref, a->parent) == n_at(got, b->parent);
        if (!same)
            fail_msg("%s: candidate %d: %s %s '%s', not %s %s '%s'", what, a->n,
                     kiln_cand_state_name(b->state), b->decision, b->why,
                     kiln_cand_state_name(a->state), a->decision, a->why);
    }
    assert_int_equal(got->run.iterations_done, ref->run.iterations_done);
    assert_int_equal(got->head, ref->head);
    assert_float_equal(got->run.best_speedup, ref->run.best_speedup, 0);
    char branch[41];
    ref_of(f, got->run.branch, branch);
    if (strcmp(branch, got->run.head_commit) != 0)
        fail_msg("%s: the branch is at %.12s, the run's head at %.12s", what, branch,
                 got->run.head_commit);
}

/* What the crashed or stopped session left: per candidate, which verdicts
 * are stored and which job ids are recorded. */
typedef struct left {
    int n;
    int stored[16][KILN_NJUDGEMENTS];
    char job[16][KILN_NJUDGEMENTS][32];
} left;

static void what_is_left(fx *f, left *l)
{
    result r;
    load(f, &r);
    memset(l, 0, sizeof *l);
    l->n = r.n;
    for (int i = 0; i < r.n && i < 16; i++) {
        kiln_cand *c = &r.c[i];
        const char *jobs[] = {c->job, c->confirm_job, c->record_job, c->rerecord_job};
        for (int k = 0; k < KILN_NJUDGEMENTS; k++) {
            char *t = text_of(f, &r, c->n, (kiln_cand_text)k);
            l->stored[c->n][k] = t != NULL;
            free(t);
            snprintf(l->job[c->n][k], 32, "%s", jobs[k]);
        }
    }
    free(r.c);
}

/* The resumed session judged nothing the first had a verdict of, and
 * collected what it had handed over by its job id. */
static void assert_nothing_twice(const kiln_judge_script *js, const left *l, const char *what)
{
    for (int i = 0; i < js->nlog; i++) {
        const kiln_script_call *c = &js->log[i];
        if (c->n >= 16)
            continue;
        if (c->op != KILN_SCRIPT_CANCEL && l->stored[c->n][c->kind])
            fail_msg("%s: candidate %d's %s judged again", what, c->n,
                     kiln_judgement_name(c->kind));
        const char *job = l->job[c->n][c->kind];
        if (c->op == KILN_SCRIPT_SUBMIT && job[0])
            fail_msg("%s: candidate %d's %s submitted again", what, c->n,
                     kiln_judgement_name(c->kind));
        if (c->op == KILN_SCRIPT_COLLECT && job[0] && strcmp(c->job, job) != 0 &&
            !strstr(c->key, ":after:"))
            fail_msg("%s: candidate %d's %s asked as '%s', not by its job %s", what, c->n,
                     kiln_judgement_name(c->kind), c->job, job);
    }
}

/* The reference run, counting its moves. */
static void count_move(void *p, const kiln_cand *c)
{
    (void)c;
    ++*(int *)p;
}

/* A reference run of the scenario, then for each of its moves a run
 * stopped right after it (sig 0: the process exits, a crash; SIGINT:
 * Ctrl-C, the run stops after that step) and resumed: each must decide as
 * the reference did, judging nothing twice. */
/* The per-shape scenario (--objective per-shape): two specialists kept in
 * iteration 1, a draft screened out; a failure, a third specialist kept
 * and one reverted on overlapping pools in iteration 2. */
static void per_shape_files(fx *f)
{
    scenario_files(f);
    replay_kernel(f, 3, 4);
    f->o.objective = "per-shape";
}

static void per_shape_script(kiln_judge_script *js, int first_job)
{
    kiln_judge_script_init(js, 1, first_job);
    start_passes(js);
    kiln_verdict *v[3] = {verdict("pass", "ok", 0.01, 3, 0.8, 0.9, 1.3),
                          verdict("pass", "ok", 0.01, 3, 1.4, 0.9, 0.9),
                          verdict("pass", "ok", 0.01, 3, 1.4, 0.9, 1.44)};
    int ns[3] = {1, 2, 5};
    for (int i = 0; i < 3; i++) {
        kiln_judge_script_add(js, ns[i], KILN_JUDGE_VERDICT, v[i], 0);
        kiln_judge_script_add(js, ns[i], KILN_JUDGE_RECORD, v[i], 0);
        kiln_judge_script_add(js, ns[i], KILN_JUDGE_RERECORD, v[i], 0);
    }
    kiln_judge_script_add(js, 3, KILN_JUDGE_VERDICT, pass(1.01), 0);
    kiln_judge_script_add(js, 4, KILN_JUDGE_VERDICT, failed("wrong-output"), 0);
    kiln_verdict *near = verdict("pass", "ok", 0.05, 3, 1.41, 0.9, 0.9);
    kiln_judge_script_add(js, 6, KILN_JUDGE_VERDICT, verdict("pass", "ok", 0.01, 3, 1.1, 1.0, 1.0), 0);
    kiln_judge_script_add(js, 6, KILN_JUDGE_RECORD, near, 0);
    kiln_judge_script_add(js, 6, KILN_JUDGE_RERECORD, near, 0);
}

static void stop_script(kiln_judge_script *js, int per_shape, int first_job)
{
    if (per_shape)
        per_shape_script(js, first_job);
    else
        scenario_script(js, first_job, -1, 0);
}

static void assert_reference(const result *ref, int per_shape)
{
    if (per_shape) {
        assert_decided(ref, 1, "keep", "kept: surely fastest at 1 shape: v3");
        assert_decided(ref, 2, "keep", "kept: surely fastest at 1 shape: v1");
        assert_decided(ref, 3, "revert", "no shape where it may beat the incumbent");
        assert_decided(ref, 4, "revert", "fail at visible (wrong-output)");
        assert_decided(ref, 5, "keep", "v3 1.440x");
        assert_decided(ref, 6, "revert", "surely fastest at no shape");
        assert_int_equal(ref->head, 5);
        return;
    }
    assert_decided(ref, 6, "keep", "kept");
    assert_decided(ref, 5, "revert", "another draft of this iteration was kept");
    assert_decided(ref, 4, "revert", "same source as candidate #1");
    assert_decided(ref, 3, "revert", "failed its measurement against the task's baseline");
    assert_decided(ref, 2, "revert", "(re-timed in a fresh worker");
    assert_int_equal(cand(ref, 3)->rerecord_job[0] != '\0', 1);
    assert_int_equal(ref->head, 6);
}

static void stop_at_every_move(fx *f, int sig, int per_shape)
{
    if (per_shape)
        per_shape_files(f);
    else
        scenario_files(f);
    stop_script(&f->js, per_shape, 1);
    int moves = 0;
    watch w = {count_move, &moves};
    run_expect(f, &f->js, NULL, &w, 0);
    result ref;
    load(f, &ref);
    assert_reference(&ref, per_shape);
    assert_true(moves > 20);
    int stopped = 0;
    for (int m = 1; m <= moves; m++) {
        char what[64];
        snprintf(what, sizeof what, "%s%s after move %d of %d", per_shape ? "per-shape: " : "",
                 sig ? "Ctrl-C" : "killed", m, moves);
        g_what = what;
        fresh(f);
        stop_script(&f->js, per_shape, 1);
        /* Ctrl-C after the last check of the last iteration: it finishes. */
        int status = session_in_child(f, &f->js, m, sig);
        if (status != (sig ? 130 : 0) && !(sig && status == 0))
            fail_msg("%s: the first session exited %d", what, status);
        stopped += status == 130;
        left l;
        what_is_left(f, &l);
        stop_script(&f->js, per_shape, 1000);
        run_expect(f, &f->js, "last", NULL, 0);
        result got;
        load(f, &got);
        assert_same(f, &ref, &got, what);
        assert_nothing_twice(&f->js, &l, what);
        free(got.c);
    }
    if (sig && stopped < moves / 2)
        fail_msg("Ctrl-C stopped the run only %d times of %d", stopped, moves);
    free(ref.c);
}

static void resume_at_every_state(void **state)
{
    stop_at_every_move(*state, 0, 0);
}

static void interrupted_at_every_move(void **state)
{
    stop_at_every_move(*state, SIGINT, 0);
}

/* The same for --objective per-shape: the incumbents rebuilt from the
 * stored keeps give the reference's decisions after a stop anywhere. */
static void per_shape_resume_at_every_move(void **state)
{
    stop_at_every_move(*state, 0, 1);
}

/* The time budget runs out during each judgement of the reference run in
 * turn; the resumed run collects that job and decides as the reference. */
static void deadline_at_every_judgement(void **state)
{
    fx *f = *state;
    scenario_files(f);
    scenario_script(&f->js, 1, -1, 0);
    run_expect(f, &f->js, NULL, NULL, 0);
    result ref;
    load(f, &ref);
    kiln_script_call asked[64];
    int nasked = 0;
    for (int i = 0; i < f->js.nlog && nasked < 64; i++)
        if (f->js.log[i].op == KILN_SCRIPT_COLLECT && f->js.log[i].answered)
            asked[nasked++] = f->js.log[i];
    assert_int_equal(nasked, 13);
    f->o.budget_s = 1e5;
    for (int i = 0; i < nasked; i++) {
        char what[96];
        snprintf(what, sizeof what, "out of time at candidate %d's %s", asked[i].n,
                 kiln_judgement_name(asked[i].kind));
        g_what = what;
        fresh(f);
        scenario_script(&f->js, 1, asked[i].n, asked[i].kind);
        run_expect(f, &f->js, NULL, NULL, 0);
        left l;
        what_is_left(f, &l);
        if (!l.job[asked[i].n][asked[i].kind][0])
            fail_msg("%s: no job recorded", what);
        scenario_script(&f->js, 1000, -1, 0);
        run_expect(f, &f->js, "last", NULL, 0);
        result got;
        load(f, &got);
        assert_same(f, &ref, &got, what);
        assert_nothing_twice(&f->js, &l, what);
        free(got.c);
    }
    free(ref.c);
}

int main(int argc, char **argv)
{
    g_fake = argc > 1 ? argv[1] : NULL;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(keep, setup, teardown),
        cmocka_unit_test_setup_teardown(revert_on_margin, setup, teardown),
        cmocka_unit_test_setup_teardown(revert_on_regression, setup, teardown),
        cmocka_unit_test_setup_teardown(suspect_retime, setup, teardown),
        cmocka_unit_test_setup_teardown(retime_short_of_margin, setup, teardown),
        cmocka_unit_test_setup_teardown(pools_that_do_not_overlap, setup, teardown),
        cmocka_unit_test_setup_teardown(one_winner_in_order, setup, teardown),
        cmocka_unit_test_setup_teardown(keep_lower_leaves_best, setup, teardown),
        cmocka_unit_test_setup_teardown(per_shape_search, setup, teardown),
        cmocka_unit_test_setup_teardown(record_fails, setup, teardown),
        cmocka_unit_test_setup_teardown(duplicates, setup, teardown),
        cmocka_unit_test_setup_teardown(proposal_fails, setup, teardown),
        cmocka_unit_test_setup_teardown(model_failure, setup, teardown),
        cmocka_unit_test_setup_teardown(token_budget, setup, teardown),
        cmocka_unit_test_setup_teardown(model_asked_ahead, setup, teardown),
        cmocka_unit_test_setup_teardown(model_not_asked_ahead, setup, teardown),
        cmocka_unit_test_setup_teardown(bad_input, setup, teardown),
        cmocka_unit_test_setup_teardown(proposer_exhausted, setup, teardown),
        cmocka_unit_test_setup_teardown(time_budget_spent, setup, teardown),
        cmocka_unit_test_setup_teardown(cuda_unavailable, setup, teardown),
        cmocka_unit_test_setup_teardown(parents_from_the_archive, setup, teardown),
        cmocka_unit_test_setup_teardown(parents_never_surely_beaten, setup, teardown),
        cmocka_unit_test_setup_teardown(job_error, setup, teardown),
        cmocka_unit_test_setup_teardown(start_kernel_fails, setup, teardown),
        cmocka_unit_test_setup_teardown(start_kernel_does_not_compile, setup, teardown),
        cmocka_unit_test_setup_teardown(budget_expires_mid_judgement, setup, teardown),
        cmocka_unit_test_setup_teardown(stored_but_not_moved, setup, teardown),
        cmocka_unit_test_setup_teardown(unreadable_verdict, setup, teardown),
        cmocka_unit_test_setup_teardown(interrupted_between_phases, setup, teardown),
        cmocka_unit_test_setup_teardown(interrupted_and_resumed, setup, teardown),
        cmocka_unit_test_setup_teardown(resume_at_every_state, setup, teardown),
        cmocka_unit_test_setup_teardown(interrupted_at_every_move, setup, teardown),
        cmocka_unit_test_setup_teardown(per_shape_resume_at_every_move, setup, teardown),
        cmocka_unit_test_setup_teardown(deadline_at_every_judgement, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
