/* propose.c - asking the run's proposer for the next candidates: the
 * offline tuner, a directory to replay, or a language model. Every
 * proposal becomes a candidate row with its source stored before anything
 * else happens to it; an unusable answer is recorded with the reason, so the
 * next prompt can say what went wrong. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileutil.h"
#include "iteration.h"
#include "kiln_exit.h"
#include "task_describe.h"
#include "lessons.h"
#include "parse.h"
#include "prompt.h"
#include "replay.h"
#include "propose.h"
#include "manifest.h"
#include "safe_text.h"

#define MAX_DRAFTS KILN_MAX_DRAFTS
#define MAX_TRIED 4096

static int add_candidate(search *s, int it, int n, int draft, const char *proposer,
                         const char *hypothesis, const char *source, const char *failure,
                         kiln_error *err)
{
    kiln_cand c = {.n = n, .iteration = it, .draft = draft};
    snprintf(c.run, sizeof c.run, "%s", s->run.id);
    snprintf(c.parent, sizeof c.parent, "%s", s->parent[0] ? s->parent : s->run.head_commit);
    snprintf(c.proposer, sizeof c.proposer, "%s", proposer);
    snprintf(c.hypothesis, sizeof c.hypothesis, "%s", hypothesis ? hypothesis : "");
    if (failure) {   /* nothing to verify: recorded and finished */
        c.state = KILN_CAND_DONE;
        snprintf(c.status, sizeof c.status, "error");
        snprintf(c.stage, sizeof c.stage, "propose");
        snprintf(c.code, sizeof c.code, "%s", strncmp(failure, "answer:", 7) == 0 ? "bad-answer" : "llm-error");
        snprintf(c.reason, sizeof c.reason, "%s", failure);
        snprintf(c.decision, sizeof c.decision, "revert");
    } else {
        c.state = KILN_CAND_PROPOSED;
    }
    if (kiln_db_cand_upsert(s->db, &c, err) < 0 ||
        (source && kiln_db_cand_text_put(s->db, s->run.id, n, KILN_TEXT_SOURCE, source, err) < 0))
        return -1;
    /* The iteration takes it in memory from here (iteration.h). */
    if (s->proposing && kiln_iteration_add(s->proposing, &c, source) < 0)
        return kiln_fail(err, "out of memory");
    return 0;
}

/* ---- tune ------------------------------------------------------------------ */

/* Knob settings already tried in this run, read back from the stored
 * sources, so a resumed run never repeats one either. */
static int tried_keys(search *s, const kiln_knob *knobs, int nk, char ***keys, int *n, kiln_error *err)
{
    kiln_cand *all;
    int nall;
    if (kiln_db_cands(s->db, s->run.id, &all, &nall, err) < 0)
        return -1;
    *keys = calloc((size_t)nall + MAX_DRAFTS + 1, sizeof **keys);
    *n = 0;
    for (int i = 0; *keys && i < nall; i++) {
        char *src = kiln_db_cand_text(s->db, s->run.id, all[i].n, KILN_TEXT_SOURCE);
        kiln_knob k[32];
        kiln_error e;
        int m = src ? kiln_knobs_parse(src, k, 32, &e) : -1;
        free(src);
        if (m != nk)
            continue;
        char values[32][64], key[1024];
        for (int j = 0; j < m; j++)
            snprintf(values[j], 64, "%s", k[j].value);
        kiln_knobs_key(knobs, nk, (const char(*)[64])values, key, sizeof key);
        (*keys)[(*n)++] = strdup(key);
    }
    free(all);
    return *keys ? 0 : kiln_fail(err, "out of memory");
}

