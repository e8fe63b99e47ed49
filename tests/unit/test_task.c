/* test_task.c - cmocka tests for the task loader (common/task.c).
 *
 * Every test writes a task directory into a fresh mkdtemp directory, starting
 * from a known-good minimal task (GOOD_TASK, GOOD_HIDDEN) with one piece of
 * text replaced, loads it and checks either the loaded struct or the exact
 * failure: -1 and a message naming the file, the field path and what is
 * wrong.  Temp directories are removed and everything is freed, so the test
 * also runs clean under AddressSanitizer. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "task.h"

/* ---- the known-good task --------------------------------------------- */

static const char GOOD_TASK[] =
    "{\n"
    "  \"name\": \"tnorm\",\n"
    "  \"description\": \"a test task\",\n"
    "  \"dims\": [\"rows\", \"cols\"],\n"
    "  \"dtypes\": {\"cpu\": [\"f32\"]},\n"
    "  \"args\": [\n"
    "    {\"name\": \"x\", \"kind\": \"input\", \"dtype\": \"T\", \"shape\": [\"rows\", \"cols\"],"
    " \"init\": {\"dist\": \"normal\", \"mean\": 0.5, \"std\": 2}},\n"
    "    {\"name\": \"w\", \"kind\": \"input\", \"dtype\": \"T\", \"shape\": [\"cols\"],"
    " \"init\": {\"dist\": \"uniform\", \"low\": 0.5, \"high\": 1.5}},\n"
    "    {\"name\": \"y\", \"kind\": \"output\", \"dtype\": \"T\", \"shape\": [\"rows\", \"cols\"]},\n"
    "    {\"name\": \"rows\", \"kind\": \"dim\"},\n"
    "    {\"name\": \"cols\", \"kind\": \"dim\", \"dtype\": \"i64\"},\n"
    "    {\"name\": \"eps\", \"kind\": \"scalar\", \"dtype\": \"f32\", \"value\": 0.001}\n"
    "  ],\n"
    "  \"stability\": [\n"
    "    {\"name\": \"up\", \"input\": \"x\", \"scale\": 1000},\n"
    "    {\"name\": \"flat\", \"input\": \"x\", \"pattern\": \"constant-rows\"}\n"
    "  ],\n"
    "  \"groups\": {\n"
    "    \"small\": {\"visible\": [{\"rows\": 2, \"cols\": 8}, {\"rows\": 4, \"cols\": 16}]},\n"
    "    \"large\": {\"visible\": [{\"rows\": 16, \"cols\": 64}]}\n"
    "  },\n"
    "  \"default_group\": \"large\",\n"
    "  \"cost\": {\"bytes\": \"(2 * rows * cols + cols) * sizeof(T)\", \"flops\": \"3 * rows * cols\"},\n"
    "  \"tolerance\": {\"reduction\": \"cols\", \"floor_rel\": 0.0001,\n"
    "                \"dtypes\": {\"f32\": {\"ulps\": 4, \"per_sqrt\": 1.5, \"per_n\": 0.25}}},\n"
    "  \"deterministic\": false,\n"
    "  \"reference\": {\"cpu\": \"reference.c\"},\n"
    "  \"baseline\": {\"cpu\": \"base/baseline.c\"}\n"
    "}\n";

static const char GOOD_HIDDEN[] =
    "{\n"
    "  \"groups\": {\n"
    "    \"small\": {\"shapes\": [{\"rows\": 5, \"cols\": 17}, {\"rows\": 1, \"cols\": 3}],\n"
    "              \"random\": {\"count\": 2, \"ranges\": {\"rows\": [1, 8], \"cols\": [1, 20]}}},\n"
    "    \"large\": {\"shapes\": [{\"rows\": 17, \"cols\": 65}]}\n"
    "  }\n"
    "}\n";

static const char REFERENCE_C[] =
    "#include <stdint.h>\n"
    "void tnorm_reference(const double *x, const double *w, double *y,\n"
    "                     int64_t rows, int64_t cols, double eps)\n"
    "{ (void)x; (void)w; (void)y; (void)rows; (void)cols; (void)eps; }\n";

static const char BASELINE_CU[] =
    "#include \"kiln_cuda.h\"\n"
    "extern \"C\" __global__ void tnorm_fwd(const kiln_t *x, kiln_t *y, int cols) {}\n";

static const char BASELINE_C[] =
    "#include <stdint.h>\n"
    "void tnorm(const float *x, const float *w, float *y, int32_t rows, int64_t cols, float eps)\n"
    "{ (void)x; (void)w; (void)y; (void)rows; (void)cols; (void)eps; }\n";

/* ---- helpers --------------------------------------------------------- */

/* text with the one occurrence of `from` replaced by `to` (malloc'd). */
static char *replace(const char *text, const char *from, const char *to)
{
    const char *at = strstr(text, from);
    if (!at)
        fail_msg("replace: '%s' not found", from);
    if (strstr(at + 1, from))
        fail_msg("replace: '%s' occurs more than once", from);
    size_t n = strlen(text) - strlen(from) + strlen(to);
    char *out = malloc(n + 1);
    assert_non_null(out);
    size_t head = (size_t)(at - text);
    memcpy(out, text, head);
    strcpy(out + head, to);
    strcat(out, at + strlen(from));
    return out;
}

static void write_file(const char *dir, const char *name, const char *text)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f)
        fail_msg("cannot write %s", path);
    fputs(text, f);
    fclose(f);
}

static char *make_tmpdir(void)
{
    char *dir = strdup("/tmp/kiln-test-task-XXXXXX");
    assert_non_null(dir);
    if (!mkdtemp(dir))
        fail_msg("mkdtemp failed");
    return dir;
}

/* Write a task into dir: task.json / hidden.json as given (NULL hidden: no
 * hidden.json at all), plus reference.c, base/baseline.c and base/baseline.cu. */
static void write_task(const char *dir, const char *task_json, const char *hidden_json)
{
    char sub[PATH_MAX];
    write_file(dir, "task.json", task_json);
    if (hidden_json)
        write_file(dir, "hidden.json", hidden_json);
    write_file(dir, "reference.c", REFERENCE_C);
    snprintf(sub, sizeof sub, "%s/base", dir);
    assert_int_equal(mkdir(sub, 0700), 0);
    write_file(dir, "base/baseline.c", BASELINE_C);
    write_file(dir, "base/baseline.cu", BASELINE_CU);
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void rm_tree(char *dir)
{
    assert_int_equal(nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS), 0);
    free(dir);
}

/* Write and load a task in a fresh temp dir, then remove the dir. */
static int load_text(const char *task_json, const char *hidden_json, kiln_task *t,
                     kiln_error *err)
{
    char *dir = make_tmpdir();
    write_task(dir, task_json, hidden_json);
    memset(err, 0, sizeof *err);
    int rc = kiln_task_load(dir, t, err);
    rm_tree(dir);
    return rc;
}

/* Expect the load to fail with a message naming `file` (and not the other
 * file), field `field` (NULL: no field) and containing `phrase`. */
static void expect_fail(const char *task_json, const char *hidden_json, const char *file,
                        const char *field, const char *phrase)
{
    kiln_task *t = malloc(sizeof *t);
    kiln_error err;
    assert_non_null(t);
    int rc = load_text(task_json, hidden_json, t, &err);
    free(t);
    if (rc != -1)
        fail_msg("expected failure (%s / %s / %s), load returned %d", file,
                 field ? field : "-", phrase, rc);
    const char *other = strcmp(file, "task.json") == 0 ? "/hidden.json" : "/task.json";
    char want_file[64], want_field[256];
    snprintf(want_file, sizeof want_file, "/%s", file);
    snprintf(want_field, sizeof want_field, "field '%s'", field ? field : "");
    if (!strstr(err.msg, want_file) || strstr(err.msg, other))
        fail_msg("message does not name %s alone: %s", file, err.msg);
    if (field && !strstr(err.msg, want_field))
        fail_msg("message does not name %s: %s", want_field, err.msg);
    if (!field && strstr(err.msg, "field '"))
        fail_msg("message names a field unexpectedly: %s", err.msg);
    if (!strstr(err.msg, phrase))
        fail_msg("message lacks '%s': %s", phrase, err.msg);
}

/* task.json with one replacement must fail in task.json. */
static void task_fails(const char *from, const char *to, const char *field, const char *phrase)
{
    char *text = replace(GOOD_TASK, from, to);
    expect_fail(text, GOOD_HIDDEN, "task.json", field, phrase);
    free(text);
}

/* hidden.json with one replacement must fail in hidden.json. */
static void hidden_fails(const char *from, const char *to, const char *field, const char *phrase)
{
    char *text = replace(GOOD_HIDDEN, from, to);
    expect_fail(GOOD_TASK, text, "hidden.json", field, phrase);
    free(text);
}

/* task.json with one replacement must load. */
static void task_loads(const char *from, const char *to)
{
    char *text = replace(GOOD_TASK, from, to);
    kiln_task *t = malloc(sizeof *t);
    kiln_error err;
    assert_non_null(t);
    int rc = load_text(text, GOOD_HIDDEN, t, &err);
    free(t);
    free(text);
    if (rc != 0)
        fail_msg("expected '%s' -> '%s' to load: %s", from, to, err.msg);
}

static void load_rmsnorm(kiln_task *t)
{
    kiln_error err;
    if (kiln_task_load(KILN_TASKS_DIR "/rmsnorm", t, &err) != 0)
        fail_msg("loading rmsnorm: %s", err.msg);
}

/* ---- the good task ---------------------------------------------------- */

static void test_good_task_loads(void **state)
{
    (void)state;
    char *dir = make_tmpdir();
    write_task(dir, GOOD_TASK, GOOD_HIDDEN);
    kiln_task *t = malloc(sizeof *t);
    kiln_error err;
    assert_non_null(t);
    if (kiln_task_load(dir, t, &err) != 0)
        fail_msg("good task: %s", err.msg);

    char real[PATH_MAX], want[PATH_MAX + 32];
    assert_non_null(realpath(dir, real));
    assert_string_equal(t->dir, real);
    assert_string_equal(t->name, "tnorm");
    assert_string_equal(t->description, "a test task");

    assert_int_equal(t->ndims, 2);
    assert_string_equal(t->dims[0], "rows");
    assert_string_equal(t->dims[1], "cols");
    assert_int_equal(kiln_task_dim(t, "cols"), 1);
    assert_int_equal(kiln_task_dim(t, "depth"), -1);

    assert_int_equal(t->nargs, 6);
    const kiln_arg *a = t->args;
    assert_string_equal(a[0].name, "x");
    assert_int_equal(a[0].kind, KILN_ARG_INPUT);
    assert_true(a[0].dtype_is_var);
    assert_int_equal(kiln_arg_dtype(&a[0], KILN_DT_F64), KILN_DT_F64);
    assert_int_equal(a[0].rank, 2);
    assert_int_equal(a[0].shape[0], 0);
    assert_int_equal(a[0].shape[1], 1);
    assert_int_equal(a[0].dist, KILN_DIST_NORMAL);
    assert_true(a[0].dist_a == 0.5 && a[0].dist_b == 2.0);

    assert_string_equal(a[1].name, "w");
    assert_int_equal(a[1].kind, KILN_ARG_INPUT);
    assert_true(a[1].dtype_is_var);
    assert_int_equal(a[1].rank, 1);
    assert_int_equal(a[1].shape[0], 1);
    assert_int_equal(a[1].dist, KILN_DIST_UNIFORM);
    assert_true(a[1].dist_a == 0.5 && a[1].dist_b == 1.5);

    assert_string_equal(a[2].name, "y");
    assert_int_equal(a[2].kind, KILN_ARG_OUTPUT);
    assert_true(a[2].dtype_is_var);
    assert_int_equal(a[2].rank, 2);
    assert_int_equal(a[2].dist, KILN_DIST_NONE);
    kiln_shape s = {{3, 5}};
    assert_int_equal(kiln_arg_elems(&a[2], &s), 15);
    assert_int_equal(kiln_arg_elems(&a[1], &s), 5);

    assert_string_equal(a[3].name, "rows");
    assert_int_equal(a[3].kind, KILN_ARG_DIM);
    assert_false(a[3].dtype_is_var);
    assert_int_equal(a[3].dtype, KILN_DT_I32); /* the default */
    assert_string_equal(a[4].name, "cols");
    assert_int_equal(a[4].kind, KILN_ARG_DIM);
    assert_int_equal(a[4].dtype, KILN_DT_I64);

    assert_string_equal(a[5].name, "eps");
    assert_int_equal(a[5].kind, KILN_ARG_SCALAR);
    assert_false(a[5].dtype_is_var);
    assert_int_equal(a[5].dtype, KILN_DT_F32);
    assert_int_equal(kiln_arg_dtype(&a[5], KILN_DT_F64), KILN_DT_F32);
    assert_true(a[5].value == 0.001);

    assert_int_equal(t->ncpu_dtypes, 1);
    assert_int_equal(t->cpu_dtypes[0], KILN_DT_F32);
    assert_true(kiln_task_supports(t, KILN_DT_F32));
    assert_false(kiln_task_supports(t, KILN_DT_F64));
    assert_true(kiln_task_supports_backend(t, "cpu", KILN_DT_F32));
    assert_int_equal(t->ncuda_dtypes, 0);
    assert_false(kiln_task_supports_backend(t, "cuda", KILN_DT_F32));
    assert_false(kiln_task_supports_backend(t, "gpu", KILN_DT_F32));
    assert_false(kiln_task_supports_backend(t, NULL, KILN_DT_F32));

    assert_int_equal(t->nvariants, 2);
    assert_string_equal(t->variants[0].name, "up");
    assert_int_equal(t->variants[0].arg, 0);
    assert_true(t->variants[0].scale == 1000.0 && t->variants[0].offset == 0.0);
    assert_int_equal(t->variants[0].pattern, KILN_PAT_NONE);
    assert_string_equal(t->variants[1].name, "flat");
    assert_true(t->variants[1].scale == 1.0);
    assert_int_equal(t->variants[1].pattern, KILN_PAT_CONSTANT_ROWS);

    assert_int_equal(t->ngroups, 2);
    const kiln_group *g = t->groups;
    assert_string_equal(g[0].name, "small");
    assert_string_equal(g[1].name, "large");
    assert_int_equal(kiln_task_group(t, "large"), 1);
    assert_int_equal(kiln_task_group(t, "huge"), -1);
    assert_int_equal(t->default_group, 1);
    assert_int_equal(g[0].nvisible, 2);
    assert_int_equal(g[0].visible[0].d[0], 2);
    assert_int_equal(g[0].visible[0].d[1], 8);
    assert_int_equal(g[0].visible[1].d[0], 4);
    assert_int_equal(g[0].visible[1].d[1], 16);
    assert_int_equal(g[1].nvisible, 1);
    assert_int_equal(g[1].visible[0].d[0], 16);
    assert_int_equal(g[1].visible[0].d[1], 64);
    /* hidden.json */
    assert_int_equal(g[0].nhidden, 2);
    assert_int_equal(g[0].hidden[0].d[0], 5);
    assert_int_equal(g[0].hidden[0].d[1], 17);
    assert_int_equal(g[0].hidden[1].d[1], 3);
    assert_int_equal(g[0].nrandom, 2);
    assert_int_equal(g[0].range_lo[0], 1);
    assert_int_equal(g[0].range_hi[0], 8);
    assert_int_equal(g[0].range_lo[1], 1);
    assert_int_equal(g[0].range_hi[1], 20);
    assert_int_equal(g[1].nhidden, 1);
    assert_int_equal(g[1].hidden[0].d[1], 65);
    assert_int_equal(g[1].nrandom, 0);

    assert_int_equal(t->reduction_dim, 1);
    assert_true(t->floor_rel == 0.0001);
    assert_true(t->floor_abs == 0);   /* none unless given */
    assert_int_equal(t->ntolerances, 1);
    const kiln_tolerance_spec *ts = kiln_task_tolerance(t, KILN_DT_F32);
    assert_non_null(ts);
    assert_int_equal(ts->dtype, KILN_DT_F32);
    assert_true(ts->ulps == 4.0 && ts->per_sqrt == 1.5 && ts->per_n == 0.25);
    assert_null(kiln_task_tolerance(t, KILN_DT_F64));

    assert_string_equal(t->cost_bytes, "(2 * rows * cols + cols) * sizeof(T)");
    assert_string_equal(t->cost_flops, "3 * rows * cols");
    assert_false(t->deterministic);

    assert_int_equal(t->reference_cpu[0], '/');
    snprintf(want, sizeof want, "%s/reference.c", real);
    assert_string_equal(t->reference_cpu, want);
    assert_int_equal(t->baseline_cpu[0], '/');
    snprintf(want, sizeof want, "%s/base/baseline.c", real);
    assert_string_equal(t->baseline_cpu, want);
    assert_string_equal(t->baseline_cuda, "");

    char sig[512];
    kiln_task_cpu_signature(t, KILN_DT_F32, sig, sizeof sig);
    assert_string_equal(sig, "void tnorm(const float *x, const float *w, float *y, "
                             "int32_t rows, int64_t cols, float eps)");
    kiln_task_cuda_params(t, sig, sizeof sig);
    assert_string_equal(sig, "(const kiln_t *x, const kiln_t *w, kiln_t *y, int rows, "
                             "long long cols, float eps)");
    assert_string_equal(kiln_arg_cuda_type(&a[5]), "float");
    free(t);
    rm_tree(dir);
}

