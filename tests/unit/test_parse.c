/* test_parse.c - cmocka tests for the parser's decisions on the answer
 * corpus (tests/fake_llm/answers/rmsnorm, the answers the integration test
 * answers_test.sh serves) and for the diff applier (agent/patch.c): which
 * answers are taken, which refused, and what the refusal says.
 *
 * usage: test_parse SOURCE_DIR */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parse.h"
#include "patch.h"

static const char *g_src = ".";

static char *slurp(const char *rel)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", g_src, rel);
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("cannot open %s", path);
    char *buf = calloc(1, 1 << 20);
    size_t n = fread(buf, 1, (1 << 20) - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static char *answer(const char *name)
{
    char rel[256];
    snprintf(rel, sizeof rel, "tests/fake_llm/answers/rmsnorm/%s", name);
    return slurp(rel);
}

/* Parse the corpus answer name (finish and parent as given): 0 or -1, with
 * the proposal in p (the caller frees it). */
static int parse(const char *name, const char *finish, const char *parent, kiln_proposal *p)
{
    char *text = answer(name);
    kiln_reply r = {.text = text, .lang = "c", .entry = "rmsnorm", .finish = finish,
                    .parent = parent};
    int rc = kiln_parse_reply(&r, p);
    free(text);
    return rc;
}

static void taken(const char *name, const char *finish, const char *hyp, const char *has)
{
    kiln_proposal p;
    if (parse(name, finish, NULL, &p) != 0)
        fail_msg("%s refused: %s", name, p.error);
    assert_string_equal(p.hypothesis, hyp);
    if (!strstr(p.source, has))
        fail_msg("%s: the source lacks '%s':\n%s", name, has, p.source);
    kiln_proposal_free(&p);
}

static void refused(const char *name, const char *finish, const char *parent, const char *why)
{
    kiln_proposal p;
    assert_int_equal(parse(name, finish, parent, &p), -1);
    assert_int_equal(p.ok, 0);
    assert_null(p.source);
    if (strncmp(p.error, why, strlen(why)) != 0)
        fail_msg("%s: error '%s' does not start '%s'", name, p.error, why);
    kiln_proposal_free(&p);
}

static void test_prose_and_blocks(void **state)
{
    (void)state;
    taken("prose.md", "stop", "four independent accumulators break the add dependency chain",
          "a3 += xr[c + 3] * xr[c + 3];");
    /* the usage snippet is not the file: the block that defines rmsnorm is */
    taken("two_blocks.md", NULL, "two accumulators halve the dependency chain",
          "#include <math.h>\n#include <stdint.h>\n\nvoid rmsnorm(");
    refused("two_files.md", NULL, NULL,
            "the answer has 2 code blocks that look like complete files; send exactly one");
    refused("no_file.md", NULL, NULL,
            "the answer has 2 code blocks and none of them defines rmsnorm");
    /* a wrong signature parses: the compile stage's shim names it */
    taken("wrong_signature.md", NULL, "int indices and a constant epsilon", "int rows, int cols)");
}

static void test_truncated(void **state)
{
    (void)state;
    refused("cut_fence.md", "stop", NULL,
            "truncated: the code block is not closed (the answer was cut off)");
    /* a closed block in an answer the server cut off is not verified either */
    refused("cut_length.md", "length", NULL,
            "truncated: the answer was cut off at the token limit (finish reason \"length\"); "
            "it is not verified");
    refused("cut_length.md", "max_tokens", NULL,
            "truncated: the answer was cut off at the token limit (finish reason "
            "\"max_tokens\")");
    taken("cut_length.md", "stop", "", "a3 +=");
    taken("cut_length.md", "end_turn", "", "a3 +=");
}

static void test_refusal(void **state)
{
    (void)state;
    refused("refusal.md", NULL, NULL,
            "refusal: the model declined and sent no code: \"I'm sorry, but I can't help with "
            "that. Rewriting this kernel is outside what I\"");
    kiln_proposal p;
    kiln_reply r = {.text = "I\xE2\x80\x99m unable to rewrite this.\n", .lang = "c",
                    .entry = "rmsnorm"};
    assert_int_equal(kiln_parse_reply(&r, &p), -1);
    assert_non_null(strstr(p.error, "refusal: the model declined"));
    /* prose without code that declines nothing stays a missing block */
    kiln_proposal_free(&p);
    r.text = "I would unroll the loop first.\nHYPOTHESIS: unroll\n";
    assert_int_equal(kiln_parse_reply(&r, &p), -1);
    assert_string_equal(p.error, "the answer has no fenced code block");
    kiln_proposal_free(&p);
}

#define CUDA_FILE(body)                                                              \
    "```cuda\n#include \"kiln_cuda.h\"\n"                                            \
    "extern \"C\" __global__ void k(const kiln_t *x, kiln_t *y, int cols) { }\n"     \
    body "/*@kiln launch\n{\"launches\": [{\"kernel\": \"k\"}]}\n@*/\n```\n"

static void test_host_code(void **state)
{
    (void)state;
    refused("host_main.md", NULL, NULL,
            "host code: the file defines main(); send only the kernel file (kiln's harness "
            "calls the kernel itself)");
    kiln_proposal p;
    kiln_reply r = {.text = CUDA_FILE("void launch(const kiln_t *x, kiln_t *y, int n)\n"
                                      "{\n    k<<<n, 256>>>(x, y, n);\n}\n"),
                    .lang = "cuda", .entry = "k"};
    assert_int_equal(kiln_parse_reply(&r, &p), -1);
    assert_string_equal(p.error, "host code: the file launches a kernel with <<<...>>>; send "
                                 "only the kernels and the launch manifest (kiln launches them "
                                 "itself)");
    kiln_proposal_free(&p);
    r.text = CUDA_FILE("int main(void) { return 0; }\n");
    assert_int_equal(kiln_parse_reply(&r, &p), -1);
    assert_non_null(strstr(p.error, "host code: the file defines main()"));
    /* in a comment, or a name that only ends in main, it is no host code */
    kiln_proposal_free(&p);
    r.text = CUDA_FILE("// launched as k<<<rows, 256>>>(x, y, cols) by kiln\n"
                       "__device__ int domain(int a) { return a; }\n");
    if (kiln_parse_reply(&r, &p) != 0)
        fail_msg("refused: %s", p.error);
    kiln_proposal_free(&p);
}

static void test_diff(void **state)
{
    (void)state;
    char *parent = slurp("kernels/rmsnorm/cpu/starter.c");
    kiln_proposal p;
    if (parse("diff_clean.md", "stop", parent, &p) != 0)
        fail_msg("diff_clean refused: %s", p.error);
    char *want = strdup(parent), *at = strstr(want, "#define UNROLL 1 ");
    assert_non_null(at);
    at[15] = '4';
    assert_string_equal(p.source, want);
    assert_string_equal(p.hypothesis, "four accumulators through the UNROLL knob");
    kiln_proposal_free(&p);
    free(want);
    refused("diff_clean.md", NULL, NULL, "diff: the answer is a diff, and there is no parent "
                                         "to apply it to; send the complete file");
    refused("diff_stale.md", NULL, parent,
            "diff: it does not apply to the parent: hunk 1 (@@ -20,7 +20,7 @@) does not "
            "apply: its context and removed lines are not in the parent, in order, after line 0; "
            "send the complete file");
    free(parent);
}

static const char PARENT[] = "a\nb\nc\nd\ne\nf\ng\n";

static void patched(const char *diff, const char *want)
{
    char *out, err[200];
    if (kiln_patch_apply(PARENT, diff, &out, err, sizeof err) != 0)
        fail_msg("refused: %s\n%s", err, diff);
    assert_string_equal(out, want);
    free(out);
}

static void not_patched(const char *diff, const char *why)
{
    char *out, err[200];
    assert_int_equal(kiln_patch_apply(PARENT, diff, &out, err, sizeof err), -1);
    assert_null(out);
    if (!strstr(err, why))
        fail_msg("error '%s' lacks '%s'", err, why);
}

static void test_patch(void **state)
{
    (void)state;
    patched("@@ -2,3 +2,3 @@\n b\n-c\n+C\n d\n", "a\nb\nC\nd\ne\nf\ng\n");
    /* two hunks, one adding a line, one removing; no count means 1 */
    patched("--- a/k.c\n+++ b/k.c\n@@ -1,2 +1,3 @@\n a\n+a2\n b\n@@ -6 +6,0 @@\n-f\n",
            "a\na2\nb\nc\nd\ne\ng\n");
    /* line numbers off: taken at the first match after the last hunk */
    patched("@@ -1,2 +1,2 @@\n e\n-f\n+F\n", "a\nb\nc\nd\ne\nF\ng\n");
    /* a context line whose space was dropped, trailing blanks */
    patched("@@ -3,3 +3,3 @@\n c  \n-d\n+D\n e\n", "a\nb\nc\nD\ne\nf\ng\n");
    /* no fuzz: one wrong context line refuses the hunk */
    not_patched("@@ -2,3 +2,3 @@\n b\n-c\n+C\n x\n", "hunk 1 (@@ -2,3 +2,3 @@) does not apply");
    /* hunks apply in order: the second may not go back above the first */
    not_patched("@@ -5,1 +5,1 @@\n-e\n+E\n@@ -2,1 +2,1 @@\n-b\n+B\n", "hunk 2");
    not_patched("@@ -2,3 +2,3 @@\n b\n-c\n", "hunk 1 (@@ -2,3 +2,3 @@) is cut short");
    not_patched("@@ -2,3 +2,3 @@\n b\nprose\n", "has 1 old and 1 new lines where its header says 3");
    not_patched("just prose\n", "the diff has no hunk");
    assert_true(kiln_patch_looks_like("text\n@@ -1 +1 @@\n-a\n+b\n"));
    assert_false(kiln_patch_looks_like("a @@ -1 in a line\n"));
}

/* A bare unified diff (no fence) is applied; a complete file wins over a
 * diff next to it. */
static void test_diff_forms(void **state)
{
    (void)state;
    const char *parent = "#include <stdint.h>\nvoid rmsnorm(float *y)\n{\n    y[0] = 0;\n}\n";
    kiln_proposal p;
    kiln_reply r = {.text = "--- a/k.c\n+++ b/k.c\n@@ -4 +4 @@\n-    y[0] = 0;\n+    y[0] = 1;\n"
                            "\nHYPOTHESIS: one\n",
                    .lang = "c", .entry = "rmsnorm", .parent = parent};
    if (kiln_parse_reply(&r, &p) != 0)
        fail_msg("refused: %s", p.error);
    assert_string_equal(p.source,
                        "#include <stdint.h>\nvoid rmsnorm(float *y)\n{\n    y[0] = 1;\n}\n");
    r.text = "```diff\n@@ -4 +4 @@\n-    y[0] = 0;\n+    y[0] = 2;\n```\n"
             "```c\nvoid rmsnorm(float *y)\n{\n    y[0] = 3;\n}\n```\n";
    kiln_proposal_free(&p);
    assert_int_equal(kiln_parse_reply(&r, &p), 0);
    assert_non_null(strstr(p.source, "y[0] = 3;"));
    /* a diff that removes the entry's definition is refused */
    kiln_proposal_free(&p);
    r.text = "```diff\n@@ -2,4 +2,0 @@\n-void rmsnorm(float *y)\n-{\n-    y[0] = 0;\n-}\n```\n";
    assert_int_equal(kiln_parse_reply(&r, &p), -1);
    assert_string_equal(p.error, "diff: the patched file does not define rmsnorm");
    kiln_proposal_free(&p);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        g_src = argv[1];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prose_and_blocks), cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_refusal),          cmocka_unit_test(test_host_code),
        cmocka_unit_test(test_diff),             cmocka_unit_test(test_patch),
        cmocka_unit_test(test_diff_forms),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