static int propose_tune(search *s, int it, int first, const char *parent_src, kiln_error *err)
{
    kiln_knob knobs[32];
    int nk = kiln_knobs_parse(parent_src, knobs, 32, err);
    if (nk < 0)
        return -1;
    if (nk == 0) {
        snprintf(s->stop_reason, sizeof s->stop_reason, "the kernel has no //@kiln tune knobs");
        return 1;
    }
    char **keys;
    int nkeys, made = 0, rc = 0;
    if (tried_keys(s, knobs, nk, &keys, &nkeys, err) < 0)
        return -1;
    for (int d = 0; d < s->run.drafts && rc == 0; d++) {
        char values[32][64], hyp[512], key[1024];
        int r = kiln_tuner_propose(&s->tuner, knobs, nk, (const char *const *)keys, nkeys, values,
                                   hyp, sizeof hyp);
        if (r <= 0)
            break;
        char *src = kiln_knobs_apply(parent_src, knobs, nk, (const char(*)[64])values);
        kiln_knobs_key(knobs, nk, (const char(*)[64])values, key, sizeof key);
        keys[nkeys++] = strdup(key);
        rc = src ? add_candidate(s, it, first + made, d, "tune", hyp, src, NULL, err) : -1;
        free(src);
        made++;
    }
    for (int i = 0; i < nkeys; i++)
        free(keys[i]);
    free(keys);
    if (rc == 0 && made == 0) {
        snprintf(s->stop_reason, sizeof s->stop_reason, "the tuner has tried every knob setting");
        return 1;
    }
    return rc;
}

/* ---- replay ------------------------------------------------------------------ */

static int propose_replay(search *s, int it, int first, kiln_error *err)
{
    /* Files are used in name order, one per candidate after the start. */
    int used = first - 1, made = 0;
    for (int d = 0; d < s->run.drafts && used + made < s->nreplay; d++, made++) {
        const char *path = s->replay[used + made];
        char *src;
        kiln_error unread;
        if (kiln_read_file(path, 256 << 10, &src, NULL, &unread) < 0)
            src = NULL;   /* recorded below as a candidate that could not be read */
        char hyp[512];
        kiln_replay_hypothesis(src ? src : "", path, hyp, sizeof hyp);
        int rc = src ? add_candidate(s, it, first + made, d, "replay", hyp, src, NULL, err)
                     : add_candidate(s, it, first + made, d, "replay", hyp, NULL,
                                     "answer: the replay file could not be read", err);
        free(src);
        if (rc < 0)
            return -1;
    }
    if (made == 0) {
        snprintf(s->stop_reason, sizeof s->stop_reason, "every replay file has been judged");
        return 1;
    }
    return 0;
}

/* ---- language models ----------------------------------------------------------- */

static char *task_text(search *s)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return NULL;
    if (s->backend == KILN_BACKEND_CUDA)
        kiln_task_describe_cuda(f, &s->task, s->dt);
    else
        kiln_task_describe(f, &s->task, s->dt);
    fclose(f);
    return buf;
}

static const char *lang_of(const search *s)
{
    return s->backend == KILN_BACKEND_CUDA ? "cuda" : "c";
}

/* The kernel the first launch of src's manifest names, or NULL. */
static char *first_kernel(const char *src)
{
    kiln_manifest_span sp;
    if (!kiln_manifest_locate(src, strlen(src), &sp))
        return NULL;
    cJSON *m = cJSON_ParseWithLength(src + sp.json_at, sp.json_end - sp.json_at);
    const cJSON *l = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(m, "launches"), 0);
    const char *k = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(l, "kernel"));
    char *out = k && *k ? strdup(k) : NULL;
    cJSON_Delete(m);
    return out;
}

/* What the prompt names as the entry: the task's C function ("function"),
 * or for CUDA the parent's first launched kernel (the parser then takes the
 * block that holds a launch manifest, whatever its kernels are called). */
static void entry_of(const search *s, const char *parent_src, char *buf, size_t len)
{
    char *k = s->backend == KILN_BACKEND_CUDA ? first_kernel(parent_src) : NULL;
    snprintf(buf, len, "%s", k ? k : s->task.function);
    free(k);
}

/* The last attempts of the run that are decided, newest last, for the
 * prompt. Drafts still being verified (the iteration under way while the
 * next one's requests go out early: prefetch.c) have nothing to show yet. */
typedef struct history {
    kiln_cand *all;
    int nall;
    kiln_attempt att[8];
    char *logs[8];
    int n;
} history;