static void test_defaults_and_optional_fields(void **state)
{
    (void)state;
    /* deterministic defaults to true, stability and per_n are optional */
    char *a = replace(GOOD_TASK, "  \"deterministic\": false,\n", "");
    char *b = replace(a, ", \"per_n\": 0.25", "");
    char *c = replace(b, "\"stability\": [", "\"unused\": [");
    kiln_task *t = malloc(sizeof *t);
    kiln_error err;
    assert_non_null(t);
    if (load_text(c, GOOD_HIDDEN, t, &err) != 0)
        fail_msg("%s", err.msg);
    assert_true(t->deterministic);
    assert_int_equal(t->nvariants, 0);
    assert_true(t->tolerances[0].per_n == 0.0);
    free(t);
    free(a);
    free(b);
    free(c);
    /* no reduction dim */
    task_loads("\"reduction\": \"cols\", ", "");
    /* a relative path through .. */
    task_loads("\"cpu\": \"base/baseline.c\"", "\"cpu\": \"base/../base/baseline.c\"");
}

/* ---- task.json: syntax and top level ---------------------------------- */

static void test_malformed_json(void **state)
{
    (void)state;
    /* line 5 holds the bad token */
    task_fails("\"cpu\": [\"f32\"]", "\"cpu\": [f32]", NULL, "malformed JSON near line 5");
    /* trailing garbage */
    char *text = malloc(sizeof GOOD_TASK + 8);
    assert_non_null(text);
    strcpy(text, GOOD_TASK);
    strcat(text, "}\n");
    expect_fail(text, GOOD_HIDDEN, "task.json", NULL, "malformed JSON near line");
    free(text);
    expect_fail("", GOOD_HIDDEN, "task.json", NULL, "malformed JSON near line 1");
}

static void test_top_level_not_object(void **state)
{
    (void)state;
    expect_fail("[1, 2]\n", GOOD_HIDDEN, "task.json", NULL, "top level must be a JSON object");
    expect_fail("\"tnorm\"", GOOD_HIDDEN, "task.json", NULL, "top level must be a JSON object");
}

static void test_name(void **state)
{
    (void)state;
    task_fails("  \"name\": \"tnorm\",\n", "", "name", "missing");
    task_fails("\"name\": \"tnorm\"", "\"name\": \"t-norm\"", "name", "'t-norm' is not an identifier");
    task_fails("\"name\": \"tnorm\"", "\"name\": \"9norm\"", "name", "not an identifier");
    task_fails("\"name\": \"tnorm\"", "\"name\": \"\"", "name", "not an identifier");
    task_fails("\"name\": \"tnorm\"", "\"name\": 7", "name", "must be a string");
    task_fails("\"name\": \"tnorm\"", "\"name\": \"a_name_that_is_far_too_long_for_kiln\"", "name",
               "too long");
    task_fails("\"description\": \"a test task\"", "\"description\": false", "description",
               "must be a string");
    task_fails("\"deterministic\": false", "\"deterministic\": 0", "deterministic",
               "must be true or false");
}

/* ---- dims ------------------------------------------------------------- */

static void test_dims(void **state)
{
    (void)state;
    task_fails("  \"dims\": [\"rows\", \"cols\"],\n", "", "dims", "non-empty array");
    task_fails("\"dims\": [\"rows\", \"cols\"]", "\"dims\": []", "dims", "non-empty array");
    task_fails("\"dims\": [\"rows\", \"cols\"]", "\"dims\": \"rows\"", "dims", "non-empty array");
    task_fails("\"dims\": [\"rows\", \"cols\"]", "\"dims\": [\"rows\", \"cols\", \"rows\"]", "dims[2]",
               "duplicate dim 'rows'");
    task_fails("\"dims\": [\"rows\", \"cols\"]", "\"dims\": [\"rows\", \"co ls\"]", "dims[1]",
               "must be an identifier");
    task_fails("\"dims\": [\"rows\", \"cols\"]", "\"dims\": [\"rows\", 3]", "dims[1]",
               "must be an identifier");
    task_fails("\"dims\": [\"rows\", \"cols\"]",
               "\"dims\": [\"rows\", \"cols\", \"a\", \"b\", \"c\", \"d\", \"e\", \"f\", \"g\"]", "dims",
               "too many dims");
}

/* ---- args ------------------------------------------------------------- */

static void test_args_not_array(void **state)
{
    (void)state;
    task_fails("\"args\": [", "\"args\": {\"x\": 1}, \"old_args\": [", "args", "must be a non-empty array");
    task_fails("\"args\": [", "\"args\": [], \"old_args\": [", "args", "must be a non-empty array");
    task_fails("\"args\": [", "\"args\": [3, ", "args[0]", "must be an object");
}

static void test_arg_kind(void **state)
{
    (void)state;
    task_fails("{\"name\": \"y\", \"kind\": \"output\", ", "{\"name\": \"y\", ", "args[2].kind", "missing");
    task_fails("\"kind\": \"output\"", "\"kind\": \"outptu\"", "args[2]",
               "unknown kind 'outptu' (input, output, dim, scalar)");
    task_fails("{\"name\": \"y\", ", "{", "args[2].name", "missing");
    task_fails("{\"name\": \"y\", ", "{\"name\": \"2y\", ", "args[2]", "name '2y' is not an identifier");
}

static void test_arg_dtype(void **state)
{
    (void)state;
    task_fails("{\"name\": \"x\", \"kind\": \"input\", \"dtype\": \"T\"",
               "{\"name\": \"x\", \"kind\": \"input\", \"dtype\": \"f31\"", "args[0]",
               "unknown dtype 'f31'");
    task_fails("{\"name\": \"x\", \"kind\": \"input\", \"dtype\": \"T\", ",
               "{\"name\": \"x\", \"kind\": \"input\", ", "args[0].dtype", "missing");
    task_fails("\"kind\": \"scalar\", \"dtype\": \"f32\"", "\"kind\": \"scalar\", \"dtype\": \"T\"",
               "args[5]", "need a concrete dtype, not 'T'");
    task_fails("{\"name\": \"rows\", \"kind\": \"dim\"}",
               "{\"name\": \"rows\", \"kind\": \"dim\", \"dtype\": \"T\"}", "args[3]",
               "need a concrete dtype");
    task_fails("{\"name\": \"rows\", \"kind\": \"dim\"}",
               "{\"name\": \"rows\", \"kind\": \"dim\", \"dtype\": \"f32\"}", "args[3]",
               "a dim is passed as i32 or i64");
    /* concrete buffer dtypes are fine */
    task_loads("{\"name\": \"w\", \"kind\": \"input\", \"dtype\": \"T\"",
               "{\"name\": \"w\", \"kind\": \"input\", \"dtype\": \"bf16\"");
}

static void test_dim_arg_not_task_dim(void **state)
{
    (void)state;
    task_fails("{\"name\": \"rows\", \"kind\": \"dim\"}", "{\"name\": \"rowz\", \"kind\": \"dim\"}",
               "args[3]", "dim arg 'rowz' is not one of the task's dims");
}

static void test_scalar_value(void **state)
{
    (void)state;
    task_fails(", \"value\": 0.001", "", "args[5].value", "missing");
    task_fails("\"value\": 0.001", "\"value\": \"small\"", "args[5].value", "must be a number");
}

static void test_input_init(void **state)
{
    (void)state;
    task_fails(", \"init\": {\"dist\": \"normal\", \"mean\": 0.5, \"std\": 2}", "", "args[0].init",
               "an input needs an object");
    task_fails("\"dist\": \"normal\"", "\"dist\": \"gauss\"", "args[0].init",
               "unknown dist 'gauss' (normal, uniform, integers)");
    task_fails("{\"dist\": \"normal\", ", "{", "args[0].init.dist", "missing");
    task_fails("\"std\": 2", "\"std\": 0", "args[0].init", "std must be positive");
    task_fails("\"std\": 2", "\"std\": \"2\"", "args[0].init.std", "must be a number");
    task_fails("\"low\": 0.5, \"high\": 1.5", "\"low\": 1.5, \"high\": 1.5", "args[1].init",
               "high must be greater than low");
    task_fails("\"low\": 0.5, \"high\": 1.5", "\"low\": 2, \"high\": 1.5", "args[1].init",
               "high must be greater than low");
    task_fails("\"low\": 0.5, ", "", "args[1].init.low", "missing");
}

static void test_arg_shape(void **state)
{
    (void)state;
    task_fails("\"shape\": [\"cols\"]", "\"shape\": [\"colz\"]", "args[1].shape", "unknown dim 'colz'");
    task_fails("\"shape\": [\"cols\"]", "\"shape\": []", "args[1].shape", "non-empty array");
    task_fails("\"shape\": [\"cols\"]", "\"shape\": [1]", "args[1].shape", "unknown dim '?'");
    task_fails("{\"name\": \"y\", \"kind\": \"output\", \"dtype\": \"T\", \"shape\": [\"rows\", \"cols\"]}",
               "{\"name\": \"y\", \"kind\": \"output\", \"dtype\": \"T\"}", "args[2].shape",
               "non-empty array");
}

static void test_no_output(void **state)
{
    (void)state;
    task_fails("    {\"name\": \"y\", \"kind\": \"output\", \"dtype\": \"T\", \"shape\": [\"rows\", \"cols\"]},\n",
               "", "args", "the task has no output");
}

static void test_duplicate_arg(void **state)
{
    (void)state;
    task_fails("{\"name\": \"w\",", "{\"name\": \"x\",", "args[1]", "duplicate arg 'x'");
    task_fails("{\"name\": \"eps\",", "{\"name\": \"rows\",", "args[5]", "duplicate arg 'rows'");
}

/* ---- dtypes ----------------------------------------------------------- */

