/* test_prompt.c - cmocka tests of the model's user prompt (agent/prompt.c,
 * agent/prompt_parts.c) built from recorded verdicts: a CPU verdict written
 * by kiln verify (tests/unit/fixtures/verdict_cpu.json) and a CUDA verdict in
 * the encoder's form (verdict_cuda.json). Checks the machine, the per-shape
 * numbers and call-outs, that no hidden shape's size reaches the prompt, and
 * the budget: its default, its order of what goes first, and cuts only
 * between tokens.
 *
 * usage: test_prompt FIXTURE_DIR */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <cjson/cJSON.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prompt.h"
#include "verdict.h"

static const char *g_dir;
static char *g_cpu, *g_cuda;   /* the fixtures' text */

static char *slurp(const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char *s = malloc((size_t)n + 1);
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
        free(s);
        s = NULL;
    }
    if (s)
        s[n] = '\0';
    fclose(f);
    return s;
}

static void must_contain(const char *hay, const char *needle)
{
    if (!strstr(hay, needle)) {
        fprintf(stderr, "missing '%s' in:\n%s\n", needle, hay);   /* cmocka cuts long messages */
        fail();
    }
}

static void must_lack(const char *hay, const char *needle)
{
    if (strstr(hay, needle)) {
        fprintf(stderr, "unexpected '%s' in:\n%s\n", needle, hay);
        fail();
    }
}

static kiln_prompt_input input(const char *lang, const char *verdict)
{
    return (kiln_prompt_input){
        .task_text = "task rmsnorm\n  void rmsnorm(const float *x, const float *w, float *y, "
                     "int rows, int cols, float eps);",
        .lang = lang,
        .entry = "rmsnorm",
        .parent_source = "void rmsnorm(void) {}\n",
        .parent_verdict_json = verdict,
    };
}

/* The user prompt for in; fails the test if it cannot be built. */
static char *user_of(const kiln_prompt_input *in)
{
    char *sys, *user;
    kiln_error err;
    if (kiln_prompt_build(in, &sys, &user, &err) < 0)
        fail_msg("prompt: %s", err.msg);
    free(sys);
    return user;
}

/* ---- the machine and the shapes --------------------------------------------- */

static void test_cuda_verdict(void **state)
{
    (void)state;
    kiln_prompt_input in = input("cuda", g_cuda);
    char *u = user_of(&in);
    must_contain(u, "Machine (where the parent was measured): GPU NVIDIA H200, compute capability "
                    "9.0, 132 SMs, L2 60 MiB, shared memory per block up to 227 KiB, SM clock "
                    "1980 MHz.\n");
    must_contain(u, "Measured copy bandwidth: 4210 GB/s");
    must_contain(u, "Dense peak for bf16: 989 TFLOP/s.");
    must_lack(u, "Xeon");   /* the host CPU is not the machine that ran the kernel */
    must_contain(u, "Summary: geomean speedup 1.05x over the task's baseline (min 0.74x), "
                    "median 69% of roofline");
    /* 16384 x 4096 bf16: 268,443,648 bytes at 91% of 4210 GB/s */
    must_contain(u, "| v3 | rows=16384 cols=4096 | 70.1 us | 87.6 us | 3831 | 91% | "
                    "1.25x [1.24, 1.26] |\n");
    must_contain(u, "| v1 | rows=1 cols=4096 | ");
    must_contain(u, "Lagging shapes (roofline fraction under 3/4 of the shapes' median, 69%; "
                    "lowest first): v1 at 3.1% (0.74x).\n");
    must_contain(u, "Slower than the baseline: v1 0.74x [0.70, 0.78].\n");
    must_contain(u, "Hidden shapes: 6 (their sizes are never shown), all passed.\n");
    /* the order the model reads it in */
    assert_true(strstr(u, "Task:") < strstr(u, "Machine"));
    assert_true(strstr(u, "Machine") < strstr(u, "Parent (the current best"));
    assert_true(strstr(u, "Parent (the current best") < strstr(u, "Parent's verdict: pass"));
    free(u);
}

/* The driver's view of the parent's kernels at its worst shape (v1, 3.1%
 * of roofline), and only there. */
