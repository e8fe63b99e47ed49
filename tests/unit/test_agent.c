/* test_agent.c - cmocka tests for the proposer pieces in agent/: the answer
 * parser (parse.c), knobs and the offline tuner (tune.c), the replay
 * directory (replay.c), the prompt builder with the drafts' directions and
 * temperatures, and the source normaliser (prompt.c).
 *
 * Everything allocated is freed and temp directories are removed, so the
 * test also runs clean under AddressSanitizer. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "parse.h"
#include "prompt.h"
#include "normalize.h"
#include "replay.h"
#include "tune.h"

/* ---- parse --------------------------------------------------------------- */

#define KERNEL                                                                   \
    "#include <stdint.h>\n"                                                      \
    "void rmsnorm(const float *x, const float *w, float *y, int32_t rows,\n"     \
    "             int32_t cols, float eps)\n"                                    \
    "{\n"                                                                        \
    "    (void)x; (void)w; (void)y; (void)rows; (void)cols; (void)eps;\n"        \
    "}\n"

static void expect_ok(const char *answer, const char *hyp)
{
    kiln_proposal p;
    int rc = kiln_parse_answer(answer, "c", "rmsnorm", &p);
    if (rc != 0)
        fail_msg("rejected: %s\n--- answer ---\n%s", p.error, answer);
    assert_int_equal(p.ok, 1);
    assert_string_equal(p.source, KERNEL);
    assert_string_equal(p.hypothesis, hyp);
    kiln_proposal_free(&p);
}

static void expect_reject(const char *answer, const char *error)
{
    kiln_proposal p;
    int rc = kiln_parse_answer(answer, "c", "rmsnorm", &p);
    assert_int_equal(rc, -1);
    assert_int_equal(p.ok, 0);
    assert_null(p.source);
    if (!strstr(p.error, error))
        fail_msg("error '%s' does not contain '%s'", p.error, error);
    kiln_proposal_free(&p);
}

static void test_parse_basic(void **state)
{
    (void)state;
    expect_ok("Here is the kernel.\n\n```c\n" KERNEL "```\n\nHYPOTHESIS: four accumulators "
              "break the add dependency\n",
              "four accumulators break the add dependency");
}

static void test_parse_fence_variants(void **state)
{
    (void)state;
    const char *opens[] = {"```c", "```C", "```cpp", "```cuda", "```cu", "```", "~~~", "~~~c",
                           "````c", "```c   "};
    const char *closes[] = {"```", "```", "```", "```", "```", "```", "~~~", "~~~",
                            "````", "```  "};
    for (size_t i = 0; i < sizeof opens / sizeof opens[0]; i++) {
        char buf[2048];
        snprintf(buf, sizeof buf, "text\n%s\n" KERNEL "%s\nHYPOTHESIS: h%zu\n", opens[i],
                 closes[i], i);
        char hyp[16];
        snprintf(hyp, sizeof hyp, "h%zu", i);
        expect_ok(buf, hyp);
    }
}

static void test_parse_crlf(void **state)
{
    (void)state;
    /* the same answer with every LF turned into CRLF */
    const char *lf = "Sure:\n```c\n" KERNEL "```\nHYPOTHESIS: crlf  \n";
    char crlf[2048], *w = crlf;
    for (const char *p = lf; *p; p++) {
        if (*p == '\n')
            *w++ = '\r';
        *w++ = *p;
    }
    *w = '\0';
    expect_ok(crlf, "crlf");
}

static void test_parse_hypothesis_forms(void **state)
{
    (void)state;
    const char *forms[] = {
        "HYPOTHESIS: vectorise the row",
        "Hypothesis: vectorise the row",
        "**Hypothesis:** vectorise the row",
        "**HYPOTHESIS**: vectorise the row",
        "- hypothesis - vectorise the row",
        "## Hypothesis: vectorise the row",
        "hypothesis = vectorise the row",
        "`HYPOTHESIS: vectorise the row`",
        "Hypothesis \xE2\x80\x94 vectorise the row",
    };
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        char before[2048], after[2048];
        snprintf(before, sizeof before, "%s\n\n```c\n" KERNEL "```\nDone.\n", forms[i]);
        snprintf(after, sizeof after, "Intro.\n```c\n" KERNEL "```\n%s\n", forms[i]);
        expect_ok(before, "vectorise the row");
        expect_ok(after, "vectorise the row");
    }
    /* a bare label: the text is on the next line */
    expect_ok("```c\n" KERNEL "```\n**Hypothesis:**\nvectorise the row\n", "vectorise the row");
    /* words that only start like the label are not one */
    expect_ok("Hypothesised gains are large.\n```c\n" KERNEL "```\n", "");
}

static void test_parse_no_hypothesis(void **state)
{
    (void)state;
    expect_ok("```c\n" KERNEL "```", "");
    /* the first hypothesis line wins; one inside the code does not count
     * when there is one outside */
    expect_ok("HYPOTHESIS: first\n```c\n" KERNEL "```\nHYPOTHESIS: second\n", "first");
}

static void test_parse_hypothesis_in_code(void **state)
{
    (void)state;
    kiln_proposal p;
    const char *a = "```c\n/* HYPOTHESIS: from a comment */\n" KERNEL "```\n";
    assert_int_equal(kiln_parse_answer(a, "c", "rmsnorm", &p), 0);
    assert_string_equal(p.hypothesis, "from a comment");
    kiln_proposal_free(&p);
}

static void test_parse_long_hypothesis(void **state)
{
    (void)state;
    char answer[4096], want[512];
    char *w = answer + sprintf(answer, "```c\n" KERNEL "```\nHYPOTHESIS: ");
    for (int i = 0; i < 900; i++)
        *w++ = (char)('a' + i % 26);
    strcpy(w, "\nand a second line\n");
    for (int i = 0; i < 500; i++)
        want[i] = (char)('a' + i % 26);
    want[500] = '\0';
    expect_ok(answer, want);
}

static void test_parse_several_blocks(void **state)
{
    (void)state;
    /* a usage example and a prototype around the one complete file */
    expect_ok("Call it like this:\n```c\nrmsnorm(x, w, y, rows, cols, 1e-6f);\n```\n"
              "Prototype:\n```c\nvoid rmsnorm(const float *x);\n```\n"
              "The file:\n```c\n" KERNEL "```\nHYPOTHESIS: pick me\n"
              "And the build:\n```bash\ncc -O2 x.c\n```\n",
              "pick me");
    /* a json aside does not count as a second file */
    expect_ok("```json\n{\"a\": 1}\n```\n```\n" KERNEL "```\n", "");
    /* the name in a comment or a string is not a definition */
    expect_ok("```c\n// void rmsnorm(int a) { old }\nconst char *s = \"rmsnorm() {\";\n```\n"
              "```c\n" KERNEL "```\n", "");
}

