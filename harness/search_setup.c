/* search_setup.c - starting or resuming a search run: task, workspace,
 * database, verifier, proposer, and the run's start kernel. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fileutil.h"
#include "kiln_exit.h"
#include "paths.h"
#include "replay.h"
#include "search_state.h"
#include "kilnd_pool.h"

/* A start kernel's source (its first 256 KiB, as the verifier reads). */
static char *read_text(const char *path, kiln_error *err)
{
    char *buf;
    return kiln_read_file(path, 256 << 10, &buf, NULL, err) < 0 ? NULL : buf;
}

/* The run's backend: "cpu" (also for NULL or "", as in old runs) or "cuda". */
static int setup_backend(search *s, const char *backend, kiln_error *err)
{
    int b = backend && *backend ? kiln_backend_parse(backend) : KILN_BACKEND_CPU;
    if (b < 0)
        return kiln_bad_input(err, "unknown backend '%s' (cpu, cuda)", backend);
    s->backend = (kiln_backend)b;
    return 0;
}

static int setup_task(search *s, const char *task, const char *backend, const char *dtype,
                      kiln_error *err)
{
    if (setup_backend(s, backend, err) < 0)
        return kiln_error_as(err, KILN_ERR_BAD_INPUT);
    if (kiln_task_find(task, &s->task, err) < 0)
        return kiln_error_as(err, KILN_ERR_BAD_INPUT);
    int cuda = s->backend == KILN_BACKEND_CUDA;
    const char *bname = kiln_backend_name(s->backend);
    if ((cuda ? s->task.ncuda_dtypes : s->task.ncpu_dtypes) == 0)
        return kiln_bad_input(err, "task %s has no %s backend", s->task.name, cuda ? "CUDA" : "CPU");
    s->dt = dtype && *dtype ? kiln_dtype_parse(dtype) : kiln_backend_default_dtype(&s->task, s->backend);
    if (!kiln_task_supports_backend(&s->task, bname, s->dt))
        return kiln_bad_input(err, "task %s has no %s variant for dtype '%s'", s->task.name,
                              cuda ? "CUDA" : "CPU", dtype ? dtype : "?");
    snprintf(s->relpath, sizeof s->relpath, "%s/%s/%s", s->task.name, bname,
             cuda ? "kernel.cu" : "kernel.c");
    /* Everything the command line can get wrong is checked before the
     * workspace exists: a typo must not leave a half-made one behind. */
    const char *group = s->o->group;
    if (group && kiln_task_group_for(&s->task, bname, group) < 0)
        return kiln_bad_input(err, "task %s has no %s group '%s'", s->task.name, bname, group);
    if (s->o->from && access(s->o->from, R_OK) != 0)
        return kiln_bad_input(err, "--from %s: %s", s->o->from, strerror(errno));
    const char *parents = s->o->parents;
    if (parents && strcmp(parents, "best") != 0 && strcmp(parents, "archive") != 0)
        return kiln_bad_input(err, "--parents must be best or archive, not '%s'", parents);
    if (s->o->objective && !s->o->resume) {
        int g = group ? kiln_task_group_for(&s->task, bname, group)
                      : kiln_task_default_group_for(&s->task, bname);
        if (g >= 0 && kiln_keep_check_objective(s->o->objective, &s->task, g, bname, err) < 0)
            return kiln_error_as(err, KILN_ERR_BAD_INPUT);
    }
    return 0;
}

/* The keep rule from the flags, else the defaults: all of it for a new
 * run; only what is missing (-1, "") for a run an older kiln recorded. */
static void keep_from_flags(const kiln_search_opts *o, kiln_run *r, int only_missing)
{
    if (!only_missing || r->keep_margin < 0)
        r->keep_margin = o->keep_margin >= 0 ? o->keep_margin : KILN_KEEP_MARGIN_DEFAULT;
    if (!only_missing || r->max_regression < 0)
        r->max_regression = o->max_regression >= 0 ? o->max_regression
                                                   : KILN_MAX_REGRESSION_DEFAULT;
    if (!only_missing || !r->objective[0])
        snprintf(r->objective, sizeof r->objective, "%s", o->objective ? o->objective : "geomean");
}

/* A flag given again on --resume must say what the run recorded: a run's
 * decisions all follow one rule. */
