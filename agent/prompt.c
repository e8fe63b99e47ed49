/* prompt.c - the system and user prompts (see prompt.h).
 *
 * The user prompt is rendered whole from a small "plan" (which attempts, how
 * much of each one's feedback, how much of the lessons, the whole shape
 * table or only its called-out rows); when it is over budget the plan gives
 * up the least useful context and the prompt is rendered again.  Rendering is
 * cheap next to a model call, and one renderer means the length checked is
 * exactly the length sent. */
#include "prompt.h"

#include "prompt_parts.h"
#include "strbuf.h"
#include "verdict.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LOG_LINES_FULL 15
#define LOG_LINES_SHORT 5
#define LOG_LINE_CHARS 200
#define FIELD_CHARS 300
#define INSP_LINES 60     /* of each inspiration's source */

/* ---- the system prompt -------------------------------------------------- */

static const char sys_role[] =
    "You are an expert performance engineer. Your job: write a faster version of a compute "
    "kernel that is still correct. Every answer is compiled, checked and timed by a verifier "
    "you cannot see or influence; only a candidate that passes every check and is measurably "
    "faster than its parent is kept.\n\n";

static const char sys_c[] =
    "The candidate (CPU, C):\n"
    "- One C17 file that defines the function `%s` with exactly the signature shown in the "
    "task (same name, parameters and types; inputs are const pointers). Make helper functions "
    "static.\n"
    "- It may include \"kiln_cpu.h\" (the kiln_f16 / kiln_bf16 storage types and their "
    "conversions) and standard C headers, nothing else.\n"
    "- It is compiled with the system C compiler at -O2 -march=native into a shared object; "
    "compiler builtins and this machine's vector intrinsics are fine.\n"
    "- No threads, files, system calls or processes: the sandbox kills the worker and the "
    "candidate fails.\n";

static const char sys_cuda[] =
    "The candidate (CUDA):\n"
    "- One .cu file of device code only (no host code), compiled by NVRTC for this GPU's exact "
    "architecture, once per dtype.\n"
    "- #include \"kiln_cuda.h\": kiln_t is the task's element type T for this run (float, "
    "__half or __nv_bfloat16), with float kiln_to_float(kiln_t) and kiln_t "
    "kiln_from_float(float); write T buffers as kiln_t so one source serves every dtype. "
    "Besides it only CUDA's own device headers (such as <cuda_bf16.h>) can be included.\n"
    "- Kernels are declared extern \"C\" __global__; the parent launches `%s`. Kernels may be "
    "renamed, split or added: the manifest names what is launched.\n"
    "- The file ends with a launch manifest in a comment:\n"
    "  /*@kiln launch\n"
    "  {\"launches\": [{\"kernel\": \"NAME\", \"grid\": [\"rows\"], \"block\": [\"BLOCK\"], "
    "\"smem\": \"0\", \"args\": [\"x\", \"w\", \"y\", \"cols\", \"eps\"]}],\n"
    "   \"scratch\": []}\n"
    "  @*/\n"
    "  launches run in order on kiln's stream; grid, block and smem are integers or "
    "expressions over the task's dims, the file's knobs and integer #defines (C's integer "
    "operators and precedence: + - * / %% comparisons && || ! ?:, and min max cdiv gcd lcm), "
    "a \"let\" object names intermediate values used by later expressions, with "
    "optional cluster dims; args name task args (buffers become device pointers, dims are "
    "32-bit int unless the task says 64-bit, scalars by their dtype) or scratch buffers; "
    "scratch buffers ({\"name\", \"bytes\", \"init\": \"zero\"|\"none\"}) are allocated by "
    "kiln, and a zero init is paid for inside the timed region.\n";

static const char sys_knobs[] =
    "- A line `#define NAME VALUE //@kiln tune V1 V2 ...` declares a tuning knob: an offline "
    "tuner may try each listed value, so the code must be correct for all of them.\n\n";