static void test_parse_indented_block(void **state)
{
    (void)state;
    char answer[4096], *w = answer;
    w += sprintf(w, "1. The file:\n\n   ```c\n");
    for (const char *p = KERNEL; *p;) {
        const char *nl = strchr(p, '\n');
        w += sprintf(w, "   %.*s\n", (int)(nl - p), p);
        p = nl + 1;
    }
    sprintf(w, "   ```\n2. HYPOTHESIS: indented\n");
    expect_ok(answer, "indented");
}

static void test_parse_cuda(void **state)
{
    (void)state;
    const char *src =
        "#include <cuda_bf16.h>\n"
        "#define BLOCK 256 //@kiln tune 128 256 512\n"
        "extern \"C\" __global__ void __launch_bounds__(BLOCK) rmsnorm_fwd(const float *x,\n"
        "    float *y, int cols) __attribute__((unused)) { }\n"
        "/*@kiln launch\n{\"launches\": []}\n@*/\n";
    char answer[2048];
    snprintf(answer, sizeof answer, "```cuda\n%s```\nHYPOTHESIS: one warp per row\n", src);
    kiln_proposal p;
    assert_int_equal(kiln_parse_answer(answer, "cuda", "rmsnorm_fwd", &p), 0);
    assert_string_equal(p.source, src);
    assert_string_equal(p.hypothesis, "one warp per row");
    kiln_proposal_free(&p);
}

/* CUDA: the block holding the launch manifest is the file, whatever its
 * kernels are called and whether the fence says cuda, cpp or nothing. */
static void test_parse_cuda_manifest(void **state)
{
    (void)state;
    const char *src =
        "#include \"kiln_cuda.h\"\n"
        "extern \"C\" __global__ void norm2(const kiln_t *x, kiln_t *y, int cols) { }\n"
        "/*@kiln launch\n{\"launches\": [{\"kernel\": \"norm2\"}]}\n@*/\n";
    const char *snippet = "__global__ void rmsnorm_fwd(const kiln_t *x) { }\n";
    const char *fences[] = {"```cuda", "```cpp", "```c++", "```", "~~~cu"};
    for (size_t i = 0; i < sizeof fences / sizeof *fences; i++) {
        char answer[2048];
        const char *close = fences[i][0] == '~' ? "~~~" : "```";
        snprintf(answer, sizeof answer, "The old kernel:\n```cuda\n%s```\nThe new one:\n%s\n%s%s\n"
                 "HYPOTHESIS: rename and fuse\n", snippet, fences[i], src, close);
        kiln_proposal p;
        if (kiln_parse_answer(answer, "cuda", "rmsnorm_fwd", &p) != 0)
            fail_msg("fence %s rejected: %s", fences[i], p.error);
        assert_string_equal(p.source, src);
        assert_string_equal(p.hypothesis, "rename and fuse");
        kiln_proposal_free(&p);
    }
    kiln_proposal p;
    char answer[1024];
    snprintf(answer, sizeof answer, "```cuda\n%s```\nHYPOTHESIS: x\n", snippet);
    assert_int_equal(kiln_parse_answer(answer, "cuda", "rmsnorm_fwd", &p), -1);
    assert_non_null(strstr(p.error, "no launch manifest"));
    kiln_proposal_free(&p);
    snprintf(answer, sizeof answer, "```cuda\n%s```\n```cpp\n%s```\n", snippet, snippet);
    assert_int_equal(kiln_parse_answer(answer, "cuda", "rmsnorm_fwd", &p), -1);
    assert_non_null(strstr(p.error, "none of them holds a launch manifest"));
    kiln_proposal_free(&p);
}

static void test_parse_rejections(void **state)
{
    (void)state;
    expect_reject("I would unroll the loop.\nHYPOTHESIS: unroll\n",
                  "the answer has no fenced code block");
    expect_reject("```c\n" KERNEL "```\nor\n```c\n" KERNEL "```\n",
                  "the answer has 2 code blocks that look like complete files; send exactly one");
    expect_reject("```c\n\n  \n```\nHYPOTHESIS: x\n", "the code block is empty");
    expect_reject("```c\nvoid rms_norm(void) {}\n```\n", "the code block does not define rmsnorm");
    expect_reject("```c\nint a;\n```\n```c\nint b;\n```\n",
                  "the answer has 2 code blocks and none of them defines rmsnorm");
    expect_reject("HYPOTHESIS: x\n```c\n" KERNEL,
                  "truncated: the code block is not closed (the answer was cut off)");
    expect_reject("```c\n" KERNEL "``", "truncated: the code block is not closed");
    /* a closing fence shorter than the opening one does not close it */
    expect_reject("````c\n" KERNEL "```\n", "not closed");
    /* code that is not text (issue 30) never reaches the database or git */
    expect_reject("```c\n" KERNEL "// \x1b[2K\n```\n",
                  "the code block holds a control character (0x1b) at line 7, column 4");
    expect_reject("```c\n" KERNEL "/* caf\xe9 */\n```\n", "a byte that is not UTF-8 (0xe9)");
    expect_reject("```c\n" KERNEL "// \xe2\x80\xae\n```\n", "a bidirectional-text control");
    {   /* a hypothesis is the model's words: shown, so made safe */
        kiln_proposal p;
        assert_int_equal(kiln_parse_answer("```c\n" KERNEL "```\nHYPOTHESIS: a \xe2\x80\xae b \xff\n",
                                           "c", "rmsnorm", &p), 0);
        assert_string_equal(p.hypothesis, "a \\u202e b \\xff");
        kiln_proposal_free(&p);
    }

    size_t big = KILN_MAX_SOURCE_BYTES + 100;
    char *answer = malloc(big + 256);
    assert_non_null(answer);
    char *w = answer + sprintf(answer, "```c\n" KERNEL);
    while ((size_t)(w - answer) < big)
        w += sprintf(w, "// padding padding padding padding padding padding\n");
    strcpy(w, "```\n");
    expect_reject(answer, "the limit is 262144");
    free(answer);

    kiln_proposal p;
    assert_int_equal(kiln_parse_answer("```c\n" KERNEL "```", "fortran", "rmsnorm", &p), -1);
    assert_int_equal(kiln_parse_answer(NULL, "c", "rmsnorm", &p), -1);
    kiln_proposal_free(&p);
}

/* ---- knobs ---------------------------------------------------------------- */

static const char KNOB_SRC[] =
    "/* a kernel with two knobs */\n"
    "#include <stdint.h>\n"
    "#define BLOCK 256 //@kiln tune 128 256 512\n"
    "#  define   UNROLL\t1   //@kiln  tune 1 2 4  8  \n"
    "#define PLAIN 3 // not a knob\n"
    "int f(void) { return BLOCK * UNROLL; }\n";