static int keep_same(const search *s, const char *flag, double given, double recorded,
                     kiln_error *err)
{
    if (given < 0 || recorded < 0 || fabs(given - recorded) < 1e-9)
        return 0;
    return kiln_fail(err, "run %s keeps candidates with %s %.3g%%; %s %.3g%% cannot change that",
                     s->run.id, flag, 100 * recorded, flag, 100 * given);
}

/* A resumed run's keep rule: the recorded one; a run from before kiln
 * recorded it takes the flags or the defaults, and records them. */
static int keep_resumed(search *s, kiln_error *err)
{
    const kiln_search_opts *o = s->o;
    kiln_run *r = &s->run;
    if (keep_same(s, "--keep-margin", o->keep_margin, r->keep_margin, err) < 0 ||
        keep_same(s, "--max-regression", o->max_regression, r->max_regression, err) < 0)
        return kiln_error_as(err, KILN_ERR_BAD_INPUT);
    if (o->objective && r->objective[0] && strcmp(o->objective, r->objective) != 0)
        return kiln_bad_input(err, "run %s keeps candidates by --objective %s; --objective %s "
                              "cannot change that", r->id, r->objective, o->objective);
    keep_from_flags(o, r, 1);
    const char *bname = kiln_backend_name(s->backend);
    int g = kiln_task_group_for(&s->task, bname, r->grp);
    if (g < 0)
        return kiln_bad_input(err, "run %s: task %s has no %s group '%s' now", r->id, s->task.name,
                              bname, r->grp);
    if (kiln_keep_check_objective(r->objective, &s->task, g, bname, err) < 0)
        return kiln_error_as(err, KILN_ERR_BAD_INPUT);
    return 0;
}

/* How parents are chosen (docs/search.md, "Population"): a model samples
 * the archive, so its lineages branch; the tuner and replay take the best,
 * since the tuner's coordinate descent walks around the incumbent and a
 * replay judges files made elsewhere. A resumed run keeps its own: one
 * run, one policy; a run from before the archive took the best. */
static int parents_policy(search *s, int resumed, kiln_error *err)
{
    const char *given = s->o->parents;   /* best or archive: setup_task checked it */
    kiln_run *r = &s->run;
    if (resumed && !r->parents[0])
        snprintf(r->parents, sizeof r->parents, "best");
    if (resumed && given && strcmp(given, r->parents) != 0)
        return kiln_bad_input(err, "run %s chooses parents by --parents %s; --parents %s cannot "
                              "change that", r->id, r->parents, given);
    if (!resumed) {
        int model = strcmp(r->agent, "tune") != 0 && strcmp(r->agent, "replay") != 0;
        snprintf(r->parents, sizeof r->parents, "%s", given ? given : model ? "archive" : "best");
    }
    return 0;
}

static void keep_load(search *s)
{
    s->keep.margin = s->run.keep_margin;
    s->keep.max_regression = s->run.max_regression;
    snprintf(s->keep.objective, sizeof s->keep.objective, "%s", s->run.objective);
}

/* Many kilnds (docs/fleet.md): a list must answer now, every one of
 * them (a typo should not quietly halve the search); a fleet's nodes may
 * still be queued in Slurm, and are used as their endpoints appear. */
static int setup_verifiers(search *s, kiln_error *err)
{
    kiln_verifiers *vs = calloc(1, sizeof *vs);
    if (!vs)
        return kiln_fail(err, "out of memory"), -1;
    s->judge.verifiers = vs;
    if (s->o->verifiers)
        return kiln_verifiers_list(vs, s->o->verifiers, err) < 0
                   ? kiln_error_as(err, KILN_ERR_BAD_INPUT)
               : kiln_verifiers_check(vs, err) < 0             ? -1
                                                                : 0;
    if (kiln_verifiers_fleet(vs, s->o->fleet, err) < 0)
        return kiln_error_as(err, KILN_ERR_BAD_INPUT);
    return 0;
}

static int setup_judge(search *s, kiln_error *err)
{
    kiln_judge *j = &s->judge;
    j->in_process = s->o->no_daemon;
    j->task = &s->task;
    snprintf(j->task_ref, sizeof j->task_ref, "%s", strchr(s->run.task, '/') ? s->task.dir : s->run.task);
    j->backend = kiln_backend_name(s->backend);
    j->dtype = s->run.dtype;
    j->group = s->run.grp;
    j->timing_ms = s->o->timing_ms > 0 ? s->o->timing_ms : 1000;
    if (j->in_process)
        return 0;
    if (s->o->verifiers || s->o->fleet)
        return setup_verifiers(s, err);
    const char *sock = s->o->socket ? s->o->socket : getenv("KILN_SOCKET");
    if (sock && *sock) {
        snprintf(j->address, sizeof j->address, "%s", sock);
        return 0;
    }
    return kiln_default_socket(j->address, sizeof j->address, err);
}