static void test_cpu_dtypes(void **state)
{
    (void)state;
    task_fails("\"dtypes\": {\"cpu\": [\"f32\"]}", "\"dtypes\": {\"gpu\": [\"f32\"]}", "dtypes.gpu",
               "unknown backend 'gpu' (cpu, cuda)");
    task_fails("  \"dtypes\": {\"cpu\": [\"f32\"]},\n", "", "dtypes", "must be an object");
    task_fails("\"dtypes\": {\"cpu\": [\"f32\"]}", "\"dtypes\": [\"f32\"]", "dtypes", "must be an object");
    task_fails("\"dtypes\": {\"cpu\": [\"f32\"]}", "\"dtypes\": {}", "dtypes",
               "no backend: give \"cpu\" and/or \"cuda\" dtypes");
    task_fails("\"cpu\": [\"f32\"]", "\"cpu\": [\"f32\", \"f32\"]", "dtypes.cpu", "duplicate dtype 'f32'");
    task_fails("\"cpu\": [\"f32\"]", "\"cpu\": [\"f32\", \"f16\", \"bf16\", \"f64\", \"f32\"]",
               "dtypes.cpu", "must be an array of 1 to 4 dtypes");
    task_fails("\"cpu\": [\"f32\"]", "\"cpu\": []", "dtypes.cpu", "must be an array");
    task_fails("\"cpu\": [\"f32\"]", "\"cpu\": [\"i32\"]", "dtypes.cpu", "'i32' is not a float dtype");
    task_fails("\"cpu\": [\"f32\"]", "\"cpu\": [\"f32\", \"float\"]", "dtypes.cpu",
               "'float' is not a float dtype");
}

/* ---- stability -------------------------------------------------------- */

static void test_stability(void **state)
{
    (void)state;
    task_fails("\"input\": \"x\", \"scale\": 1000", "\"input\": \"y\", \"scale\": 1000", "stability[0]",
               "input 'y' is not an input arg");
    task_fails("\"input\": \"x\", \"scale\": 1000", "\"input\": \"q\", \"scale\": 1000", "stability[0]",
               "input 'q' is not an input arg");
    task_fails("\"scale\": 1000}", "\"scale\": 1}", "stability[0]", "changes nothing");
    task_fails("\"scale\": 1000}", "\"offset\": 0}", "stability[0]", "changes nothing");
    task_fails("\"constant-rows\"", "\"constant-cols\"", "stability[1]", "unknown pattern 'constant-cols'");
    task_fails("\"stability\": [", "\"stability\": {}, \"old\": [", "stability", "must be an array");
}

/* ---- groups ----------------------------------------------------------- */

static void test_groups_missing(void **state)
{
    (void)state;
    task_fails("\"groups\": {", "\"groupz\": {", "groups", "must be an object of named shape groups");
    task_fails("\"groups\": {", "\"groups\": {}, \"old\": {", "groups", "must be an object");
    task_fails("\"small\": {\"visible\"", "\"sm-all\": {\"visible\"", "groups.sm-all",
               "group name must be an identifier");
    task_fails("\"large\": {\"visible\"", "\"small\": {\"visible\"", "groups.small", "duplicate group 'small'");
    task_fails("\"large\": {\"visible\": [{\"rows\": 16, \"cols\": 64}]}", "\"large\": {}",
               "groups.large.visible", "must be an array of 1 to 48 shapes");
}

static void test_visible_shapes(void **state)
{
    (void)state;
    task_fails("{\"rows\": 4, \"cols\": 16}", "{\"rows\": 4}", "groups.small.visible[1]",
               "missing or non-numeric size of dim 'cols'");
    task_fails("{\"rows\": 4, \"cols\": 16}", "{\"rows\": 4, \"cols\": \"16\"}", "groups.small.visible[1]",
               "missing or non-numeric size of dim 'cols'");
    task_fails("{\"rows\": 4, \"cols\": 16}", "{\"rows\": 4, \"cols\": 16.5}", "groups.small.visible[1]",
               "size of dim 'cols' must be an integer from 1 to 2^30");
    task_fails("{\"rows\": 4, \"cols\": 16}", "{\"rows\": 0, \"cols\": 16}", "groups.small.visible[1]",
               "size of dim 'rows' must be an integer from 1 to 2^30");
    task_fails("{\"rows\": 4, \"cols\": 16}", "{\"rows\": -4, \"cols\": 16}", "groups.small.visible[1]",
               "must be an integer");
    task_fails("{\"rows\": 4, \"cols\": 16}", "{\"rows\": 4, \"cols\": 2000000000}",
               "groups.small.visible[1]", "must be an integer from 1 to 2^30");
    task_fails("{\"rows\": 4, \"cols\": 16}", "{\"rows\": 4, \"cols\": 16, \"depth\": 2}",
               "groups.small.visible[1]", "unknown dim 'depth'");
    task_fails("{\"rows\": 4, \"cols\": 16}", "7", "groups.small.visible[1]",
               "must be an object of dim sizes");
}

static void test_default_group(void **state)
{
    (void)state;
    task_fails("\"default_group\": \"large\"", "\"default_group\": \"huge\"", "default_group",
               "no group named 'huge'");
    task_fails("  \"default_group\": \"large\",\n", "", "default_group", "missing");
}

/* ---- tolerance -------------------------------------------------------- */

static void test_tolerance(void **state)
{
    (void)state;
    task_fails("\"tolerance\": {", "\"tolerancx\": {", "tolerance", "missing or not an object");
    task_fails("\"dtypes\": {\"f32\": {", "\"dtypes\": {\"f64\": {", "tolerance.dtypes",
               "no tolerance for dtype f32");
    task_fails("\"cpu\": [\"f32\"]", "\"cpu\": [\"f32\", \"bf16\"]", "tolerance.dtypes",
               "no tolerance for dtype bf16");
    task_fails("\"dtypes\": {\"f32\": {\"ulps\": 4, \"per_sqrt\": 1.5, \"per_n\": 0.25}}",
               "\"dtypes\": {}", "tolerance.dtypes", "must map each dtype");
    task_fails("\"dtypes\": {\"f32\": {", "\"dtypes\": {\"i32\": {", "tolerance.dtypes.i32",
               "'i32' is not a float dtype");
    task_fails("\"ulps\": 4", "\"ulps\": 0.1", "tolerance.dtypes.f32", "ulps must be in [0.5, 1e6]");
    task_fails("\"ulps\": 4", "\"ulps\": 2e6", "tolerance.dtypes.f32", "ulps must be in [0.5, 1e6]");
    task_fails("\"ulps\": 4, ", "", "tolerance.dtypes.f32.ulps", "missing");
    task_fails("\"per_sqrt\": 1.5", "\"per_sqrt\": -1", "tolerance.dtypes.f32", "per_sqrt in [0, 1e4]");
    task_fails("\"per_n\": 0.25", "\"per_n\": 17", "tolerance.dtypes.f32",
               "per_n and per_n_variants in [0, 16]");
    task_fails("\"per_n\": 0.25", "\"per_n_variants\": -1", "tolerance.dtypes.f32",
               "per_n and per_n_variants in [0, 16]");
    task_fails("\"per_n\": 0.25", "\"ulps_variants\": -3", "tolerance.dtypes.f32",
               "ulps_variants in [0, 1e6]");
    task_fails("\"reduction\": \"cols\"", "\"reduction\": \"colz\"", "tolerance.reduction",
               "unknown dim 'colz'");
    task_fails("\"floor_rel\": 0.0001", "\"floor_rel\": 1", "tolerance.floor_rel", "must be in [0, 1)");
    task_fails("\"floor_rel\": 0.0001", "\"floor_rel\": 0.0001, \"floor_abs\": -1",
               "tolerance.floor_abs", "must be in [0, 1e6)");
}

/* ---- cost ------------------------------------------------------------- */

static void test_cost_expressions(void **state)
{
    (void)state;
    task_fails("\"bytes\": \"(2 * rows * cols + cols) * sizeof(T)\"", "\"bytes\": \"rows*colz\"",
               "cost.bytes", "unknown name 'colz' (only dims and sizeof(T) may appear)");
    task_fails("\"flops\": \"3 * rows * cols\"", "\"flops\": \"3 * (rows * cols\"", "cost.flops",
               "missing ')' at column 17");
    task_fails("\"flops\": \"3 * rows * cols\"", "\"flops\": \"3 * rows cols\"", "cost.flops",
               "unexpected");
    task_fails(", \"flops\": \"3 * rows * cols\"", "", "cost.flops", "missing");
    task_fails("\"cost\": {", "\"costs\": {", "cost", "must be an object");
    /* a type inside sizeof() that no run can size */
    task_fails("sizeof(T)", "sizeof(float)", "cost.bytes", "unknown type 'float' in sizeof()");
    task_fails("sizeof(T)", "sizeof(rows)", "cost.bytes", "unknown type 'rows' in sizeof()");
    /* functions and concrete dtypes are fine */
    task_loads("\"flops\": \"3 * rows * cols\"", "\"flops\": \"max(rows, cdiv(cols, 4)) * sizeof(f64)\"");
}

/* ---- reference / baseline --------------------------------------------- */

static void test_paths(void **state)
{
    (void)state;
    task_fails("\"cpu\": \"reference.c\"", "\"cpu\": \"nothere.c\"", "reference.cpu",
               "file 'nothere.c' not found");
    task_fails("\"cpu\": \"base/baseline.c\"", "\"cpu\": \"base/gone.c\"", "baseline.cpu",
               "file 'base/gone.c' not found");
    task_fails("\"reference\": {\"cpu\": \"reference.c\"}", "\"reference\": \"reference.c\"", "reference",
               "must be an object");
    task_fails("\"cpu\": \"base/baseline.c\"", "\"cpu\": \"base\"", "baseline.cpu", "not a regular file");
}

/* An absolute path in task.json is taken as it is; a relative one stays
 * relative to the task directory (a copied task can point at the files of
 * the task it was copied from, wherever it lives). */
static void test_absolute_paths(void **state)
{
    (void)state;
    char *elsewhere = make_tmpdir();
    write_file(elsewhere, "ref.c", REFERENCE_C);
    write_file(elsewhere, "base.c", BASELINE_C);
    char ref[PATH_MAX], base[PATH_MAX], want_ref[PATH_MAX], want_base[PATH_MAX + 16];
    snprintf(ref, sizeof ref, "\"reference\": {\"cpu\": \"%s/ref.c\"}", elsewhere);
    snprintf(base, sizeof base, "\"baseline\": {\"cpu\": \"%s/base.c\"}", elsewhere);
    char *one = replace(GOOD_TASK, "\"reference\": {\"cpu\": \"reference.c\"}", ref);
    char *two = replace(one, "\"baseline\": {\"cpu\": \"base/baseline.c\"}", base);
    kiln_task *t = malloc(sizeof *t);
    kiln_error err;
    assert_non_null(t);
    assert_non_null(realpath(elsewhere, want_ref));
    snprintf(want_base, sizeof want_base, "%s/base.c", want_ref);
    strcat(want_ref, "/ref.c");
    if (load_text(two, GOOD_HIDDEN, t, &err) != 0)
        fail_msg("absolute paths: %s", err.msg);
    assert_string_equal(t->reference_cpu, want_ref);
    assert_string_equal(t->baseline_cpu, want_base);
    /* relative ones still resolve inside the task directory */
    if (load_text(GOOD_TASK, GOOD_HIDDEN, t, &err) != 0)
        fail_msg("relative paths: %s", err.msg);
    assert_non_null(strstr(t->baseline_cpu, "/base/baseline.c"));
    assert_null(strstr(t->baseline_cpu, elsewhere));
    free(t);
    free(one);
    free(two);
    /* an absolute path that names nothing is reported as written */
    char gone[PATH_MAX + 64], phrase[PATH_MAX + 64];
    snprintf(gone, sizeof gone, "\"cpu\": \"%s/gone.c\"", elsewhere);
    snprintf(phrase, sizeof phrase, "file '%s/gone.c' not found", elsewhere);
    task_fails("\"cpu\": \"base/baseline.c\"", gone, "baseline.cpu", phrase);
    rm_tree(elsewhere);
}

/* "function": the C function a candidate defines, the task's name unless
 * given, and a C identifier. */
static void test_function(void **state)
{
    (void)state;
    kiln_task *t = malloc(sizeof *t);
    kiln_error err;
    char sig[512];
    assert_non_null(t);
    assert_int_equal(load_text(GOOD_TASK, GOOD_HIDDEN, t, &err), 0);
    assert_string_equal(t->function, "tnorm");
    char *text = replace(GOOD_TASK, "\"name\": \"tnorm\",", "\"name\": \"mine\", \"function\": \"tnorm\",");
    if (load_text(text, GOOD_HIDDEN, t, &err) != 0)
        fail_msg("function: %s", err.msg);
    assert_string_equal(t->name, "mine");
    assert_string_equal(t->function, "tnorm");
    kiln_task_cpu_signature(t, KILN_DT_F32, sig, sizeof sig);
    assert_string_equal(sig, "void tnorm(const float *x, const float *w, float *y, "
                             "int32_t rows, int64_t cols, float eps)");
    free(text);
    free(t);
    task_fails("\"name\": \"tnorm\",", "\"name\": \"tnorm\", \"function\": \"my-norm\",", "function",
               "'my-norm' is not a C identifier");
    task_fails("\"name\": \"tnorm\",", "\"name\": \"tnorm\", \"function\": \"9lives\",", "function",
               "'9lives' is not a C identifier");
    task_fails("\"name\": \"tnorm\",", "\"name\": \"tnorm\", \"function\": \"\",", "function",
               "'' is not a C identifier");
    task_fails("\"name\": \"tnorm\",", "\"name\": \"tnorm\", \"function\": 7,", "function",
               "must be a string");
    task_fails("\"name\": \"tnorm\",", "\"name\": \"tnorm\", \"function\": \"kiln_entry\",",
               "function", "'kiln_entry' is a name kiln's wrapper uses itself");
    task_fails("\"name\": \"tnorm\",",
               "\"name\": \"tnorm\", \"function\": \"a_function_name_of_32_characters\",",
               "function", "is not a C identifier");
}