static void test_knobs_parse(void **state)
{
    (void)state;
    kiln_knob k[4];
    kiln_error err = {0};
    assert_int_equal(kiln_knobs_parse(KNOB_SRC, k, 4, &err), 2);
    assert_string_equal(k[0].name, "BLOCK");
    assert_string_equal(k[0].value, "256");
    assert_int_equal(k[0].nvalues, 3);
    assert_string_equal(k[0].values[2], "512");
    assert_int_equal(k[0].line, 3);
    assert_string_equal(k[1].name, "UNROLL");
    assert_string_equal(k[1].value, "1");
    assert_int_equal(k[1].nvalues, 4);
    assert_string_equal(k[1].values[1], "2");
    assert_string_equal(k[1].values[3], "8");
    assert_int_equal(k[1].line, 4);

    /* a current value that is not listed is fine; identifiers are not values */
    assert_int_equal(kiln_knobs_parse("#define U -3 //@kiln tune 0 -1 8\n", k, 4, &err), 1);
    assert_string_equal(k[0].values[1], "-1");
    assert_int_equal(kiln_knobs_parse("#define MODE fast //@kiln tune 1 2\n", k, 4, &err), -1);
    assert_non_null(strstr(err.msg, "line 1: knob 'MODE': value 'fast' is not an integer"));
    assert_int_equal(kiln_knobs_parse("int x;\n", k, 4, &err), 0);
}

static void expect_knob_error(const char *src, const char *msg)
{
    kiln_knob k[2];
    kiln_error err = {0};
    assert_int_equal(kiln_knobs_parse(src, k, 2, &err), -1);
    if (!strstr(err.msg, msg))
        fail_msg("error '%s' does not contain '%s'", err.msg, msg);
}

static void test_knobs_malformed(void **state)
{
    (void)state;
    expect_knob_error("int a;\n\n#define A 1 //@kiln tune 4\n", "line 3: knob");
    expect_knob_error("int a;\n\n#define A 1 //@kiln tune 4\n", "at least 2");
    expect_knob_error("#define A 1 //@kiln tune\n", "line 1:");
    expect_knob_error("\nint a = 1; //@kiln tune 1 2\n", "line 2: a knob line must read");
    expect_knob_error("#define A (1+2) //@kiln tune 1 2\n", "line 1: knob 'A': value '(1+2)' is not an integer");
    expect_knob_error("#define A 1 //@kiln tune 1 2+3\n", "value '2+3' is not an integer");
    expect_knob_error("#define A 1 //@kiln tune 1 2 1\n", "value 1 is listed twice");
    expect_knob_error("#define A 1 //@kiln tune 1 2\n#define A 2 //@kiln tune 1 2\n",
                      "line 2: knob 'A' is declared twice (first on line 1)");
    expect_knob_error("#define A 1 //@kiln tune 1 2\n#define B 1 //@kiln tune 1 2\n"
                      "#define C 1 //@kiln tune 1 2\n", "line 3: more than 2 knobs");
    expect_knob_error("#define A 1 //@kiln tune 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17\n",
                      "more than 16 values");
}

static void test_knobs_apply(void **state)
{
    (void)state;
    kiln_knob k[4];
    kiln_error err;
    assert_int_equal(kiln_knobs_parse(KNOB_SRC, k, 4, &err), 2);
    const char vals[2][64] = {"512", "8"};
    char *out = kiln_knobs_apply(KNOB_SRC, k, 2, vals);
    assert_non_null(out);
    assert_string_equal(out, "/* a kernel with two knobs */\n"
                             "#include <stdint.h>\n"
                             "#define BLOCK 512 //@kiln tune 128 256 512\n"
                             "#  define   UNROLL\t8   //@kiln  tune 1 2 4  8  \n"
                             "#define PLAIN 3 // not a knob\n"
                             "int f(void) { return BLOCK * UNROLL; }\n");
    free(out);

    /* CRLF and a last line without a newline survive byte for byte */
    const char *crlf = "#define U 1 //@kiln tune 1 16\r\nint x;\r\nint y;";
    assert_int_equal(kiln_knobs_parse(crlf, k, 4, &err), 1);
    const char v16[1][64] = {"16"};
    out = kiln_knobs_apply(crlf, k, 1, v16);
    assert_string_equal(out, "#define U 16 //@kiln tune 1 16\r\nint x;\r\nint y;");
    free(out);

    /* values that are not tokens are refused, not pasted into code */
    const char bad[1][64] = {"1; system(\"x\")"};
    assert_null(kiln_knobs_apply(crlf, k, 1, bad));
    /* knobs from another source are refused */
    assert_null(kiln_knobs_apply("int z;\n", k, 1, v16));
}

static void test_knobs_key(void **state)
{
    (void)state;
    kiln_knob k[4];
    kiln_error err;
    assert_int_equal(kiln_knobs_parse(KNOB_SRC, k, 4, &err), 2);
    const char vals[2][64] = {"256", "4"};
    char buf[64];
    kiln_knobs_key(k, 2, vals, buf, sizeof buf);
    assert_string_equal(buf, "BLOCK=256,UNROLL=4");
    char small[8];
    kiln_knobs_key(k, 2, vals, small, sizeof small);
    assert_string_equal(small, "BLOCK=2");
    kiln_knobs_key(k, 0, vals, buf, sizeof buf);
    assert_string_equal(buf, "");
}

/* ---- tuner ---------------------------------------------------------------- */

typedef struct tried_list {
    char *keys[256];
    int n;
} tried_list;

static void tried_add(tried_list *t, const kiln_knob *k, int n, const char vals[][64])
{
    char buf[1024];
    kiln_knobs_key(k, n, vals, buf, sizeof buf);
    t->keys[t->n++] = strdup(buf);
}

static int tried_has(const tried_list *t, const char *key)
{
    for (int i = 0; i < t->n; i++)
        if (strcmp(t->keys[i], key) == 0)
            return 1;
    return 0;
}

static void tried_free(tried_list *t)
{
    for (int i = 0; i < t->n; i++)
        free(t->keys[i]);
    t->n = 0;
}

/* Propose until 0; returns the number of proposals, checking each is new. */
static int run_tuner(uint64_t seed, const kiln_knob *k, int n, char hyps[][128], int max)
{
    kiln_tuner t;
    kiln_tuner_init(&t, seed);
    tried_list tl = {.n = 0};
    char parent[8][64], vals[8][64], key[1024];
    for (int i = 0; i < n; i++)
        strcpy(parent[i], k[i].value);
    kiln_knobs_key(k, n, (const char (*)[64])parent, key, sizeof key);
    int count = 0, rc;
    while (count < max && (rc = kiln_tuner_propose(&t, k, n, (const char *const *)tl.keys, tl.n,
                                                   vals, hyps[count], 128)) == 1) {
        char vkey[1024];
        kiln_knobs_key(k, n, (const char (*)[64])vals, vkey, sizeof vkey);
        assert_false(tried_has(&tl, vkey));
        assert_string_not_equal(vkey, key);
        tried_add(&tl, k, n, (const char (*)[64])vals);
        count++;
    }
    if (count < max)   /* stopped by the tuner: nothing untried, the parent's values back */
        for (int i = 0; i < n; i++)
            assert_string_equal(vals[i], k[i].value);
    tried_free(&tl);
    return count;
}