static int load_history(search *s, history *h, kiln_error *err)
{
    memset(h, 0, sizeof *h);
    if (kiln_db_cands(s->db, s->run.id, &h->all, &h->nall, err) < 0)
        return -1;
    int from = h->nall, take = 0;
    while (from > 1 && take < 8)
        take += h->all[--from].decision[0] != '\0';
    for (int i = from; i < h->nall && h->n < 8; i++) {
        kiln_cand *c = &h->all[i];
        if (!c->decision[0])
            continue;
        kiln_attempt *a = &h->att[h->n];
        a->n = c->n;
        a->hypothesis = c->hypothesis;
        a->status = strcmp(c->decision, "keep") == 0 ? "kept" : c->status;
        a->stage = c->stage;
        a->reason = c->reason;
        a->speedup_vs_parent = c->speedup;
        if (strcmp(c->status, "pass") != 0 && strcmp(c->decision, "keep") != 0) {
            /* Every failure's feedback (it hides hidden shapes), not only
             * a compile error's log: what went wrong is what the model
             * should read next. */
            char *t = kiln_db_cand_text(s->db, s->run.id, c->n, KILN_TEXT_VERDICT);
            kiln_verdict *v = t ? malloc(sizeof *v) : NULL;
            kiln_error e;
            int ok = v && kiln_verdict_parse(t, v, &e) == 0;
            h->logs[h->n] = ok ? strdup(v->feedback) : NULL;
            a->feedback = h->logs[h->n];
            free(v);
            free(t);
        }
        h->n++;
    }
    return 0;
}

/* Pipelining: the drafts of an earlier iteration still undecided, being
 * verified while iteration it's prompts are answered (none when the
 * iteration asks for itself: every draft before it is decided by then),
 * each with its parent's candidate number, -1 when no candidate has that
 * commit. */
static int in_flight_of(const history *h, int it, kiln_in_flight *out, int max)
{
    int n = 0;
    for (int i = 0; i < h->nall && n < max; i++) {
        const kiln_cand *c = &h->all[i];
        if (c->n <= 0 || c->iteration >= it || c->decision[0])
            continue;
        out[n] = (kiln_in_flight){.n = c->n, .hypothesis = c->hypothesis, .parent = -1};
        for (int j = 0; j < h->nall && c->parent[0]; j++)
            if (strcmp(h->all[j].commit, c->parent) == 0)
                out[n].parent = h->all[j].n;
        n++;
    }
    return n;
}

static void free_history(history *h)
{
    for (int i = 0; i < h->n; i++)
        free(h->logs[i]);
    free(h->all);
}

/* The streak of failed model calls: a success ends it. */
static void note_call(search *s, const kiln_llm_result *r)
{
    if (r->ok) {
        s->llm_fail_streak = 0;
        return;
    }
    if (s->llm_fail_streak++ == 0)
        s->llm_fail_since = kiln_wall_now();
    snprintf(s->llm_last_error, sizeof s->llm_last_error, "%.250s", r->error);
}

/* A server that has failed N calls in a row over at least T stops the
 * run (it is kept, to --resume once the server is back): retrying for
 * hours helps nobody. -1 with err then. */
static int server_gone(search *s, kiln_error *err)
{
    int n = s->o->model_failures > 0 ? s->o->model_failures : 5;
    double t = s->o->model_failure_window_s > 0 ? s->o->model_failure_window_s : 120;
    double span = kiln_wall_now() - s->llm_fail_since;
    if (s->llm_fail_streak < n || span < t)
        return 0;
    return kiln_fail_as(err, KILN_ERR_RESOURCE, "the model server at %s failed %d calls in a row "
                        "over %.0f s (last: %s); the run is kept: --resume it when the server "
                        "answers", s->llm.base_url, s->llm_fail_streak, span, s->llm_last_error);
}

/* Candidate n's answer, made safe to show, into the run database. */
static int store_answer(search *s, int n, const char *text, kiln_error *err)
{
    size_t len = strlen(text), cap = 4 * len + 1;   /* escapes grow text at most fourfold */
    char *clean = malloc(cap);
    if (!clean)
        return kiln_fail(err, "out of memory");
    kiln_safe_text(text, len, clean, cap);
    int rc = kiln_db_cand_text_put(s->db, s->run.id, n, KILN_TEXT_ANSWER, clean, err);
    free(clean);
    return rc;
}

