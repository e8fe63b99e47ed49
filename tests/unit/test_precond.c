/* test_precond.c - cmocka tests for a candidate's preconditions
 * (verifier/precond.c): the one form DIM % N == 0 accepted and everything
 * else refused with the entry named, the CUDA manifest's "require" field
 * and the C candidate's require block, the visible shapes kept, and the
 * hidden shapes drawn: as many as ever, all satisfying, the same for the
 * same seed, and unchanged when nothing is required. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "manifest.h"
#include "precond.h"
#include "rng.h"

static kiln_task *TASK;   /* tasks/rmsnorm: dims rows, cols */

static int setup(void **state)
{
    (void)state;
    kiln_error err;
    TASK = malloc(sizeof *TASK);
    if (!TASK || kiln_task_load(KILN_TASKS_DIR "/rmsnorm", TASK, &err) != 0) {
        fprintf(stderr, "cannot load rmsnorm: %s\n", TASK ? err.msg : "out of memory");
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    free(TASK);
    return 0;
}

static void test_parse_ok(void **state)
{
    (void)state;
    static const struct { const char *text; int dim; int64_t div; } ok[] = {
        {"cols % 8 == 0", 1, 8}, {"rows%2==0", 0, 2}, {" (cols) % (16) == 0 ", 1, 16},
        {"cols % 1 == 0", 1, 1}, {"cols % 1048576 == 0", 1, 1048576},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        kiln_precond p;
        kiln_error err = {0};
        if (kiln_precond_parse(TASK, ok[i].text, "require[0]", &p, &err) != 0)
            fail_msg("'%s' refused: %s", ok[i].text, err.msg);
        assert_int_equal(p.dim, ok[i].dim);
        assert_int_equal(p.divisor, ok[i].div);
    }
}

/* Every other form, each refused naming the entry and what is wrong. */
static void test_parse_refused(void **state)
{
    (void)state;
    static const struct { const char *text, *why; } bad[] = {
        {"cols > 8", "not of the form"},
        {"cols == 1024", "not of the form"},
        {"cols >= 1024", "not of the form"},
        {"cols % 8 != 0", "not of the form"},
        {"cols % 8 == 1", "right-hand side must be the literal 0"},
        {"cols % 8 == 0 && rows % 2 == 0", "not of the form"},
        {"cols % 8 == 0 || cols == 1000", "not of the form"},
        {"cols < 9000 ? cols % 8 == 0 : 1", "not of the form"},
        {"cols % 0 == 0", "N must be from 1"},
        {"cols % -8 == 0", "integer literal"},
        {"cols % 2000000 == 0", "N must be from 1"},
        {"cols % rows == 0", "integer literal"},
        {"cols % BLOCK == 0", "integer literal"},
        {"cols % 8.0 == 0", "integer literal"},
        {"cols % (4 * 2) == 0", "integer literal"},
        {"(cols + 1) % 8 == 0", "must be a task dim"},
        {"eps % 8 == 0", "not one of the task's dims"},
        {"x % 8 == 0", "not one of the task's dims"},
        {"cols % 8 = 0", "require[3]"},
        {"", "require[3]"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        kiln_precond p;
        kiln_error err = {0};
        if (kiln_precond_parse(TASK, bad[i].text, "require[3]", &p, &err) != -1)
            fail_msg("'%s' accepted", bad[i].text);
        if (!strstr(err.msg, bad[i].why) || !strstr(err.msg, "require[3]") ||
            !strstr(err.msg, "DIM % N == 0"))
            fail_msg("'%s': message '%s' lacks '%s', the entry or the allowed form",
                     bad[i].text, err.msg, bad[i].why);
    }
}

static void test_parse_json(void **state)
{
    (void)state;
    kiln_preconds ps;
    kiln_error err = {0};
    cJSON *a = cJSON_Parse("[\"cols % 8 == 0\", \"rows % 2 == 0\"]");
    assert_int_equal(kiln_precond_parse_json(TASK, a, "require", &ps, &err), 0);
    assert_int_equal(ps.n, 2);
    char text[128];
    kiln_precond_format(&ps, TASK, text, sizeof text);
    assert_string_equal(text, "cols % 8 == 0 && rows % 2 == 0");
    cJSON_Delete(a);
    static const struct { const char *json, *why; } bad[] = {
        {"\"cols % 8 == 0\"", "must be an array"},
        {"[8]", "require[0]: must be a string"},
        {"[\"cols % 8 == 0\", \"cols > 3\"]", "require[1]"},
        {"[\"cols % 2 == 0\", \"cols % 2 == 0\", \"cols % 2 == 0\", \"cols % 2 == 0\","
         " \"cols % 2 == 0\", \"cols % 2 == 0\", \"cols % 2 == 0\", \"cols % 2 == 0\","
         " \"cols % 2 == 0\"]", "at most 8"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        a = cJSON_Parse(bad[i].json);
        assert_non_null(a);
        assert_int_equal(kiln_precond_parse_json(TASK, a, "require", &ps, &err), -1);
        if (!strstr(err.msg, bad[i].why))
            fail_msg("%s: '%s' lacks '%s'", bad[i].json, err.msg, bad[i].why);
        cJSON_Delete(a);
    }
}

static const char CUDA_HEAD[] =
    "#include \"kiln_cuda.h\"\n"
    "extern \"C\" __global__ void rmsnorm_fwd(const kiln_t *x, const kiln_t *w, kiln_t *y,\n"
    "                                       int cols, float eps) { }\n";

static int parse_cuda(const char *require, kiln_manifest *m, kiln_error *err)
{
    char src[2048];
    snprintf(src, sizeof src, "%s/*@kiln launch\n{\"launches\": [{\"kernel\": \"rmsnorm_fwd\", "
             "\"grid\": [\"rows\"], \"block\": [256], \"args\": [\"x\", \"w\", \"y\", \"cols\", "
             "\"eps\"]}]%s%s}\n@*/\n", CUDA_HEAD, require ? ", \"require\": " : "",
             require ? require : "");
    return kiln_manifest_parse(src, strlen(src), TASK, m, err);
}

/* The manifest's field: parsed into m->require, refused as the manifest's. */
static void test_manifest_require(void **state)
{
    (void)state;
    kiln_manifest *m = malloc(sizeof *m);
    kiln_error err = {0};
    assert_int_equal(parse_cuda(NULL, m, &err), 0);
    assert_int_equal(m->require.n, 0);
    if (parse_cuda("[\"cols % 8 == 0\"]", m, &err) != 0)
        fail_msg("%s", err.msg);
    assert_int_equal(m->require.n, 1);
    assert_int_equal(m->require.p[0].dim, 1);
    assert_int_equal(m->require.p[0].divisor, 8);
    assert_int_equal(parse_cuda("[\"cols % 8 == 0\", \"cols >= 8\"]", m, &err), -1);
    assert_non_null(strstr(err.msg, "manifest: require[1]: 'cols >= 8'"));
    assert_int_equal(parse_cuda("{\"cols\": 8}", m, &err), -1);
    assert_non_null(strstr(err.msg, "manifest: require: must be an array"));
    /* a C-style require block in a .cu file: the manifest's field is the one place */
    char src[1024];
    snprintf(src, sizeof src, "%s/*@kiln require [\"cols %% 8 == 0\"] @*/\n", CUDA_HEAD);
    assert_int_equal(kiln_manifest_parse(src, strlen(src), TASK, m, &err), -1);
    assert_non_null(strstr(err.msg, "unknown block"));
    free(m);
}

/* The C candidate's block: found as code, not in strings or other comments. */
static void test_scan(void **state)
{
    (void)state;
    kiln_preconds ps;
    kiln_error err = {0};
    const char *none = "void f(void) {}\n// /*@kiln require [\"cols > 8\"] @*/\n"
                       "const char *s = \"/*@kiln require [\\\"cols > 8\\\"] @*/\";\n";
    assert_int_equal(kiln_precond_scan(none, strlen(none), TASK, &ps, &err), 0);
    assert_int_equal(ps.n, 0);
    const char *one = "#include <math.h>\n/*@kiln require [\"cols % 16 == 0\", \"rows % 1 == 0\"] @*/\n"
                      "/*@kiln other */ void f(void) {}\n";
    assert_int_equal(kiln_precond_scan(one, strlen(one), TASK, &ps, &err), 0);
    assert_int_equal(ps.n, 2);
    assert_int_equal(ps.p[0].divisor, 16);
    static const struct { const char *src, *why; } bad[] = {
        {"\n/*@kiln require [\"cols == 8\"] @*/", "require[0]: 'cols == 8'"},
        {"/*@kiln require [\"cols % 8 == 0\"] */", "line 1): the /*@kiln require block must end"},
        {"\n\n/*@kiln require [\"cols % 8 == 0\" @*/", "require (line 3): malformed JSON"},
        {"/*@kiln require [] @*/\n/*@kiln require [] @*/", "line 2): a second"},
        {"/*@kiln require [\"cols % 8 == 0\"]", "must end with @*/"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(kiln_precond_scan(bad[i].src, strlen(bad[i].src), TASK, &ps, &err), -1);
        if (!strstr(err.msg, bad[i].why))
            fail_msg("%s: '%s' lacks '%s'", bad[i].src, err.msg, bad[i].why);
    }
}

static kiln_preconds cols_by(int64_t n)
{
    kiln_preconds ps = {.n = 1, .p = {{.dim = 1, .divisor = n}}};
    return ps;
}

/* The prefill group: 32x1024 64x4096 33x1000 128x2048 256x4096 512x2048. */
static void test_keep(void **state)
{
    (void)state;
    const kiln_group *g = &TASK->groups[TASK->default_group];
    int kept[KILN_MAX_SHAPES];
    kiln_preconds none = {0}, by16 = cols_by(16), by4096 = cols_by(4096), by3 = cols_by(3);
    assert_int_equal(kiln_precond_keep(&none, g, kept), g->nvisible);
    int n = kiln_precond_keep(&by16, g, kept);
    assert_int_equal(n, g->nvisible - 1);
    for (int i = 0; i < n; i++) {
        assert_int_equal(g->visible[kept[i]].d[1] % 16, 0);
        assert_true(i == 0 || kept[i] > kept[i - 1]);
    }
    assert_int_equal(kiln_precond_keep(&by4096, g, kept), 2);
    assert_int_equal(kiln_precond_keep(&by3, g, kept), 0);
}

static int same_shapes(const kiln_shape *a, const kiln_shape *b, int n)
{
    return memcmp(a, b, (size_t)n * sizeof *a) == 0;
}

/* Never far from where the task puts hidden shape i: a fixed one's dim
 * moves by less than one step m, a random one stays in its range or is
 * the first multiple above the range's low end. */
static int in_reach(const kiln_group *g, int i, int d, int64_t m, int64_t v)
{
    if (v < 1)
        return 0;
    if (i < g->nhidden) {
        int64_t was = g->hidden[i].d[d];
        return v - was < m && was - v < m;
    }
    return v >= g->range_lo[d] && (v <= g->range_hi[d] || v - g->range_lo[d] < m);
}

/* Hidden shapes: always nhidden + nrandom of them, every one satisfying. */
static void test_hidden_count_and_holds(void **state)
{
    (void)state;
    kiln_shape out[KILN_MAX_SHAPES + 16];
    static const int64_t divs[] = {1, 2, 8, 16, 1000, 4096, 8192, 16384, 1048576};
    for (int g = 0; g < TASK->ngroups; g++) {
        const kiln_group *gr = &TASK->groups[g];
        for (size_t k = 0; k < sizeof divs / sizeof divs[0]; k++)
            for (uint64_t seed = 1; seed < 40; seed++) {
                kiln_preconds ps = cols_by(divs[k]);
                ps.p[ps.n++] = (kiln_precond){.dim = 0, .divisor = 2};
                int n = kiln_precond_hidden(&ps, TASK, gr, seed, out);
                assert_int_equal(n, gr->nhidden + gr->nrandom);
                for (int i = 0; i < n; i++) {
                    if (!kiln_precond_holds(&ps, &out[i]))
                        fail_msg("group %s, cols %% %lld: h%d (%lld, %lld) fails", gr->name,
                                 (long long)divs[k], i + 1, (long long)out[i].d[0],
                                 (long long)out[i].d[1]);
                    for (int d = 0; d < 2; d++)
                        assert_true(in_reach(gr, i, d, d ? divs[k] : 2, out[i].d[d]));
                }
            }
    }
}

/* Everything comes from the seed: the same seed gives the same shapes, and
 * another seed moves the replaced and random ones. */
static void test_hidden_seeded(void **state)
{
    (void)state;
    const kiln_group *g = &TASK->groups[TASK->default_group];
    kiln_shape a[KILN_MAX_SHAPES + 16], b[KILN_MAX_SHAPES + 16];
    kiln_preconds by8 = cols_by(8);
    int n = kiln_precond_hidden(&by8, TASK, g, 42, a);
    assert_int_equal(kiln_precond_hidden(&by8, TASK, g, 42, b), n);
    assert_true(same_shapes(a, b, n));
    int differ = 0;
    for (uint64_t seed = 43; seed < 53 && !differ; seed++) {
        kiln_precond_hidden(&by8, TASK, g, seed, b);
        differ = !same_shapes(a, b, n);
    }
    assert_true(differ);
    /* a fixed shape that already satisfies stays as the task wrote it */
    for (int i = 0; i < g->nhidden; i++)
        if (g->hidden[i].d[1] % 8 == 0)
            assert_true(same_shapes(&a[i], &g->hidden[i], 1));
}

/* With nothing required, the list is the fixed shapes and the same random
 * draws the verifier always made (seeded xoshiro, one range per dim). */
static void test_hidden_unchanged_without(void **state)
{
    (void)state;
    const kiln_group *g = &TASK->groups[TASK->default_group];
    kiln_shape out[KILN_MAX_SHAPES + 16], want[KILN_MAX_SHAPES + 16];
    kiln_preconds none = {0};
    int n = kiln_precond_hidden(&none, TASK, g, 7, out), m = 0;
    kiln_rng r;
    kiln_rng_seed(&r, 7);
    for (int i = 0; i < g->nhidden; i++)
        want[m++] = g->hidden[i];
    for (int i = 0; i < g->nrandom; i++, m++) {
        memset(&want[m], 0, sizeof want[m]);
        for (int d = 0; d < TASK->ndims; d++)
            want[m].d[d] = kiln_rng_range(&r, g->range_lo[d], g->range_hi[d]);
    }
    assert_int_equal(n, m);
    assert_true(same_shapes(out, want, n));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_ok),
        cmocka_unit_test(test_parse_refused),
        cmocka_unit_test(test_parse_json),
        cmocka_unit_test(test_manifest_require),
        cmocka_unit_test(test_scan),
        cmocka_unit_test(test_keep),
        cmocka_unit_test(test_hidden_count_and_holds),
        cmocka_unit_test(test_hidden_seeded),
        cmocka_unit_test(test_hidden_unchanged_without),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
