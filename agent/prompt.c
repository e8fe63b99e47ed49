/* prompt.c - the system and user prompts (see prompt.h).
 *
 * The user prompt is rendered whole from a small "plan" (which attempts, how
 * much of each compile log, how much of the lessons); when it is over budget
 * the plan gives up the least useful context and the prompt is rendered
 * again.  Rendering is cheap next to a model call, and one renderer means the
 * length checked is exactly the length sent. */
#include "prompt.h"

#include "strbuf.h"
#include "verdict.h"

#include <ctype.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#define LOG_LINES_FULL 15
#define LOG_LINES_SHORT 5
#define LOG_LINE_CHARS 200
#define FIELD_CHARS 300

/* How many bytes of s[0, n) fit in max without splitting a UTF-8 sequence. */
static size_t utf8_cut(const char *s, size_t n, size_t max)
{
    if (n <= max)
        return n;
    while (max > 0 && ((unsigned char)s[max] & 0xC0) == 0x80)
        max--;
    return max;
}

/* s as one line of at most max bytes: newlines and tabs become spaces. */
static void sb_oneline(kiln_strbuf *b, const char *s, size_t max)
{
    size_t n = strlen(s), start = b->len;
    int cut = n > max;
    kiln_sb_addn(b, s, utf8_cut(s, n, max));
    if (b->oom)
        return;
    for (size_t i = start; i < b->len; i++)
        if (b->p[i] == '\n' || b->p[i] == '\r' || b->p[i] == '\t')
            b->p[i] = ' ';
    if (cut)
        kiln_sb_add(b, "...");
}

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

/* ---- the parent's results ----------------------------------------------- */

static void sb_percent(kiln_strbuf *b, double frac)
{
    kiln_sb_printf(b, frac * 100 < 1 ? "%.1f%%" : "%.0f%%", frac * 100);
}

static void add_verdict_head(kiln_strbuf *b, const kiln_verdict *v)
{
    kiln_sb_printf(b, "Parent's verdict: %s", v->status[0] ? v->status : "?");
    if (v->stage[0])
        kiln_sb_printf(b, " at %s", v->stage);
    if (v->reason[0]) {
        kiln_sb_add(b, ": ");
        sb_oneline(b, v->reason, FIELD_CHARS);
    }
    kiln_sb_add(b, "\n");
    if (v->geomean_speedup > 0 && isfinite(v->min_speedup)) {
        kiln_sb_printf(b, "Summary: geomean speedup %.2fx over the baseline (min %.2fx)",
                  v->geomean_speedup, v->min_speedup);
        if (isfinite(v->median_roofline) && v->median_roofline > 0) {
            kiln_sb_add(b, ", median ");
            sb_percent(b, v->median_roofline);
            kiln_sb_add(b, " of roofline");
        }
        kiln_sb_add(b, "\n");
    }
}

/* A shape with a speedup to show: visible and timed. */
static int measured(const kiln_shape_result *r)
{
    return r->visible && r->timed && isfinite(r->speedup);
}

/* One row; hidden shapes show their id only (the decoded verdict holds no
 * more of them anyway). */
static void add_shape_row(kiln_strbuf *b, const kiln_verdict *v, const kiln_shape_result *r)
{
    kiln_sb_printf(b, "| %.16s | ", r->id[0] ? r->id : "?");
    if (!r->visible) {
        kiln_sb_add(b, "(hidden) | - | - |\n");
        return;
    }
    char dims[128];
    kiln_verdict_dims(v, r, dims, sizeof dims);
    kiln_sb_printf(b, "%s", dims[0] ? dims : "-");
    if (measured(r))
        kiln_sb_printf(b, " | %.2fx | ", r->speedup);
    else
        kiln_sb_add(b, " | - | ");
    if (measured(r) && isfinite(r->roofline_fraction))
        sb_percent(b, r->roofline_fraction);
    else
        kiln_sb_add(b, "-");
    kiln_sb_add(b, " |\n");
}