static int parse_knobs(const char *src, kiln_knob *k)
{
    kiln_error err;
    int n = kiln_knobs_parse(src, k, 8, &err);
    assert_true(n >= 0);
    return n;
}

static void test_tuner_exhausts_2x2(void **state)
{
    (void)state;
    kiln_knob k[8];
    int n = parse_knobs("#define A 1 //@kiln tune 1 2\n#define B 5 //@kiln tune 5 6\n", k);
    char hyps[16][128];
    for (uint64_t seed = 0; seed < 20; seed++)
        assert_int_equal(run_tuner(seed, k, n, hyps, 16), 3);

    /* the caller may also list the parent's own key as tried */
    kiln_tuner t;
    kiln_tuner_init(&t, 7);
    const char *tried[4] = {"A=1,B=5", "A=2,B=5", "A=1,B=6", "A=2,B=6"};
    char vals[2][64], h[128];
    assert_int_equal(kiln_tuner_propose(&t, k, n, tried, 1, vals, h, sizeof h), 1);
    assert_int_equal(kiln_tuner_propose(&t, k, n, tried, 4, vals, h, sizeof h), 0);
    assert_string_equal(vals[0], "1");   /* nothing new: the parent's values, no hypothesis */
    assert_string_equal(vals[1], "5");
    assert_string_equal(h, "");
    assert_int_equal(kiln_tuner_propose(&t, k, 0, tried, 0, vals, h, sizeof h), -1);
}

static void test_tuner_deterministic(void **state)
{
    (void)state;
    kiln_knob k[8];
    int n = parse_knobs("#define A 1 //@kiln tune 1 2 4 8\n#define B 64 //@kiln tune 32 64 128\n"
                        "#define C 1 //@kiln tune 1 2\n", k);
    char h1[32][128], h2[32][128], h3[32][128];
    int n1 = run_tuner(42, k, n, h1, 32), n2 = run_tuner(42, k, n, h2, 32);
    assert_int_equal(n1, 4 * 3 * 2 - 1);   /* every combination but the parent's */
    assert_int_equal(n1, n2);
    for (int i = 0; i < n1; i++)
        assert_string_equal(h1[i], h2[i]);
    /* another seed gives another order */
    int n3 = run_tuner(43, k, n, h3, 32), differs = 0;
    assert_int_equal(n3, n1);
    for (int i = 0; i < n1; i++)
        differs |= strcmp(h1[i], h3[i]) != 0;
    assert_true(differs);
}

static void test_tuner_hypothesis(void **state)
{
    (void)state;
    kiln_knob k[8];
    int n = parse_knobs("#define BLOCK 256 //@kiln tune 128 256 512\n"
                        "#define UNROLL 1 //@kiln tune 1 2 4\n", k);
    for (uint64_t seed = 0; seed < 20; seed++) {
        kiln_tuner t;
        kiln_tuner_init(&t, seed);
        char vals[2][64], h[128];
        assert_int_equal(kiln_tuner_propose(&t, k, n, NULL, 0, vals, h, sizeof h), 1);
        int b = strcmp(vals[0], "256") != 0, u = strcmp(vals[1], "1") != 0;
        char want[192];
        if (b && u)
            snprintf(want, sizeof want, "BLOCK 256 -> %s, UNROLL 1 -> %s", vals[0], vals[1]);
        else if (b)
            snprintf(want, sizeof want, "BLOCK 256 -> %s", vals[0]);
        else
            snprintf(want, sizeof want, "UNROLL 1 -> %s", vals[1]);
        assert_true(b || u);
        assert_string_equal(h, want);
    }

    /* a current value outside the list: every listed value is a move */
    n = parse_knobs("#define U 3 //@kiln tune 1 2\n", k);
    char hyps[8][128];
    assert_int_equal(run_tuner(5, k, n, hyps, 8), 2);
    char many[KILN_KNOBS_MAX + 1][64];
    assert_int_equal(kiln_tuner_propose(&(kiln_tuner){0}, k, KILN_KNOBS_MAX + 1, NULL, 0, many,
                                        NULL, 0), -1);
}

#define SPACE_27                                                                  \
    "#define A %s //@kiln tune 1 2 3\n#define B %s //@kiln tune 10 20 30\n"       \
    "#define C %s //@kiln tune 100 200 300\n"

/* A small space is covered, every setting once, and then the tuner says so. */
static void test_tuner_covers_27(void **state)
{
    (void)state;
    kiln_knob k[8];
    char src[256], hyps[40][128];
    snprintf(src, sizeof src, SPACE_27, "2", "20", "200");
    int n = parse_knobs(src, k);
    for (uint64_t seed = 0; seed < 10; seed++)
        assert_int_equal(run_tuner(seed, k, n, hyps, 40), 26);   /* 27 less the parent */
    /* A parent outside the lists: all 27 list settings, and the descent's
     * one-knob moves from it, which keep the other knobs at 0 (3 x 3). */
    snprintf(src, sizeof src, SPACE_27, "0", "0", "0");
    n = parse_knobs(src, k);
    for (uint64_t seed = 0; seed < 10; seed++)
        assert_int_equal(run_tuner(seed, k, n, hyps, 40), 27 + 9);
}

/* Knob i's list index in a setting, -1 when not listed. */
static int index_of(const kiln_knob *k, const char *v)
{
    for (int j = 0; j < k->nvalues; j++)
        if (strcmp(k->values[j], v) == 0)
            return j;
    return -1;
}

/* 0 when idx is the parent's (pidx) setting, else how far it is: 1 or 2 for
 * a one-knob move of that distance, 9 for a move of several knobs. */
static int distance(const int *idx, const int *pidx, int n)
{
    int moved = 0, d = 0;
    for (int i = 0; i < n; i++)
        if (idx[i] != pidx[i]) {
            moved++;
            d = abs(idx[i] - pidx[i]);
        }
    return moved == 0 ? 0 : moved == 1 ? d : 9;
}

/* 4 x 4 x 4, the parent fixed: the first kiln_tuner_explore_count proposals
 * give every value of every knob a turn; after them, the one-knob moves one
 * place away come first, then those two places away, then the rest. */
