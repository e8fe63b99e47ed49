/* test_verdict_codes.c - one vocabulary (verifier/verdict_codes.c): the
 * codes' table is sound; docs/verdict.md's code tables say what it says,
 * sentence for sentence; `kiln help verdicts` names every code; every code
 * the sources write (job_conclude's literals, the suspect flags, a call's
 * and a worker fault's codes, the search's codes, what the CLI compares
 * against) is in it; and a hidden shape's failure is worded from it.
 *
 * usage: test_verdict_codes SOURCE_DIR KILN */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "call.h"
#include "fileutil.h"
#include "verdict_codes.h"
#include "worker_client.h"

static const char *g_src, *g_kiln;

static void table_is_sound(void **state)
{
    (void)state;
    int n;
    const kiln_verdict_code *t = kiln_verdict_codes(&n);
    assert_true(n > 20);
    static const char *const statuses[] = {"pass", "fail", "suspect", "error", ""};
    for (int i = 0; i < n; i++) {
        int known = 0;
        for (int s = 0; s < 5; s++)
            known |= strcmp(t[i].status, statuses[s]) == 0;
        if (!known || !t[i].meaning[0])
            fail_msg("%s: status '%s', meaning '%s'", t[i].code, t[i].status, t[i].meaning);
        if (t[i].fault && strcmp(t[i].status, "fail") != 0)
            fail_msg("%s: only a failure is a candidate's fault", t[i].code);
        int verifiers = !strcmp(t[i].status, "pass") || !strcmp(t[i].status, "fail") ||
                        !strcmp(t[i].status, "suspect");
        if (t[i].by_search == verifiers)
            fail_msg("%s: a verifier's code passes, fails or is suspect; the search's (%s) are "
                     "its own", t[i].code, t[i].status);
        for (int k = 0; k < i; k++)
            if (strcmp(t[k].code, t[i].code) == 0)
                fail_msg("%s is in the table twice", t[i].code);
        assert_ptr_equal(kiln_verdict_code_find(t[i].code), &t[i]);
    }
    assert_null(kiln_verdict_code_find("compile_error"));   /* one spelling */
    assert_null(kiln_verdict_code_find(NULL));
}

static char *slurp(const char *path)
{
    char *text = NULL;
    kiln_error e;
    if (kiln_read_file(path, 4 << 20, &text, NULL, &e) < 0) {
        fail_msg("%s", e.msg);
        return NULL;
    }
    return text;
}

/* docs/verdict.md's "| `code` | meaning |" rows under "Status and codes". */
static void doc_says_what_the_table_says(void **state)
{
    (void)state;
    char path[4200];
    snprintf(path, sizeof path, "%s/docs/verdict.md", g_src);
    char *doc = slurp(path);
    char *at = strstr(doc, "## Status and codes"), *end = at ? strstr(at, "\n## ") : NULL;
    assert_non_null(at);
    if (end)
        *end = '\0';
    int n, rows = 0;
    kiln_verdict_codes(&n);
    for (char *line = strtok(at, "\n"); line; line = strtok(NULL, "\n")) {
        char code[64];
        if (sscanf(line, "| `%63[a-z-]` | ", code) != 1)
            continue;
        const kiln_verdict_code *c = kiln_verdict_code_find(code);
        if (!c)
            fail_msg("docs/verdict.md has the code %s, which kiln does not", code);
        const char *meaning = strstr(line, "` | ") + 4;
        size_t len = strlen(meaning);
        if (len < 2 || strcmp(meaning + len - 2, " |") != 0 ||
            strlen(c->meaning) != len - 2 || strncmp(meaning, c->meaning, len - 2) != 0)
            fail_msg("docs/verdict.md says of %s: '%s'; the table: '%s |'", code, meaning,
                     c->meaning);
        rows++;
    }
    assert_int_equal(rows, n);   /* and every code has its row */
    free(doc);
}

static int has_word(const char *text, const char *word)
{
    size_t len = strlen(word);
    for (const char *p = strstr(text, word); p; p = strstr(p + 1, word)) {
        int before = p == text || !(p[-1] == '-' || (p[-1] >= 'a' && p[-1] <= 'z'));
        int after = !(p[len] == '-' || (p[len] >= 'a' && p[len] <= 'z'));
        if (before && after)
            return 1;
    }
    return 0;
}

static void help_names_every_code(void **state)
{
    (void)state;
    char cmd[4300], out[8192];
    snprintf(cmd, sizeof cmd, "'%s' help verdicts", g_kiln);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t len = fread(out, 1, sizeof out - 1, p);
    out[len] = '\0';
    assert_int_equal(pclose(p), 0);
    int n;
    const kiln_verdict_code *t = kiln_verdict_codes(&n);
    for (int i = 0; i < n; i++)
        if (strcmp(t[i].code, "ok") != 0 && !has_word(out, t[i].code))
            fail_msg("kiln help verdicts does not name %s:\n%s", t[i].code, out);
    for (int i = 0; kiln_verdict_stages[i]; i++)
        assert_true(has_word(out, kiln_verdict_stages[i]));
}

/* ---- the sources' literals ------------------------------------------------- */

typedef struct scan {
    regex_t conclude, flag, field, literal;
    int found;
} scan;