/* The (up to) two visible shapes with the lowest speedup: where to look. */
static void add_weakest(kiln_strbuf *b, const kiln_verdict *v)
{
    const kiln_shape_result *low[2] = {NULL, NULL};
    int timed = 0;
    for (int i = 0; i < v->nresults; i++) {
        const kiln_shape_result *r = &v->results[i];
        if (!measured(r))
            continue;
        timed++;
        if (!low[0] || r->speedup < low[0]->speedup) {
            low[1] = low[0];
            low[0] = r;
        } else if (!low[1] || r->speedup < low[1]->speedup) {
            low[1] = r;
        }
    }
    if (timed < 2)
        return;
    kiln_sb_add(b, "Weakest shapes:");
    for (int i = 0; i < 2; i++) {
        kiln_sb_printf(b, "%s %.16s (%.2fx", i ? "," : "", low[i]->id, low[i]->speedup);
        if (isfinite(low[i]->roofline_fraction)) {
            kiln_sb_add(b, ", ");
            sb_percent(b, low[i]->roofline_fraction);
            kiln_sb_add(b, " of roofline");
        }
        kiln_sb_add(b, ")");
    }
    kiln_sb_add(b, "\n");
}

/* The parent's verdict, decoded by the verdict's one decoder. */
static void add_results(kiln_strbuf *b, const char *verdict_json)
{
    if (!verdict_json || !*verdict_json) {
        kiln_sb_add(b, "Parent's results: not measured yet.\n\n");
        return;
    }
    kiln_verdict *v = malloc(sizeof *v);
    kiln_error e;
    if (!v || kiln_verdict_parse(verdict_json, v, &e) < 0) {
        free(v);
        kiln_sb_add(b, "Parent's results: unavailable (its verdict could not be read).\n\n");
        return;
    }
    add_verdict_head(b, v);
    if (v->nresults > 0) {
        kiln_sb_add(b, "Parent's results per shape (speedup over the baseline; share of the "
                  "roofline):\n| shape | dims | speedup | roofline |\n|---|---|---|---|\n");
        for (int i = 0; i < v->nresults; i++)
            add_shape_row(b, v, &v->results[i]);
        add_weakest(b, v);
    }
    kiln_sb_add(b, "\n");
    free(v);
}

/* ---- attempts ------------------------------------------------------------ */