static void test_profile_view(void **state)
{
    (void)state;
    cJSON *j = cJSON_Parse(g_cuda), *s;
    assert_non_null(j);
    cJSON_ArrayForEach(s, cJSON_GetObjectItem(j, "shapes")) {
        const char *id = cJSON_GetStringValue(cJSON_GetObjectItem(s, "id"));
        cJSON *pa = cJSON_AddArrayToObject(s, "profile"), *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "kernel", "rmsnorm_fwd");
        cJSON_AddNumberToObject(e, "registers", strcmp(id, "v1") == 0 ? 72 : 30);
        cJSON_AddNumberToObject(e, "local_bytes", 24);
        cJSON_AddNumberToObject(e, "static_smem", 128);
        cJSON_AddNumberToObject(e, "dynamic_smem", 0);
        cJSON_AddNumberToObject(e, "threads", 256);
        cJSON_AddNumberToObject(e, "blocks_per_sm", 3);
        cJSON_AddNumberToObject(e, "cluster", 1);
        cJSON_AddNumberToObject(e, "occupancy", 0.375);
        cJSON_AddItemToArray(pa, e);
    }
    char *text = cJSON_PrintUnformatted(j);
    kiln_prompt_input in = input("cuda", text);
    char *u = user_of(&in);
    must_contain(u, "Kernels at v1, the shape furthest from the roofline (as the driver sees them):\n"
                    "- rmsnorm_fwd: 256 threads a block, 72 registers a thread, 24 bytes of local "
                    "memory a thread (spills or a stack), shared memory 128 static + 0 dynamic "
                    "bytes, 3 blocks an SM (theoretical occupancy 38%)\n");
    must_lack(u, "30 registers");
    free(u);
    free(text);
    cJSON_Delete(j);
}

static void test_cpu_verdict(void **state)
{
    (void)state;
    kiln_prompt_input in = input("c", g_cpu);
    char *u = user_of(&in);
    must_contain(u, "Machine (where the parent was measured): CPU AMD EPYC.\n");
    must_contain(u, "Measured memory bandwidth: 19.8 GB/s");
    must_lack(u, "GPU");
    must_lack(u, "TFLOP");
    /* v1: 32 x 1024, 266,240 bytes in 81,242 ns; no interval on the CPU */
    must_contain(u, "| v1 | rows=32 cols=1024 | 81.2 us | 102 us | 3.28 | 18% | 1.26x |\n");
    must_contain(u, "Lagging shapes (roofline fraction under 3/4 of the shapes' median, 14%; "
                    "lowest first): v2 at 3.5% (0.99x), v4 at 3.7% (1.13x).\n");
    /* v6 0.96x, v3 0.98x and v2 0.99x are within their spreads (v3: candidate
     * 108.8-111.5 us, baseline 105.9-110.9 us): none is called slower */
    must_lack(u, "Slower than the baseline");
    must_contain(u, "Hidden shapes: 11 (their sizes are never shown), all passed.\n");
    free(u);
}

/* The CPU's facts, as the verifier records them, reach the prompt. */
static void test_cpu_facts(void **state)
{
    (void)state;
    cJSON *j = cJSON_Parse(g_cpu);
    assert_non_null(j);
    cJSON *env = cJSON_GetObjectItem(j, "environment");
    cJSON_AddStringToObject(env, "cpu_isa", "avx2 fma avx512f avx512bw");
    cJSON_AddStringToObject(env, "cpu_caches", "L1d 32 KiB, L2 1 MiB, L3 32 MiB");
    cJSON_AddStringToObject(env, "compiler", "cc 12.2.0, -std=gnu17 -O2 -march=native -fPIC");
    char *text = cJSON_PrintUnformatted(j);
    kiln_prompt_input in = input("c", text);
    char *u = user_of(&in);
    must_contain(u, "Vector extensions: avx2 fma avx512f avx512bw.\n");
    must_contain(u, "Caches: L1d 32 KiB, L2 1 MiB, L3 32 MiB.\n");
    must_contain(u, "Your C is built with cc 12.2.0, -std=gnu17 -O2 -march=native -fPIC");
    must_contain(u, "each shape's roofline column uses the bandwidth measured at its own working set");
    free(u);
    free(text);
    cJSON_Delete(j);
}

/* Every "rows=R cols=C" in the prompt is a visible shape of the verdict. */
static void only_visible_dims(const char *user, const char *verdict)
{
    cJSON *j = cJSON_Parse(verdict);
    assert_non_null(j);
    const cJSON *shapes = cJSON_GetObjectItem(j, "shapes"), *s;
    for (const char *p = strstr(user, "rows="); p; p = strstr(p + 1, "rows=")) {
        int r = -1, c = -1, found = 0;
        sscanf(p, "rows=%d cols=%d", &r, &c);
        cJSON_ArrayForEach(s, shapes) {
            const cJSON *d = cJSON_GetObjectItem(s, "dims");
            found |= cJSON_IsTrue(cJSON_GetObjectItem(s, "visible")) && d &&
                     cJSON_GetObjectItem(d, "rows")->valueint == r &&
                     cJSON_GetObjectItem(d, "cols")->valueint == c;
        }
        if (!found)
            fail_msg("rows=%d cols=%d is no visible shape of the verdict", r, c);
    }
    cJSON_Delete(j);
}