/* ---- hidden.json ------------------------------------------------------ */

static void test_hidden_missing(void **state)
{
    (void)state;
    expect_fail(GOOD_TASK, NULL, "hidden.json", NULL, "cannot open");
    expect_fail(GOOD_TASK, "{\"groups\": [}", "hidden.json", NULL, "malformed JSON near line 1");
    expect_fail(GOOD_TASK, "[]", "hidden.json", NULL, "top level must be a JSON object");
    expect_fail(GOOD_TASK, "{}", "hidden.json", "groups", "must be an object keyed by group name");
}

static void test_hidden_groups(void **state)
{
    (void)state;
    hidden_fails("\"large\": {\"shapes\"", "\"huge\": {\"shapes\"", "groups.large",
                 "missing: every group needs hidden shapes");
    hidden_fails("\"large\": {\"shapes\"",
                 "\"extra\": {\"shapes\": [{\"rows\": 1, \"cols\": 1}]}, \"large\": {\"shapes\"", "groups",
                 "'extra' is not a group of task.json");
    hidden_fails("{\"shapes\": [{\"rows\": 17, \"cols\": 65}]}", "{\"random\": {}}", "groups.large.shapes",
                 "must be an array of 1 to 48 shapes");
    hidden_fails("{\"rows\": 17, \"cols\": 65}", "{\"rows\": 17, \"cols\": 65, \"depth\": 1}",
                 "groups.large.shapes[0]", "unknown dim 'depth'");
    hidden_fails("{\"rows\": 1, \"cols\": 3}", "{\"rows\": 1}", "groups.small.shapes[1]",
                 "missing or non-numeric size of dim 'cols'");
    /* each dim fits, the product does not: an error, not a wrapped size */
    hidden_fails("{\"rows\": 17, \"cols\": 65}", "{\"rows\": 1073741823, \"cols\": 1073741823}",
                 NULL, "group 'large': at rows=1073741823 cols=1073741823, buffer 'x' would take "
                 "more than 1099511627776 bytes");
    hidden_fails("\"rows\": [1, 8], \"cols\": [1, 20]", "\"rows\": [1, 1073741823], \"cols\": [1, 1073741823]", NULL,
                 "buffer 'x' would take more than");
}

static void test_hidden_cover(void **state)
{
    (void)state;
    /* 65 was the only cols beyond the visible 64 */
    hidden_fails("{\"rows\": 17, \"cols\": 65}", "{\"rows\": 17, \"cols\": 64}", "groups.large",
                 "no hidden size of dim 'cols' exceeds the largest visible one");
    hidden_fails("{\"rows\": 5, \"cols\": 17}", "{\"rows\": 4, \"cols\": 17}", "groups.small",
                 "no hidden size of dim 'rows' exceeds");
    /* every hidden cols a multiple of 4 */
    hidden_fails("[{\"rows\": 5, \"cols\": 17}, {\"rows\": 1, \"cols\": 3}]",
                 "[{\"rows\": 5, \"cols\": 20}, {\"rows\": 1, \"cols\": 4}]", "groups.small",
                 "every hidden size of dim 'cols' is a multiple of 4; add odd sizes");
    hidden_fails("{\"rows\": 17, \"cols\": 65}", "{\"rows\": 20, \"cols\": 65}", "groups.large",
                 "every hidden size of dim 'rows' is a multiple of 4");
}

static void test_hidden_random(void **state)
{
    (void)state;
    hidden_fails("\"count\": 2", "\"count\": 17", "groups.small.random",
                 "count must be an integer from 0 to 16");
    hidden_fails("\"count\": 2", "\"count\": -1", "groups.small.random", "count must be an integer");
    hidden_fails("\"count\": 2", "\"count\": 1.5", "groups.small.random", "count must be an integer");
    hidden_fails("\"count\": 2, ", "", "groups.small.random.count", "missing");
    hidden_fails("\"rows\": [1, 8]", "\"rows\": [9, 8]", "groups.small.random",
                 "range of dim 'rows' must satisfy 1 <= low <= high <= 2^30");
    hidden_fails("\"rows\": [1, 8]", "\"rows\": [0, 8]", "groups.small.random", "range of dim 'rows'");
    hidden_fails("\"cols\": [1, 20]", "\"cols\": [1, 2000000000]", "groups.small.random",
                 "range of dim 'cols'");
    hidden_fails("\"cols\": [1, 20]", "\"cols\": [1, 1e300]", "groups.small.random", "range of dim 'cols'");
    hidden_fails("\"cols\": [1, 20]", "\"cols\": [1.5, 20]", "groups.small.random", "range of dim 'cols'");
    hidden_fails(", \"cols\": [1, 20]", "", "groups.small.random", "ranges needs [low, high] for dim 'cols'");
    hidden_fails("\"rows\": [1, 8]", "\"rows\": [1]", "groups.small.random",
                 "ranges needs [low, high] for dim 'rows'");
    hidden_fails("\"random\": {", "\"random\": 3, \"old\": {", "groups.small.random", "must be an object");
}

/* ---- limits ----------------------------------------------------------- */

static void test_file_too_large(void **state)
{
    (void)state;
    /* valid JSON, padded with whitespace past 1 MiB */
    size_t pad = (1u << 20) + 16;
    char *big = malloc(sizeof GOOD_TASK + pad);
    assert_non_null(big);
    memcpy(big, GOOD_TASK, sizeof GOOD_TASK - 1);
    memset(big + sizeof GOOD_TASK - 1, ' ', pad);
    big[sizeof GOOD_TASK - 1 + pad] = '\0';
    expect_fail(big, GOOD_HIDDEN, "task.json", NULL, "too large (limit 1 MiB)");
    /* the same padding in hidden.json */
    char *bigh = malloc(sizeof GOOD_HIDDEN + pad);
    assert_non_null(bigh);
    memcpy(bigh, GOOD_HIDDEN, sizeof GOOD_HIDDEN - 1);
    memset(bigh + sizeof GOOD_HIDDEN - 1, ' ', pad);
    bigh[sizeof GOOD_HIDDEN - 1 + pad] = '\0';
    expect_fail(GOOD_TASK, bigh, "hidden.json", NULL, "too large (limit 1 MiB)");
    free(big);
    free(bigh);
}

static void test_missing_dir(void **state)
{
    (void)state;
    kiln_task *t = malloc(sizeof *t);
    kiln_error err;
    assert_non_null(t);
    assert_int_equal(kiln_task_load("/nonexistent/kiln/task", t, &err), -1);
    assert_non_null(strstr(err.msg, "/nonexistent/kiln/task"));
    free(t);
}

/* ---- the CUDA backend ------------------------------------------------- */

/* GOOD_TASK with a CUDA backend too: dtypes and baseline for both. */
static char *with_cuda(const char *cuda_dtypes, const char *extra_tol)
{
    char dts[256], tol[256];
    snprintf(dts, sizeof dts, "\"dtypes\": {\"cpu\": [\"f32\"], \"cuda\": %s}", cuda_dtypes);
    snprintf(tol, sizeof tol, "\"dtypes\": {\"f32\": {\"ulps\": 4, \"per_sqrt\": 1.5, \"per_n\": 0.25}%s}",
             extra_tol);
    char *a = replace(GOOD_TASK, "\"dtypes\": {\"cpu\": [\"f32\"]}", dts);
    char *b = replace(a, "\"dtypes\": {\"f32\": {\"ulps\": 4, \"per_sqrt\": 1.5, \"per_n\": 0.25}}", tol);
    char *c = replace(b, "\"baseline\": {\"cpu\": \"base/baseline.c\"}",
                      "\"baseline\": {\"cpu\": \"base/baseline.c\", \"cuda\": \"base/baseline.cu\"}");
    free(a);
    free(b);
    return c;
}

static void test_cuda_backend(void **state)
{
    (void)state;
    char *text = with_cuda("[\"f32\", \"f16\", \"bf16\"]",
                           ", \"f16\": {\"ulps\": 2, \"per_n\": 0.001}, \"bf16\": {\"ulps\": 2}");
    char *dir = make_tmpdir();
    write_task(dir, text, GOOD_HIDDEN);
    kiln_task *t = malloc(sizeof *t);
    kiln_error err;
    assert_non_null(t);
    if (kiln_task_load(dir, t, &err) != 0)
        fail_msg("cuda task: %s", err.msg);
    assert_int_equal(t->ncpu_dtypes, 1);
    assert_int_equal(t->ncuda_dtypes, 3);
    assert_int_equal(t->cuda_dtypes[0], KILN_DT_F32);
    assert_int_equal(t->cuda_dtypes[1], KILN_DT_F16);
    assert_int_equal(t->cuda_dtypes[2], KILN_DT_BF16);
    assert_true(kiln_task_supports_backend(t, "cuda", KILN_DT_BF16));
    assert_true(kiln_task_supports_backend(t, "cuda", KILN_DT_F32));
    assert_false(kiln_task_supports_backend(t, "cpu", KILN_DT_BF16));
    assert_false(kiln_task_supports(t, KILN_DT_F16));     /* the CPU backend */
    assert_true(kiln_task_supports(t, KILN_DT_F32));
    assert_non_null(kiln_task_tolerance(t, KILN_DT_F16));
    assert_true(kiln_task_tolerance(t, KILN_DT_F16)->per_n == 0.001);
    char real[PATH_MAX], want[PATH_MAX + 32];
    assert_non_null(realpath(dir, real));
    snprintf(want, sizeof want, "%s/base/baseline.cu", real);
    assert_string_equal(t->baseline_cuda, want);
    snprintf(want, sizeof want, "%s/base/baseline.c", real);
    assert_string_equal(t->baseline_cpu, want);
    free(t);
    free(text);
    rm_tree(dir);
}

static void test_cuda_only(void **state)
{
    (void)state;
    char *a = replace(GOOD_TASK, "\"dtypes\": {\"cpu\": [\"f32\"]}", "\"dtypes\": {\"cuda\": [\"f32\"]}");
    char *b = replace(a, "\"baseline\": {\"cpu\": \"base/baseline.c\"}",
                      "\"baseline\": {\"cuda\": \"base/baseline.cu\"}");
    kiln_task *t = malloc(sizeof *t);
    kiln_error err;
    assert_non_null(t);
    if (load_text(b, GOOD_HIDDEN, t, &err) != 0)
        fail_msg("cuda-only task: %s", err.msg);
    assert_int_equal(t->ncpu_dtypes, 0);
    assert_int_equal(t->ncuda_dtypes, 1);
    assert_string_equal(t->baseline_cpu, "");
    assert_int_equal(t->baseline_cuda[0], '/');
    assert_false(kiln_task_supports(t, KILN_DT_F32));
    assert_true(kiln_task_supports_backend(t, "cuda", KILN_DT_F32));
    /* the reference is still the CPU one, and required */
    assert_int_equal(t->reference_cpu[0], '/');
    /* a CPU baseline without CPU dtypes */
    char *c = replace(a, "\"baseline\": {\"cpu\": \"base/baseline.c\"}",
                      "\"baseline\": {\"cpu\": \"base/baseline.c\", \"cuda\": \"base/baseline.cu\"}");
    expect_fail(c, GOOD_HIDDEN, "task.json", "baseline.cpu", "a baseline, but dtypes.cpu lists no dtypes");
    /* and no CUDA baseline */
    char *d = replace(a, "\"baseline\": {\"cpu\": \"base/baseline.c\"}", "\"baseline\": {}");
    expect_fail(d, GOOD_HIDDEN, "task.json", "baseline.cuda", "missing (dtypes.cuda lists dtypes)");
    free(t);
    free(a);
    free(b);
    free(c);
    free(d);
}

static void test_cuda_errors(void **state)
{
    (void)state;
    char *text;
    /* every CUDA dtype needs a tolerance */
    text = with_cuda("[\"f32\", \"bf16\"]", "");
    expect_fail(text, GOOD_HIDDEN, "task.json", "tolerance.dtypes", "no tolerance for dtype bf16");
    free(text);
    /* kiln_cuda.h knows f32, f16 and bf16 only */
    text = with_cuda("[\"f64\"]", ", \"f64\": {\"ulps\": 2}");
    expect_fail(text, GOOD_HIDDEN, "task.json", "dtypes.cuda", "'f64' is not a CUDA dtype (f32, f16, bf16)");
    free(text);
    text = with_cuda("[\"i32\"]", "");
    expect_fail(text, GOOD_HIDDEN, "task.json", "dtypes.cuda", "'i32' is not a float dtype");
    free(text);
    text = with_cuda("[]", "");
    expect_fail(text, GOOD_HIDDEN, "task.json", "dtypes.cuda", "must be an array of 1 to 4 dtypes");
    free(text);
    text = with_cuda("\"f16\"", "");
    expect_fail(text, GOOD_HIDDEN, "task.json", "dtypes.cuda", "must be an array of 1 to 4 dtypes");
    free(text);
    text = with_cuda("[\"f16\", \"f16\"]", ", \"f16\": {\"ulps\": 2}");
    expect_fail(text, GOOD_HIDDEN, "task.json", "dtypes.cuda", "duplicate dtype 'f16'");
    free(text);
    /* CUDA dtypes but no CUDA baseline; a CUDA baseline but no CUDA dtypes */
    task_fails("\"dtypes\": {\"cpu\": [\"f32\"]}", "\"dtypes\": {\"cpu\": [\"f32\"], \"cuda\": [\"f32\"]}",
               "baseline.cuda", "missing (dtypes.cuda lists dtypes)");
    task_fails("\"baseline\": {\"cpu\": \"base/baseline.c\"}",
               "\"baseline\": {\"cpu\": \"base/baseline.c\", \"cuda\": \"base/baseline.cu\"}", "baseline.cuda",
               "a baseline, but dtypes.cuda lists no dtypes");
    task_fails("\"baseline\": {\"cpu\": \"base/baseline.c\"}",
               "\"baseline\": {\"cpu\": \"base/baseline.c\", \"gpu\": \"base/baseline.cu\"}", "baseline.gpu",
               "unknown backend 'gpu' (cpu, cuda)");
    task_fails("\"baseline\": {\"cpu\": \"base/baseline.c\"}", "\"baseline\": \"base/baseline.c\"", "baseline",
               "must be an object");
    /* a CUDA baseline that is not there */
    text = with_cuda("[\"f32\"]", "");
    char *gone = replace(text, "\"base/baseline.cu\"", "\"base/gone.cu\"");
    expect_fail(gone, GOOD_HIDDEN, "task.json", "baseline.cuda", "file 'base/gone.cu' not found");
    char *num = replace(text, "\"base/baseline.cu\"", "7");
    expect_fail(num, GOOD_HIDDEN, "task.json", "baseline.cuda", "must be a string");
    free(text);
    free(gone);
    free(num);
}