static const char sys_judged[] =
    "How a candidate is judged (the first failure ends the check and is reported back):\n"
    "- static checks, then compilation (compiler errors come back to you);\n"
    "- correctness on the visible shapes, then on hidden shapes that are larger and odder in "
    "every dim (never specialise for the visible sizes; handle any size and any remainder), "
    "then on adversarial inputs (huge, tiny, mixed magnitudes, constant rows);\n"
    "- every call gets fresh random inputs; outputs are pre-filled with NaN poison (write "
    "every output element), every buffer has guard bytes (no out-of-bounds writes), inputs "
    "must stay unchanged, and the error must stay within the task's tolerance;\n"
    "- determinism where the task requires it: the same inputs give bitwise the same "
    "outputs;\n"
    "- timing: interleaved with the baseline on fresh inputs, median of many calls, reported "
    "as speedup and as a fraction of the memory roofline; a time faster than the roofline allows or more "
    "than 100x faster than the baseline is flagged as suspect, so skipping or caching work "
    "does not pay.\n\n";

static const char sys_answer[] =
    "Answer format: the complete file (not a diff, not a fragment) in ONE fenced code block, "
    "and one line outside it:\n"
    "HYPOTHESIS: <what you changed and why it should be faster>\n"
    "Keep any other text short.\n";

static char *build_system(const char *lang, const char *entry)
{
    kiln_strbuf b = {0};
    kiln_sb_add(&b, sys_role);
    kiln_sb_printf(&b, strcmp(lang, "cuda") == 0 ? sys_cuda : sys_c, entry);
    kiln_sb_add(&b, sys_knobs);
    kiln_sb_add(&b, sys_judged);
    kiln_sb_add(&b, sys_answer);
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    return b.p;
}

/* ---- attempts ------------------------------------------------------------ */

/* The first max_lines lines of log, indented, each cut between tokens. */
static void add_log(kiln_strbuf *b, const char *log, int max_lines)
{
    int shown = 0, more = 0;
    for (const char *p = log; *p;) {
        size_t len = strcspn(p, "\n");
        if (shown < max_lines) {
            size_t n = len > 0 && p[len - 1] == '\r' ? len - 1 : len;
            kiln_sb_add(b, "    ");
            kiln_sb_addn(b, p, kiln_prompt_cut(p, n, LOG_LINE_CHARS));
            kiln_sb_add(b, n > LOG_LINE_CHARS ? "...\n" : "\n");
            shown++;
        } else if (len > 0) {
            more++;
        }
        p += len + (p[len] == '\n');
    }
    if (more)
        kiln_sb_printf(b, "    ... (%d more lines)\n", more);
}

/* What the verifier told the agent about an attempt: its feedback, else
 * the compiler's log (all the search passes today). */
static const char *feedback_of(const kiln_attempt *a)
{
    return a->feedback && *a->feedback ? a->feedback : a->compile_log;
}

/* The length of the reason's head when it restates an outcome, "<status>
 * at <stage>" with an optional " (<code>)": the revert's words lead with the
 * verdict it read (decide.c), which may be a later reading than the
 * attempt's status. 0 when the reason does not start so. */
static size_t restated_head(const kiln_attempt *a)
{
    const char *r = a->reason, *at = strstr(r, " at ");
    if (!a->stage || !*a->stage || !at || at == r || memchr(r, ' ', (size_t)(at - r)))
        return 0;
    size_t sl = strlen(a->stage);
    const char *p = at + 4;
    if (strncmp(p, a->stage, sl) != 0 || (p[sl] && p[sl] != ' ' && p[sl] != ':'))
        return 0;
    p += sl;
    if (p[0] == ' ' && p[1] == '(') {
        const char *close = strchr(p, ')');
        if (close)
            p = close + 1;
    }
    return (size_t)(p - r);
}

/* "→ status at stage: reason", each said once: a reason that restates an
 * outcome gives its own head in place of the status and stage. */
static void add_outcome(kiln_strbuf *b, const kiln_attempt *a)
{
    const char *reason = a->reason ? a->reason : "";
    size_t head = *reason ? restated_head(a) : 0;
    kiln_sb_add(b, " \xE2\x86\x92 ");
    if (head > 0) {
        kiln_sb_printf(b, "%.*s", (int)(head < 120 ? head : 120), reason);
        reason += head;
        while (*reason == ':' || *reason == ' ')
            reason++;
    } else {
        kiln_sb_printf(b, "%.40s", a->status ? a->status : "?");
        if (a->stage && *a->stage)
            kiln_sb_printf(b, " at %.40s", a->stage);
    }
    if (*reason) {
        kiln_sb_add(b, ": ");
        kiln_prompt_oneline(b, reason, FIELD_CHARS);
    }
}