/* A verdict as kiln writes it now: the recorded one decoded and encoded
 * again. Its shapes are the visible ones; the hidden stage is one object
 * of a count, a status and a code. */
static void hidden_stage_bare(const char *verdict)
{
    kiln_verdict *v = calloc(1, sizeof *v);
    kiln_error err = {0};
    assert_int_equal(kiln_verdict_parse(verdict, v, &err), 0);
    char *again = kiln_verdict_json(v, NULL, 0);
    cJSON *j = cJSON_Parse(again), *s, *k;
    assert_non_null(j);
    cJSON_ArrayForEach(s, cJSON_GetObjectItem(j, "shapes"))
        assert_true(cJSON_IsTrue(cJSON_GetObjectItem(s, "visible")));
    cJSON *h = cJSON_GetObjectItem(j, "hidden");
    assert_non_null(h);
    assert_true(cJSON_GetObjectItem(h, "shapes")->valuedouble > 0);
    cJSON_ArrayForEach(k, h) {
        if (strcmp(k->string, "shapes") && strcmp(k->string, "status") && strcmp(k->string, "code"))
            fail_msg("the hidden stage carries '%s'", k->string);
    }
    cJSON_Delete(j);
    free(again);
    free(v);
}

/* The recorded hidden entries (a verdict from before the hidden stage was
 * one outcome) hold only what docs/verdict.md allowed. */
static void hidden_entries_bare(const char *verdict)
{
    cJSON *j = cJSON_Parse(verdict), *s, *k;
    assert_non_null(j);
    int hidden = 0;
    cJSON_ArrayForEach(s, cJSON_GetObjectItem(j, "shapes")) {
        if (cJSON_IsTrue(cJSON_GetObjectItem(s, "visible")))
            continue;
        hidden++;
        cJSON_ArrayForEach(k, s) {
            if (strcmp(k->string, "id") && strcmp(k->string, "visible") &&
                strcmp(k->string, "dtype") && strcmp(k->string, "status") &&
                strcmp(k->string, "code"))
                fail_msg("hidden entry carries '%s'", k->string);
        }
    }
    assert_true(hidden > 0);
    cJSON_Delete(j);
}

/* A failing verdict whose hidden entry carries what no real one would:
 * none of it reaches the prompt, only the id and the code. */
static const char PLANTED[] =
    "{\"status\": \"fail\", \"stage\": \"hidden\", \"code\": \"wrong-output\","
    " \"reason\": \"hidden shape h3: the output is wrong\", \"backend\": \"cpu\","
    " \"shapes\": ["
    "  {\"id\": \"v1\", \"visible\": true, \"dims\": {\"rows\": 32, \"cols\": 1024}},"
    "  {\"id\": \"h1\", \"visible\": false, \"status\": \"pass\"},"
    "  {\"id\": \"h3\", \"visible\": false, \"status\": \"fail\", \"code\": \"wrong-output\","
    "   \"dims\": {\"rows\": 77777, \"cols\": 99991}, \"max_err_ulps\": 31337,"
    "   \"time\": {\"candidate\": {\"median_ns\": 424242}}, \"speedup\": 6.25}],"
    " \"environment\": {\"cpu\": \"AMD EPYC\", \"bandwidth_gbps\": 20}}";

static void test_no_hidden_dims(void **state)
{
    (void)state;
    hidden_entries_bare(g_cpu);
    hidden_entries_bare(g_cuda);
    hidden_stage_bare(g_cpu);
    hidden_stage_bare(g_cuda);
    const char *verdicts[] = {g_cpu, g_cuda, PLANTED};
    for (int i = 0; i < 3; i++) {
        kiln_prompt_input in = input(i == 1 ? "cuda" : "c", verdicts[i]);
        char *u = user_of(&in);
        only_visible_dims(u, verdicts[i]);
        free(u);
    }
    kiln_prompt_input in = input("c", PLANTED);
    char *u = user_of(&in);
    must_contain(u, "Hidden shapes: 2 (their sizes are never shown); the hidden stage failed: "
                    "wrong-output (which shape is never said).\n");
    must_lack(u, "h3");
    must_contain(u, "| v1 | rows=32 cols=1024 | - | - | - | - | not timed |\n");
    const char *planted[] = {"77777", "99991", "31337", "424", "6.25"};
    for (int i = 0; i < 5; i++)
        must_lack(u, planted[i]);
    free(u);
}