static const char *default_agent(const kiln_search_opts *o)
{
    if (o->agent)
        return o->agent;
    if (!o->model)
        return "tune";   /* no model configured: offline */
    return getenv("ANTHROPIC_API_KEY") && !getenv("OPENAI_API_KEY") ? "anthropic" : "openai";
}

static int setup_proposer(search *s, kiln_error *err)
{
    const char *a = s->run.agent;
    kiln_tuner_init(&s->tuner, (uint64_t)s->run.seed);
    if (strcmp(a, "tune") == 0)
        return 0;
    if (strcmp(a, "replay") == 0) {
        if (!s->run.from_path[0])
            return kiln_bad_input(err, "--agent replay needs --from DIR (the candidate files)");
        if (kiln_replay_list(s->run.from_path, s->backend == KILN_BACKEND_CUDA ? "cuda" : "c",
                             &s->replay, &s->nreplay, err) < 0)
            return kiln_error_as(err, KILN_ERR_BAD_INPUT);
        return 0;
    }
    kiln_llm_dialect d;
    if (strcmp(a, "openai") == 0)
        d = KILN_LLM_OPENAI;
    else if (strcmp(a, "anthropic") == 0)
        d = KILN_LLM_ANTHROPIC;
    else
        return kiln_bad_input(err, "unknown agent '%s' (tune, openai, anthropic, replay)", a);
    const char *model = s->run.model[0] ? s->run.model : NULL;
    if (!model)
        return kiln_bad_input(err, "--agent %s needs --model", a);
    if (kiln_llm_config_init(&s->llm, d, model, s->run.base_url[0] ? s->run.base_url : NULL, err) < 0)
        return kiln_error_as(err, KILN_ERR_BAD_INPUT);
    if (s->o->answer_tokens > 0)
        s->llm.max_tokens = s->o->answer_tokens;
    s->use_llm = 1;
    return 0;
}

static void new_run_id(sqlite3 *db, char *id, size_t len)
{
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    char base[20];
    strftime(base, sizeof base, "%Y%m%d-%H%M%S", &tm);
    kiln_run tmp;
    kiln_error e;
    snprintf(id, len, "%s", base);
    for (int i = 2; kiln_db_run_get(db, id, &tmp, &e) == 1; i++)
        snprintf(id, len, "%.15s-%d", base, i % 1000);
}

/* The run row and candidate 0, the start kernel (measured against the
 * task's baseline by the loop). Written only once everything else is set
 * up, so a search that cannot start (unknown agent, no API key, unreadable
 * --from) leaves no run behind for --resume last to pick up. */
/* The offline tuner starts from the task's tunable kernel when it has one
 * (tunable.c or tunable.cu beside the backend's starter): the starter stays
 * the baseline every speedup is measured against, and the tunable one
 * opens a real knob space to search. */
static void tunable_start(search *s)
{
    if (s->run.from_path[0] || strcmp(s->run.agent, "tune") != 0)
        return;
    int cuda = s->backend == KILN_BACKEND_CUDA;
    const char *starter = cuda ? s->task.starter_cuda : s->task.baseline_cpu;
    const char *slash = strrchr(starter, '/');
    if (!slash)
        return;
    char path[sizeof s->run.from_path];
    snprintf(path, sizeof path, "%.*s/tunable.%s", (int)(slash - starter), starter, cuda ? "cu" : "c");
    if (access(path, R_OK) == 0)
        snprintf(s->run.from_path, sizeof s->run.from_path, "%s", path);
}