static int record_answers(search *s, int it, int first, const kiln_model_batch *b,
                          kiln_llm_result *res, int n, kiln_error *err)
{
    int fatal = 0, rc = 0;
    for (int d = 0; d < n && rc == 0; d++) {
        kiln_llm_result *r = &res[d];
        s->run.tokens_used += r->prompt_tokens + r->completion_tokens;
        kiln_db_llm_call(s->db, s->run.id, first + d, d, s->run.agent, s->run.model,
                         r->prompt_tokens, r->completion_tokens, r->latency_s, r->attempts,
                         r->http_status, r->ok, r->error, err);
        note_call(s, r);
        if (!r->ok) {
            fatal |= r->fatal;
            /* A refused request (rejected key, bad model) ends the run; it
             * is in llm_calls, but is no candidate: a resumed run asks again
             * for this iteration instead of counting it as tried. */
            if (r->fatal)
                continue;
            char why[600];
            snprintf(why, sizeof why, "the model call failed: %.500s", r->error);
            rc = add_candidate(s, it, first + d, d, s->run.agent, "", NULL, why, err);
            continue;
        }
        /* A cut-off answer (finish), a refusal, host code or a diff are
         * told apart by the parser; each is noted in the reason. */
        kiln_proposal p;
        kiln_reply reply = {.text = r->text, .lang = lang_of(s), .entry = b->entry,
                            .finish = r->finish, .parent = b->parent_src};
        kiln_parse_reply(&reply, &p);
        char why[400];
        snprintf(why, sizeof why, "answer: %.380s", p.error);
        rc = add_candidate(s, it, first + d, d, s->run.agent,
                           p.hypothesis[0] ? p.hypothesis : "(no hypothesis given)",
                           p.ok ? p.source : NULL, p.ok ? NULL : why, err);
        /* The answer stays with the candidate, above all a rejected one,
         * made safe to show (safe_text.h): it is the model's raw text. */
        if (rc == 0 && r->text)
            rc = store_answer(s, first + d, r->text, err);
        kiln_proposal_free(&p);
    }
    if (rc == 0 && fatal)
        return kiln_fail(err, "the %s API refused the request: %s", s->run.agent, res[0].error);
    return rc;
}

static void say_asking(search *s, int n)
{
    snprintf(s->progress.last, sizeof s->progress.last, "asking %s (%s) for %d draft%s",
             s->run.agent, s->run.model, n, n == 1 ? "" : "s");
    kiln_progress_update(&s->progress, 0);
}

/* The few lessons that fit this task's scope and the latest failure. */
static char *lessons_for(search *s, const history *h, const char *task_text, long long *ids,
                         int *nids)
{
    char tags[8][KILN_TAG_MAX];
    const char *tagp[8];
    int nt = kiln_lesson_scope(s->task.name, s->run.dtype, s->run.backend, s->run.grp, NULL, tags);
    nt = kiln_lesson_scope_width(kiln_run_width_class(s), tags, nt);
    for (int i = 0; i < nt; i++)
        tagp[i] = tags[i];
    char context[2048];
    const kiln_attempt *last = h->n ? &h->att[h->n - 1] : NULL;
    snprintf(context, sizeof context, "%.1200s %.300s %.400s", task_text,
             last ? last->hypothesis : "", last && strcmp(last->status, "pass") ? last->reason : "");
    kiln_lesson_query q = {.tags = tagp, .ntags = nt, .context = context};
    char *text = NULL;
    kiln_error e;
    if (kiln_lessons_for_prompt(s->db, &q, &text, ids, 16, nids, &e) < 0) {
        *nids = 0;
        return NULL;
    }
    return text;
}

/* The requests of one iteration: the same context, but each draft its own
 * direction and temperature, so no two ask the same (docs/search.md). */
static int build_drafts(kiln_prompt_input *in, int it, kiln_model_batch *b, kiln_error *err)
{
    for (int d = 0; d < b->n; d++) {
        in->strategy = kiln_draft_strategy(it, d, b->n);
        if (kiln_prompt_build(in, &b->system[d], &b->user[d], err) < 0)
            return -1;
        b->req[d] = (kiln_llm_request){.system = b->system[d], .user = b->user[d],
                                       .temperature = kiln_draft_temperature(d, b->n)};
    }
    return 0;
}