/* An attempt's feedback (not only a compile log) is shown, labelled. */
static void test_failure_feedback(void **state)
{
    (void)state;
    kiln_attempt at[] = {
        {.n = 1, .hypothesis = "float4 loads", .status = "fail", .stage = "visible",
         .reason = "wrong-output", .feedback = "visible shape v2: worst element 3.5 (want 1.25)"},
        {.n = 2, .hypothesis = "typo", .status = "fail", .stage = "compile",
         .reason = "compile-error", .compile_log = "k.cu:3: error: 'flaot'"},
    };
    kiln_prompt_input in = input("cuda", g_cuda);
    in.attempts = at;
    in.nattempts = 2;
    char *u = user_of(&in);
    must_contain(u, "#1 float4 loads \xE2\x86\x92 fail at visible: wrong-output\n  feedback (first "
                    "lines):\n    visible shape v2: worst element 3.5 (want 1.25)\n");
    must_contain(u, "  compile log (first lines):\n    k.cu:3: error: 'flaot'\n");
    free(u);
}

/* The starter timed against itself: v1 at 0.99x [0.96, 1.02] is within the
 * noise and is never called slower; at [0.95, 0.98] it is. */
static char *with_v1(double sp, double lo, double hi)
{
    cJSON *j = cJSON_Parse(g_cuda), *s;
    assert_non_null(j);
    cJSON_ArrayForEach(s, cJSON_GetObjectItem(j, "shapes")) {
        if (strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(s, "id")), "v1") != 0)
            continue;
        cJSON_ReplaceItemInObject(s, "speedup", cJSON_CreateNumber(sp));
        double iv[2] = {lo, hi};
        cJSON_ReplaceItemInObject(s, "speedup_interval", cJSON_CreateDoubleArray(iv, 2));
    }
    char *text = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    return text;
}

static void test_straddle_not_slower(void **state)
{
    (void)state;
    char *text = with_v1(0.99, 0.96, 1.02);
    kiln_prompt_input in = input("cuda", text);
    char *u = user_of(&in);
    must_lack(u, "Slower than the baseline");
    must_contain(u, "0.99x [0.96, 1.02]");
    free(u);
    free(text);
    text = with_v1(0.97, 0.95, 0.98);
    in = input("cuda", text);
    u = user_of(&in);
    must_contain(u, "Slower than the baseline: v1 0.97x [0.95, 0.98].\n");
    free(u);
    free(text);
}

/* An attempt's status, stage and code are said once: a revert's reason that
 * restates the verdict it read is not put after the status again. */
static void test_attempt_said_once(void **state)
{
    (void)state;
    kiln_attempt at[] = {
        {.n = 4, .hypothesis = "warp shuffles", .status = "pass", .stage = "plausibility",
         .reason = "suspect at plausibility (implausible-speedup): 40x over the roofline",
         .speedup_vs_parent = 1.08},
        {.n = 5, .hypothesis = "unroll", .status = "fail", .stage = "plausibility",
         .reason = "suspect at plausibility"},
        {.n = 6, .hypothesis = "tiles", .status = "fail", .stage = "visible",
         .reason = "wrong-output"},
    };
    kiln_prompt_input in = input("cuda", g_cuda);
    in.attempts = at;
    in.nattempts = 3;
    char *u = user_of(&in);
    must_contain(u, "#4 warp shuffles \xE2\x86\x92 suspect at plausibility (implausible-speedup): "
                    "40x over the roofline (1.08x against its parent)\n");
    must_contain(u, "#5 unroll \xE2\x86\x92 suspect at plausibility\n");
    must_contain(u, "#6 tiles \xE2\x86\x92 fail at visible: wrong-output\n");
    must_lack(u, "\xE2\x86\x92 pass at plausibility");
    must_lack(u, "at plausibility: suspect");
    free(u);
}

/* ---- the budget ------------------------------------------------------------------- */

/* Every "..." that marks a cut follows a whole token: never part of a word
 * or number. */
static void cuts_between_tokens(const char *u, const char *end, const char *token)
{
    size_t tl = strlen(token);
    for (const char *p = strstr(u, "..."); p && p < end; p = strstr(p + 3, "...")) {
        if (p == u || !isalnum((unsigned char)p[-1]))
            continue;
        if ((size_t)(p - u) < tl || strncmp(p - tl, token, tl) != 0)
            fail_msg("cut inside a token: '%.20s'", p - (p - u < 12 ? p - u : 12));
    }
}

static char *repeat(const char *unit, size_t times, const char *sep)
{
    size_t ul = strlen(unit), sl = strlen(sep);
    char *s = malloc(times * (ul + sl) + 1), *q = s;
    assert_non_null(s);
    for (size_t i = 0; i < times; i++) {
        memcpy(q, unit, ul);
        memcpy(q + ul, sep, sl);
        q += ul + sl;
    }
    *q = '\0';
    return s;
}

/* A megabyte of feedback and a huge reason: the default budget holds, the
 * failure is shortened between words, the machine and shapes stay. */