static int record_run(search *s, kiln_error *err)
{
    tunable_start(s);
    int from_file = s->run.from_path[0] && strcmp(s->run.agent, "replay") != 0;
    const char *starter = s->backend == KILN_BACKEND_CUDA ? s->task.starter_cuda : s->task.baseline_cpu;
    char *src = read_text(from_file ? s->run.from_path : starter, err);
    if (!src)
        return kiln_error_as(err, KILN_ERR_BAD_INPUT);
    if (kiln_db_run_insert(s->db, &s->run, err) < 0) {
        free(src);
        return -1;
    }
    kiln_cand c = {.n = 0, .iteration = 0};
    snprintf(c.run, sizeof c.run, "%s", s->run.id);
    snprintf(c.proposer, sizeof c.proposer, "start");
    c.state = KILN_CAND_PROPOSED;
    snprintf(c.hypothesis, sizeof c.hypothesis, "start: %.490s",
             from_file ? s->run.from_path : "the task's starter kernel");
    int rc = kiln_db_cand_upsert(s->db, &c, err) < 0 ||
             kiln_db_cand_verdict(s->db, s->run.id, 0, "source", src, err) < 0;
    free(src);
    return rc ? -1 : 0;
}

static int create_run(search *s, kiln_error *err)
{
    const kiln_search_opts *o = s->o;
    kiln_run *r = &s->run;
    memset(r, 0, sizeof *r);
    new_run_id(s->db, r->id, sizeof r->id);
    snprintf(r->task, sizeof r->task, "%s", o->task);
    snprintf(r->backend, sizeof r->backend, "%s", kiln_backend_name(s->backend));
    snprintf(r->dtype, sizeof r->dtype, "%s", kiln_dtype_name(s->dt));
    /* the backend's groups: a task with cuda_groups has other shapes there */
    const char *bn = kiln_backend_name(s->backend);
    int g = o->group ? kiln_task_group_for(&s->task, bn, o->group)
                     : kiln_task_default_group_for(&s->task, bn);
    if (g < 0)
        return kiln_bad_input(err, "task %s has no %s group '%s'", s->task.name, bn,
                              o->group ? o->group : "(default)");
    snprintf(r->grp, sizeof r->grp, "%s", s->task.groups[g].name);
    snprintf(r->agent, sizeof r->agent, "%s", default_agent(o));
    snprintf(r->model, sizeof r->model, "%s", o->model ? o->model : "");
    snprintf(r->branch, sizeof r->branch, "kiln/%s/%s", s->task.name, r->id);
    snprintf(r->status, sizeof r->status, "running");
    r->seed = (long long)o->seed;
    r->budget_iterations = o->iterations;
    r->budget_seconds = o->budget_s;
    r->budget_tokens = o->max_tokens;
    r->drafts = o->drafts > 0 ? o->drafts : 1;
    snprintf(r->base_url, sizeof r->base_url, "%s", o->base_url ? o->base_url : "");
    /* An absolute path, so a resumed run finds it from anywhere. */
    if (o->from && !realpath(o->from, r->from_path))
        return kiln_bad_input(err, "--from %s: %s", o->from, strerror(errno));
    keep_from_flags(o, r, 0);
    return parents_policy(s, 0, err);   /* recorded by record_run once the search can start */
}

static int resume_run(search *s, kiln_error *err)
{
    char id[64];
    snprintf(id, sizeof id, "%s", s->o->resume);
    if (strcmp(id, "last") == 0 && !kiln_db_latest_run(s->db, id, sizeof id))
        id[0] = '\0';
    int rc = kiln_db_run_get(s->db, id, &s->run, err);
    if (rc <= 0)
        return rc < 0 ? -1 : (kiln_bad_input(err, "no run '%s' in this workspace", s->o->resume));
    /* Budgets given again extend or replace the recorded ones. */
    if (s->o->iterations)
        s->run.budget_iterations = s->o->iterations;
    if (s->o->budget_s)
        s->run.budget_seconds = s->o->budget_s;
    if (s->o->max_tokens)
        s->run.budget_tokens = s->o->max_tokens;
    if (s->o->base_url)   /* given again: the server moved */
        snprintf(s->run.base_url, sizeof s->run.base_url, "%s", s->o->base_url);
    if (s->o->from && !realpath(s->o->from, s->run.from_path))
        return kiln_bad_input(err, "--from %s: %s", s->o->from, strerror(errno));
    /* The run keeps its backend; asking for another one is a mistake. */
    const char *rb = s->run.backend[0] ? s->run.backend : "cpu";
    if (s->o->backend && strcmp(s->o->backend, rb) != 0)
        return kiln_bad_input(err, "run %s searches the %s backend; --backend %s cannot change "
                              "that", s->run.id, rb, s->o->backend);
    snprintf(s->run.status, sizeof s->run.status, "running");
    int rc2 = setup_task(s, s->run.task, rb, s->run.dtype, err);
    if (rc2 == 0)
        rc2 = keep_resumed(s, err);
    return rc2 != 0 ? rc2 : parents_policy(s, 1, err);
}