/* A CUDA reference, the built-in cuBLAS baseline and a starter. */
static void test_cuda_reference_and_builtin(void **state)
{
    (void)state;
    kiln_task *t = malloc(sizeof *t);
    kiln_error err;
    assert_non_null(t);
    /* A CUDA-only task may have a CUDA reference instead of the C one. */
    char *a = replace(GOOD_TASK, "\"dtypes\": {\"cpu\": [\"f32\"]}", "\"dtypes\": {\"cuda\": [\"f32\"]}");
    char *b = replace(a, "\"baseline\": {\"cpu\": \"base/baseline.c\"}",
                      "\"baseline\": {\"cuda\": \"base/baseline.cu\"}");
    char *c = replace(b, "\"reference\": {\"cpu\": \"reference.c\"}",
                      "\"reference\": {\"cuda\": \"base/baseline.cu\"}");
    if (load_text(c, GOOD_HIDDEN, t, &err) != 0)
        fail_msg("CUDA reference: %s", err.msg);
    assert_string_equal(t->reference_cpu, "");
    assert_non_null(strstr(t->reference_cuda, "/base/baseline.cu"));
    assert_string_equal(t->starter_cuda, t->baseline_cuda);   /* no starter: the baseline */
    char *d = replace(b, "\"reference\": {\"cpu\": \"reference.c\"}", "\"reference\": {}");
    expect_fail(d, GOOD_HIDDEN, "task.json", "reference.cpu", "unless there is a CUDA one");
    char *e = replace(GOOD_TASK, "\"reference\": {\"cpu\": \"reference.c\"}",
                      "\"reference\": {\"cuda\": \"base/baseline.cu\"}");
    expect_fail(e, GOOD_HIDDEN, "task.json", "reference.cpu", "needed for the CPU backend");
    char *f = replace(GOOD_TASK, "\"reference\": {\"cpu\": \"reference.c\"}",
                      "\"reference\": {\"cpu\": \"reference.c\", \"cuda\": \"base/baseline.cu\"}");
    expect_fail(f, GOOD_HIDDEN, "task.json", "reference.cuda", "dtypes.cuda lists no dtypes");
    /* "cublas" is only for gemm-shaped tasks */
    char *g = replace(b, "\"cuda\": \"base/baseline.cu\"}", "\"cuda\": \"cublas\"}");
    expect_fail(g, GOOD_HIDDEN, "task.json", "baseline.cuda", "\"cublas\" needs args (a, b, c, M, N, K)");
    /* The real gemm task: CUDA reference, cuBLAS, a starter to search from. */
    if (kiln_task_load(KILN_TASKS_DIR "/gemm", t, &err) != 0)
        fail_msg("gemm: %s", err.msg);
    assert_string_equal(t->baseline_cuda_builtin, KILN_BUILTIN_CUBLAS);
    assert_string_equal(t->baseline_cuda, "");
    assert_string_equal(t->reference_cpu, "");
    assert_non_null(strstr(t->reference_cuda, "/gemm/reference.cu"));
    assert_non_null(strstr(t->starter_cuda, "/kernels/gemm/cuda/starter.cu"));
    assert_false(kiln_task_supports(t, KILN_DT_F32));
    assert_true(kiln_task_supports_backend(t, "cuda", KILN_DT_BF16));
    char sig[512];
    kiln_task_cuda_params(t, sig, sizeof sig);
    assert_string_equal(sig, "(const kiln_t *a, const kiln_t *b, kiln_t *c, int M, int N, int K)");
    free(t);
    free(a);
    free(b);
    free(c);
    free(d);
    free(e);
    free(f);
    free(g);
}

/* ---- shape groups per backend: cuda_groups -------------------------- */

/* with_cuda's task plus "cuda_groups" (a "large" of its own and a "big"),
 * and hidden.json with their hidden shapes. */
static const char CUDA_GROUPS[] =
    "  \"default_group\": \"large\",\n"
    "  \"cuda_groups\": {\n"
    "    \"large\": {\"visible\": [{\"rows\": 64, \"cols\": 256}]},\n"
    "    \"big\": {\"visible\": [{\"rows\": 1024, \"cols\": 4096}, {\"rows\": 8, \"cols\": 8192}]}\n"
    "  },\n"
    "  \"cuda_default_group\": \"big\",\n";

static const char CUDA_HIDDEN[] =
    "{\n"
    "  \"groups\": {\n"
    "    \"small\": {\"shapes\": [{\"rows\": 5, \"cols\": 17}, {\"rows\": 1, \"cols\": 3}],\n"
    "              \"random\": {\"count\": 2, \"ranges\": {\"rows\": [1, 8], \"cols\": [1, 20]}}},\n"
    "    \"large\": {\"shapes\": [{\"rows\": 17, \"cols\": 65}]}\n"
    "  },\n"
    "  \"cuda_groups\": {\n"
    "    \"large\": {\"shapes\": [{\"rows\": 65, \"cols\": 257}]},\n"
    "    \"big\": {\"shapes\": [{\"rows\": 1025, \"cols\": 4099}, {\"rows\": 1, \"cols\": 8193}],\n"
    "            \"random\": {\"count\": 3, \"ranges\": {\"rows\": [1, 1100], \"cols\": [8, 9000]}}}\n"
    "  }\n"
    "}\n";

static char *with_cuda_groups(void)
{
    char *a = with_cuda("[\"f32\", \"bf16\"]", ", \"bf16\": {\"ulps\": 2}");
    char *b = replace(a, "  \"default_group\": \"large\",\n", CUDA_GROUPS);
    free(a);
    return b;
}

/* The cuda_groups task with one replacement in task.json (or hidden.json)
 * must fail there. */
static void cuda_task_fails(const char *from, const char *to, const char *field, const char *phrase)
{
    char *base = with_cuda_groups();
    char *text = replace(base, from, to);
    expect_fail(text, CUDA_HIDDEN, "task.json", field, phrase);
    free(base);
    free(text);
}

static void cuda_hidden_fails(const char *from, const char *to, const char *field, const char *phrase)
{
    char *base = with_cuda_groups();
    char *text = replace(CUDA_HIDDEN, from, to);
    expect_fail(base, text, "hidden.json", field, phrase);
    free(base);
    free(text);
}

static void test_cuda_groups(void **state)
{
    (void)state;
    char *text = with_cuda_groups();
    kiln_task *t = malloc(sizeof *t);
    kiln_error err;
    assert_non_null(t);
    if (load_text(text, CUDA_HIDDEN, t, &err) != 0)
        fail_msg("cuda_groups: %s", err.msg);
    assert_true(t->has_cuda_groups);
    assert_int_equal(t->ngroups, 4);
    const kiln_group *g = t->groups;
    /* "groups" first, serving the CPU alone; then "cuda_groups" */
    assert_string_equal(g[0].name, "small");
    assert_int_equal(g[0].backends, KILN_GROUP_CPU);
    assert_string_equal(g[1].name, "large");
    assert_int_equal(g[1].backends, KILN_GROUP_CPU);
    assert_string_equal(g[2].name, "large");
    assert_int_equal(g[2].backends, KILN_GROUP_CUDA);
    assert_string_equal(g[3].name, "big");
    assert_int_equal(g[3].backends, KILN_GROUP_CUDA);
    /* one name, two groups: the backend decides */
    assert_int_equal(kiln_task_group_for(t, "cpu", "large"), 1);
    assert_int_equal(kiln_task_group_for(t, "cuda", "large"), 2);
    assert_int_equal(kiln_task_group_for(t, "cuda", "big"), 3);
    assert_int_equal(kiln_task_group_for(t, "cpu", "big"), -1);
    assert_int_equal(kiln_task_group_for(t, "cuda", "small"), -1);
    assert_int_equal(kiln_task_group_for(t, "tpu", "large"), -1);
    assert_int_equal(kiln_task_group_for(t, NULL, "large"), -1);
    assert_int_equal(kiln_task_group_for(t, "cuda", NULL), -1);
    assert_int_equal(kiln_task_group(t, "large"), 1);           /* the CPU meaning */
    assert_int_equal(kiln_task_group(t, "big"), -1);
    assert_int_equal(t->default_group, 1);
    assert_int_equal(kiln_task_default_group_for(t, "cpu"), 1);
    assert_int_equal(kiln_task_default_group_for(t, "cuda"), 3);
    assert_int_equal(kiln_task_default_group_for(t, "tpu"), -1);
    /* shapes of each section, hidden ones from the matching hidden section */
    assert_int_equal(g[1].visible[0].d[1], 64);
    assert_int_equal(g[1].hidden[0].d[1], 65);
    assert_int_equal(g[2].nvisible, 1);
    assert_int_equal(g[2].visible[0].d[1], 256);
    assert_int_equal(g[2].nhidden, 1);
    assert_int_equal(g[2].hidden[0].d[1], 257);
    assert_int_equal(g[2].nrandom, 0);
    assert_int_equal(g[3].nvisible, 2);
    assert_int_equal(g[3].visible[1].d[1], 8192);
    assert_int_equal(g[3].nhidden, 2);
    assert_int_equal(g[3].hidden[1].d[1], 8193);
    assert_int_equal(g[3].nrandom, 3);
    assert_int_equal(g[3].range_hi[0], 1100);
    assert_int_equal(g[3].range_hi[1], 9000);
    free(text);

    /* without cuda_groups, groups serve both backends */
    text = with_cuda("[\"f32\"]", "");
    if (load_text(text, GOOD_HIDDEN, t, &err) != 0)
        fail_msg("no cuda_groups: %s", err.msg);
    assert_false(t->has_cuda_groups);
    assert_int_equal(t->ngroups, 2);
    assert_int_equal(t->groups[0].backends, KILN_GROUP_CPU | KILN_GROUP_CUDA);
    assert_int_equal(kiln_task_group_for(t, "cuda", "small"), 0);
    assert_int_equal(kiln_task_group_for(t, "cpu", "small"), 0);
    assert_int_equal(kiln_task_default_group_for(t, "cuda"), 1);
    assert_int_equal(kiln_task_default_group_for(t, "cpu"), 1);
    free(text);

    /* a CUDA-only task may give cuda_groups alone: no CPU group at all */
    char *a = replace(GOOD_TASK, "\"dtypes\": {\"cpu\": [\"f32\"]}", "\"dtypes\": {\"cuda\": [\"f32\"]}");
    char *b = replace(a, "\"baseline\": {\"cpu\": \"base/baseline.c\"}",
                      "\"baseline\": {\"cuda\": \"base/baseline.cu\"}");
    char *c = replace(b, "  \"groups\": {\n"
                         "    \"small\": {\"visible\": [{\"rows\": 2, \"cols\": 8}, {\"rows\": 4, \"cols\": 16}]},\n"
                         "    \"large\": {\"visible\": [{\"rows\": 16, \"cols\": 64}]}\n"
                         "  },\n"
                         "  \"default_group\": \"large\",\n",
                      "  \"cuda_groups\": {\"big\": {\"visible\": [{\"rows\": 1024, \"cols\": 4096}]}},\n"
                      "  \"cuda_default_group\": \"big\",\n");
    static const char cuda_only_hidden[] =
        "{\"cuda_groups\": {\"big\": {\"shapes\": [{\"rows\": 1025, \"cols\": 4097}]}}}";
    if (load_text(c, cuda_only_hidden, t, &err) != 0)
        fail_msg("cuda_groups alone: %s", err.msg);
    assert_int_equal(t->ngroups, 1);
    assert_int_equal(t->groups[0].backends, KILN_GROUP_CUDA);
    assert_int_equal(t->default_group, -1);
    assert_int_equal(kiln_task_default_group_for(t, "cpu"), -1);
    assert_int_equal(kiln_task_default_group_for(t, "cuda"), 0);
    assert_int_equal(kiln_task_group(t, "big"), -1);
    assert_int_equal(kiln_task_group_for(t, "cuda", "big"), 0);
    /* ... and then no groups, default_group or hidden groups */
    char *d = replace(c, "  \"cuda_default_group\": \"big\",\n",
                      "  \"cuda_default_group\": \"big\",\n  \"default_group\": \"big\",\n");
    expect_fail(d, cuda_only_hidden, "task.json", "default_group", "given, but there are no groups");
    char *e = replace(c, "  \"cuda_groups\": {",
                      "  \"groups\": {\"big\": {\"visible\": [{\"rows\": 1, \"cols\": 1}]}},\n"
                      "  \"default_group\": \"big\",\n  \"cuda_groups\": {");
    expect_fail(e, cuda_only_hidden, "task.json", "groups", "these groups would serve nothing");
    expect_fail(c, "{\"groups\": {}, \"cuda_groups\": {\"big\": {\"shapes\": [{\"rows\": 1025, \"cols\": 4097}]}}}",
                "hidden.json", "groups", "task.json has no groups");
    free(a);
    free(b);
    free(c);
    free(d);
    free(e);
    free(t);
}