static void test_budget_huge_failure(void **state)
{
    (void)state;
    char *line = repeat("alpha1234", 100, " ");
    char *fb = repeat(line, 1000, "\n");
    char *reason = repeat("beta5678", 10000, " ");
    kiln_attempt at = {.n = 7, .hypothesis = "vector loads", .status = "fail", .stage = "visible",
                       .reason = reason, .feedback = fb};
    kiln_prompt_input in = input("cuda", g_cuda);
    in.attempts = &at;
    in.nattempts = 1;   /* max_chars 0: the default budget */
    char *u = user_of(&in);
    assert_true(strlen(u) <= KILN_PROMPT_DEFAULT_CHARS);
    must_contain(u, "Machine (where the parent was measured): GPU NVIDIA H200");
    must_contain(u, "| v3 | rows=16384 cols=4096 |");
    must_contain(u, "Lagging shapes");
    must_contain(u, "#7 vector loads");
    must_contain(u, "beta5678...");
    must_contain(u, "alpha1234...\n");
    must_contain(u, "(985 more lines)");
    char *line7 = strstr(u, "#7 "), *alpha = strstr(u, "feedback (first lines)");
    assert_non_null(line7);
    assert_non_null(alpha);
    cuts_between_tokens(line7, alpha, "beta5678");
    must_lack(u, "beta5678 ...");   /* and no space left before the mark */
    cuts_between_tokens(alpha, alpha + strlen(alpha), "alpha1234");
    free(u);
    free(line);
    free(fb);
    free(reason);
}

/* Thousands of lessons: whole lessons are kept from the first (the
 * retrieval ranks the most relevant first), after the older attempts have
 * gone; the newest attempt and its feedback stay. */
static void test_budget_many_lessons(void **state)
{
    (void)state;
    char *lessons = malloc(3000 * 80 + 100);
    assert_non_null(lessons);
    size_t n = (size_t)sprintf(lessons, "Lessons from earlier measurements:\n");
    for (int i = 0; i < 3000; i++)
        n += (size_t)sprintf(lessons + n, "- When lesson %04d applies: keep rows in registers "
                                          "(confidence 0.50)\n", i);
    kiln_attempt at[3];
    for (int i = 0; i < 3; i++)
        at[i] = (kiln_attempt){.n = i + 1, .hypothesis = "idea", .status = "fail",
                               .stage = "visible", .reason = "wrong-output",
                               .feedback = "visible shape v1: worst element"};
    kiln_prompt_input in = input("cuda", g_cuda);
    in.attempts = at;
    in.nattempts = 3;
    in.lessons = lessons;
    in.max_chars = 20000;
    char *u = user_of(&in);
    assert_true(strlen(u) <= 20000);
    must_contain(u, "(2 older attempts not shown)");
    must_contain(u, "#3 idea \xE2\x86\x92 fail at visible: wrong-output\n  feedback");
    must_contain(u, "Lessons:\nLessons from earlier measurements:\n- When lesson 0000 applies");
    must_lack(u, "lesson 2999");
    /* whole lessons only: the last one shown ends as every lesson does */
    char *note = strstr(u, "\n(more lessons cut for length)");
    assert_non_null(note);
    assert_true(note - u > 20);
    assert_memory_equal(note - 17, "(confidence 0.50)", 17);
    must_contain(u, "| v3 | rows=16384 cols=4096 |");
    free(u);
    free(lessons);
}

/* The user prompt with a source of n bytes; NULL when it does not fit. */
static char *with_source(kiln_prompt_input *in, size_t n, kiln_error *err)
{
    char *src = malloc(n + 1), *sys = NULL, *user = NULL;
    assert_non_null(src);
    for (size_t i = 0; i < n; i++)
        src[i] = i % 40 == 39 ? '\n' : 'a' + (char)(i % 26);
    src[n] = '\0';
    in->parent_source = src;
    if (kiln_prompt_build(in, &sys, &user, err) == 0)
        free(sys);
    in->parent_source = NULL;
    free(src);
    return user;
}

/* A long source is never cut: everything else gives way down to the
 * verdict summary, the machine and the called-out shapes; a source that
 * leaves no room for those is refused with the budget named. */