static void add_attempt(kiln_strbuf *b, const kiln_attempt *a, int log_lines)
{
    kiln_sb_printf(b, "#%d ", a->n);
    kiln_prompt_oneline(b, a->hypothesis && *a->hypothesis ? a->hypothesis
                                                           : "(no hypothesis given)", FIELD_CHARS);
    add_outcome(b, a);
    if (a->speedup_vs_parent > 0)
        kiln_sb_printf(b, " (%.2fx against its parent)", a->speedup_vs_parent);
    kiln_sb_add(b, "\n");
    const char *fb = feedback_of(a);
    if (log_lines > 0 && fb && *fb) {
        int compile = a->stage && strcmp(a->stage, "compile") == 0;
        kiln_sb_printf(b, "  %s (first lines):\n", compile ? "compile log" : "feedback");
        add_log(b, fb, log_lines);
    }
}

/* ---- the user prompt and its budget -------------------------------------- */

/* What is shown; shrink() gives it up piece by piece. */
typedef struct plan {
    int first;            /* oldest attempt shown */
    int *log_lines;       /* per attempt: lines of its feedback shown */
    size_t lessons_len;   /* bytes of lessons shown */
    int all_shapes;       /* 1: the whole shape table; 0: only the called-out rows */
    int ninsp;            /* inspirations shown (the first ones) */
    int nflight;          /* drafts being verified shown (the first ones) */
    int insp_lines;       /* lines of each inspiration's source shown */
} plan;

/* The parent's verdict, decoded once: NULL when there is none or it could
 * not be read (the prompt says which). */
typedef struct parent_view {
    const kiln_verdict *v;
    int unreadable;
} parent_view;

static const char *fence_for(const char *src)
{
    /* a source holding ``` would end a ``` fence early */
    return strstr(src, "```") ? "~~~~" : "```";
}

static void add_parent(kiln_strbuf *b, const kiln_prompt_input *in)
{
    const char *f = fence_for(in->parent_source);
    size_t n = strlen(in->parent_source);
    kiln_sb_printf(b, "Parent (%s; your answer replaces this whole file):\n%s%s\n",
                   in->target && *in->target ? "the fastest kept kernel at the target shape"
                   : in->parent_not_best     ? "an elite of this run's archive, not its best"
                                             : "the current best",
                   f, strcmp(in->lang, "cuda") == 0 ? "cuda" : "c");
    kiln_sb_add(b, in->parent_source);
    kiln_sb_printf(b, "%s%s\n\n", n && in->parent_source[n - 1] != '\n' ? "\n" : "", f);
}

static void add_results(kiln_strbuf *b, const parent_view *pv, const plan *pl)
{
    if (!pv->v) {
        kiln_sb_add(b, pv->unreadable ? "Parent's results: unavailable (its verdict could not be "
                                        "read).\n\n"
                                      : "Parent's results: not measured yet.\n\n");
        return;
    }
    kiln_prompt_verdict_head(b, pv->v);
    kiln_prompt_shapes(b, pv->v, pl->all_shapes);
    kiln_sb_add(b, "\n");
}

static void add_attempts(kiln_strbuf *b, const kiln_prompt_input *in, const plan *pl)
{
    if (pl->first >= in->nattempts)
        return;
    kiln_sb_add(b, "Recent attempts in this lineage (oldest first):\n");
    if (pl->first > 0)
        kiln_sb_printf(b, "(%d older attempt%s not shown)\n", pl->first, pl->first == 1 ? "" : "s");
    for (int i = pl->first; i < in->nattempts; i++)
        add_attempt(b, &in->attempts[i], pl->log_lines[i]);
    kiln_sb_add(b, "\n");
}

/* Pipelining: what the iteration before is verifying as this prompt is
 * answered, so the model neither repeats it nor waits on verdicts it
 * cannot see. */
static void add_in_flight(kiln_strbuf *b, const kiln_prompt_input *in, const plan *pl)
{
    if (pl->nflight == 0)
        return;
    kiln_sb_add(b, "Being verified now (their verdicts arrive after you answer):\n");
    for (int i = 0; i < pl->nflight; i++) {
        const kiln_in_flight *f = &in->in_flight[i];
        kiln_sb_printf(b, "#%d: ", f->n);
        kiln_prompt_oneline(b, f->hypothesis && *f->hypothesis ? f->hypothesis
                                                               : "(no hypothesis given)", FIELD_CHARS);
        if (f->parent >= 0)
            kiln_sb_printf(b, " (from #%d)", f->parent);
        kiln_sb_add(b, "\n");
    }
    if (pl->nflight < in->nin_flight)
        kiln_sb_printf(b, "(%d more not shown)\n", in->nin_flight - pl->nflight);
    kiln_sb_add(b, "\n");
}