static void add_log(kiln_strbuf *b, const char *log, int max_lines)
{
    int shown = 0, more = 0;
    for (const char *p = log; *p;) {
        size_t len = strcspn(p, "\n");
        if (shown < max_lines) {
            size_t n = len > 0 && p[len - 1] == '\r' ? len - 1 : len;
            kiln_sb_add(b, "    ");
            kiln_sb_addn(b, p, utf8_cut(p, n, LOG_LINE_CHARS));
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

static void add_attempt(kiln_strbuf *b, const kiln_attempt *a, int log_lines)
{
    kiln_sb_printf(b, "#%d ", a->n);
    sb_oneline(b, a->hypothesis && *a->hypothesis ? a->hypothesis : "(no hypothesis given)",
               FIELD_CHARS);
    kiln_sb_printf(b, " \xE2\x86\x92 %.40s", a->status ? a->status : "?");
    if (a->stage && *a->stage)
        kiln_sb_printf(b, " at %.40s", a->stage);
    if (a->reason && *a->reason) {
        kiln_sb_add(b, ": ");
        sb_oneline(b, a->reason, FIELD_CHARS);
    }
    if (a->speedup_vs_parent > 0)
        kiln_sb_printf(b, " (%.2fx vs parent)", a->speedup_vs_parent);
    kiln_sb_add(b, "\n");
    if (log_lines > 0 && a->compile_log && *a->compile_log) {
        kiln_sb_add(b, "  compile log (first lines):\n");
        add_log(b, a->compile_log, log_lines);
    }
}

/* ---- the user prompt and its budget -------------------------------------- */

typedef struct plan {
    int first;            /* oldest attempt shown */
    int *log_lines;       /* per attempt */
    size_t lessons_len;   /* bytes of lessons shown */
} plan;

static const char *fence_for(const char *src)
{
    /* a source holding ``` would end a ``` fence early */
    return strstr(src, "```") ? "~~~~" : "```";
}

static void add_parent(kiln_strbuf *b, const kiln_prompt_input *in)
{
    const char *f = fence_for(in->parent_source);
    size_t n = strlen(in->parent_source);
    kiln_sb_printf(b, "Parent (the current best; your answer replaces this whole file):\n%s%s\n", f,
              strcmp(in->lang, "cuda") == 0 ? "cuda" : "c");
    kiln_sb_add(b, in->parent_source);
    kiln_sb_printf(b, "%s%s\n\n", n && in->parent_source[n - 1] != '\n' ? "\n" : "", f);
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

static void render(kiln_strbuf *b, const kiln_prompt_input *in, const plan *pl, const char *head)
{
    b->len = 0;
    if (b->p)
        b->p[0] = '\0';
    kiln_sb_add(b, head);
    add_attempts(b, in, pl);
    add_lessons(b, in, pl);
    add_strategy(b, in->strategy);
    kiln_sb_add(b, "Write the next candidate. Answer with the complete file in one fenced code block "
              "and one line:\nHYPOTHESIS: <what you changed and why it should be faster>\n");
}

/* Give up the least useful context; 0 when nothing is left to give. */
static int shrink(const kiln_prompt_input *in, plan *pl, size_t over)
{
    int last = in->nattempts - 1;
    for (int i = pl->first; i < last; i++)   /* older attempts' logs, oldest first */
        if (pl->log_lines[i] > 0)
            return pl->log_lines[i] = 0, 1;
    if (pl->first < last)
        return pl->first++, 1;
    if (pl->first == last && pl->log_lines[last] > LOG_LINES_SHORT)
        return pl->log_lines[last] = LOG_LINES_SHORT, 1;
    if (pl->first == last && pl->log_lines[last] > 0)
        return pl->log_lines[last] = 0, 1;
    if (pl->first == last)
        return pl->first++, 1;
    if (pl->lessons_len == 0)
        return 0;
    /* cut the lessons by the excess plus room for the note, at a line end */
    size_t cut = over + 64, keep = pl->lessons_len > cut ? pl->lessons_len - cut : 0;
    while (keep > 0 && in->lessons[keep - 1] != '\n')
        keep--;
    pl->lessons_len = keep > 0 ? keep - 1 : 0;
    return 1;
}

static int check_input(const kiln_prompt_input *in, kiln_error *err)
{
    if (!in || !in->task_text || !in->parent_source || !in->entry || !*in->entry || !in->lang)
        return kiln_fail(err, "prompt: task text, parent source, lang and entry are required");
    if (strcmp(in->lang, "c") != 0 && strcmp(in->lang, "cuda") != 0)
        return kiln_fail(err, "prompt: unknown language '%s' (want c or cuda)", in->lang);
    if (in->nattempts < 0 || (in->nattempts > 0 && !in->attempts))
        return kiln_fail(err, "prompt: %d attempts but no attempt array", in->nattempts);
    return 0;
}

static char *build_head(const kiln_prompt_input *in)
{
    kiln_strbuf b = {0};
    kiln_sb_add(&b, "Task:\n");
    kiln_sb_add(&b, in->task_text);
    kiln_sb_add(&b, "\n\n");
    add_parent(&b, in);
    add_results(&b, in->parent_verdict_json);
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    return b.p;
}

static int build_user(const kiln_prompt_input *in, char **user, kiln_error *err)
{
    char *head = build_head(in);
    plan pl = {.first = 0, .lessons_len = in->lessons ? strlen(in->lessons) : 0};
    pl.log_lines = malloc((size_t)(in->nattempts + 1) * sizeof *pl.log_lines);
    kiln_strbuf b = {0};
    int rc = -1;
    if (!head || !pl.log_lines) {
        kiln_fail(err, "prompt: out of memory");
        goto out;
    }
    for (int i = 0; i < in->nattempts; i++)
        pl.log_lines[i] = LOG_LINES_FULL;
    for (;;) {
        render(&b, in, &pl, head);
        if (b.oom) {
            kiln_fail(err, "prompt: out of memory");
            goto out;
        }
        if (in->max_chars == 0 || b.len <= in->max_chars)
            break;
        if (!shrink(in, &pl, b.len - in->max_chars)) {
            kiln_fail(err, "prompt: the task, parent source and results alone take %zu "
                           "characters; the budget is %zu", b.len, in->max_chars);
            goto out;
        }
    }
    *user = b.p;
    b.p = NULL;
    rc = 0;
out:
    free(b.p);
    free(head);
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