void kiln_model_batch_free(kiln_model_batch *b)
{
    for (int d = 0; d < b->n; d++) {
        free(b->system[d]);
        free(b->user[d]);
        kiln_llm_result_free(&b->res[d]);
    }
    free(b->lessons);
    free(b->parent_src);
    memset(b, 0, sizeof *b);
}

/* What each draft's prompt showed; a call that failed showed nothing. */
static void note_shown(search *s, int first, const kiln_model_batch *b)
{
    for (int d = 0; d < b->n; d++) {
        if (!b->res[d].ok)
            continue;
        kiln_error e;
        kiln_lessons_shown(s->db, s->run.id, first + d, b->lesson_ids, b->nids,
                           b->lessons ? strlen(b->lessons) : 0,
                           strlen(b->system[d]) + strlen(b->user[d]), &e);
    }
}

/* ---- inspirations: other elites of the archive (archive.h) ------------- */

typedef struct inspirations {
    kiln_elite *a;                                /* the archive, read back */
    kiln_inspiration x[KILN_INSPIRATIONS];
    char *src[KILN_INSPIRATIONS];                 /* malloc'd */
    char *verdict[KILN_INSPIRATIONS];             /* malloc'd: its pooled verdict, or NULL */
    char hyp[KILN_INSPIRATIONS][512];
    int n;
} inspirations;

static void free_inspirations(inspirations *ins)
{
    for (int i = 0; i < ins->n; i++) {
        free(ins->src[i]);
        free(ins->verdict[i]);
    }
    free(ins->a);
}

/* The elites other than parent (and none surely beaten: archive.h), best
 * first, with their hypotheses, sources and pooled verdicts against the
 * task's baseline (the prompt shows its per-shape speedups) from the
 * run's candidates. */
static int load_inspirations(search *s, const char *parent_commit, inspirations *ins,
                             kiln_error *err)
{
    memset(ins, 0, sizeof *ins);
    kiln_cand *all;
    int na, nall, parent = -1, idx[KILN_INSPIRATIONS];
    if (kiln_db_archive(s->db, s->run.id, &ins->a, &na, err) < 0)
        return -1;
    if (kiln_db_cands(s->db, s->run.id, &all, &nall, err) < 0)
        return free_inspirations(ins), -1;
    for (int i = 0; i < na; i++)
        if (strcmp(ins->a[i].commit, parent_commit) == 0)
            parent = i;
    int k = kiln_archive_inspirations(ins->a, na, parent, idx, KILN_INSPIRATIONS);
    for (int j = 0; j < k; j++) {
        const kiln_elite *e = &ins->a[idx[j]];
        ins->src[j] = kiln_db_cand_text(s->db, s->run.id, e->n, KILN_TEXT_SOURCE);
        ins->verdict[j] = kiln_db_record_verdict_at(s->db, s->run.id, e->commit);
        for (int m = 0; m < nall; m++)
            if (all[m].n == e->n)
                snprintf(ins->hyp[j], sizeof ins->hyp[j], "%s", all[m].hypothesis);
        ins->x[j] = (kiln_inspiration){.n = e->n, .cell = e->cell, .speedup = e->speedup,
                                       .lo = e->lo, .hi = e->hi, .hypothesis = ins->hyp[j],
                                       .source = ins->src[j], .verdict_json = ins->verdict[j]};
        ins->n = j + 1;
    }
    free(all);
    return 0;
}