static void test_cuda_groups_errors(void **state)
{
    (void)state;
    /* task.json */
    cuda_task_fails("  \"cuda_default_group\": \"big\",\n", "", "cuda_default_group", "missing");
    cuda_task_fails("\"cuda_default_group\": \"big\"", "\"cuda_default_group\": \"small\"",
                    "cuda_default_group", "no cuda group named 'small'");   /* a CPU group only */
    cuda_task_fails("\"cuda_default_group\": \"big\"", "\"cuda_default_group\": 3",
                    "cuda_default_group", "must be a string");
    cuda_task_fails("\"default_group\": \"large\"", "\"default_group\": \"big\"", "default_group",
                    "no group named 'big'");                                /* a CUDA group only */
    cuda_task_fails("\"cuda_groups\": {\n", "\"cuda_groups\": 7, \"unused\": {\n", "cuda_groups",
                    "must be an object of named shape groups");
    cuda_task_fails("\"big\": {\"visible\"", "\"sm-all\": {\"visible\"", "cuda_groups.sm-all",
                    "group name must be an identifier");
    cuda_task_fails("\"big\": {\"visible\"", "\"large\": {\"visible\"", "cuda_groups.large",
                    "duplicate group 'large'");
    cuda_task_fails("{\"rows\": 8, \"cols\": 8192}", "{\"rows\": 8}", "cuda_groups.big.visible[1]",
                    "missing or non-numeric size of dim 'cols'");
    cuda_task_fails("\"big\": {\"visible\": [{\"rows\": 1024, \"cols\": 4096}, {\"rows\": 8, \"cols\": 8192}]}",
                    "\"big\": {}", "cuda_groups.big.visible", "must be an array of 1 to 48 shapes");
    /* at most 8 groups in each section: "large", "big" and g0..gN */
    char extra[1024] = "", hidden_extra[1024] = "";
    for (int i = 0; i < 7; i++) {
        char one[128];
        snprintf(one, sizeof one, ",\n    \"g%d\": {\"visible\": [{\"rows\": 1, \"cols\": 1}]}", i);
        strcat(extra, one);
        snprintf(one, sizeof one, ",\n    \"g%d\": {\"shapes\": [{\"rows\": 3, \"cols\": 3}]}", i);
        strcat(hidden_extra, one);
    }
    const char *big = "{\"rows\": 8, \"cols\": 8192}]}";
    char big_more[1200];
    snprintf(big_more, sizeof big_more, "%s%s", big, extra);
    cuda_task_fails(big, big_more, "cuda_groups", "too many groups (limit 8)");
    /* eight load (with the CPU groups, ten in all) */
    strstr(big_more, ",\n    \"g6\"")[0] = '\0';
    strstr(hidden_extra, ",\n    \"g6\"")[0] = '\0';
    char *base = with_cuda_groups();
    char *eight = replace(base, big, big_more);
    const char *hbig = "\"cols\": [8, 9000]}}}";
    char hbig_more[1200];
    snprintf(hbig_more, sizeof hbig_more, "%s%s", hbig, hidden_extra);
    char *eight_hidden = replace(CUDA_HIDDEN, hbig, hbig_more);
    kiln_task *t = malloc(sizeof *t);
    kiln_error err;
    assert_non_null(t);
    if (load_text(eight, eight_hidden, t, &err) != 0)
        fail_msg("eight cuda groups: %s", err.msg);
    assert_int_equal(t->ngroups, 10);
    assert_int_equal(kiln_task_group_for(t, "cuda", "g5"), 9);
    free(t);
    free(eight);
    free(eight_hidden);
    free(base);
    /* cost expressions are evaluated at the CUDA groups' shapes too */
    cuda_task_fails("\"flops\": \"3 * rows * cols\"", "\"flops\": \"3 * rows / (cols - 4096)\"",
                    "cost.flops", "division by zero");
    /* the backends' shape sections need their dtypes */
    char *cpu_only = replace(GOOD_TASK, "  \"default_group\": \"large\",\n", CUDA_GROUPS);
    expect_fail(cpu_only, CUDA_HIDDEN, "task.json", "cuda_groups", "given, but dtypes.cuda lists no dtypes");
    free(cpu_only);
    char *no_cuda = with_cuda("[\"f32\"]", "");
    char *stray = replace(no_cuda, "  \"default_group\": \"large\",\n",
                          "  \"default_group\": \"large\",\n  \"cuda_default_group\": \"large\",\n");
    expect_fail(stray, GOOD_HIDDEN, "task.json", "cuda_default_group", "given, but there are no cuda_groups");
    expect_fail(no_cuda, CUDA_HIDDEN, "hidden.json", "cuda_groups", "task.json has no cuda_groups");
    free(stray);
    free(no_cuda);
    /* a CPU backend still needs groups */
    cuda_task_fails("\"groups\": {\n    \"small\"", "\"groupz\": {\n    \"small\"", "groups",
                    "missing: the CPU backend needs groups (cuda_groups serve CUDA only)");

    /* hidden.json */
    cuda_hidden_fails("    \"big\": {\"shapes\"", "    \"bog\": {\"shapes\"", "cuda_groups.big",
                      "missing: every cuda group needs hidden shapes");
    cuda_hidden_fails("  \"cuda_groups\": {", "  \"cuda_groupz\": {", "cuda_groups",
                      "must be an object keyed by group name");
    cuda_hidden_fails("    \"large\": {\"shapes\": [{\"rows\": 65, \"cols\": 257}]},",
                      "    \"large\": {\"shapes\": [{\"rows\": 65, \"cols\": 257}]},\n"
                      "    \"small\": {\"shapes\": [{\"rows\": 5, \"cols\": 17}]},",
                      "cuda_groups", "'small' is not a cuda group of task.json");
    cuda_hidden_fails("{\"rows\": 65, \"cols\": 257}", "{\"rows\": 65, \"cols\": 256}", "cuda_groups.large",
                      "no hidden size of dim 'cols' exceeds the largest visible one");
    cuda_hidden_fails("[{\"rows\": 1025, \"cols\": 4099}, {\"rows\": 1, \"cols\": 8193}]",
                      "[{\"rows\": 1028, \"cols\": 4100}, {\"rows\": 4, \"cols\": 8196}]", "cuda_groups.big",
                      "every hidden size of dim 'rows' is a multiple of 4");
    cuda_hidden_fails("{\"rows\": 1, \"cols\": 8193}", "{\"rows\": 1, \"colz\": 8193}",
                      "cuda_groups.big.shapes[1]", "missing or non-numeric size of dim 'cols'");
    cuda_hidden_fails("\"count\": 3", "\"count\": 17", "cuda_groups.big.random",
                      "count must be an integer from 0 to 16");
    /* the CPU groups' hidden shapes do not stand in for a CUDA group's */
    cuda_hidden_fails("    \"large\": {\"shapes\": [{\"rows\": 65, \"cols\": 257}]},\n", "",
                      "cuda_groups.large", "missing: every cuda group needs hidden shapes");
}

/* ---- "K*dim" shape entries ------------------------------------------- */

static void test_shape_multiple(void **state)
{
    (void)state;
    char *text = replace(GOOD_TASK, "\"shape\": [\"cols\"]", "\"shape\": [\"2*cols\"]");
    kiln_task *t = malloc(sizeof *t);
    kiln_error err;
    assert_non_null(t);
    if (load_text(text, GOOD_HIDDEN, t, &err) != 0)
        fail_msg("2*cols: %s", err.msg);
    const kiln_arg *w = &t->args[1];
    assert_int_equal(w->rank, 1);
    assert_int_equal(w->shape[0], 1);
    assert_int_equal(w->shape_mul[0], 2);
    kiln_shape s = {{3, 5}};
    assert_int_equal(kiln_arg_elems(w, &s), 10);
    assert_int_equal(kiln_arg_elems(&t->args[0], &s), 15);   /* plain dims count once */
    assert_int_equal(t->args[0].shape_mul[0], 1);
    free(t);
    free(text);
    /* spaces are fine, so is 1*; 1024 is the largest factor */
    task_loads("\"shape\": [\"cols\"]", "\"shape\": [\"3 * cols\"]");
    task_loads("\"shape\": [\"cols\"]", "\"shape\": [\"1*cols\"]");
    task_loads("\"shape\": [\"cols\"]", "\"shape\": [\"rows\", \"1024*cols\"]");
    static const char *bad_forms[] = {"0*cols", "1025*cols", "2*colz", "x*cols", "2*", "-2*cols",
                                      "2.5*cols", "cols*2", " 2*cols", "2**cols"};
    for (size_t i = 0; i < sizeof bad_forms / sizeof bad_forms[0]; i++) {
        char to[64], phrase[96];
        snprintf(to, sizeof to, "\"shape\": [\"%s\"]", bad_forms[i]);
        snprintf(phrase, sizeof phrase, "'%s' is not a dim or K*dim", bad_forms[i]);
        task_fails("\"shape\": [\"cols\"]", to, "args[1].shape", phrase);
    }
}

/* ---- the built-in tasks ------------------------------------------------ */

static void test_builtin_tasks(void **state)
{
    (void)state;
    static const char *names[] = {"rmsnorm", "softmax", "layernorm", "rope", "rope_interleaved",
                                  "add_rmsnorm", "cross_entropy"};
    kiln_task *t = malloc(sizeof *t);
    kiln_error err;
    assert_non_null(t);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char dir[PATH_MAX];
        snprintf(dir, sizeof dir, "%s/%s", KILN_TASKS_DIR, names[i]);
        if (kiln_task_load(dir, t, &err) != 0)
            fail_msg("loading %s: %s", names[i], err.msg);
        assert_true(kiln_task_supports(t, KILN_DT_F32));
        assert_true(kiln_task_supports_backend(t, "cuda", KILN_DT_F16));
        assert_true(kiln_task_supports_backend(t, "cuda", KILN_DT_BF16));
        assert_non_null(strstr(t->baseline_cuda, "/cuda/starter.cu"));
        assert_non_null(strstr(t->baseline_cpu, "/cpu/starter.c"));
        for (int d = 0; d < t->ncuda_dtypes; d++)
            assert_non_null(kiln_task_tolerance(t, t->cuda_dtypes[d]));
    }
    /* rope: x is [tokens, heads, 2*half_dim], cos [tokens, half_dim] */
    if (kiln_task_load(KILN_TASKS_DIR "/rope", t, &err) != 0)
        fail_msg("%s", err.msg);
    kiln_shape s = {{3, 5, 7}};
    assert_string_equal(t->args[0].name, "x");
    assert_int_equal(kiln_arg_elems(&t->args[0], &s), 3 * 5 * 14);
    assert_string_equal(t->args[1].name, "cos");
    assert_int_equal(kiln_arg_elems(&t->args[1], &s), 3 * 7);
    assert_int_equal(t->args[1].dtype, KILN_DT_F32);
    assert_false(t->args[1].dtype_is_var);
    char sig[512];
    kiln_task_cuda_params(t, sig, sizeof sig);
    assert_string_equal(sig, "(const kiln_t *x, const float *cos, const float *sin, kiln_t *y, "
                             "int tokens, int heads, int half_dim)");
    kiln_task_cpu_signature(t, KILN_DT_F32, sig, sizeof sig);
    assert_string_equal(sig, "void rope(const float *x, const float *cos, const float *sin, float *y, "
                             "int32_t tokens, int32_t heads, int32_t half_dim)");
    /* add_rmsnorm: two outputs; its cost split into reads and writes */
    if (kiln_task_load(KILN_TASKS_DIR "/add_rmsnorm", t, &err) != 0)
        fail_msg("%s", err.msg);
    kiln_task_cpu_signature(t, KILN_DT_F32, sig, sizeof sig);
    assert_string_equal(sig, "void add_rmsnorm(const float *x, const float *residual, const float *w, "
                             "float *r, float *y, int32_t rows, int32_t cols, float eps)");
    assert_true(t->cost_split);
    /* cross_entropy: i32 targets with an ignore index, an f32 loss whatever T */
    if (kiln_task_load(KILN_TASKS_DIR "/cross_entropy", t, &err) != 0)
        fail_msg("%s", err.msg);
    kiln_task_cuda_params(t, sig, sizeof sig);
    assert_string_equal(sig, "(const kiln_t *logits, const int *targets, float *loss, int rows, int vocab)");
    assert_true(kiln_arg_is_integer(&t->args[1]) && t->args[1].ignore_value == -100);
    /* the logits of the rows not at the ignore index (a tenth), the targets;
     * the losses written */
    kiln_shape ce = {{100, 128256}};
    double rd, wr;
    assert_int_equal(kiln_task_cost_rw(t, &ce, KILN_DT_BF16, &rd, &wr, &err), 0);
    assert_true(rd == 90.0 * 128256 * 2 + 100 * 4 && wr == 100.0 * 4);
    free(t);
}

/* Elements of all of a task's buffers at a shape, and its flops there. */
static double buffer_elems(const kiln_task *t, const kiln_shape *s)
{
    double n = 0;
    for (int a = 0; a < t->nargs; a++)
        if (t->args[a].kind == KILN_ARG_INPUT || t->args[a].kind == KILN_ARG_OUTPUT)
            n += (double)kiln_arg_elems(&t->args[a], s);
    return n;
}

static double flops_at(const kiln_task *t, const kiln_shape *s)
{
    double v = 0;
    kiln_error err;
    if (kiln_task_cost(t, t->cost_flops, s, t->cuda_dtypes[0], &v, &err) != 0)
        fail_msg("%s: flops: %s", t->name, err.msg);
    return v;
}