/* Other elites of the archive: where the search has been that worked, for
 * ideas to borrow; their numbers are against the task's baseline. */
static void add_inspirations(kiln_strbuf *b, const kiln_prompt_input *in, const plan *pl,
                             char *const *shapes)
{
    if (pl->ninsp == 0)
        return;
    kiln_sb_add(b, "Other kernels this run kept (inspirations, not your parent; speedups against "
                   "the task's baseline):\n");
    for (int i = 0; i < pl->ninsp; i++) {
        const kiln_inspiration *x = &in->inspirations[i];
        kiln_sb_printf(b, "#%d in cell %.60s: %.2fx [%.2f, %.2f]", x->n, x->cell ? x->cell : "?",
                       x->speedup, x->lo, x->hi);
        if (x->hypothesis && *x->hypothesis) {
            kiln_sb_add(b, ": ");
            kiln_prompt_oneline(b, x->hypothesis, FIELD_CHARS);
        }
        kiln_sb_add(b, "\n");
        if (shapes && shapes[i])
            kiln_sb_printf(b, "  per shape: %s\n", shapes[i]);
        if (pl->insp_lines > 0 && x->source && *x->source) {
            kiln_sb_printf(b, "  source (first lines):\n");
            add_log(b, x->source, pl->insp_lines);
        }
    }
    kiln_sb_add(b, "\n");
}

static void add_lessons(kiln_strbuf *b, const kiln_prompt_input *in, const plan *pl)
{
    if (pl->lessons_len == 0)
        return;
    kiln_sb_add(b, "Lessons:\n");
    kiln_sb_addn(b, in->lessons, pl->lessons_len);
    if (pl->lessons_len < strlen(in->lessons))
        kiln_sb_add(b, "\n(more lessons cut for length)");
    kiln_sb_add(b, "\n\n");
}

/* The per-shape objective's target: what a keep needs. */
static void add_target(kiln_strbuf *b, const char *target)
{
    if (!target || !*target)
        return;
    kiln_sb_printf(b, "Target: improve %s. A kernel that is surely faster than every kept kernel "
                   "at one shape or more is kept, even if it is slower at the others: the export "
                   "serves each shape with its fastest kept kernel.\n\n", target);
}

/* The draft's direction, last before the request: a suggestion, since not
 * every direction suits every kernel. */
static void add_strategy(kiln_strbuf *b, const char *strategy)
{
    if (!strategy || !*strategy)
        return;
    kiln_sb_add(b, "Direction for this answer (other answers to this prompt explore other "
                   "directions): ");
    kiln_sb_add(b, strategy);
    kiln_sb_add(b, ". If it cannot help this kernel, make the change you judge best instead and "
                   "say so in the hypothesis.\n\n");
}

/* The sections in the order the model reads them (docs/search.md). */
static void render(kiln_strbuf *b, const kiln_prompt_input *in, const parent_view *pv,
                   const plan *pl, char *const *shapes)
{
    b->len = 0;
    if (b->p)
        b->p[0] = '\0';
    kiln_sb_add(b, "Task:\n");
    kiln_sb_add(b, in->task_text);
    kiln_sb_add(b, "\n\n");
    if (pv->v)
        kiln_prompt_machine(b, pv->v);
    add_parent(b, in);
    add_results(b, pv, pl);
    add_attempts(b, in, pl);
    add_in_flight(b, in, pl);
    add_lessons(b, in, pl);
    add_inspirations(b, in, pl, shapes);
    add_target(b, in->target);
    add_strategy(b, in->strategy);
    kiln_sb_add(b, "Write the next candidate. Answer with the complete file in one fenced code "
                   "block and one line:\nHYPOTHESIS: <what you changed and why it should be "
                   "faster>\n");
}

/* Cut the lessons by at least over bytes, whole lessons (lines) from the
 * end: the retrieval ranks the most relevant first. */