int kiln_model_prepare(search *s, int it, const char *parent, const char *parent_src,
                       const char *parent_verdict, kiln_model_batch *b, kiln_error *err)
{
    memset(b, 0, sizeof *b);
    b->it = it;
    snprintf(b->parent, sizeof b->parent, "%s", parent);
    history h;
    inspirations ins;
    char *text = task_text(s);
    if (!text || load_history(s, &h, err) < 0) {
        free(text);
        return text ? -1 : kiln_fail(err, "out of memory");
    }
    if (load_inspirations(s, parent, &ins, err) < 0) {
        free_history(&h);
        free(text);
        return -1;
    }
    b->lessons = lessons_for(s, &h, text, b->lesson_ids, &b->nids);
    entry_of(s, parent_src, b->entry, sizeof b->entry);
    b->parent_src = parent_src ? strdup(parent_src) : NULL;
    kiln_in_flight flight[MAX_DRAFTS];
    int nflight = in_flight_of(&h, it, flight, MAX_DRAFTS);
    kiln_prompt_input in = {.task_text = text, .lang = lang_of(s), .entry = b->entry,
                            .parent_source = parent_src, .parent_verdict_json = parent_verdict,
                            .attempts = h.att, .nattempts = h.n,
                            .in_flight = flight, .nin_flight = nflight, .lessons = b->lessons,
                            .inspirations = ins.x, .ninspirations = ins.n,
                            .parent_not_best = strcmp(parent, s->run.head_commit) != 0,
                            .target = s->target,
                            .max_chars = 0};   /* the prompt's default budget */
    b->n = s->run.drafts < MAX_DRAFTS ? s->run.drafts : MAX_DRAFTS;
    int rc = build_drafts(&in, it, b, err);
    free_inspirations(&ins);
    free_history(&h);
    free(text);
    return rc;
}

/* What the model's server taught the client: a length limit it wanted
 * named otherwise is named so from the next request on. */
static void learn_from(search *s, const kiln_model_batch *b)
{
    for (int d = 0; d < b->n; d++)
        if (b->res[d].ok && b->res[d].token_field)
            s->llm.token_field = b->res[d].token_field;
}

int kiln_model_record(search *s, kiln_model_batch *b, int first, kiln_error *err)
{
    snprintf(s->parent, sizeof s->parent, "%s", b->parent);
    learn_from(s, b);
    int rc = record_answers(s, b->it, first, b, b->res, b->n, err);
    if (rc == 0)
        rc = server_gone(s, err);
    if (rc == 0)
        note_shown(s, first, b);
    return rc;
}

void kiln_model_drop(search *s, kiln_model_batch *b)
{
    for (int d = 0; d < b->n; d++) {
        kiln_llm_result *r = &b->res[d];
        s->run.tokens_used += r->prompt_tokens + r->completion_tokens;
        char why[600];
        snprintf(why, sizeof why, "not used: the run stopped before iteration %d%s%.500s", b->it,
                 r->ok ? "" : "; ", r->ok ? "" : r->error);
        kiln_error e;
        kiln_db_llm_call(s->db, s->run.id, -1, d, s->run.agent, s->run.model, r->prompt_tokens,
                         r->completion_tokens, r->latency_s, r->attempts, r->http_status, r->ok,
                         why, &e);
    }
}

static int propose_llm(search *s, int it, int first, const char *parent_src,
                       const char *parent_verdict, kiln_error *err)
{
    kiln_model_batch b;
    const char *parent = s->parent[0] ? s->parent : s->run.head_commit;
    int rc = kiln_model_prepare(s, it, parent, parent_src, parent_verdict, &b, err);
    if (rc == 0) {
        say_asking(s, b.n);
        double t = kiln_wall_now();
        rc = kiln_llm_complete_each(&s->llm, b.req, b.n, b.res, err);
        double took = kiln_wall_now() - t;
        s->run.model_wait_s += took;
        if (rc == 0) {   /* the model's time, for pipelining's rule (shares.h) */
            s->run.pipe.model_s += took;
            s->run.pipe.model_n++;
        }
    }
    if (rc == 0)
        rc = kiln_model_record(s, &b, first, err);
    kiln_model_batch_free(&b);
    return rc;
}

int kiln_propose(search *s, int it, int first, const char *parent_src, const char *parent_verdict,
                 kiln_error *err)
{
    if (strcmp(s->run.agent, "tune") == 0)
        return propose_tune(s, it, first, parent_src, err);
    if (strcmp(s->run.agent, "replay") == 0)
        return propose_replay(s, it, first, err);
    return propose_llm(s, it, first, parent_src, parent_verdict, err);
}