static void test_budget_long_source(void **state)
{
    (void)state;
    kiln_attempt at = {.n = 1, .hypothesis = "idea", .status = "fail", .stage = "compile",
                       .reason = "compile-error", .compile_log = "k.cu:1: error"};
    kiln_prompt_input in = input("cuda", g_cuda);
    in.attempts = &at;
    in.nattempts = 1;
    in.lessons = "- When rows are long: split them (confidence 0.9)\n";
    kiln_error err;
    size_t lo = 1000, hi = KILN_PROMPT_DEFAULT_CHARS;   /* lo fits, hi does not */
    char *u = with_source(&in, lo, &err);
    assert_non_null(u);
    free(u);
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        u = with_source(&in, mid, &err);
        *(u ? &lo : &hi) = mid;
        free(u);
    }
    assert_null(with_source(&in, hi, &err));
    must_contain(err.msg, "the budget is 60000");
    u = with_source(&in, lo, &err);
    assert_non_null(u);
    assert_true(strlen(u) <= KILN_PROMPT_DEFAULT_CHARS);
    assert_true(lo > KILN_PROMPT_DEFAULT_CHARS - 2000);
    must_contain(u, "Machine (where the parent was measured): GPU NVIDIA H200");
    must_contain(u, "Summary: geomean speedup 1.05x");
    must_contain(u, "| v1 | rows=1 cols=4096 |");          /* called out */
    must_lack(u, "| v3 |");                                  /* not called out */
    must_contain(u, "(3 other visible shapes not shown for length)");
    must_contain(u, "Lagging shapes");
    must_lack(u, "Lessons:");
    must_lack(u, "#1 idea");
    free(u);
}

/* What one prompt of the sweep below shows. */
typedef struct shown {
    int attempt[4], feedback[4];   /* #1..#4 and their feedback's first line */
    int newest_fb_lines;           /* lines of #4's feedback */
    int flight[2];                 /* the drafts being verified, #10 and #11 */
    int lessons, lessons_whole, table_whole;
} shown;

static shown what_is_shown(const char *u)
{
    shown w = {0};
    char key[64];
    for (int i = 0; i < 4; i++) {
        snprintf(key, sizeof key, "#%d idea-%d", i + 1, i + 1);
        w.attempt[i] = strstr(u, key) != NULL;
        snprintf(key, sizeof key, "fb%d-line-00\n", i + 1);
        w.feedback[i] = strstr(u, key) != NULL;
    }
    for (int l = 0; l < 10; l++) {
        snprintf(key, sizeof key, "fb4-line-%02d\n", l);
        w.newest_fb_lines += strstr(u, key) != NULL;
    }
    w.flight[0] = strstr(u, "#10: flight-1 (from #4)\n") != NULL;
    w.flight[1] = strstr(u, "#11: flight-2 (from #0)\n") != NULL;
    w.lessons = strstr(u, "Lessons:\n") != NULL;
    w.lessons_whole = w.lessons && !strstr(u, "more lessons cut for length");
    w.table_whole = !strstr(u, "not shown for length");
    return w;
}

/* The order prompt.h states, checked at every budget from everything down
 * to nothing: a section is shown only while everything above it in
 * priority is shown whole. */
static void check_order(const shown *w)
{
    for (int i = 0; i < 3; i++) {
        if (w->feedback[i])      /* an older attempt's feedback: all newer ones' too */
            for (int j = i; j < 4; j++)
                assert_true(w->attempt[j] && w->feedback[j]);
        if (w->attempt[i])       /* an older attempt: the newer ones, the lessons whole, */
            for (int j = i; j < 4; j++)   /* every draft being verified */
                assert_true(w->attempt[j] && w->lessons_whole && w->flight[0] && w->flight[1]);
    }
    if (w->flight[1])            /* the drafts being verified go from the last */
        assert_true(w->flight[0]);
    if (w->flight[0])            /* while one is shown, the lessons are whole */
        assert_true(w->lessons_whole);
    if (w->lessons)              /* lessons: the newest attempt's whole feedback */
        assert_true(w->newest_fb_lines == 10);
    if (w->newest_fb_lines)
        assert_true(w->attempt[3]);
    if (w->attempt[3])           /* the newest attempt: the whole table */
        assert_true(w->table_whole);
    assert_true(w->newest_fb_lines == 0 || w->newest_fb_lines == 5 || w->newest_fb_lines == 10);
}