static void check_code(const char *path, int line, const char *code, const char *status)
{
    const kiln_verdict_code *c = kiln_verdict_code_find(code);
    if (!c)
        fail_msg("%s:%d: the code '%s' is not in verifier/verdict_codes.c", path, line, code);
    if (status && strcmp(c->status, status) != 0)
        fail_msg("%s:%d: %s comes with status %s there, not %s", path, line, code, c->status,
                 status);
}

/* Every "literal" on a line that writes a code field or compares one. */
static void field_literals(const char *path, int line, const char *text, scan *s)
{
    regmatch_t m[2];
    for (const char *p = text; regexec(&s->literal, p, 2, m, 0) == 0; p += m[0].rm_eo) {
        char code[64];
        snprintf(code, sizeof code, "%.*s", (int)(m[1].rm_eo - m[1].rm_so), p + m[1].rm_so);
        check_code(path, line, code, NULL);
        s->found++;
    }
}

static void scan_file(const char *path, scan *s)
{
    char *text = slurp(path);
    int line = 1;
    for (char *l = text, *nl; l; l = nl ? nl + 1 : NULL, line++) {
        nl = strchr(l, '\n');
        if (nl)
            *nl = '\0';
        regmatch_t m[4];
        if (regexec(&s->conclude, l, 4, m, 0) == 0) {
            char status[16], stage[32], code[64];
            snprintf(status, sizeof status, "%.*s", (int)(m[1].rm_eo - m[1].rm_so), l + m[1].rm_so);
            snprintf(stage, sizeof stage, "%.*s", (int)(m[2].rm_eo - m[2].rm_so), l + m[2].rm_so);
            snprintf(code, sizeof code, "%.*s", (int)(m[3].rm_eo - m[3].rm_so), l + m[3].rm_so);
            check_code(path, line, code, status);
            int known = 0;
            for (int i = 0; kiln_verdict_stages[i]; i++)
                known |= strcmp(kiln_verdict_stages[i], stage) == 0;
            if (!known)
                fail_msg("%s:%d: no stage '%s'", path, line, stage);
            s->found++;
        } else if (regexec(&s->flag, l, 2, m, 0) == 0) {
            char code[64];
            snprintf(code, sizeof code, "%.*s", (int)(m[1].rm_eo - m[1].rm_so), l + m[1].rm_so);
            check_code(path, line, code, "suspect");
            s->found++;
        } else if (regexec(&s->field, l, 0, NULL, 0) == 0) {
            field_literals(path, line, l, s);
        }
    }
    free(text);
}

static void scan_dir(const char *dir, scan *s)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        char path[4400];
        struct stat st;
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
            scan_dir(path, s);
        else if (strlen(e->d_name) > 2 && strcmp(e->d_name + strlen(e->d_name) - 2, ".c") == 0)
            scan_file(path, s);
    }
    closedir(d);
}

static void sources_write_only_its_codes(void **state)
{
    (void)state;
    scan s = {0};
    assert_int_equal(regcomp(&s.conclude, "job_conclude\\(j, \"([a-z]+)\", \"([a-z]+)\", "
                                          "\"([a-z-]+)\"", REG_EXTENDED), 0);
    assert_int_equal(regcomp(&s.flag, "kiln_verdict_flag\\(v, \"([a-z-]+):", REG_EXTENDED), 0);
    /* snprintf(c->code, sizeof c->code, ...), strcmp(v->code, ...), is(d->code, ...) */
    assert_int_equal(regcomp(&s.field, "(snprintf|strcmp|is)\\([a-z_]+(->|\\.)code, ",
                             REG_EXTENDED), 0);
    assert_int_equal(regcomp(&s.literal, "\"([a-z_]+(-[a-z_]+)*)\"", REG_EXTENDED), 0);
    static const char *const dirs[] = {"verifier", "judge", "harness", "porting", "knowledge", "cli", "daemon"};
    for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++) {
        char path[4200];
        snprintf(path, sizeof path, "%s/%s", g_src, dirs[i]);
        scan_dir(path, &s);
    }
    assert_true(s.found > 25);   /* the patterns still find the verifier's codes */
    regfree(&s.conclude);
    regfree(&s.flag);
    regfree(&s.field);
    regfree(&s.literal);
    /* The codes made at run time. */
    for (int o = KILN_CALL_OK; o <= KILN_CALL_LAUNCH; o++)
        check_code("kiln_call_code", o, kiln_call_code((kiln_call_outcome)o), NULL);
    for (int f = KILN_FAULT_CRASH; f <= KILN_FAULT_PROTOCOL; f++)
        check_code("kiln_fault_code", f, kiln_fault_code((kiln_fault)f), "fail");
}

/* Each code a failed call can have is worded for a hidden shape. */
static void every_call_code_has_words(void **state)
{
    (void)state;
    for (int o = KILN_CALL_FAULT; o <= KILN_CALL_LAUNCH; o++)
        assert_non_null(kiln_verdict_code_find(kiln_call_code((kiln_call_outcome)o))->words);
    for (int f = KILN_FAULT_CRASH; f <= KILN_FAULT_PROTOCOL; f++)
        assert_non_null(kiln_verdict_code_find(kiln_fault_code((kiln_fault)f))->words);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: test_verdict_codes SOURCE_DIR KILN\n");
        return 2;
    }
    g_src = argv[1];
    g_kiln = argv[2];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(table_is_sound),
        cmocka_unit_test(doc_says_what_the_table_says),
        cmocka_unit_test(help_names_every_code),
        cmocka_unit_test(sources_write_only_its_codes),
        cmocka_unit_test(every_call_code_has_words),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