static void explore_then_descend(uint64_t seed)
{
    kiln_knob k[8];
    int n = parse_knobs("#define A 2 //@kiln tune 1 2 3 4\n#define B 2 //@kiln tune 1 2 3 4\n"
                        "#define C 2 //@kiln tune 1 2 3 4\n", k);
    int e = kiln_tuner_explore_count(k, n), pidx[3] = {1, 1, 1}, seen[64] = {0}, left[10] = {0};
    assert_int_equal(e, 8);
    for (int s = 0; s < 64; s++)   /* untried settings by distance */
        left[distance((int[3]){s % 4, s / 4 % 4, s / 16}, pidx, 3)]++;
    left[0] = 0;
    kiln_tuner t;
    kiln_tuner_init(&t, seed);
    tried_list tl = {.n = 0};
    tried_add(&tl, k, n, (const char[3][64]){"2", "2", "2"});
    unsigned spread[3] = {0};
    char vals[3][64], h[128];
    for (int p = 0; kiln_tuner_propose(&t, k, n, (const char *const *)tl.keys, tl.n, vals, h,
                                       sizeof h) == 1; p++) {
        int idx[3], s = 0;
        for (int i = 0; i < 3; i++) {
            idx[i] = index_of(&k[i], vals[i]);
            s += idx[i] << (2 * i);
            spread[i] |= p < e ? 1u << idx[i] : 0;
        }
        int d = distance(idx, pidx, 3), want = left[1] ? 1 : left[2] ? 2 : 9;
        if (p >= e && d != want)
            fail_msg("seed %llu, proposal %d (%s): distance %d, expected %d",
                     (unsigned long long)seed, p, h, d, want);
        assert_false(seen[s]);
        seen[s] = 1;
        left[d]--;
        tried_add(&tl, k, n, (const char (*)[64])vals);
    }
    assert_int_equal(tl.n, 64);
    for (int i = 0; i < 3; i++)
        assert_int_equal(spread[i], 0xf);
    tried_free(&tl);
}

static void test_tuner_explores_then_descends(void **state)
{
    (void)state;
    for (uint64_t seed = 0; seed < 20; seed++)
        explore_then_descend(seed);
}

/* A kept one-knob move of the descent is pushed one place further next. */
static void test_tuner_pushes_kept_move(void **state)
{
    (void)state;
    const char *src = "#define A 3 //@kiln tune 1 2 3 4 5\n#define B 3 //@kiln tune 1 2 3 4 5\n";
    for (uint64_t seed = 0; seed < 20; seed++) {
        kiln_knob k[8];
        int n = parse_knobs(src, k), e = kiln_tuner_explore_count(k, n);
        kiln_tuner t;
        kiln_tuner_init(&t, seed);
        tried_list tl = {.n = 0};
        tried_add(&tl, k, n, (const char[2][64]){"3", "3"});
        char vals[2][64], h[128];
        for (int p = 0; p <= e; p++) {   /* the exploration, then one move */
            assert_int_equal(kiln_tuner_propose(&t, k, n, (const char *const *)tl.keys, tl.n,
                                                vals, h, sizeof h), 1);
            tried_add(&tl, k, n, (const char (*)[64])vals);
        }
        int i = strcmp(vals[0], "3") != 0 ? 0 : 1, to = atoi(vals[i]), step = to > 3 ? 1 : -1;
        assert_string_equal(vals[1 - i], "3");   /* a one-knob move */
        char *child = kiln_knobs_apply(src, k, n, (const char (*)[64])vals);   /* kept */
        n = parse_knobs(child, k);
        char further[2][64], fkey[128];
        memcpy(further, vals, sizeof further);
        snprintf(further[i], 64, "%d", to + step);
        kiln_knobs_key(k, n, (const char (*)[64])further, fkey, sizeof fkey);
        assert_int_equal(kiln_tuner_propose(&t, k, n, (const char *const *)tl.keys, tl.n, vals,
                                            h, sizeof h), 1);
        if (to + step >= 1 && to + step <= 5 && !tried_has(&tl, fkey)) {
            assert_string_equal(vals[i], further[i]);
            assert_string_equal(vals[1 - i], "3");
        }
        free(child);
        tried_free(&tl);
    }
}

/* As propose.c asks: three drafts an iteration, each added to the tried
 * keys before the next; every other iteration keeps its first draft. */
static void test_tuner_drafts_and_keeps(void **state)
{
    (void)state;
    char src0[256];
    snprintf(src0, sizeof src0, SPACE_27, "2", "20", "200");
    for (uint64_t seed = 0; seed < 10; seed++) {
        kiln_knob k[8];
        char *src = strdup(src0), vals[3][3][64], h[128];
        int n = parse_knobs(src, k), made = 0, rc = 1;
        kiln_tuner t;
        kiln_tuner_init(&t, seed);
        tried_list tl = {.n = 0};
        tried_add(&tl, k, n, (const char[3][64]){"2", "20", "200"});
        for (int it = 0; rc == 1; it++) {
            int d = 0;
            for (; d < 3 && (rc = kiln_tuner_propose(&t, k, n, (const char *const *)tl.keys,
                                                     tl.n, vals[d], h, sizeof h)) == 1; d++) {
                char key[256];
                kiln_knobs_key(k, n, (const char (*)[64])vals[d], key, sizeof key);
                assert_false(tried_has(&tl, key));   /* new, so unlike this iteration's others */
                tried_add(&tl, k, n, (const char (*)[64])vals[d]);
                made++;
            }
            if (d > 0 && it % 2 == 0) {
                char *child = kiln_knobs_apply(src, k, n, (const char (*)[64])vals[0]);
                free(src);
                src = child;
                n = parse_knobs(src, k);
            }
        }
        assert_int_equal(rc, 0);
        assert_int_equal(made, 26);
        free(src);
        tried_free(&tl);
    }
}

/* ---- replay --------------------------------------------------------------- */

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