static void test_budget_order(void **state)
{
    (void)state;
    char fbs[4][256], hyps[4][24];
    kiln_attempt at[4];
    for (int i = 0; i < 4; i++) {
        size_t n = 0;
        for (int l = 0; l < 10; l++)
            n += (size_t)snprintf(fbs[i] + n, sizeof fbs[i] - n, "fb%d-line-%02d\n", i + 1, l);
        snprintf(hyps[i], sizeof hyps[i], "idea-%d", i + 1);
        at[i] = (kiln_attempt){.n = i + 1, .hypothesis = hyps[i], .status = "fail",
                               .stage = "visible", .reason = "wrong-output", .feedback = fbs[i]};
    }
    char lessons[40 * 64];
    size_t n = 0;
    for (int i = 0; i < 40; i++)
        n += (size_t)snprintf(lessons + n, sizeof lessons - n, "- When lesson %02d: do this\n", i);
    kiln_in_flight fl[2] = {{.n = 10, .hypothesis = "flight-1", .parent = 4},
                            {.n = 11, .hypothesis = "flight-2", .parent = 0}};
    kiln_prompt_input in = input("cuda", g_cuda);
    in.attempts = at;
    in.nattempts = 4;
    in.in_flight = fl;
    in.nin_flight = 2;
    in.lessons = lessons;
    in.strategy = kiln_draft_strategy(1, 0, 1);
    in.max_chars = KILN_PROMPT_NO_LIMIT;
    char *u = user_of(&in);
    size_t full = strlen(u);
    free(u);
    int states = 0, failed = 0;
    shown prev;
    memset(&prev, 0, sizeof prev);
    for (size_t budget = full; budget > 0; budget -= budget > 37 ? 37 : budget) {
        char *sys, *user;
        kiln_error err;
        in.max_chars = budget;
        if (kiln_prompt_build(&in, &sys, &user, &err) < 0) {
            failed = 1;   /* once too small, smaller budgets are too */
            continue;
        }
        assert_false(failed);
        assert_true(strlen(user) <= budget);
        must_contain(user, "Machine (where");
        must_contain(user, "Parent's verdict: pass");
        must_contain(user, "| v1 | rows=1 cols=4096 |");
        must_contain(user, "Direction for this answer");
        shown w = what_is_shown(user);
        check_order(&w);
        states += memcmp(&w, &prev, sizeof w) != 0;
        prev = w;
        free(sys);
        free(user);
    }
    assert_true(failed);
    assert_true(states >= 12);   /* the sweep went through the stages */
}

/* Pipelining: the drafts being verified, a line each between the attempts
 * and the lessons; none, no section. */
static void test_in_flight(void **state)
{
    (void)state;
    kiln_attempt at = {.n = 1, .hypothesis = "idea-1", .status = "pass"};
    kiln_in_flight fl[2] = {{.n = 3, .hypothesis = "two accumulators\nand more", .parent = 1},
                            {.n = 4, .hypothesis = NULL, .parent = -1}};
    kiln_prompt_input in = input("c", g_cuda);
    in.attempts = &at;
    in.nattempts = 1;
    in.lessons = "- a lesson\n";
    char *u = user_of(&in);
    must_lack(u, "Being verified now");
    free(u);
    in.in_flight = fl;
    in.nin_flight = 2;
    u = user_of(&in);
    must_contain(u, "\n\nBeing verified now (their verdicts arrive after you answer):\n"
                    "#3: two accumulators and more (from #1)\n"
                    "#4: (no hypothesis given)\n\n");
    assert_true(strstr(u, "#1 idea-1") < strstr(u, "Being verified now"));
    assert_true(strstr(u, "Being verified now") < strstr(u, "Lessons:"));
    free(u);
    in.in_flight = NULL;
    char *sys, *user;
    kiln_error err;
    assert_int_equal(kiln_prompt_build(&in, &sys, &user, &err), -1);
    must_contain(err.msg, "prompt: 2 drafts being verified but no array of them");
}

/* Inspirations go first (their sources, then whole inspirations from the
 * last): while one is shown, everything else is shown whole. */
static void test_budget_inspirations(void **state)
{
    (void)state;
    char fb[256], src[3][512];
    size_t n = 0;
    for (int l = 0; l < 10; l++)
        n += (size_t)snprintf(fb + n, sizeof fb - n, "fb1-line-%02d\n", l);
    kiln_attempt at = {.n = 1, .hypothesis = "idea-1", .status = "fail", .stage = "visible",
                       .reason = "wrong-output", .feedback = fb};
    kiln_inspiration ins[3];
    for (int i = 0; i < 3; i++) {
        n = 0;
        for (int l = 0; l < 8; l++)
            n += (size_t)snprintf(src[i] + n, sizeof src[i] - n, "insp%d-src-%02d\n", i, l);
        ins[i] = (kiln_inspiration){.n = 10 + i, .cell = "all.noknob", .speedup = 2.0 - i,
                                    .lo = 1.5 - i / 2.0, .hi = 2.5, .hypothesis = "elite idea",
                                    .source = src[i]};
    }
    kiln_prompt_input in = input("cuda", g_cuda);
    in.attempts = &at;
    in.nattempts = 1;
    in.lessons = "- When x: do y\n";
    in.inspirations = ins;
    in.ninspirations = 3;
    in.parent_not_best = 1;
    in.max_chars = KILN_PROMPT_NO_LIMIT;
    char *u = user_of(&in);
    must_contain(u, "Parent (an elite of this run's archive, not its best;");
    must_contain(u, "#12 in cell all.noknob: 0.00x [0.50, 2.50]: elite idea");
    must_contain(u, "insp2-src-07");
    size_t full = strlen(u);
    free(u);
    int saw_names_only = 0, saw_some = 0;
    for (size_t budget = full; budget > 2000; budget -= 11) {
        char *sys, *user;
        kiln_error err;
        in.max_chars = budget;
        if (kiln_prompt_build(&in, &sys, &user, &err) < 0)
            break;
        int shown[3], src_shown = strstr(user, "-src-") != NULL;
        for (int i = 0; i < 3; i++) {
            char key[32];
            snprintf(key, sizeof key, "#%d in cell", 10 + i);
            shown[i] = strstr(user, key) != NULL;
        }
        if (src_shown)
            assert_true(shown[0] && shown[1] && shown[2]);
        for (int i = 1; i < 3; i++)
            if (shown[i])
                assert_true(shown[i - 1]);
        if (shown[0]) {   /* nothing else given up yet */
            must_contain(user, "fb1-line-09");
            must_contain(user, "Lessons:");
            assert_null(strstr(user, "not shown for length"));
        }
        saw_names_only |= shown[0] && !src_shown;
        saw_some |= shown[0] && !shown[2];
        free(sys);
        free(user);
    }
    assert_true(saw_names_only && saw_some);
}