/* Every task with a CUDA backend has GPU-sized cuda_groups (small, decode,
 * prefill, large; prefill the default) while its CPU groups stay as they
 * were. small is the former prefill group, hidden shapes and ranges
 * included, so old figures and the CUDA plants' expectations still hold;
 * in the others at most 8 fixed hidden shapes stay within 1.5x the
 * group's largest visible one in elements and in flops, random ones too. */
static void test_builtin_cuda_groups(void **state)
{
    (void)state;
    static const char *names[] = {"rmsnorm", "softmax", "layernorm", "rope", "rope_interleaved", "gemm",
                                  "add_rmsnorm", "cross_entropy"};
    static const char *cuda_names[] = {"small", "decode", "prefill", "large"};
    kiln_task *t = malloc(sizeof *t);
    kiln_error err;
    assert_non_null(t);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char dir[PATH_MAX];
        snprintf(dir, sizeof dir, "%s/%s", KILN_TASKS_DIR, names[i]);
        if (kiln_task_load(dir, t, &err) != 0)
            fail_msg("loading %s: %s", names[i], err.msg);
        int gemm = strcmp(names[i], "gemm") == 0;
        assert_true(t->has_cuda_groups);
        assert_int_equal(kiln_task_default_group_for(t, "cuda"), kiln_task_group_for(t, "cuda", "prefill"));
        int ncpu = 0, ncuda = 0;
        for (int g = 0; g < t->ngroups; g++) {
            ncpu += (t->groups[g].backends & KILN_GROUP_CPU) != 0;
            ncuda += (t->groups[g].backends & KILN_GROUP_CUDA) != 0;
        }
        assert_int_equal(ncuda, gemm ? 5 : 4);   /* gemm: also "square" (4096^3 alone) */
        if (gemm) {   /* CUDA only: no CPU group */
            assert_int_equal(ncpu, 0);
            assert_int_equal(t->default_group, -1);
            assert_int_equal(kiln_task_group(t, "prefill"), -1);
        } else {      /* the CPU groups as they were; CUDA's small is the CPU prefill */
            assert_int_equal(ncpu, 2);
            int cd = kiln_task_group(t, "decode"), cp = kiln_task_group(t, "prefill");
            assert_true(cd >= 0 && cp >= 0);
            assert_int_equal(t->default_group, cp);
            const kiln_group *small = &t->groups[kiln_task_group_for(t, "cuda", "small")];
            const kiln_group *prefill = &t->groups[cp];
            assert_int_equal(small->nvisible, prefill->nvisible);
            assert_memory_equal(small->visible, prefill->visible, sizeof(kiln_shape) * (size_t)small->nvisible);
            assert_int_equal(small->nhidden, prefill->nhidden);
            assert_memory_equal(small->hidden, prefill->hidden, sizeof(kiln_shape) * (size_t)small->nhidden);
            assert_int_equal(small->nrandom, prefill->nrandom);
            assert_memory_equal(small->range_lo, prefill->range_lo, sizeof small->range_lo);
            assert_memory_equal(small->range_hi, prefill->range_hi, sizeof small->range_hi);
        }
        for (size_t k = 0; k < sizeof cuda_names / sizeof cuda_names[0]; k++) {
            int gi = kiln_task_group_for(t, "cuda", cuda_names[k]);
            if (gi < 0)
                fail_msg("%s: no cuda group %s", names[i], cuda_names[k]);
            const kiln_group *g = &t->groups[gi];
            assert_int_equal(g->backends, KILN_GROUP_CUDA);
            if (strcmp(g->name, "prefill") == 0)
                assert_true(g->nvisible <= (gemm ? 4 : 5));
            if (strcmp(g->name, "large") == 0)
                assert_true(g->nvisible <= 3);
            assert_int_equal(g->nrandom, 2);
            if (strcmp(g->name, "small") == 0)
                continue;
            assert_true(g->nhidden >= 5 && g->nhidden <= 8);
            double emax = 0, fmax = 0;
            for (int v = 0; v < g->nvisible; v++) {
                double e = buffer_elems(t, &g->visible[v]), f = flops_at(t, &g->visible[v]);
                emax = e > emax ? e : emax;
                fmax = f > fmax ? f : fmax;
            }
            kiln_shape hi = {{0}};
            for (int d = 0; d < t->ndims; d++)
                hi.d[d] = g->range_hi[d];
            for (int h = 0; h <= g->nhidden; h++) {
                const kiln_shape *s = h < g->nhidden ? &g->hidden[h] : &hi;
                char dims[128];
                kiln_shape_format(t, s, dims, sizeof dims);
                if (buffer_elems(t, s) > 1.505 * emax || flops_at(t, s) > 1.505 * fmax)
                    fail_msg("%s %s: %s %s beyond 1.5x the largest visible shape", names[i], g->name,
                             h < g->nhidden ? "hidden" : "random up to", dims);
                for (int v = 0; v < g->nvisible && h < g->nhidden; v++)
                    if (memcmp(s, &g->visible[v], sizeof *s) == 0)
                        fail_msg("%s %s: hidden %s is visible", names[i], g->name, dims);
            }
        }
    }
    free(t);
}

/* ---- integer inputs ------------------------------------------------------ */

/* GOOD_TASK with an i32 input t[rows] (targets in [0, cols - 1], 10% at
 * -100) before y, and a second output z[rows], then one more replacement
 * (from NULL: none). */
#define INT_ARG "{\"name\": \"t\", \"kind\": \"input\", \"dtype\": \"i32\", \"shape\": [\"rows\"]," \
    " \"init\": {\"dist\": \"integers\", \"low\": 0, \"high\": \"cols - 1\"," \
    " \"ignore\": {\"value\": -100, \"share\": 0.1}}},\n"
#define INT_VARIANTS "\"stability\": [\n" \
    "    {\"name\": \"last\", \"input\": \"t\", \"value\": \"cols - 1\"},\n" \
    "    {\"name\": \"none\", \"input\": \"t\", \"ignore_share\": 0},\n" \
    "    {\"name\": \"ends\", \"input\": \"t\", \"pattern\": \"extremes\"},\n"

static char *int_task(const char *from, const char *to)
{
    char *a = replace(GOOD_TASK, "    {\"name\": \"y\", \"kind\": \"output\"", "    " INT_ARG
                      "    {\"name\": \"z\", \"kind\": \"output\", \"dtype\": \"f32\", \"shape\": [\"rows\"]},\n"
                      "    {\"name\": \"y\", \"kind\": \"output\"");
    char *b = replace(a, "\"stability\": [\n", INT_VARIANTS);
    free(a);
    if (!from)
        return b;
    char *c = replace(b, from, to);
    free(b);
    return c;
}

static void int_fails(const char *from, const char *to, const char *field, const char *phrase)
{
    char *text = int_task(from, to);
    expect_fail(text, GOOD_HIDDEN, "task.json", field, phrase);
    free(text);
}

static void test_integer_inputs(void **state)
{
    (void)state;
    char *text = int_task(NULL, NULL);
    kiln_task *t = malloc(sizeof *t);
    kiln_error err;
    assert_non_null(t);
    if (load_text(text, GOOD_HIDDEN, t, &err) != 0)
        fail_msg("integer task: %s", err.msg);
    const kiln_arg *a = &t->args[2];
    assert_string_equal(a->name, "t");
    assert_true(kiln_arg_is_integer(a));
    assert_false(kiln_arg_is_integer(&t->args[0]));
    assert_int_equal(a->dtype, KILN_DT_I32);
    assert_int_equal(a->dist, KILN_DIST_INTEGERS);
    assert_string_equal(a->int_low, "0");
    assert_string_equal(a->int_high, "cols - 1");
    assert_true(a->has_ignore && a->ignore_value == -100 && a->ignore_share == 0.1);
    assert_int_equal(t->args[3].kind, KILN_ARG_OUTPUT);   /* z, a second output */
    assert_int_equal(t->nvariants, 5);
    assert_true(t->variants[0].has_value);
    assert_string_equal(t->variants[0].value, "cols - 1");
    assert_true(t->variants[1].ignore_share == 0);
    assert_int_equal(t->variants[2].pattern, KILN_PAT_EXTREMES);
    assert_true(t->variants[3].ignore_share < 0);   /* a float variant: the input's own */
    char sig[512];
    kiln_task_cpu_signature(t, KILN_DT_F32, sig, sizeof sig);
    assert_string_equal(sig, "void tnorm(const float *x, const float *w, const int32_t *t, float *z, "
                             "float *y, int32_t rows, int64_t cols, float eps)");
    kiln_task_cuda_params(t, sig, sizeof sig);
    assert_string_equal(sig, "(const kiln_t *x, const kiln_t *w, const int *t, float *z, kiln_t *y, "
                             "int rows, long long cols, float eps)");
    /* resolved at a shape: the bounds there; a variant's value is both ends */
    kiln_shape s = {{4, 16}};
    kiln_arg r;
    kiln_variant v;
    assert_int_equal(kiln_input_resolve(t, a, NULL, &s, &r, &v, &err), 0);
    assert_true(r.dist_a == 0 && r.dist_b == 15);
    assert_int_equal(kiln_input_resolve(t, a, &t->variants[0], &s, &r, &v, &err), 0);
    assert_true(r.dist_a == 15 && r.dist_b == 15 && v.set == 15 && r.ignore_share == 0.1);
    assert_int_equal(kiln_input_resolve(t, a, &t->variants[1], &s, &r, &v, &err), 0);
    assert_true(r.dist_a == 0 && r.dist_b == 15 && r.ignore_share == 0);
    /* float inputs pass through as they are */
    assert_int_equal(kiln_input_resolve(t, &t->args[0], NULL, &s, &r, &v, &err), 0);
    assert_true(r.dist == KILN_DIST_NORMAL && r.dist_a == 0.5);
    /* a shape no task file names can still break a bound: an error, no dims in it */
    kiln_shape zero = {{4, 0}};
    assert_int_equal(kiln_input_resolve(t, a, NULL, &zero, &r, &v, &err), -1);
    assert_non_null(strstr(err.msg, "input 't' (init.high)"));
    assert_null(strstr(err.msg, "cols=0"));
    free(t);
    free(text);
    /* i8 over its full range, the bounds plain numbers, no ignore value */
    char *d = int_task("\"low\": 0, \"high\": \"cols - 1\", \"ignore\": {\"value\": -100, \"share\": 0.1}",
                       "\"low\": -128, \"high\": 127");
    char *e = replace(d, "\"dtype\": \"i32\", \"shape\": [\"rows\"]", "\"dtype\": \"i8\", \"shape\": [\"rows\"]");
    char *f = replace(e, "    {\"name\": \"last\", \"input\": \"t\", \"value\": \"cols - 1\"},\n"
                         "    {\"name\": \"none\", \"input\": \"t\", \"ignore_share\": 0},\n", "");
    t = malloc(sizeof *t);
    assert_non_null(t);
    if (load_text(f, GOOD_HIDDEN, t, &err) != 0)
        fail_msg("i8 task: %s", err.msg);
    assert_int_equal(t->args[2].dtype, KILN_DT_I8);
    assert_false(t->args[2].has_ignore);
    assert_string_equal(t->args[2].int_low, "-128");
    kiln_task_cpu_signature(t, KILN_DT_F32, sig, sizeof sig);
    assert_non_null(strstr(sig, "const int8_t *t"));
    assert_string_equal(kiln_arg_cuda_type(&t->args[2]), "const signed char *");
    free(t);
    free(d);
    free(e);
    free(f);
}