static void cut_lessons(const kiln_prompt_input *in, plan *pl, size_t over)
{
    size_t cut = over + 64, keep = pl->lessons_len > cut ? pl->lessons_len - cut : 0;
    while (keep > 0 && in->lessons[keep - 1] != '\n')
        keep--;
    pl->lessons_len = keep > 0 ? keep - 1 : 0;
}

/* Give up the least useful context, in the order prompt.h states; 0 when
 * nothing is left to give. */
static int shrink(const kiln_prompt_input *in, plan *pl, size_t over)
{
    int last = in->nattempts - 1;
    if (pl->ninsp > 0 && pl->insp_lines > 0)   /* the inspirations' sources, then them */
        return pl->insp_lines = 0, 1;
    if (pl->ninsp > 0)
        return pl->ninsp--, 1;
    for (int i = pl->first; i < last; i++)   /* older attempts' feedback, oldest first */
        if (pl->log_lines[i] > 0)
            return pl->log_lines[i] = 0, 1;
    if (pl->first < last)
        return pl->first++, 1;
    if (pl->nflight > 0)   /* the drafts being verified, from the last */
        return pl->nflight--, 1;
    if (pl->lessons_len > 0)
        return cut_lessons(in, pl, over), 1;
    if (pl->first == last && pl->log_lines[last] > LOG_LINES_SHORT)
        return pl->log_lines[last] = LOG_LINES_SHORT, 1;
    if (pl->first == last && pl->log_lines[last] > 0)
        return pl->log_lines[last] = 0, 1;
    if (pl->first == last)
        return pl->first++, 1;
    if (pl->all_shapes)
        return pl->all_shapes = 0, 1;
    return 0;
}

static int check_input(const kiln_prompt_input *in, kiln_error *err)
{
    if (!in || !in->task_text || !in->parent_source || !in->entry || !*in->entry || !in->lang)
        return kiln_fail(err, "prompt: task text, parent source, lang and entry are required");
    if (strcmp(in->lang, "c") != 0 && strcmp(in->lang, "cuda") != 0)
        return kiln_fail(err, "prompt: unknown language '%s' (want c or cuda)", in->lang);
    if (in->nattempts < 0 || (in->nattempts > 0 && !in->attempts))
        return kiln_fail(err, "prompt: %d attempts but no attempt array", in->nattempts);
    if (in->nin_flight < 0 || (in->nin_flight > 0 && !in->in_flight))
        return kiln_fail(err, "prompt: %d drafts being verified but no array of them",
                         in->nin_flight);
    return 0;
}

/* The parent's verdict through the verdict's one decoder; *v is NULL when
 * there is none or it does not parse. -1 only when out of memory. */
static int decode_parent(const char *json, kiln_verdict **v, parent_view *pv)
{
    *v = NULL;
    *pv = (parent_view){0};
    if (!json || !*json)
        return 0;
    if (!(*v = malloc(sizeof **v)))
        return -1;
    kiln_error e;
    if (kiln_verdict_parse(json, *v, &e) < 0) {
        free(*v);
        *v = NULL;
        pv->unreadable = 1;
        return 0;
    }
    pv->v = *v;
    return 0;
}

/* Each inspiration's per-shape line from its verdict, made once: NULL
 * where it has none, or it does not parse (the line is left out). -1 only
 * when out of memory. */
static int decode_inspirations(const kiln_prompt_input *in, char ***shapes)
{
    int n = in->inspirations ? in->ninspirations : 0;
    *shapes = n > 0 ? calloc((size_t)n, sizeof **shapes) : NULL;
    kiln_verdict *v = n > 0 ? malloc(sizeof *v) : NULL;
    if (n > 0 && (!*shapes || !v)) {
        free(v);
        return -1;
    }
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        const char *json = in->inspirations[i].verdict_json;
        kiln_error e;
        if (!json || !*json || kiln_verdict_parse(json, v, &e) < 0)
            continue;
        kiln_strbuf line = {0};
        kiln_prompt_shape_speedups(&line, v);
        if (line.oom || line.len == 0) {
            rc = line.oom ? -1 : 0;
            free(line.p);
            continue;
        }
        (*shapes)[i] = line.p;
    }
    free(v);
    return rc;
}

static void free_shapes(char **shapes, int n)
{
    for (int i = 0; shapes && i < n; i++)
        free(shapes[i]);
    free(shapes);
}