static void write_file(const char *dir, const char *name, const char *text)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_replay(void **state)
{
    (void)state;
    char dir[] = "/tmp/kiln-replay-XXXXXX";
    assert_non_null(mkdtemp(dir));
    write_file(dir, "b.c", "int b;\n");
    write_file(dir, "a.c", "int a;\n");
    write_file(dir, "B.c", "int B;\n");
    write_file(dir, "k.cu", "int k;\n");
    write_file(dir, ".hidden.c", "int h;\n");
    write_file(dir, "notes.txt", "x\n");
    write_file(dir, "x.cc", "x\n");
    char sub[4096];
    snprintf(sub, sizeof sub, "%s/dir.c", dir);
    assert_int_equal(mkdir(sub, 0700), 0);

    char **paths;
    int n;
    kiln_error err;
    assert_int_equal(kiln_replay_list(dir, "c", &paths, &n, &err), 0);
    assert_int_equal(n, 3);
    const char *want[] = {"B.c", "a.c", "b.c"};
    for (int i = 0; i < n; i++) {
        char p[4096];
        snprintf(p, sizeof p, "%s/%s", dir, want[i]);
        assert_string_equal(paths[i], p);
    }
    kiln_replay_free(paths, n);

    char slash[4096];
    snprintf(slash, sizeof slash, "%s/", dir);
    assert_int_equal(kiln_replay_list(slash, "cuda", &paths, &n, &err), 0);
    assert_int_equal(n, 1);
    assert_non_null(strstr(paths[0], "-XXXXXX") == NULL ? paths[0] : NULL);
    assert_null(strstr(paths[0], "//"));
    kiln_replay_free(paths, n);

    assert_int_equal(kiln_replay_list(dir, "rust", &paths, &n, &err), -1);
    assert_int_equal(kiln_replay_list("/nonexistent/kiln", "c", &paths, &n, &err), -1);
    assert_non_null(strstr(err.msg, "/nonexistent/kiln"));
    assert_null(paths);
    nftw(dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
}

static void test_replay_hypothesis(void **state)
{
    (void)state;
    char buf[256];
    kiln_replay_hypothesis("/* x */\n/* HYPOTHESIS:  four accumulators  */\nint a;\n"
                           "// HYPOTHESIS: second\n", "/d/a.c", buf, sizeof buf);
    assert_string_equal(buf, "four accumulators");
    kiln_replay_hypothesis("// HYPOTHESIS: crlf\r\nint a;\r\n", "a.c", buf, sizeof buf);
    assert_string_equal(buf, "crlf");
    kiln_replay_hypothesis("int a;\n", "/d/e/02-unroll.c", buf, sizeof buf);
    assert_string_equal(buf, "replay of 02-unroll.c");
    kiln_replay_hypothesis("// HYPOTHESIS:   \n", "plain.c", buf, sizeof buf);
    assert_string_equal(buf, "replay of plain.c");
}

/* ---- prompt --------------------------------------------------------------- */

/* A verdict as the verifier writes it (verdict.c), trimmed to what the
 * prompt reads; the hidden shape carries what no real verdict would. */
#define T_ "\"time\": {\"candidate\": {\"median_ns\": 1000}, \"baseline\": {\"median_ns\": 1500}}, "
static const char VERDICT[] =
    "{\"status\": \"pass\", \"stage\": \"plausibility\", \"code\": \"ok\","
    " \"reason\": \"correct on every shape; geomean speedup 1.50x\","
    " \"shapes\": ["
    "  {\"id\": \"v1\", \"visible\": true, \"dims\": {\"rows\": 32, \"cols\": 1024}, " T_
    "   \"speedup\": 1.94, \"roofline_fraction\": 0.16},"
    "  {\"id\": \"v2\", \"visible\": true, \"dims\": {\"rows\": 8, \"cols\": 4096}, " T_
    "   \"speedup\": 1.1, \"roofline_fraction\": 0.05},"
    "  {\"id\": \"v3\", \"visible\": true, \"dims\": {\"rows\": 1, \"cols\": 512}, " T_
    "   \"speedup\": 1.5, \"roofline_fraction\": 0.004},"
    "  {\"id\": \"h1\", \"visible\": false, \"dims\": {\"rows\": 999}, \"speedup\": 7.7}],"
    " \"summary\": {\"geomean_speedup\": 1.5, \"min_speedup\": 1.1,"
    "  \"median_roofline_fraction\": 0.05}}";

static const char LOG[] =
    "cand.c:3:1: error: unknown type name 'flaot'\n"
    "l2\nl3\nl4\nl5\nl6\nl7\nl8\nl9\nl10\nl11\nl12\nl13\nl14\nl15\nl16-hidden\nl17\n";

static void must_contain(const char *hay, const char *needle)
{
    if (!strstr(hay, needle))
        fail_msg("missing '%s' in:\n%s", needle, hay);
}

static kiln_prompt_input base_input(void)
{
    kiln_prompt_input in = {
        .task_text = "task rmsnorm (dtype f32)\n  void rmsnorm(const float *x, ...);",
        .lang = "c",
        .entry = "rmsnorm",
        .parent_source = "#define UNROLL 1 //@kiln tune 1 2 4\nvoid rmsnorm(void) {}\n",
        .parent_verdict_json = VERDICT,
        .lessons = "- op/rmsnorm: 4 accumulators beat 1 on rows >= 1024 (+30%)\n"
                   "- dtype/f32: -ffast-math style reassociation fails the tolerance\n",
        .max_chars = 60000,
    };
    return in;
}

static void test_prompt_contents(void **state)
{
    (void)state;
    kiln_attempt at[] = {
        {.n = 2, .hypothesis = "use a typo", .status = "fail", .stage = "compile",
         .reason = "compile-error", .compile_log = LOG},
        {.n = 3, .hypothesis = "unroll by 4", .status = "rejected-not-faster", .stage = "timing",
         .reason = "0.98x of the parent", .speedup_vs_parent = 0.98},
        {.n = 4, .hypothesis = NULL, .status = "parse-error", .stage = "",
         .reason = "the code block is not closed (answer cut off?)"},
    };
    kiln_prompt_input in = base_input();
    in.attempts = at;
    in.nattempts = 3;
    char *sys, *user;
    kiln_error err;
    assert_int_equal(kiln_prompt_build(&in, &sys, &user, &err), 0);

    must_contain(sys, "-O2 -march=native");
    must_contain(sys, "\"kiln_cpu.h\"");
    must_contain(sys, "//@kiln tune");
    must_contain(sys, "HYPOTHESIS:");
    must_contain(sys, "ONE fenced code block");
    must_contain(sys, "hidden shapes");
    must_contain(sys, "`rmsnorm`");

    must_contain(user, in.task_text);
    must_contain(user, "```c\n#define UNROLL 1 //@kiln tune 1 2 4\nvoid rmsnorm(void) {}\n```");
    must_contain(user, "| shape | dims | parent | baseline | GB/s | roofline | speedup |");
    must_contain(user, "| v1 | rows=32 cols=1024 | 1.00 us | 1.50 us | - | 16% | 1.94x |");
    must_contain(user, "| v2 | rows=8 cols=4096 | 1.00 us | 1.50 us | - | 5.0% | 1.10x |");
    must_contain(user, "| v3 | rows=1 cols=512 | 1.00 us | 1.50 us | - | 0.4% | 1.50x |");
    must_contain(user, "Hidden shapes: 1 (their sizes are never shown), all passed.");
    assert_null(strstr(user, "999"));
    assert_null(strstr(user, "7.70"));
    must_contain(user, "Lagging shapes (roofline fraction under 3/4 of the shapes' median, 5.0%; "
                       "lowest first): v3 at 0.4% (1.50x).");
    must_contain(user, "#2 use a typo \xE2\x86\x92 fail at compile: compile-error\n");
    must_contain(user, "    cand.c:3:1: error: unknown type name 'flaot'\n");
    must_contain(user, "    l15\n");
    assert_null(strstr(user, "l16-hidden"));
    must_contain(user, "(2 more lines)");
    must_contain(user, "#3 unroll by 4 \xE2\x86\x92 rejected-not-faster at timing: 0.98x of the "
                       "parent (0.98x against its parent)\n");
    must_contain(user, "#4 (no hypothesis given) \xE2\x86\x92 parse-error: the code block is not "
                       "closed (answer cut off?)\n");
    must_contain(user, "Lessons:\n- op/rmsnorm: 4 accumulators");
    assert_true(strlen(user) <= in.max_chars);
    free(sys);
    free(user);

    /* CUDA: the launch manifest is explained */
    in.lang = "cuda";
    in.entry = "rmsnorm_fwd";
    in.parent_verdict_json = NULL;
    in.lessons = NULL;
    assert_int_equal(kiln_prompt_build(&in, &sys, &user, &err), 0);
    must_contain(sys, "@kiln launch");
    must_contain(sys, "manifest");
    must_contain(sys, "NVRTC");
    must_contain(sys, "\"kiln_cuda.h\"");
    must_contain(sys, "kiln_t is the task's element type");
    must_contain(sys, "kiln_from_float");
    must_contain(sys, "`rmsnorm_fwd`");
    must_contain(sys, "//@kiln tune");
    assert_null(strstr(sys, "kiln_cpu.h"));
    assert_null(strstr(sys, "-march=native"));
    must_contain(user, "```cuda\n");
    must_contain(user, "not measured yet");
    assert_null(strstr(user, "Lessons:"));
    free(sys);
    free(user);
}

static void test_prompt_budget(void **state)
{
    (void)state;
    enum { N = 40 };
    kiln_attempt at[N];
    char hyps[N][64];
    for (int i = 0; i < N; i++) {
        snprintf(hyps[i], sizeof hyps[i], "idea-%02d with some words to take up room", i);
        at[i] = (kiln_attempt){.n = i + 1, .hypothesis = hyps[i], .status = "fail",
                               .stage = "compile", .reason = "compile-error",
                               .compile_log = LOG};
    }
    kiln_prompt_input in = base_input();
    in.attempts = at;
    in.nattempts = N;
    char *sys, *user;
    kiln_error err;

    in.max_chars = KILN_PROMPT_NO_LIMIT;   /* everything */
    assert_int_equal(kiln_prompt_build(&in, &sys, &user, &err), 0);
    size_t full = strlen(user);
    must_contain(user, "idea-00");
    free(sys);
    free(user);

    in.max_chars = full - 2000;
    assert_int_equal(kiln_prompt_build(&in, &sys, &user, &err), 0);
    assert_true(strlen(user) <= in.max_chars);
    must_contain(user, "idea-39");          /* the newest stays, with its log */
    must_contain(user, "    l15\n");
    must_contain(user, "Lessons:\n");
    free(sys);
    free(user);

    in.max_chars = 2600;   /* room for only some attempts: the oldest go */
    assert_int_equal(kiln_prompt_build(&in, &sys, &user, &err), 0);
    assert_true(strlen(user) <= in.max_chars);
    must_contain(user, "idea-39");
    must_contain(user, "older attempts not shown");
    assert_null(strstr(user, "idea-00"));
    char *first = strstr(user, "idea-");
    int oldest = atoi(first + 5);
    for (int i = oldest; i < N; i++) {   /* the shown ones are a suffix */
        char name[32];
        snprintf(name, sizeof name, "idea-%02d", i);
        must_contain(user, name);
    }
    must_contain(user, "Lessons:\n");   /* lessons outlive old attempts */
    free(sys);
    free(user);

    in.max_chars = 100;   /* not even the task and parent fit */
    sys = user = (char *)"x";
    assert_int_equal(kiln_prompt_build(&in, &sys, &user, &err), -1);
    assert_null(sys);
    assert_null(user);
    must_contain(err.msg, "budget is 100");
}

static void test_prompt_bad_input(void **state)
{
    (void)state;
    kiln_prompt_input in = base_input();
    char *sys, *user;
    kiln_error err;
    in.lang = "rust";
    assert_int_equal(kiln_prompt_build(&in, &sys, &user, &err), -1);
    in = base_input();
    in.parent_source = NULL;
    assert_int_equal(kiln_prompt_build(&in, &sys, &user, &err), -1);
    in = base_input();
    in.parent_verdict_json = "{not json";
    assert_int_equal(kiln_prompt_build(&in, &sys, &user, &err), 0);
    must_contain(user, "could not be read");
    free(sys);
    free(user);
}

/* ---- diverse drafts -------------------------------------------------------- */

/* The drafts of an iteration get different directions (as long as there are
 * no more of them than directions) and temperatures; the next iteration
 * goes on through the list. */
static void test_draft_strategies(void **state)
{
    (void)state;
    for (int n = 1; n <= KILN_DRAFT_STRATEGIES; n++)
        for (int it = 1; it <= 3; it++)
            for (int a = 0; a < n; a++)
                for (int b = a + 1; b < n; b++)
                    assert_string_not_equal(kiln_draft_strategy(it, a, n),
                                            kiln_draft_strategy(it, b, n));
    /* one draft an iteration: a new direction each time */
    assert_string_not_equal(kiln_draft_strategy(1, 0, 1), kiln_draft_strategy(2, 0, 1));
    /* four drafts: iteration 2 starts where iteration 1 stopped */
    assert_string_equal(kiln_draft_strategy(2, 0, 4), kiln_draft_strategy(1, 4, 8));
    assert_true(kiln_draft_temperature(0, 1) == 0.5);
    assert_true(kiln_draft_temperature(0, 4) == 0.2);
    assert_true(kiln_draft_temperature(1, 4) == 0.4);
    assert_true(kiln_draft_temperature(2, 4) == 0.6);
    assert_true(kiln_draft_temperature(3, 4) == 0.8);
    for (int n = 2; n <= 16; n++)
        for (int d = 1; d < n; d++)
            assert_true(kiln_draft_temperature(d, n) > kiln_draft_temperature(d - 1, n));
}

/* The direction is in the user prompt, and counts toward its budget. */
static void test_prompt_strategy(void **state)
{
    (void)state;
    kiln_prompt_input in = base_input();
    char *sys, *user, *plain;
    kiln_error err;
    assert_int_equal(kiln_prompt_build(&in, &sys, &plain, &err), 0);
    free(sys);
    in.strategy = kiln_draft_strategy(1, 2, 4);
    in.max_chars = strlen(plain) + 40;   /* too little room for the direction */
    assert_int_equal(kiln_prompt_build(&in, &sys, &user, &err), -1);
    in.max_chars = 0;   /* the default budget */
    assert_int_equal(kiln_prompt_build(&in, &sys, &user, &err), 0);
    must_contain(user, "Direction for this answer");
    must_contain(user, in.strategy);
    assert_null(strstr(plain, "Direction for this answer"));
    free(sys);
    free(user);
    free(plain);
}

/* ---- source normalisation --------------------------------------------------- */

static int same_source(const char *a, const char *b)
{
    char *x = kiln_source_normalize(a), *y = kiln_source_normalize(b);
    assert_non_null(x);
    assert_non_null(y);
    int same = strcmp(x, y) == 0;
    free(x);
    free(y);
    return same;
}

static void expect_normal(const char *src, const char *want)
{
    char *got = kiln_source_normalize(src);
    assert_non_null(got);
    if (strcmp(got, want) != 0)
        fail_msg("normalised\n%s\nas\n%s\nnot\n%s", src, got, want);
    free(got);
}

#define NORM_KERNEL                                                              \
    "#include <math.h>\n"                                                        \
    "#define UNROLL 4 //@kiln tune 1 2 4 8\n"                                    \
    "void rmsnorm(const float *x, float *y, int n)\n"                            \
    "{\n"                                                                        \
    "    for (int i = 0; i < n; i++)\n"                                          \
    "        y[i] = x[i] * 2.0f; /* scale */\n"                                  \
    "}\n"

static void test_normalize_comments_whitespace(void **state)
{
    (void)state;
    expect_normal(NORM_KERNEL, "#include<math.h>\n#define UNROLL 4\n"
                               "void rmsnorm(const float*x,float*y,int n){for(int i=0;i<n;i++)"
                               "y[i]=x[i]*2.0f;}");
    /* reindented, rewrapped, commented, CRLF line ends, a spliced line */
    const char *other =
        "// a reformatted copy\r\n"
        "#include <math.h>\r\n"
        "  #define UNROLL 4 //@kiln tune 1 2 4 8\r\n"
        "/* the kernel */ void rmsnorm(const float* x,\r\n\tfloat* y, int n) {\r\n"
        "  for (int i=0; i<n; i++) y[i] = x[i]\\\r\n * 2.0f;\r\n"
        "}\r\n";
    assert_true(same_source(NORM_KERNEL, other));
    /* a comment still separates tokens: "int/ *c* /x" is "int x" */
    assert_true(same_source("int/*c*/x;", "int x;"));
    /* whitespace that keeps tokens apart or changes them stays */
    assert_false(same_source("y = a + +b;", "y = a ++b;"));
    assert_false(same_source("y = a - -b;", "y = a --b;"));
    assert_false(same_source("y = a / *p;", "y = a /*p;*/"));
    assert_false(same_source("y = 1e +5;", "y = 1e+5;"));
    assert_true(same_source("y = - 1 ;", "y=-1;"));
    /* a preprocessor line ends at its newline; an object-like macro whose
     * value starts with "(" is not a function-like macro */
    assert_false(same_source("#define A 1\nint x;", "#define A 1 int x;"));
    assert_false(same_source("#define F (x) x\n", "#define F(x) x\n"));
    assert_false(same_source("int a; #define X 1\n", "int a;\n#define X 1\n"));
}

static void test_normalize_literals(void **state)
{
    (void)state;
    assert_false(same_source("s = \"a  b\";", "s = \"a b\";"));
    expect_normal("s = \"// not a comment\" ; c = '/' ;", "s=\"// not a comment\";c='/';");
    expect_normal("s = \"/* nor this */\";", "s=\"/* nor this */\";");
    expect_normal("p = u8 \"x\";  q = L'y';", "p=u8 \"x\";q=L'y';");
    assert_false(same_source("s = \"x\\\" y\";", "s = \"x\\\"y\";"));   /* an escaped quote */
}

static void test_normalize_knobs(void **state)
{
    (void)state;
    /* the value counts */
    assert_false(same_source("#define U 4 //@kiln tune 2 4 8\nint x[U];",
                             "#define U 8 //@kiln tune 2 4 8\nint x[U];"));
    /* the list of values does not, nor whether there is one */
    assert_true(same_source("#define U 4 //@kiln tune 2 4 8\nint x[U];",
                            "#define U 4 //@kiln tune 4 16\nint x[U];"));
    assert_true(same_source("#define U 4 //@kiln tune 2 4 8\nint x[U];",
                            "#define  U  4\nint x[U];"));
    /* knob lines that do not parse (one value) keep every comment: the
     * verifier may judge such a source by them */
    assert_false(same_source("#define U 4 //@kiln tune 4\nint x;",
                             "#define U 4 //@kiln tune 8\nint x;"));
    assert_false(same_source("#define U 4 //@kiln tune 4\nint x; // a",
                             "#define U 4 //@kiln tune 4\nint x; // b"));
}

/* The CUDA launch manifest is a comment that counts, its JSON's spacing
 * aside. */
static void test_normalize_manifest(void **state)
{
    (void)state;
    const char *a = "__global__ void k(){}\n/*@kiln launch\n{\"launches\": [{\"kernel\": \"k\", "
                    "\"grid\": [\"rows\"], \"block\": [\"256\"]}]}\n@*/\n";
    const char *b = "__global__ void k() { }\n/*@kiln launch {\"launches\":[{\"kernel\":\"k\","
                    "\"grid\":[\"rows\"],\"block\":[\"256\"]}]} @*/";
    const char *c = "__global__ void k(){}\n/*@kiln launch\n{\"launches\": [{\"kernel\": \"k\", "
                    "\"grid\": [\"rows\"], \"block\": [\"128\"]}]}\n@*/\n";
    assert_true(same_source(a, b));
    assert_false(same_source(a, c));
    expect_normal("", "");
    expect_normal("  /* only a comment */\n", "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_basic),
        cmocka_unit_test(test_parse_fence_variants),
        cmocka_unit_test(test_parse_crlf),
        cmocka_unit_test(test_parse_hypothesis_forms),
        cmocka_unit_test(test_parse_no_hypothesis),
        cmocka_unit_test(test_parse_hypothesis_in_code),
        cmocka_unit_test(test_parse_long_hypothesis),
        cmocka_unit_test(test_parse_several_blocks),
        cmocka_unit_test(test_parse_indented_block),
        cmocka_unit_test(test_parse_cuda),
        cmocka_unit_test(test_parse_cuda_manifest),
        cmocka_unit_test(test_parse_rejections),
        cmocka_unit_test(test_knobs_parse),
        cmocka_unit_test(test_knobs_malformed),
        cmocka_unit_test(test_knobs_apply),
        cmocka_unit_test(test_knobs_key),
        cmocka_unit_test(test_tuner_exhausts_2x2),
        cmocka_unit_test(test_tuner_deterministic),
        cmocka_unit_test(test_tuner_hypothesis),
        cmocka_unit_test(test_tuner_covers_27),
        cmocka_unit_test(test_tuner_explores_then_descends),
        cmocka_unit_test(test_tuner_pushes_kept_move),
        cmocka_unit_test(test_tuner_drafts_and_keeps),
        cmocka_unit_test(test_replay),
        cmocka_unit_test(test_replay_hypothesis),
        cmocka_unit_test(test_prompt_contents),
        cmocka_unit_test(test_prompt_budget),
        cmocka_unit_test(test_prompt_bad_input),
        cmocka_unit_test(test_draft_strategies),
        cmocka_unit_test(test_prompt_strategy),
        cmocka_unit_test(test_normalize_comments_whitespace),
        cmocka_unit_test(test_normalize_literals),
        cmocka_unit_test(test_normalize_knobs),
        cmocka_unit_test(test_normalize_manifest),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