static void test_integer_errors(void **state)
{
    (void)state;
    const char *ints = "{\"dist\": \"integers\", \"low\": 0, \"high\": \"cols - 1\", "
                       "\"ignore\": {\"value\": -100, \"share\": 0.1}}";
    /* the dtype and the dist must agree */
    int_fails("\"dtype\": \"i32\", \"shape\": [\"rows\"]", "\"dtype\": \"T\", \"shape\": [\"rows\"]",
              "args[2].init", "\"integers\" are drawn for an input of dtype i32 or i8, not T");
    int_fails("\"dtype\": \"i32\", \"shape\": [\"rows\"]", "\"dtype\": \"f32\", \"shape\": [\"rows\"]",
              "args[2].init", "not f32");
    int_fails("\"dtype\": \"i32\", \"shape\": [\"rows\"]", "\"dtype\": \"i64\", \"shape\": [\"rows\"]",
              "args[2].init", "not i64");
    task_fails("{\"name\": \"w\", \"kind\": \"input\", \"dtype\": \"T\"",
               "{\"name\": \"w\", \"kind\": \"input\", \"dtype\": \"i32\"", "args[1].init",
               "an input of dtype i32 draws {\"dist\": \"integers\"");
    (void)ints;
    /* bounds */
    int_fails("\"low\": 0, \"high\"", "\"high\"", "args[2].init.low", "missing");
    int_fails("\"low\": 0, \"high\"", "\"low\": 0.5, \"high\"", "args[2].init.low",
              "must be an integer or an expression");
    int_fails("\"low\": 0, \"high\"", "\"low\": [0], \"high\"", "args[2].init.low",
              "must be an integer or a string");
    int_fails("\"high\": \"cols - 1\"", "\"high\": \"colz - 1\"", "args[2].init.high",
              "unknown name 'colz' (only dims may appear)");
    int_fails("\"high\": \"cols - 1\"", "\"high\": \"cols - (1\"", "args[2].init.high", "missing ')'");
    int_fails("\"high\": \"cols - 1\"", "\"high\": \"cols - 9\"", "args[2].init.high",
              "at rows=2 cols=8 (a visible shape of group small): high -1 is below low 0");
    int_fails("\"high\": \"cols - 1\"", "\"high\": \"cols / 2 - 9\"", "args[2].init.high",
              "high -5 is below low 0");
    int_fails("\"high\": \"cols - 1\"", "\"high\": \"cols - 4\"", "args[2].init.high",
              "at rows=1 cols=3 (a hidden shape of group small): high -1 is below low 0");
    int_fails("\"high\": \"cols - 1\"", "\"high\": \"cols * 1000000000\"", "args[2].init.high",
              "does not fit i32");
    int_fails("\"high\": \"cols - 1\"", "\"high\": \"sizeof(T)\"", "args[2].init.high",
              "unknown type 'T' in sizeof()");
    int_fails("\"high\": \"cols - 1\"", "\"high\": \"cols / 3.0\"", "args[2].init.high",
              "not an integer");
    int_fails("\"high\": \"cols - 1\",", "\"high\": \"cols - 1\", \"mean\": 3,", "args[2].init",
              "unknown field 'mean' for integers (low, high, ignore)");
    /* the ignore value */
    int_fails("\"value\": -100", "\"value\": 3", "args[2].init.ignore.value",
              "the ignore value 3 lies inside [0, 7]");
    int_fails("\"value\": -100", "\"value\": -3000000000", "args[2].init.ignore.value",
              "must be an integer that i32 holds");
    int_fails("\"value\": -100", "\"value\": -1.5", "args[2].init.ignore.value", "must be an integer");
    int_fails("\"share\": 0.1", "\"share\": 1.5", "args[2].init.ignore.share", "from 0 to 1");
    int_fails(", \"share\": 0.1", "", "args[2].init.ignore.share", "from 0 to 1");
    int_fails("\"share\": 0.1", "\"share\": 0.1, \"index\": 2", "args[2].init.ignore",
              "unknown field 'index' (value, share)");
    int_fails("\"ignore\": {\"value\": -100, \"share\": 0.1}", "\"ignore\": -100", "args[2].init.ignore",
              "must be an object");
    /* i8: its range */
    char *a = int_task("\"dtype\": \"i32\", \"shape\": [\"rows\"]", "\"dtype\": \"i8\", \"shape\": [\"rows\"]");
    char *b = replace(a, "\"value\": -100", "\"value\": -200");
    expect_fail(b, GOOD_HIDDEN, "task.json", "args[2].init.ignore.value", "must be an integer that i8 holds");
    free(b);
    b = replace(a, "\"high\": \"cols - 1\"", "\"high\": \"cols * 16\"");
    expect_fail(b, GOOD_HIDDEN, "task.json", "args[2].init.high", "[0, 128] does not fit i8");
    free(a);
    free(b);
    /* variants of an integer input */
    int_fails("\"input\": \"t\", \"value\": \"cols - 1\"", "\"input\": \"t\", \"value\": \"cols\"",
              "stability[0].value", "at rows=2 cols=8 (a visible shape of group small): 8 lies "
              "outside the input's [0, 7]");
    int_fails("\"input\": \"t\", \"value\": \"cols - 1\"", "\"input\": \"t\", \"value\": \"colz\"",
              "stability[0].value", "unknown name 'colz'");
    int_fails("\"input\": \"t\", \"value\": \"cols - 1\"", "\"input\": \"t\", \"scale\": 2",
              "stability[0]", "'t' is an integer input: its variants give value, ignore_share or "
              "pattern \"extremes\", not scale or offset");
    int_fails("\"input\": \"t\", \"value\": \"cols - 1\"", "\"input\": \"t\", \"pattern\": \"tiny\"",
              "stability[0]", "the only pattern for it is \"extremes\"");
    int_fails("\"input\": \"t\", \"value\": \"cols - 1\"",
              "\"input\": \"t\", \"value\": 0, \"pattern\": \"extremes\"", "stability[0]",
              "give value or pattern \"extremes\", not both");
    int_fails("\"input\": \"t\", \"ignore_share\": 0", "\"input\": \"t\", \"ignore_share\": 2",
              "stability[1].ignore_share", "from 0 to 1");
    int_fails("\"input\": \"t\", \"ignore_share\": 0", "\"input\": \"t\"", "stability[1]",
              "changes nothing: give value, ignore_share or pattern");
    int_fails(", \"ignore\": {\"value\": -100, \"share\": 0.1}", "", "stability[1].ignore_share",
              "input 't' has no ignore value");
    /* ... and of a float input */
    int_fails("\"input\": \"x\", \"scale\": 1000", "\"input\": \"x\", \"pattern\": \"extremes\"",
              "stability[3]", "pattern 'extremes' is for integer inputs; 'x' is a float input");
    int_fails("\"input\": \"x\", \"scale\": 1000", "\"input\": \"x\", \"value\": 3", "stability[3]",
              "value and ignore_share are for integer inputs");
}

/* "cost": read_bytes and write_bytes in place of bytes. */
static void test_cost_split(void **state)
{
    (void)state;
    char *text = replace(GOOD_TASK, "\"bytes\": \"(2 * rows * cols + cols) * sizeof(T)\"",
                         "\"read_bytes\": \"(rows * cols + cols) * sizeof(T)\", "
                         "\"write_bytes\": \"rows * cols * sizeof(T)\"");
    kiln_task *t = malloc(sizeof *t);
    kiln_error err;
    assert_non_null(t);
    if (load_text(text, GOOD_HIDDEN, t, &err) != 0)
        fail_msg("split cost: %s", err.msg);
    assert_true(t->cost_split);
    kiln_shape s = {{2, 3}};
    double rd, wr, all;
    assert_int_equal(kiln_task_cost_rw(t, &s, KILN_DT_F32, &rd, &wr, &err), 0);
    assert_true(rd == (2.0 * 3 + 3) * 4 && wr == 2.0 * 3 * 4);
    assert_int_equal(kiln_task_cost(t, t->cost_bytes, &s, KILN_DT_F32, &all, &err), 0);
    assert_true(all == rd + wr);
    free(text);
    /* bytes alone: half read, half written (a copy's mix) */
    load_rmsnorm(t);
    assert_false(t->cost_split);
    assert_int_equal(kiln_task_cost_rw(t, &s, KILN_DT_F32, &rd, &wr, &err), 0);
    assert_true(rd == wr && rd + wr == (2.0 * 2 * 3 + 3) * 4);
    free(t);
    task_fails("\"bytes\": \"(2 * rows * cols + cols) * sizeof(T)\"",
               "\"bytes\": \"rows\", \"read_bytes\": \"rows\", \"write_bytes\": \"rows\"", "cost",
               "give bytes, or read_bytes and write_bytes, not both");
    task_fails("\"bytes\": \"(2 * rows * cols + cols) * sizeof(T)\"", "\"read_bytes\": \"rows\"",
               "cost.write_bytes", "missing (read_bytes and write_bytes go together)");
    task_fails("\"bytes\": \"(2 * rows * cols + cols) * sizeof(T)\"", "\"write_bytes\": \"rows\"",
               "cost.read_bytes", "missing");
    task_fails("\"bytes\": \"(2 * rows * cols + cols) * sizeof(T)\"",
               "\"read_bytes\": \"rowz\", \"write_bytes\": \"rows\"", "cost.read_bytes",
               "unknown name 'rowz'");
    task_fails("\"bytes\": \"(2 * rows * cols + cols) * sizeof(T)\"", "\"flopz\": \"1\"", "cost.bytes",
               "missing");
}

/* ---- helpers on the real rmsnorm task --------------------------------- */

static void test_cost_rmsnorm(void **state)
{
    (void)state;
    kiln_task *t = malloc(sizeof *t);
    kiln_error err;
    double v = 0;
    assert_non_null(t);
    load_rmsnorm(t);
    kiln_shape s = {{2, 3}};
    if (kiln_task_cost(t, t->cost_bytes, &s, KILN_DT_F32, &v, &err) != 0)
        fail_msg("%s", err.msg);
    assert_true(v == (2.0 * 2 * 3 + 3) * 4);
    assert_int_equal(kiln_task_cost(t, t->cost_bytes, &s, KILN_DT_F64, &v, &err), 0);
    assert_true(v == (2.0 * 2 * 3 + 3) * 8);
    assert_int_equal(kiln_task_cost(t, t->cost_flops, &s, KILN_DT_F32, &v, &err), 0);
    assert_true(v == 4.0 * 2 * 3);
    assert_int_equal(kiln_task_cost(t, "rows * depth", &s, KILN_DT_F32, &v, &err), -1);
    assert_non_null(strstr(err.msg, "depth"));
    free(t);
}

static void test_signature_rmsnorm(void **state)
{
    (void)state;
    kiln_task *t = malloc(sizeof *t);
    char sig[512];
    assert_non_null(t);
    load_rmsnorm(t);
    kiln_task_cpu_signature(t, KILN_DT_F32, sig, sizeof sig);
    assert_string_equal(sig, "void rmsnorm(const float *x, const float *w, float *y, "
                             "int32_t rows, int32_t cols, float eps)");
    /* truncation is safe and terminated */
    char small[20];
    kiln_task_cpu_signature(t, KILN_DT_F32, small, sizeof small);
    assert_int_equal(strlen(small), sizeof small - 1);
    assert_memory_equal(small, "void rmsnorm(const float *x", sizeof small - 1);
    free(t);
}

static void test_shape_format(void **state)
{
    (void)state;
    kiln_task *t = malloc(sizeof *t);
    char buf[64];
    assert_non_null(t);
    load_rmsnorm(t);
    kiln_shape s = {{64, 4096}};
    kiln_shape_format(t, &s, buf, sizeof buf);
    assert_string_equal(buf, "rows=64 cols=4096");
    char small[10];
    kiln_shape_format(t, &s, small, sizeof small);
    assert_string_equal(small, "rows=64 c");
    free(t);
}

static void test_find(void **state)
{
    (void)state;
    kiln_task *t = malloc(sizeof *t);
    kiln_error err;
    assert_non_null(t);
    char *old = getenv("KILN_TASKS") ? strdup(getenv("KILN_TASKS")) : NULL;

    /* the built-in tasks directory */
    unsetenv("KILN_TASKS");
    if (kiln_task_find("rmsnorm", t, &err) != 0)
        fail_msg("%s", err.msg);
    assert_string_equal(t->name, "rmsnorm");

    /* $KILN_TASKS first, by name; and the same task by path */
    char *root = make_tmpdir();
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/tnorm", root);
    assert_int_equal(mkdir(dir, 0700), 0);
    write_task(dir, GOOD_TASK, GOOD_HIDDEN);
    setenv("KILN_TASKS", root, 1);
    if (kiln_task_find("tnorm", t, &err) != 0)
        fail_msg("%s", err.msg);
    assert_string_equal(t->name, "tnorm");
    if (kiln_task_find("rmsnorm", t, &err) != 0) /* falls back to the built-in */
        fail_msg("%s", err.msg);
    assert_string_equal(t->name, "rmsnorm");
    unsetenv("KILN_TASKS");
    if (kiln_task_find(dir, t, &err) != 0)
        fail_msg("%s", err.msg);
    assert_string_equal(t->name, "tnorm");

    /* unknown names and bad names */
    assert_int_equal(kiln_task_find("tnorm", t, &err), -1);
    assert_non_null(strstr(err.msg, "no task named 'tnorm'"));
    assert_int_equal(kiln_task_find("nosuchtask", t, &err), -1);
    assert_non_null(strstr(err.msg, "no task named 'nosuchtask'"));
    assert_non_null(strstr(err.msg, KILN_TASKS_DIR));
    assert_int_equal(kiln_task_find("bad name", t, &err), -1);
    assert_non_null(strstr(err.msg, "is not a task name"));

    if (old) {
        setenv("KILN_TASKS", old, 1);
        free(old);
    }
    rm_tree(root);
    free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good_task_loads),
        cmocka_unit_test(test_defaults_and_optional_fields),
        cmocka_unit_test(test_malformed_json),
        cmocka_unit_test(test_top_level_not_object),
        cmocka_unit_test(test_name),
        cmocka_unit_test(test_dims),
        cmocka_unit_test(test_args_not_array),
        cmocka_unit_test(test_arg_kind),
        cmocka_unit_test(test_arg_dtype),
        cmocka_unit_test(test_dim_arg_not_task_dim),
        cmocka_unit_test(test_scalar_value),
        cmocka_unit_test(test_input_init),
        cmocka_unit_test(test_arg_shape),
        cmocka_unit_test(test_no_output),
        cmocka_unit_test(test_duplicate_arg),
        cmocka_unit_test(test_cpu_dtypes),
        cmocka_unit_test(test_stability),
        cmocka_unit_test(test_groups_missing),
        cmocka_unit_test(test_visible_shapes),
        cmocka_unit_test(test_default_group),
        cmocka_unit_test(test_tolerance),
        cmocka_unit_test(test_cost_expressions),
        cmocka_unit_test(test_paths),
        cmocka_unit_test(test_absolute_paths),
        cmocka_unit_test(test_function),
        cmocka_unit_test(test_hidden_missing),
        cmocka_unit_test(test_hidden_groups),
        cmocka_unit_test(test_hidden_cover),
        cmocka_unit_test(test_hidden_random),
        cmocka_unit_test(test_file_too_large),
        cmocka_unit_test(test_missing_dir),
        cmocka_unit_test(test_cost_rmsnorm),
        cmocka_unit_test(test_signature_rmsnorm),
        cmocka_unit_test(test_shape_format),
        cmocka_unit_test(test_find),
        cmocka_unit_test(test_cuda_backend),
        cmocka_unit_test(test_cuda_only),
        cmocka_unit_test(test_cuda_errors),
        cmocka_unit_test(test_shape_multiple),
        cmocka_unit_test(test_integer_inputs),
        cmocka_unit_test(test_integer_errors),
        cmocka_unit_test(test_cost_split),
        cmocka_unit_test(test_builtin_tasks),
        cmocka_unit_test(test_cuda_reference_and_builtin),
        cmocka_unit_test(test_cuda_groups),
        cmocka_unit_test(test_cuda_groups_errors),
        cmocka_unit_test(test_builtin_cuda_groups),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