static int render_within(const kiln_prompt_input *in, const parent_view *pv, plan *pl,
                         char *const *shapes, kiln_strbuf *b, kiln_error *err)
{
    size_t max = in->max_chars ? in->max_chars : KILN_PROMPT_DEFAULT_CHARS;
    for (;;) {
        render(b, in, pv, pl, shapes);
        if (b->oom)
            return kiln_fail(err, "prompt: out of memory");
        if (b->len <= max)
            return 0;
        if (!shrink(in, pl, b->len - max))
            return kiln_fail(err, "prompt: the task, machine, parent source, verdict summary, "
                                  "called-out shapes and direction alone take %zu characters; "
                                  "the budget is %zu", b->len, max);
    }
}

static int build_user(const kiln_prompt_input *in, char **user, kiln_error *err)
{
    kiln_verdict *v = NULL;
    parent_view pv;
    plan pl = {.lessons_len = in->lessons ? strlen(in->lessons) : 0, .all_shapes = 1,
               .ninsp = in->inspirations ? in->ninspirations : 0, .insp_lines = INSP_LINES,
               .nflight = in->nin_flight};
    pl.log_lines = malloc((size_t)(in->nattempts + 1) * sizeof *pl.log_lines);
    kiln_strbuf b = {0};
    char **shapes = NULL;
    int rc = -1;
    if (!pl.log_lines || decode_parent(in->parent_verdict_json, &v, &pv) < 0 ||
        decode_inspirations(in, &shapes) < 0) {
        kiln_fail(err, "prompt: out of memory");
        goto out;
    }
    for (int i = 0; i < in->nattempts; i++)
        pl.log_lines[i] = LOG_LINES_FULL;
    if (render_within(in, &pv, &pl, shapes, &b, err) < 0)
        goto out;
    *user = b.p;
    b.p = NULL;
    rc = 0;
out:
    free_shapes(shapes, in->inspirations ? in->ninspirations : 0);
    free(b.p);
    free(v);
    free(pl.log_lines);
    return rc;
}

int kiln_prompt_build(const kiln_prompt_input *in, char **system, char **user, kiln_error *err)
{
    if (!system || !user)
        return kiln_fail(err, "prompt: no place for the result");
    *system = *user = NULL;
    if (check_input(in, err) < 0)
        return -1;
    *system = build_system(in->lang, in->entry);
    if (!*system)
        return kiln_fail(err, "prompt: out of memory");
    if (build_user(in, user, err) < 0) {
        free(*system);
        *system = NULL;
        return -1;
    }
    return 0;
}

/* ---- diverse drafts -------------------------------------------------------- */

/* Directions that hold for C and CUDA kernels alike, most general first. */
static const char *const strategies[KILN_DRAFT_STRATEGIES] = {
    "memory access: fewer passes over memory, contiguous and aligned loads and stores, "
    "better use of caches (on a GPU: coalesced global and shared memory)",
    "vectorisation: wide vector loads and arithmetic (SIMD intrinsics or loops the compiler "
    "vectorises; on a GPU vector types such as float4)",
    "reduction structure: several independent accumulators, pairwise or tree reductions "
    "(on a GPU warp shuffles), shorter dependency chains",
    "parallel decomposition: how the work is split (rows or tiles per step, blocking for the "
    "cache; on a GPU the grid, block and per-thread work)",
    "fusing passes: compute in one pass what now takes several, reusing values while they "
    "are in registers",
    "arithmetic simplification: a reciprocal instead of repeated division, invariants hoisted "
    "out of loops, cheaper exact formulations",
    "unrolling and instruction-level parallelism: unroll hot loops, interleave independent "
    "work, take branches out of inner loops",
    "a different algorithm: restructure the kernel around another way to compute the same "
    "result (for example a single-pass or online formulation)",
};

const char *kiln_draft_strategy(int iteration, int draft, int ndrafts)
{
    long it = iteration > 0 ? iteration - 1 : 0, n = ndrafts > 0 ? ndrafts : 1;
    long d = draft > 0 ? draft : 0;
    return strategies[(it * n + d) % KILN_DRAFT_STRATEGIES];
}

double kiln_draft_temperature(int draft, int ndrafts)
{
    if (ndrafts < 2)
        return 0.5;
    int d = draft < 0 ? 0 : draft >= ndrafts ? ndrafts - 1 : draft;
    /* Two decimals: the value sent reads as written in docs/search.md. */
    return round((0.2 + 0.6 * d / (ndrafts - 1)) * 100) / 100;
}