/* A resumed run's progress line shows its best kept kernel's speedup and
 * roofline fraction from the start, not the head's or 0% until the next
 * keep. */
static void restore_best(search *s)
{
    kiln_cand *best = malloc(sizeof *best);
    if (best && kiln_search_best_kept(s, best) == 0) {
        s->progress.best_speedup = best->speedup_vs_baseline;
        s->progress.best_roofline = best->roofline;
    }
    free(best);
}

int kiln_search_setup(search *s, kiln_error *err)
{
    const kiln_search_opts *o = s->o;
    char db[PATH_MAX + 32];
    int rc;
    if (o->resume && o->backend && kiln_backend_parse(o->backend) < 0)
        return kiln_bad_input(err, "unknown backend '%s' (cpu, cuda)", o->backend);
    if (!o->resume && (rc = setup_task(s, o->task, o->backend, o->dtype, err)) != 0)
        return rc;
    if (kiln_ws_open(&s->ws, o->workspace ? o->workspace : "kiln-work", 1, err) < 0 ||
        kiln_ws_check(&s->ws, err) < 0)
        return kiln_error_as(err, KILN_ERR_BAD_INPUT);
    snprintf(db, sizeof db, "%s/.kiln/kiln.db", s->ws.dir);
    if (kiln_db_open(&s->db, db, err) < 0)
        return kiln_error_as(err, KILN_ERR_BAD_INPUT);
    rc = o->resume ? resume_run(s, err) : create_run(s, err);
    if (rc != 0)
        return rc;
    keep_load(s);
    kiln_progress_init(&s->progress, o->json);
    snprintf(s->progress.run, sizeof s->progress.run, "%s", s->run.id);
    s->progress.best_speedup = s->run.best_speedup;
    if (o->resume)
        restore_best(s);
    s->seconds_before = s->run.seconds_used;
    s->t0 = kiln_wall_now();
    if ((rc = setup_judge(s, err)) != 0 || (rc = setup_proposer(s, err)) != 0)
        return rc;
    if (!o->resume && (rc = record_run(s, err)) != 0)
        return rc;
    char holder[128];   /* who holds the lock, for kiln status */
    snprintf(holder, sizeof holder, "%ld %s\n", (long)getpid(), s->run.id);
    kiln_ws_lock_note(&s->ws, holder);
    if ((rc = kiln_ws_checkout_branch(&s->ws, s->run.branch, err)) < 0)
        return rc == -2 ? -2 : -1;
    if (kiln_db_run_update(s->db, &s->run, err) < 0)
        return -1;
    kiln_search_hold(s);
    return 0;
}

void kiln_search_hold(search *s)
{
    kiln_judge *j = &s->judge;
    if (j->in_process || j->verifiers || !j->address[0] || strncmp(j->address, "tcp://", 6) == 0)
        return;
    if (s->hold.fd >= 0 && kiln_client_alive(&s->hold))
        return;
    kiln_client_close(&s->hold);
    kiln_error e;
    if (kiln_client_open_keep(&s->hold, j->address, j->daemon_build[0] ? j->daemon_build : NULL,
                              &e) < 0)
        return;   /* the verification says what is wrong */
    if (!j->daemon_build[0])
        snprintf(j->daemon_build, sizeof j->daemon_build, "%s", s->hold.build);
    char what[1024];
    snprintf(what, sizeof what, "kiln search %.200s, run %s in %.700s", s->task.name, s->run.id,
             s->ws.dir);
    if (kiln_client_hold(&s->hold, what, &e) < 0)
        kiln_client_close(&s->hold);
}

void kiln_search_teardown(search *s)
{
    kiln_client_close(&s->hold);
    if (s->judge.verifiers) {
        kiln_verifiers_free(s->judge.verifiers);
        free(s->judge.verifiers);
        s->judge.verifiers = NULL;
    }
    if (s->replay)
        kiln_replay_free(s->replay, s->nreplay);
    if (s->db)
        kiln_db_close(s->db);
    if (s->ws.repo || s->ws.lock_fd >= 0)
        kiln_ws_close(&s->ws);
}