/* Each inspiration shows its speedup per visible shape against the
 * baseline, from its pooled verdict, on one line under its own (hidden
 * shapes never); one without a readable verdict shows none. The line
 * stays while the sources are given up for length. */
static void test_inspiration_shapes(void **state)
{
    (void)state;
    kiln_inspiration ins[3] = {
        {.n = 7, .cell = "all.v256-rs", .speedup = 1.07, .lo = 1.0, .hi = 1.1,
         .hypothesis = "avx2", .source = "insp-src-a\ninsp-src-b\n", .verdict_json = g_cpu},
        {.n = 8, .cell = "all.omp", .speedup = 1.0, .lo = 0.9, .hi = 1.1,
         .source = "insp-src-c\n", .verdict_json = "{not a verdict"},
        {.n = 9, .cell = "most.u4", .speedup = 1.0, .lo = 0.9, .hi = 1.1,
         .source = "insp-src-d\n"},
    };
    kiln_prompt_input in = input("c", g_cpu);
    in.inspirations = ins;
    in.ninspirations = 3;
    in.max_chars = KILN_PROMPT_NO_LIMIT;
    char *u = user_of(&in);
    const char *line = "#7 in cell all.v256-rs: 1.07x [1.00, 1.10]: avx2\n"
                       "  per shape: v1 1.26x v2 0.99x v3 0.98x v4 1.13x v5 1.14x v6 0.96x\n"
                       "  source (first lines):\n";
    must_contain(u, line);
    must_contain(u, "#8 in cell all.omp: 1.00x [0.90, 1.10]\n  source (first lines):\n");
    must_contain(u, "#9 in cell most.u4: 1.00x [0.90, 1.10]\n  source (first lines):\n");
    char *p = strstr(u, "per shape:");
    assert_non_null(p);
    assert_null(strstr(p + 1, "per shape:"));   /* #7's only */
    assert_null(strstr(strstr(u, "Other kernels this run kept"), " h1 "));
    size_t full = strlen(u);
    free(u);
    int saw = 0;
    for (size_t budget = full; budget > full - 400 && !saw; budget--) {
        char *sys, *user;
        kiln_error err;
        in.max_chars = budget;
        assert_int_equal(kiln_prompt_build(&in, &sys, &user, &err), 0);
        if (!strstr(user, "insp-src-") && strstr(user, "#7 in cell")) {
            must_contain(user, "avx2\n  per shape: v1 1.26x v2 0.99x v3 0.98x v4 1.13x v5 1.14x "
                               "v6 0.96x\n#8 in cell");
            saw = 1;
        }
        free(sys);
        free(user);
    }
    assert_true(saw);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s FIXTURE_DIR\n", argv[0]);
        return 2;
    }
    g_dir = argv[1];
    g_cpu = slurp("verdict_cpu.json");
    g_cuda = slurp("verdict_cuda.json");
    if (!g_cpu || !g_cuda) {
        fprintf(stderr, "%s: cannot read the verdict fixtures in %s\n", argv[0], g_dir);
        return 2;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cuda_verdict),
        cmocka_unit_test(test_profile_view),
        cmocka_unit_test(test_cpu_verdict),
        cmocka_unit_test(test_cpu_facts),
        cmocka_unit_test(test_no_hidden_dims),
        cmocka_unit_test(test_failure_feedback),
        cmocka_unit_test(test_budget_huge_failure),
        cmocka_unit_test(test_budget_many_lessons),
        cmocka_unit_test(test_budget_long_source),
        cmocka_unit_test(test_budget_order),
        cmocka_unit_test(test_in_flight),
        cmocka_unit_test(test_budget_inspirations),
        cmocka_unit_test(test_inspiration_shapes),
        cmocka_unit_test(test_straddle_not_slower),
        cmocka_unit_test(test_attempt_said_once),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    free(g_cpu);
    free(g_cuda);
    return rc;
}
