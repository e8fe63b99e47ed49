/* test_import.c - unit tests for `kiln import` (porting/import*.c): the C
 * expression translator (the text it prints, what it refuses, and - where
 * a C compiler is at hand ($CC, else cc) - a differential check that a
 * translation evaluated by kiln's evaluator equals the C expression
 * compiled), and whole imports against the real tasks: every candidate
 * written is parsed by kiln's manifest parser (verifier/manifest.c) and
 * resolved at shapes, and every refusal names the line and the reason. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "expr.h"
#include "fileutil.h"
#include "import.h"
#include "import_expr.h"
#include "manifest.h"

static kiln_task *RMS, *SOFTMAX, *LAYERNORM;

static int setup(void **state)
{
    kiln_error err;
    (void)state;
    RMS = malloc(sizeof *RMS);
    SOFTMAX = malloc(sizeof *SOFTMAX);
    LAYERNORM = malloc(sizeof *LAYERNORM);
    if (!RMS || !SOFTMAX || !LAYERNORM || kiln_task_load(KILN_TASKS_DIR "/rmsnorm", RMS, &err) ||
        kiln_task_load(KILN_TASKS_DIR "/softmax", SOFTMAX, &err) ||
        kiln_task_load(KILN_TASKS_DIR "/layernorm", LAYERNORM, &err))
        return -1;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    free(RMS);
    free(SOFTMAX);
    free(LAYERNORM);
    return 0;
}

/* ---- the expression translator ------------------------------------------------ */

/* Every name means itself. */
static int same_name(void *ctx, const imp_src *s, int tok, imp_xval *out, imp_why *why)
{
    (void)ctx;
    (void)why;
    imp_word(s, tok, out->s, sizeof out->s);
    out->prec = IMP_P_PRIMARY;
    return 0;
}

/* Translate C text: 0 and out, or -1 and the reason in why. */
static int xl(const char *c, imp_xval *out, imp_why *why)
{
    imp_src s;
    kiln_error err;
    imp_xenv env = {.name = same_name};
    assert_int_equal(imp_lex(&s, c, strlen(c), &err), 0);
    int rc = imp_expr(&s, 0, s.ntok, &env, out, why);
    imp_src_free(&s);
    return rc;
}

static void test_expr_text(void **state)
{
    static const char *const cases[][2] = {
        {"(n + 255) / 256", "(n + 255) / 256"},
        {"(a + b - 1) / b", "(a + b - 1) / b"},
        {"a + (b * c)", "a + b * c"},
        {"a - (b - c)", "a - (b - c)"},
        {"(a - b) - c", "a - b - c"},
        {"x << 2", "x * 4"},
        {"(n + 255) >> 8", "(n + 255) / 256"},
        {"(int)n * 2", "n * 2"},
        {"static_cast<int>(n + 1) * 2", "(n + 1) * 2"},
        {"size_t(n) * 4", "n * 4"},
        {"std::min(a, std::max(b, 1))", "min(a, max(b, 1))"},
        {"std::min<int>(a, 1024)", "min(a, 1024)"},
        {"c ? a : d ? e : f", "c ? a : d ? e : f"},
        {"(c ? a : b) * 2", "(c ? a : b) * 2"},
        {"sizeof(float) * n", "sizeof(f32) * n"},
        {"sizeof(__nv_bfloat16) + sizeof(half) + sizeof(kiln_t)",
         "sizeof(bf16) + sizeof(f16) + sizeof(T)"},
        {"sizeof(float4)", "16"},
        {"0x100 + 010 + 0b11 + 1'000", "256 + 8 + 3 + 1000"},
        {"1024u * 2UL", "1024 * 2"},
        {"-a * b", "-a * b"},
        {"-(a + b)", "-(a + b)"},
        {"!(a < b) && c", "!(a < b) && c"},
        {"a < b == c > d", "a < b == c > d"},
        {"true + false", "1 + 0"},
        {"1 == 1 && a < b", "a < b"},
        {"a < b && 2 > 1", "a < b"},
        {"0 && a < b", "0"},
        {"a < b || 1 == 1", "1"},
        {"!(2 > 3)", "1"},
        {"1 && a", "1 && a"},
    };
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        imp_xval v;
        imp_why why;
        if (xl(cases[i][0], &v, &why) != 0)
            fail_msg("'%s': %s", cases[i][0], why.msg);
        if (strcmp(v.s, cases[i][1]) != 0)
            fail_msg("'%s' gave '%s', want '%s'", cases[i][0], v.s, cases[i][1]);
    }
}

static void test_expr_refused(void **state)
{
    static const char *const cases[][2] = {
        {"a & b", "bitwise"},       {"a | 1", "bitwise"},         {"~a", "bitwise"},
        {"1.5f * a", "floating"},   {"a * 0.5", "floating"},      {"(float)a", "cast"},
        {"a = 3", "assign"},        {"a++", "unexpected"},        {"x[0]", "array"},
        {"*p", "pointer"},          {"&a", "address"},            {"a >> b", "shift"},
        {"p->n", "pointer"},        {"\"s\"", "string"},          {"a +", "missing"},
        {"sizeof(x)", "sizeof"},    {"f(a)", "call"},             {"prop.n", "member"},
    };
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        imp_xval v;
        imp_why why;
        if (xl(cases[i][0], &v, &why) == 0)
            fail_msg("'%s' translated to '%s'", cases[i][0], v.s);
        if (!strstr(why.msg, cases[i][1]))
            fail_msg("'%s': '%s' does not say '%s'", cases[i][0], why.msg, cases[i][1]);
    }
}

/* C expressions over a, b, n (non-negative ints, as launch sizes are). */
static const char *const diff_cases[] = {
    "(n + 255) / 256",       "(n + b - 1) / b * b",     "n >> 3",
    "(n << 2) + a",          "a % b + n / (b + 1)",     "a < b ? n : a * 2",
    "(int)(n / 3) * (int)b", "n - a - b",               "-(a - n) * 2 + !b",
    "a > 2 && b < 9 || n == 0", "(a + 1) * (b + 2) % 7", "n >> 1 >> 1",
    "a * sizeof(float) + 0x10", "(unsigned)n / 2u",    "a <= b == (n >= a)",
};

static void write_c_program(FILE *f, const int (*vals)[3], int nvals)
{
    fprintf(f, "#include <stdio.h>\nint main(void) {\n");
    for (int v = 0; v < nvals; v++) {
        fprintf(f, "  { long long a = %d, b = %d, n = %d;\n", vals[v][0], vals[v][1], vals[v][2]);
        for (size_t i = 0; i < sizeof diff_cases / sizeof diff_cases[0]; i++)
            fprintf(f, "    printf(\"%%lld\\n\", (long long)(%s));\n", diff_cases[i]);
        fprintf(f, "  }\n");
    }
    fprintf(f, "  return 0;\n}\n");
}

static int abn(void *ctx, const char *name, size_t len, kiln_value *out)
{
    const int *v = ctx;
    if (len != 1 || (name[0] != 'a' && name[0] != 'b' && name[0] != 'n'))
        return -1;
    *out = (kiln_value){0, v[name[0] == 'a' ? 0 : name[0] == 'b' ? 1 : 2], 0.0};
    return 0;
}

static int f32_size(void *ctx, const char *type, size_t len, int64_t *bytes)
{
    (void)ctx;
    return kiln_dtype_sizeof(type, len, KILN_DT_F32, bytes);
}

static void test_expr_differential(void **state)
{
    static const int vals[][3] = {{0, 1, 0}, {7, 3, 1000}, {33, 5, 4096}, {2, 9, 1}, {100, 1, 77}};
    char dir[] = "/tmp/kiln-import-diffXXXXXX", path[256], cmd[800];
    const char *cc = getenv("CC");
    (void)state;
    if (!mkdtemp(dir))
        skip();
    snprintf(path, sizeof path, "%s/d.c", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    write_c_program(f, vals, 5);
    fclose(f);
    snprintf(cmd, sizeof cmd, "%s -w -o %s/d %s 2>/dev/null && %s/d", cc && *cc ? cc : "cc", dir,
             path, dir);
    FILE *p = popen(cmd, "r");
    long long want;
    int n = 0;
    for (int v = 0; p && v < 5; v++)
        for (size_t i = 0; i < sizeof diff_cases / sizeof diff_cases[0]; i++, n++) {
            imp_xval x;
            imp_why why;
            kiln_value got;
            kiln_error err;
            kiln_expr_env env = {abn, f32_size, (void *)vals[v]};
            if (fscanf(p, "%lld", &want) != 1)
                break;
            assert_int_equal(xl(diff_cases[i], &x, &why), 0);
            if (kiln_expr_eval(x.s, &env, &got, &err) != 0)
                fail_msg("'%s' -> '%s': %s", diff_cases[i], x.s, err.msg);
            if (got.i != want)
                fail_msg("'%s' -> '%s' at a=%d b=%d n=%d: %lld, C says %lld", diff_cases[i], x.s,
                         vals[v][0], vals[v][1], vals[v][2], (long long)got.i, want);
        }
    int rc = p ? pclose(p) : -1;
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) {}
    if (rc != 0 || n == 0)
        skip();   /* no C compiler here */
}

/* ---- whole imports ------------------------------------------------------------------ */

/* Import src for t; the result in r (freed by the caller). */
static int import(const char *src, const kiln_task *t, kiln_import_opts *o,
                  kiln_import_result *r)
{
    kiln_error err;
    kiln_import_opts dflt = {.file = "t.cu"};
    return kiln_import(src, strlen(src), t, o ? o : &dflt, r, &err);
}

static int has_problem(const kiln_import_result *r, const char *needle)
{
    for (int i = 0; i < r->problems.n; i++)
        if (strstr(r->problems.v[i], needle))
            return 1;
    return 0;
}

static void expect_clean(const kiln_import_result *r)
{
    for (int i = 0; i < r->problems.n; i++)
        print_error("problem: %s\n", r->problems.v[i]);
    assert_int_equal(r->problems.n, 0);
    assert_non_null(r->candidate);
}

/* The candidate parses as kiln's static stage parses it. */
static kiln_manifest *parse(const kiln_import_result *r, const kiln_task *t)
{
    kiln_manifest *m = malloc(sizeof *m);
    kiln_error err;
    assert_non_null(m);
    if (kiln_manifest_parse(r->candidate, strlen(r->candidate), t, m, &err) != 0)
        fail_msg("%s\n%s", err.msg, r->candidate);
    return m;
}

static kiln_call_req *resolve(const kiln_manifest *m, const kiln_task *t, int64_t rows,
                              int64_t cols)
{
    static kiln_call_req rq;
    kiln_shape s = {{rows, cols}};
    kiln_error err;
    if (kiln_manifest_resolve(m, t, KILN_DT_F32, &s, NULL, &rq, &err) != 0)
        fail_msg("%s", err.msg);
    return &rq;
}

#define RMS_KERNEL                                                                            \
    "__global__ void rms_kernel(float* __restrict__ out, const float* __restrict__ in,\n"       \
    "                           const float* __restrict__ w, float eps, int cols) { }\n"

#define RMS_SRC_TEXT                                                                          \
    "#include <cuda_runtime.h>\n" \
    "#include <algorithm>\n" \
    RMS_KERNEL \
    "void rmsnorm(float* out, const float* in, const float* w, float eps, int rows, int cols,\n" \
    "             cudaStream_t s)\n" \
    "{\n" \
    "    dim3 grid(rows);\n" \
    "    dim3 block(std::min(cols, 1024));\n" \
    "    rms_kernel<<<grid, block, 0, s>>>(out, in, w, eps, cols);\n" \
    "}\n"

static const char RMS_SRC[] = RMS_SRC_TEXT;

static void test_rmsnorm(void **state)
{
    kiln_import_result r;
    (void)state;
    assert_int_equal(import(RMS_SRC, RMS, NULL, &r), 0);
    expect_clean(&r);
    assert_non_null(strstr(r.candidate, "extern \"C\" __global__ void rms_kernel("));
    assert_null(strstr(r.candidate, "<<<"));
    assert_non_null(strstr(r.candidate, "// kiln import: removed #include <cuda_runtime.h>"));
    assert_null(strstr(r.candidate, "\n#include <algorithm>"));
    assert_string_equal(r.dtype_only, "f32");
    kiln_manifest *m = parse(&r, RMS);
    assert_int_equal(m->nlaunches, 1);
    assert_string_equal(m->launches[0].kernel, "rms_kernel");
    assert_string_equal(m->launches[0].grid[0], "rows");
    assert_string_equal(m->launches[0].block[0], "min(cols, 1024)");
    int want[] = {2, 0, 1, 5, 4};   /* y x w eps cols */
    assert_int_equal(m->launches[0].nargs, 5);
    for (int k = 0; k < 5; k++)
        assert_int_equal(m->launches[0].arg[k], want[k]);
    kiln_call_req *rq = resolve(m, RMS, 33, 1000);
    assert_int_equal(rq->launches[0].grid[0], 33);
    assert_int_equal(rq->launches[0].block[0], 1000);
    assert_int_equal(resolve(m, RMS, 4, 4096)->launches[0].block[0], 1024);
    free(m);
    kiln_import_result_free(&r);
}

static const char LN_SRC[] =
    "#define THREADS 256\n"
    "#define DIV_UP(a, b) (((a) + (b) - 1) / (b))\n"
    "static constexpr int kWarp = 32;\n"
    "static inline int round_up(int a, int b) { return DIV_UP(a, b) * b; }\n"
    "__global__ void ln(const float* x, const float* gamma, const float* beta, float* y,\n"
    "                   int cols, float eps) { extern __shared__ float red[]; }\n"
    "void layernorm(const float* x, const float* gamma, const float* beta, float* y,\n"
    "               int rows, int cols, float eps, cudaStream_t stream)\n"
    "{\n"
    "    const int threads = std::min(THREADS, round_up(cols, kWarp));\n"
    "    dim3 block(threads), grid(rows);\n"
    "    size_t smem = block.x * sizeof(float) + (threads >> 5) * 8;\n"
    "    ln<<<grid, block, smem, stream>>>(x, gamma, beta, y, cols, eps);\n"
    "    C10_CUDA_KERNEL_LAUNCH_CHECK();\n"
    "}\n";

static void test_lets_helpers_smem(void **state)
{
    kiln_import_result r;
    (void)state;
    assert_int_equal(import(LN_SRC, LAYERNORM, NULL, &r), 0);
    expect_clean(&r);
    kiln_manifest *m = parse(&r, LAYERNORM);
    assert_int_equal(m->nlets, 3);
    assert_string_equal(m->lets[0].name, "kWarp");
    assert_string_equal(m->lets[1].name, "threads");
    assert_string_equal(m->lets[1].expr, "min(THREADS, (cols + kWarp - 1) / kWarp * kWarp)");
    assert_string_equal(m->lets[2].name, "smem");
    assert_string_equal(m->lets[2].expr, "threads * sizeof(f32) + threads / 32 * 8");
    assert_string_equal(m->launches[0].smem, "smem");
    kiln_call_req *rq = resolve(m, LAYERNORM, 8, 40);
    assert_int_equal(rq->launches[0].block[0], 64);
    assert_int_equal(rq->launches[0].smem, 64 * 4 + 2 * 8);
    assert_int_equal(resolve(m, LAYERNORM, 8, 4096)->launches[0].block[0], 256);
    free(m);
    kiln_import_result_free(&r);
}

static const char TILED_SRC[] =
    "template <int TILE, typename T = float>\n"
    "__global__ void __launch_bounds__(TILE * 8) k(const T* x, T* y, int rows, int cols) { T t[TILE]; }\n"
    "void softmax(const float* x, float* y, int rows, int cols)\n"
    "{\n"
    "    dim3 block(32, 8);\n"
    "    dim3 grid((cols + 31) / 32, (rows + 7) / 8);\n"
    "    k<32><<<grid, block, block.x * block.y * sizeof(float)>>>(x, y, rows, cols);\n"
    "}\n";

static void test_template_instance_2d(void **state)
{
    kiln_import_result r;
    (void)state;
    assert_int_equal(import(TILED_SRC, SOFTMAX, NULL, &r), 0);
    expect_clean(&r);
    assert_non_null(strstr(r.candidate, "template <int TILE, typename T = float>\n__global__"));
    assert_non_null(strstr(r.candidate, "extern \"C\" __global__ __launch_bounds__(32 * 8) "
                                        "void k_32_float(const float* x, float* y, int rows, "
                                        "int cols) { float t[32]; }"));
    kiln_manifest *m = parse(&r, SOFTMAX);
    assert_string_equal(m->launches[0].kernel, "k_32_float");
    assert_int_equal(m->launches[0].ngrid, 2);
    assert_string_equal(m->launches[0].grid[1], "(rows + 7) / 8");
    assert_string_equal(m->launches[0].smem, "32 * 8 * sizeof(f32)");
    kiln_call_req *rq = resolve(m, SOFTMAX, 33, 1000);
    assert_int_equal(rq->launches[0].grid[0], 32);
    assert_int_equal(rq->launches[0].grid[1], 5);
    assert_int_equal(rq->launches[0].block[1], 8);
    free(m);
    kiln_import_result_free(&r);
}

static const char DISPATCH_SRC[] =
    "template <int VEC> __global__ void k(const float* x, float* y, int cols) { }\n"
    "void softmax(const float* x, float* y, int rows, int cols)\n"
    "{\n"
    "    if (cols % 4 == 0)\n"
    "        k<4><<<rows, 256>>>(x, y, cols);\n"
    "    else\n"
    "        k<1><<<rows, 256>>>(x, y, cols);\n"
    "}\n";

/* A vector-width dispatch: each branch's launch runs "when" its condition
 * holds (the else's negated), so each shape gets exactly one. */
static void test_dispatch_when(void **state)
{
    kiln_import_result r;
    (void)state;
    assert_int_equal(import(DISPATCH_SRC, SOFTMAX, NULL, &r), 0);
    expect_clean(&r);
    kiln_manifest *m = parse(&r, SOFTMAX);
    assert_int_equal(m->nlaunches, 2);
    assert_string_equal(m->launches[0].kernel, "k_4");
    assert_string_equal(m->launches[0].when, "cols % 4 == 0");
    assert_string_equal(m->launches[1].when, "!(cols % 4 == 0)");
    kiln_call_req *rq = resolve(m, SOFTMAX, 8, 1024);
    assert_int_equal(rq->nlaunches, 1);
    assert_string_equal(rq->launches[0].kernel, "k_4");
    rq = resolve(m, SOFTMAX, 8, 1001);
    assert_int_equal(rq->nlaunches, 1);
    assert_string_equal(rq->launches[0].kernel, "k_1");
    free(m);
    kiln_import_result_free(&r);
}

/* The JSON of the candidate's manifest block parses (cJSON), and kiln's
 * check refuses it for its TODO list, naming the field. */
static void expect_valid_todo_json(const kiln_import_result *r, const kiln_task *t)
{
    kiln_manifest_span sp;
    kiln_manifest m;
    kiln_error err;
    assert_non_null(r->candidate);
    assert_int_equal(kiln_manifest_locate(r->candidate, strlen(r->candidate), &sp), 1);
    cJSON *j = cJSON_ParseWithLength(r->candidate + sp.json_at, sp.json_end - sp.json_at);
    if (!j)
        fail_msg("not JSON:\n%.*s", (int)(sp.json_end - sp.json_at), r->candidate + sp.json_at);
    assert_true(cJSON_IsArray(cJSON_GetObjectItem(j, "TODO")));
    assert_true(cJSON_IsArray(cJSON_GetObjectItem(j, "launches")));
    assert_true(cJSON_IsArray(cJSON_GetObjectItem(j, "scratch")));
    cJSON_Delete(j);
    assert_int_equal(kiln_manifest_parse(r->candidate, strlen(r->candidate), t, &m, &err), -1);
    assert_non_null(strstr(err.msg, "unknown field 'TODO'"));
}

/* --force writes valid JSON whatever went wrong: a loop of launches (its
 * fields TODO), a launch import cannot read (no launches at all: this once
 * wrote '"launches": [ "scratch"'), an unmapped parameter. */
static void test_forced_manifest_is_json(void **state)
{
    static const char *const bodies[] = {
        "{ for (int i = 0; i < 2; i++) rms_kernel<<<rows, 256>>>(out, in, w, eps, cols); }",
        "{ auto f = [&] { rms_kernel<<<rows, 256>>>(out, in, w, eps, cols); }; f(); }",
        "{ rms_kernel<<<n_tokens, 256>>>(out, in, w, \"eps\", cols); }",
    };
    kiln_import_opts o = {.file = "t.cu", .force = 1};
    (void)state;
    for (size_t i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
        char src[2048];
        kiln_import_result r;
        snprintf(src, sizeof src, "%s\nvoid rmsnorm(float* out, const float* in, const float* w, "
                 "float eps,\n             int rows, int cols, cudaStream_t s)\n%s", RMS_KERNEL,
                 bodies[i]);
        assert_int_equal(import(src, RMS, &o, &r), 0);
        assert_true(r.problems.n > 0);
        assert_true(i != 1 || has_problem(&r, "cannot translate the launches: import reads none"));
        expect_valid_todo_json(&r, RMS);
        kiln_import_result_free(&r);
    }
}

static void test_runtime_values_refused(void **state)
{
    static const char *const cases[][2] = {
        {"{ int sms; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);\n"
         "  rms_kernel<<<sms * 4, 256>>>(out, in, w, eps, cols); }",
         "t.cu:7: cannot translate the grid: 'sms' is set at line 6 by a runtime query"},
        {"{ cudaDeviceProp prop; cudaGetDeviceProperties(&prop, 0);\n"
         "  rms_kernel<<<prop.multiProcessorCount, 256>>>(out, in, w, eps, cols); }",
         "'prop.multiProcessorCount': 'prop' is a cudaDeviceProp"},
        {"{ int threads = 256; if (cols > 2048) threads = 512;\n"
         "  rms_kernel<<<rows, threads>>>(out, in, w, eps, cols); }",
         "t.cu:7: cannot translate the block: 'threads' is changed at line 6 ('threads = 512')"},
        {"{ for (int i = 0; i < 2; i++) rms_kernel<<<rows, 256>>>(out, in, w, eps, cols); }",
         "a loop of launches"},
        {"{ rms_kernel<<<rows, 256, 0, s>>>(out, in + 1, w, eps, cols); }",
         "'in + 1' is an expression"},
        {"{ rms_kernel<<<rows, ceilf(cols / 4.0f)>>>(out, in, w, eps, cols); }",
         "floating-point"},
        {"{ cudaStream_t t; cudaStreamCreate(&t); rms_kernel<<<rows, 256, 0, t>>>(out, in, w, eps, cols); }",
         "host-side work"},
        {"{ rms_kernel<<<rows, 256, 0, s>>>(out + rows, in, w, eps, cols); }",
         "'out + rows' is an expression"},
        {"{ float* y = out + cols; rms_kernel<<<rows, 256, 0, s>>>(y, in, w, eps, cols); }",
         "'y' is computed at line 6"},
        {"{ rms_kernel<<<n_tokens, 256>>>(out, in, w, eps, cols); }",
         "'n_tokens' is no parameter, local, integer constant or #define"},
        {"{ auto kern = cols > 64 ? rms_kernel : rms_kernel;\n"
         "  kern<<<rows, 256>>>(out, in, w, eps, cols); }",
         "t.cu:7: cannot translate the launch: its kernel is the variable 'kern' (line 6)"},
    };
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char src[2048];
        kiln_import_result r;
        snprintf(src, sizeof src, "%s%s%s", RMS_KERNEL,
                 "\nvoid rmsnorm(float* out, const float* in, const float* w, float eps,\n"
                 "             int rows, int cols, cudaStream_t s)\n", cases[i][0]);
        assert_int_equal(import(src, RMS, NULL, &r), 0);
        if (!has_problem(&r, cases[i][1])) {
            for (int k = 0; k < r.problems.n; k++)
                print_error("  %s\n", r.problems.v[k]);
            fail_msg("case %zu: no problem says '%s'", i, cases[i][1]);
        }
        assert_null(r.candidate);
        kiln_import_result_free(&r);
    }
}

/* A 64-bit kernel parameter gets the dim widened (i64(cols)), a computed
 * value its own (a let, a product); fixed-type buffers of two types are a
 * problem. */
static void test_kernel_types_checked(void **state)
{
    static const char src[] =
        "__global__ void k(float* y, const float* x, const float* w, float eps, size_t cols,\n"
        "                  int n, long long m) { }\n"
        "void rmsnorm(float* y, const float* x, const float* w, float eps, int rows, int cols)\n"
        "{ int total = rows * cols; k<<<rows, 256>>>(y, x, w, eps, cols, rows * cols, total); }\n";
    static const char bf16[] =
        "__global__ void k(__nv_bfloat16* y, const float* x, const float* w, float eps, int cols) { }\n"
        "void rmsnorm(float* y, const float* x, const float* w, float eps, int rows, int cols)\n"
        "{ k<<<rows, 256>>>(y, x, w, eps, cols); }\n";
    static const char dbl[] =
        "__global__ void k(float* y, const float* x, const float* w, double eps, int cols) { }\n"
        "void rmsnorm(float* y, const float* x, const float* w, float eps, int rows, int cols)\n"
        "{ k<<<rows, 256>>>(y, x, w, eps, cols); }\n";
    kiln_import_result r;
    (void)state;
    assert_int_equal(import(src, RMS, NULL, &r), 0);
    expect_clean(&r);
    kiln_manifest *m = parse(&r, RMS);
    const kiln_launch_spec *l = &m->launches[0];
    assert_int_equal(l->nargs, 7);
    assert_int_equal(l->nimm, 3);
    assert_int_equal(l->imm[0].kind, KILN_WIRE_I64);
    assert_string_equal(l->imm[0].expr, "cols");
    assert_int_equal(l->imm[1].kind, KILN_WIRE_I32);
    assert_string_equal(l->imm[1].expr, "rows * cols");
    assert_int_equal(l->imm[2].kind, KILN_WIRE_I64);
    assert_string_equal(l->imm[2].expr, "total");
    kiln_call_req *rq = resolve(m, RMS, 33, 1000);
    assert_int_equal(rq->launches[0].imm[0].ival, 1000);
    assert_int_equal(rq->launches[0].imm[1].ival, 33000);
    assert_int_equal(rq->launches[0].imm[2].ival, 33000);
    free(m);
    kiln_import_result_free(&r);
    assert_int_equal(import(bf16, RMS, NULL, &r), 0);
    assert_true(has_problem(&r, "buffers of different fixed types"));
    kiln_import_result_free(&r);
    assert_int_equal(import(dbl, RMS, NULL, &r), 0);
    assert_true(has_problem(&r, "'double eps' is a double, and kiln passes the task's eps as float"));
    kiln_import_result_free(&r);
}

static const char TWO_SRC[] =
    "#define WARP 32\n"
    RMS_KERNEL
    "void decode(float* out, const float* in, const float* w, float eps, int rows, int cols)\n"
    "{ rms_kernel<<<rows, WARP>>>(out, in, w, eps, cols); }\n"
    "void prefill(float* dst, float* src, float* gain, float eps, int rows, int cols)\n"
    "{ rms_kernel<<<rows, 8 * WARP>>>(dst, src, gain, eps, cols); }\n";

static void test_function_and_map(void **state)
{
    kiln_import_result r;
    kiln_import_opts o = {.file = "t.cu"};
    kiln_error err;
    (void)state;
    assert_int_equal(import(TWO_SRC, RMS, &o, &r), 0);
    assert_true(has_problem(&r, "2 host functions launch kernels (decode (line 4), prefill "
                                "(line 6)); choose one with --function NAME"));
    kiln_import_result_free(&r);
    o.function = "decode";
    assert_int_equal(import(TWO_SRC, RMS, &o, &r), 0);
    expect_clean(&r);
    kiln_manifest *m = parse(&r, RMS);
    assert_string_equal(m->launches[0].block[0], "WARP");
    free(m);
    kiln_import_result_free(&r);
    o.function = "prefill";
    assert_int_equal(import(TWO_SRC, RMS, &o, &r), 0);
    assert_true(has_problem(&r, "the parameter 'dst' has no counterpart"));
    kiln_import_result_free(&r);
    o.maps[0] = "dst=y", o.maps[1] = "src=x", o.maps[2] = "gain=w", o.nmaps = 3;
    assert_int_equal(import(TWO_SRC, RMS, &o, &r), 0);
    expect_clean(&r);
    kiln_import_result_free(&r);
    o.maps[2] = "gain=weight";
    assert_int_equal(kiln_import(TWO_SRC, strlen(TWO_SRC), RMS, &o, &r, &err), -1);
    assert_non_null(strstr(err.msg, "--map gain=weight: no arg of that name in the task"));
    kiln_import_result_free(&r);
}

static void test_file_level_refusals(void **state)
{
    kiln_import_result r;
    kiln_error err;
    char *starter = NULL;
    size_t n;
    (void)state;
    assert_int_equal(import("__global__ void k(int n) { }\n", RMS, NULL, &r), 0);
    assert_true(has_problem(&r, "no host function launches a kernel"));
    kiln_import_result_free(&r);
    assert_int_equal(import("#include \"helpers.h\"\n" "\n" RMS_SRC_TEXT, RMS, NULL, &r), 0);
    assert_true(has_problem(&r, "t.cu:1: cannot translate #include \"helpers.h\""));
    kiln_import_result_free(&r);
    assert_int_equal(import("void f() { k<<<1, 1>>>(); }\n", RMS, NULL, &r), 0);
    assert_true(has_problem(&r, "its kernel is not defined in this file"));
    kiln_import_result_free(&r);
    assert_int_equal(import("static __global__ void k(float *y) { }\n"
                            "void f(float *y) { k<<<1, 32>>>(y); }\n", RMS, NULL, &r), 0);
    assert_true(has_problem(&r, "cannot translate the kernel's declaration"));
    kiln_import_result_free(&r);
    assert_int_equal(kiln_read_file(KILN_TASKS_DIR "/../kernels/rmsnorm/cuda/starter.cu", 1 << 20,
                                    &starter, &n, &err), 0);
    assert_int_equal(import(starter, RMS, NULL, &r), 0);
    assert_true(has_problem(&r, "it already has a /*@kiln launch"));
    kiln_import_result_free(&r);
    free(starter);
}


/* ---- PyTorch host code ------------------------------------------------------------ */

static int has_account(const kiln_import_result *r, const char *needle)
{
    for (int i = 0; i < r->account.n; i++)
        if (strstr(r->account.v[i], needle))
            return 1;
    return 0;
}

static void expect_account(const kiln_import_result *r, const char *needle)
{
    if (has_account(r, needle))
        return;
    for (int i = 0; i < r->account.n; i++)
        print_error("  %s\n", r->account.v[i]);
    fail_msg("the account lacks '%s'", needle);
}

static const char TORCH_SRC[] =
    "#include <torch/all.h>\n"
    "#include <ATen/cuda/CUDAContext.h>\n"
    "#include <c10/cuda/CUDAGuard.h>\n"
    "template <typename scalar_t>\n"
    "__global__ void rms(scalar_t* __restrict__ out, const scalar_t* __restrict__ in,\n"
    "                    const int64_t stride, const scalar_t* __restrict__ w,\n"
    "                    const float eps, const int hidden) { }\n"
    "void rms_norm(torch::Tensor& out, torch::Tensor& input, torch::Tensor& weight,\n"
    "              double epsilon) {\n"
    "  TORCH_CHECK(out.is_contiguous());\n"                                          /* 10 */
    "  int hidden = input.size(-1);\n"
    "  TORCH_CHECK(hidden % 8 == 0 && input.stride(-1) == 1, \"rows of 8\");\n"
    "  TORCH_CHECK(weight.scalar_type() == input.scalar_type());\n"
    "  TORCH_CHECK(input.size(0) <= 65535);\n"
    "  const at::cuda::OptionalCUDAGuard guard(device_of(input));\n"                 /* 15 */
    "  auto stream = at::cuda::getCurrentCUDAStream().stream();\n"
    "  AT_DISPATCH_FLOATING_TYPES_AND2(at::ScalarType::Half, at::ScalarType::BFloat16,\n"
    "      input.scalar_type(), \"rms\", [&] {\n"
    "    rms<scalar_t><<<input.numel() / hidden, std::min(hidden, 1024),\n"
    "                    sizeof(scalar_t) * 32, stream>>>(\n"                         /* 20 */
    "        out.data_ptr<scalar_t>(), input.data_ptr<scalar_t>(), input.stride(0),\n"
    "        weight.data_ptr<scalar_t>(), epsilon, hidden);\n"
    "  });\n"
    "}\n";

/* torch::Tensor parameters: data_ptr<T>() to the task's buffers (inputs and
 * outputs told apart by the kernel's const-ness), size/numel/stride to dims,
 * the dispatch's lambda read with scalar_t the run's dtype (kiln_t), an
 * int64_t stride widened, TORCH_CHECK as a precondition or a note, the
 * guard and the stream dropped with notes, the host headers dropped. */
static void test_torch_host(void **state)
{
    kiln_import_result r;
    (void)state;
    assert_int_equal(import(TORCH_SRC, RMS, NULL, &r), 0);
    expect_clean(&r);
    expect_account(&r, "out -> y (a tensor the kernels write, by position), input -> x (a tensor "
                       "the kernels read, by position), weight -> w (a tensor the kernels read, "
                       "by position), epsilon -> eps (similar name)");
    expect_account(&r, "line 15: dropped 'const at::cuda::OptionalCUDAGuard guard(device_of(input))'");
    expect_account(&r, "line 16: dropped 'auto stream = at::cuda::getCurrentCUDAStream().stream()'");
    expect_account(&r, "line 17: AT_DISPATCH_FLOATING_TYPES_AND2(...): its lambda is read as the "
                       "host code, with scalar_t the run's dtype");
    expect_account(&r, "line 10: TORCH_CHECK(out.is_contiguous()) holds for every buffer");
    expect_account(&r, "line 12: TORCH_CHECK(hidden % 8 == 0) is the precondition \"cols % 8 == 0\"");
    expect_account(&r, "line 12: TORCH_CHECK(input.stride(-1) == 1) holds");
    expect_account(&r, "line 13: TORCH_CHECK(weight.scalar_type() == input.scalar_type()): a check "
                       "of dtypes");
    expect_account(&r, "line 14: TORCH_CHECK(input.size(0) <= 65535) is not kept ('rows <= 65535'");
    expect_account(&r, "removed #include <ATen/cuda/CUDAContext.h> (a host header)");
    assert_non_null(strstr(r.candidate, "#include \"kiln_cuda.h\""));
    assert_non_null(strstr(r.candidate, "extern \"C\" __global__ void rms_kiln_t(kiln_t* "
                                        "__restrict__ out, const kiln_t* __restrict__ in,"));
    assert_null(strstr(r.candidate, "\n#include <torch/all.h>"));
    assert_string_equal(r.dtype_only, "");
    kiln_manifest *m = parse(&r, RMS);
    const kiln_launch_spec *l = &m->launches[0];
    assert_string_equal(l->kernel, "rms_kiln_t");
    assert_string_equal(l->grid[0], "rows * cols / hidden");
    assert_string_equal(l->block[0], "min(hidden, 1024)");
    assert_string_equal(l->smem, "sizeof(T) * 32");
    assert_int_equal(m->require.n, 1);
    assert_int_equal(m->require.p[0].divisor, 8);
    assert_int_equal(l->nargs, 6);
    assert_int_equal(l->arg[0], 2);                      /* y */
    assert_int_equal(l->arg[1], 0);                      /* x */
    assert_int_equal(l->arg[2], KILN_WIRE_ARG_IMM);      /* i64(cols) */
    assert_int_equal(l->imm[0].kind, KILN_WIRE_I64);
    assert_string_equal(l->imm[0].expr, "cols");
    assert_int_equal(l->arg[3], 1);                      /* w */
    assert_int_equal(l->arg[4], 5);                      /* eps */
    assert_string_equal(l->imm[1].expr, "hidden");
    kiln_call_req *rq = resolve(m, RMS, 64, 4096);
    assert_int_equal(rq->launches[0].grid[0], 64);
    assert_int_equal(rq->launches[0].block[0], 1024);
    assert_int_equal(rq->launches[0].smem, 4 * 32);
    free(m);
    kiln_import_result_free(&r);
}

static void test_torch_refusals(void **state)
{
    static const char *const cases[][2] = {
        {"{ auto tmp = torch::empty_like(input);\n"
         "  k<<<input.size(0), 256>>>(tmp.data_ptr<float>(), input.data_ptr<float>(), "
         "input.size(-1)); }",
         "t.cu:4: cannot translate a kernel argument: 'tmp.data_ptr<float>()' is a tensor made "
         "here (line 3)"},
        {"{ k<<<input.size(2), 256>>>(out.data_ptr<float>(), input.data_ptr<float>(), 1); }",
         "'input.size(2)': x has 2 dimensions in the task"},
        {"{ k<<<input.size(0), input.device().index()>>>(out.data_ptr<float>(), "
         "input.data_ptr<float>(), 1); }",
         "'input.device()' is known only at run time"},
        {"{ k<<<input.size(0), 256>>>(extra.data_ptr<float>(), input.data_ptr<float>(), 1); }",
         "the parameter 'extra' has no counterpart among the task's args (x, w, y, rows, cols, "
         "eps): name it as the arg it is, or pass --map extra=ARG (=scratch for an output"},
        {"{ k<<<(size_t)input.data_ptr() / 16, 256>>>(out.data_ptr<float>(), "
         "input.data_ptr<float>(), 1); }",
         "input.data_ptr() is a buffer's address, known only at run time"},
        {"{ TORCH_CHECK(false, \"never\");\n"
         "  k<<<input.size(0), 256>>>(out.data_ptr<float>(), input.data_ptr<float>(), 1); }",
         "t.cu:3: cannot translate the check TORCH_CHECK(false): it never holds"},
        {"{ k<<<input.size(0), (uintptr_t)input.data_ptr() % 512>>>(out.data_ptr<float>(), "
         "input.data_ptr<float>(), 1); }",
         "kiln aligns buffers to 256 bytes, so their address modulo 512 is not known"},
    };
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char src[2048];
        kiln_import_result r;
        kiln_import_opts o = {.file = "t.cu", .nmaps = 2, .maps = {"input=x", "out=y"}};
        snprintf(src, sizeof src, "__global__ void k(float* y, const float* x, int n) { }\n"
                 "void f(torch::Tensor& out, torch::Tensor& input, torch::Tensor& extra)\n"
                 "%s", cases[i][0]);
        assert_int_equal(import(src, RMS, &o, &r), 0);
        if (!has_problem(&r, cases[i][1])) {
            for (int k = 0; k < r.problems.n; k++)
                print_error("  %s\n", r.problems.v[k]);
            fail_msg("case %zu: no problem says '%s'", i, cases[i][1]);
        }
        assert_null(r.candidate);
        kiln_import_result_free(&r);
    }
}

/* Overloaded (enable_if'd) kernel templates cannot be copied out: the
 * launch names its instance for NVRTC, qualified as the host wrote it; the
 * C++ library names the torch headers gave come from libcu++. */
static void test_name_expression(void **state)
{
    static const char src[] =
        "#include <torch/all.h>\n"
        "namespace ns {\n"
        "template <typename T, int W>\n"
        "__global__ std::enable_if_t<(W > 0)> k(T* y, const T* x, const T* w, float eps, int cols) { }\n"
        "template <typename T, int W>\n"
        "__global__ std::enable_if_t<(W == 0)> k(T* y, const T* x, const T* w, float eps, int cols) { }\n"
        "}\n"
        "void rmsnorm(torch::Tensor& y, torch::Tensor& x, torch::Tensor& w, double eps) {\n"
        "  int cols = x.size(-1);\n"
        "  VLLM_DISPATCH_FLOATING_TYPES(x.scalar_type(), \"k\", [&] {\n"
        "    ns::k<scalar_t, 8><<<x.size(0), 256>>>(y.data_ptr<scalar_t>(), x.data_ptr<scalar_t>(),\n"
        "        w.data_ptr<scalar_t>(), eps, cols);\n"
        "  });\n"
        "}\n";
    kiln_import_result r;
    (void)state;
    assert_int_equal(import(src, RMS, NULL, &r), 0);
    expect_clean(&r);
    expect_account(&r, "y -> y (name), x -> x (name), w -> w (name), eps -> eps (name)");
    kiln_manifest *m = parse(&r, RMS);
    assert_string_equal(m->launches[0].kernel, "ns::k<kiln_t, 8>");
    assert_int_equal(m->launches[0].by_name_expr, 1);
    assert_null(strstr(r.candidate, "k_kiln_t"));
    assert_non_null(strstr(r.candidate, "#include \"kiln_cuda.h\""));
    assert_non_null(strstr(r.candidate, "#ifdef __CUDACC_RTC__\n#include <cuda/std/type_traits>\n"
                                        "namespace std {\nusing ::cuda::std::enable_if_t;\n}\n"
                                        "#else\n#include <type_traits>\n#endif\n"));
    free(m);
    kiln_import_result_free(&r);
}

/* ---- --map ---------------------------------------------------------------------------- */

static const char LLMC_SRC[] =
    "#define WARP 32\n"
    "__global__ void ln(float* out, float* mean, const float* inp, int N, int C, int bs) { }\n"
    "void f(float* out, float* mean, const float* inp, int B, int T, int C, int block_size) {\n"
    "  assert(block_size % 32 == 0);\n"
    "  int N = B * T;\n"
    "  ln<<<(N + block_size - 1) / block_size, block_size, block_size * sizeof(float)>>>(\n"
    "      out, mean, inp, N, C, block_size);\n"
    "}\n";

static int import_maps(const char *src, const kiln_task *t, const char *const *maps,
                       kiln_import_result *r, kiln_error *err)
{
    kiln_import_opts o = {.file = "t.cu"};
    for (; *maps; maps++)
        o.maps[o.nmaps++] = *maps;
    return kiln_import(src, strlen(src), t, &o, r, err);
}

/* An extra output to scratch, parameters to a constant and a new knob
 * (written as a knob line the tuner reads), passed to the kernel as values;
 * the check on the knob holds at every value. */
static void test_maps_scratch_const_knob(void **state)
{
    static const char *const maps[] = {"out=y", "inp=x", "mean=scratch", "B=rows", "T=1",
                                       "C=cols", "block_size=BLOCK:64,128", NULL};
    static const char *const sized[] = {"out=y", "inp=x", "mean=scratch:rows * 4", "B=rows",
                                        "T=1", "C=cols", "block_size=WARP", NULL};
    kiln_import_result r;
    kiln_error err;
    (void)state;
    assert_int_equal(import_maps(LLMC_SRC, RMS, maps, &r, &err), 0);
    expect_clean(&r);
    expect_account(&r, "mean -> scratch mean (--map)");
    expect_account(&r, "T -> 1 (--map), C -> cols (--map), block_size -> knob BLOCK (--map)");
    expect_account(&r, "line 4: assert(block_size % 32 == 0) holds at every value of the knobs");
    assert_non_null(strstr(r.candidate, "\n#define BLOCK 64 //@kiln tune 64 128\n"));
    kiln_manifest *m = parse(&r, RMS);
    assert_int_equal(m->nknobs, 1);
    assert_string_equal(m->knobs[0].name, "BLOCK");
    assert_int_equal(m->nscratch, 1);
    assert_string_equal(m->scratch[0].name, "mean");
    assert_string_equal(m->scratch[0].bytes, "rows * cols * sizeof(f32)");
    const kiln_launch_spec *l = &m->launches[0];
    assert_string_equal(l->block[0], "BLOCK");
    assert_string_equal(l->smem, "BLOCK * sizeof(f32)");
    assert_int_equal(l->arg[1], -1);                     /* scratch 0 */
    assert_string_equal(l->imm[0].expr, "N");
    assert_string_equal(l->imm[1].expr, "BLOCK");
    kiln_call_req *rq = resolve(m, RMS, 33, 1000);
    assert_int_equal(rq->launches[0].block[0], 64);
    assert_int_equal(rq->launches[0].grid[0], 1);
    assert_int_equal(rq->launches[0].imm[0].ival, 33);
    assert_int_equal(rq->scratch[0].bytes, 33 * 1000 * 4);
    free(m);
    kiln_import_result_free(&r);
    assert_int_equal(import_maps(LLMC_SRC, RMS, sized, &r, &err), 0);
    expect_clean(&r);
    assert_null(strstr(r.candidate, "//@kiln tune"));   /* WARP is the file's #define */
    m = parse(&r, RMS);
    assert_string_equal(m->scratch[0].bytes, "rows * 4");
    assert_string_equal(m->launches[0].block[0], "WARP");
    free(m);
    kiln_import_result_free(&r);
}

static void test_map_refusals(void **state)
{
    static const struct { const char *maps[8]; const char *want; } cases[] = {
        {{"nope=rows"}, "--map nope=rows: no parameter of that name in the host function (its "
                        "parameters: out, mean, inp, B, T, C, block_size)"},
        {{"out=rows"}, "--map out=rows: 'out' (pointer) cannot stand for the task's rows, a dim"},
        {{"B=scratch"}, "--map B=scratch: 'B' (int) is no buffer"},
        {{"B=1.5"}, "--map B=1.5: 'B' is an integer; give it an integer"},
        {{"block_size=blk"}, "--map block_size=blk: no arg of that name in the task (x, w, y, "
                             "rows, cols, eps); a new knob's name is upper-case (BLOCK)"},
        {{"out=weights"}, "--map out=weights: no arg of that name in the task (x, w, y, rows, "
                          "cols, eps); a buffer maps to an input or output, IN:OUT, or scratch"},
        {{"B=rows", "B=cols"}, "--map B=cols: 'B' is mapped twice"},
        {{"out=y", "mean=y"}, "--map mean=y: the task's y is mapped already"},
        {{"mean=w:y"}, "--map mean=w:y: w and y differ in shape or dtype"},
        {{"mean=y:x"}, "--map mean=y:x: IN:OUT is an input the kernels update in place and the "
                       "output it becomes; y is an output and x an input"},
        {{"block_size=BLOCK:64"}, "a knob lists 2 to 16 values"},
        {{"block_size=BLOCK:64,64"}, "--map block_size=BLOCK:64,64: 64 is listed twice"},
        {{"block_size=BLOCK:64,x1"}, "'x1' is not a decimal integer"},
        {{"block_size=rows:1,2"}, "'block_size' (int) is no buffer; IN:OUT is for a pointer"},
        {{"block_size=9lives"}, "'9lives' is no arg of the task (x, w, y, rows, cols, eps), "
                                "IN:OUT, scratch, number or knob name"},
        {{"mean=scratch:"}, "scratch: needs a size in bytes after ':'"},
        {{"block_size"}, "--map block_size: expected PARAM=TARGET"},
    };
    (void)state;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        kiln_import_result r;
        kiln_error err = {0};
        assert_int_equal(import_maps(LLMC_SRC, RMS, cases[i].maps, &r, &err), -1);
        if (!strstr(err.msg, cases[i].want))
            fail_msg("case %zu: '%s' lacks '%s'", i, err.msg, cases[i].want);
        kiln_import_result_free(&r);
    }
}

/* Two parameters mapped to one dim, multiplied: refused, naming both;
 * a knob value a check rules out: refused, naming it. */
static void test_map_nonsense(void **state)
{
    static const char *const squared[] = {"out=y", "inp=x", "mean=scratch", "B=rows", "T=rows",
                                          "C=cols", "block_size=BLOCK", NULL};
    static const char *const badknob[] = {"out=y", "inp=x", "mean=scratch", "B=rows", "T=1",
                                          "C=cols", "block_size=BLOCK:16,32", NULL};
    kiln_import_result r;
    kiln_error err;
    (void)state;
    assert_int_equal(import_maps(LLMC_SRC, RMS, squared, &r, &err), 0);
    assert_true(has_problem(&r, "t.cu:5: cannot translate the grid: 'rows * rows' squares the "
                                "task's rows: both parameters stand for it (--map B=rows, --map "
                                "T=rows)"));
    assert_null(r.candidate);
    kiln_import_result_free(&r);
    assert_int_equal(import_maps(LLMC_SRC, RMS, badknob, &r, &err), 0);
    assert_true(has_problem(&r, "t.cu:4: cannot translate the check assert(block_size % 32 == 0): "
                                "it fails at BLOCK = 16"));
    kiln_import_result_free(&r);
}

/* A buffer the kernel updates in place: kiln copies the task's input into
 * the output first (a kernel of the candidate's own), and the kernel works
 * on the output; the inputs stay as drawn. */
static void test_map_in_place(void **state)
{
    static const char src[] =
        "__global__ void k(float* buf, const float* w, float eps, int cols) { }\n"
        "void f(float* buf, const float* w, float eps, int rows, int cols)\n"
        "{ k<<<rows, 256>>>(buf, w, eps, cols); }\n";
    static const char *const maps[] = {"buf=x:y", NULL};
    kiln_import_result r;
    kiln_error err;
    (void)state;
    assert_int_equal(import_maps(src, RMS, maps, &r, &err), 0);
    expect_clean(&r);
    expect_account(&r, "buf -> x, updated in place as y (--map)");
    expect_account(&r, "launch kiln_import_copy: x into y before the kernels");
    assert_non_null(strstr(r.candidate, "extern \"C\" __global__ void kiln_import_copy("));
    kiln_manifest *m = parse(&r, RMS);
    assert_int_equal(m->nlaunches, 2);
    assert_string_equal(m->launches[0].kernel, "kiln_import_copy");
    assert_int_equal(m->launches[0].arg[0], 0);          /* x */
    assert_int_equal(m->launches[0].arg[1], 2);          /* y */
    assert_int_equal(m->launches[0].imm[0].kind, KILN_WIRE_I64);
    assert_int_equal(m->launches[1].arg[0], 2);          /* the kernel's buf is y */
    kiln_call_req *rq = resolve(m, RMS, 33, 1000);
    assert_int_equal(rq->nlaunches, 2);
    assert_int_equal(rq->launches[0].imm[0].ival, 33 * 1000 * 4);
    free(m);
    kiln_import_result_free(&r);
}

/* ---- headers and macros ---------------------------------------------------------------- */

static void write_file(const char *dir, const char *name, const char *text)
{
    char path[512];
    kiln_error err;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (kiln_write_text(path, text, &err) < 0)
        fail_msg("%s", err.msg);
}

/* Project headers: found in the file's directory and --include dirs,
 * inlined once each (include guard and #pragma once cut), their host code
 * cut; their helpers and #defines size the launch; one not found is named
 * with the directories searched. */
static void test_headers(void **state)
{
    char dir[] = "/tmp/kiln-import-incXXXXXX", inc[600], cmd[700];
    static const char src[] =
        "#include \"util.cuh\"\n"
        "#include \"util.cuh\"\n"
        "__global__ void k(float* y, const float* x, const float* w, float eps, int cols) { }\n"
        "void f(float* y, const float* x, const float* w, float eps, int rows, int cols)\n"
        "{ k<<<cdiv_(rows, TILE), TILE>>>(y, x, w, eps, cols); }\n";
    kiln_import_result r;
    kiln_error err;
    (void)state;
    assert_non_null(mkdtemp(dir));
    snprintf(inc, sizeof inc, "%s/inc", dir);
    snprintf(cmd, sizeof cmd, "mkdir %s", inc);
    assert_int_equal(system(cmd), 0);
    write_file(inc, "util.cuh",
               "#ifndef UTIL_CUH\n#define UTIL_CUH\n#include <vector>\n#include \"more.h\"\n"
               "#define TILE 128\n"
               "template <class T> __host__ __device__ T cdiv_(T a, T b) { return (a + b - 1) / b; }\n"
               "static int host_counter = 0;\n"
               "void host_only(std::vector<int>& v) { v.push_back(1); }\n"
               "__device__ float twice(float v) { return 2 * v; }\n#endif\n");
    write_file(dir, "more.h", "#pragma once\n__device__ inline float half_of(float v) { return v / 2; }\n");
    kiln_import_opts o = {.file = "t.cu", .dir = dir, .nincludes = 1, .includes = {inc}};
    /* more.h is not beside util.cuh, nor in inc: the file's directory is not searched for it */
    assert_int_equal(kiln_import(src, strlen(src), RMS, &o, &r, &err), 0);
    assert_true(has_problem(&r, "util.cuh:4: cannot translate #include \"more.h\": not found in"));
    assert_true(has_problem(&r, "pass the directory that holds it with --include DIR"));
    kiln_import_result_free(&r);
    o.includes[o.nincludes++] = dir;
    assert_int_equal(kiln_import(src, strlen(src), RMS, &o, &r, &err), 0);
    expect_clean(&r);
    expect_account(&r, "util.cuh:3: removed #include <vector> (a host header)");
    expect_account(&r, "util.cuh:8: removed host function host_only");
    expect_account(&r, "util.cuh:7: removed host variable host_counter");
    expect_account(&r, "more.h:1: removed #pragma once");
    const char *c = r.candidate;
    assert_non_null(strstr(c, "__device__ float twice(float v)"));
    assert_non_null(strstr(c, "__device__ inline float half_of(float v)"));
    assert_non_null(strstr(c, "#define TILE 128\n"));
    assert_null(strstr(c, "#ifndef UTIL_CUH"));
    assert_null(strstr(c, "v.push_back"));
    assert_null(strstr(c, "\n#include \"util.cuh\""));
    assert_non_null(strstr(c, "// kiln import: #include \"util.cuh\": inlined above"));
    kiln_manifest *m = parse(&r, RMS);
    assert_string_equal(m->launches[0].grid[0], "(rows + TILE - 1) / TILE");
    assert_string_equal(m->launches[0].block[0], "TILE");
    free(m);
    kiln_import_result_free(&r);
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) {}
}

/* A host macro that launches is expanded where it is used, on its line:
 * the lines after keep their numbers; its #define is cut. */
static void test_launch_macro(void **state)
{
    static const char src[] =
        "#define LAUNCH(v) k<v><<<rows, 256>>>(out, in, w, eps, cols);\n"
        "template <int V>\n"
        "__global__ void k(float* out, const float* in, const float* w, float eps, int cols) { }\n"
        "void rmsnorm(float* out, const float* in, const float* w, float eps, int rows, int cols)\n"
        "{\n"
        "  if (cols % 4 == 0) {\n"
        "    LAUNCH(4)\n"
        "  } else {\n"
        "    LAUNCH(1)\n"
        "  }\n"
        "  k<2><<<bogus, 256>>>(out, in, w, eps, cols);\n"
        "}\n";
    kiln_import_result r;
    (void)state;
    assert_int_equal(import(src, RMS, NULL, &r), 0);
    assert_true(has_problem(&r, "t.cu:11: cannot translate the grid: 'bogus' is no parameter"));
    expect_account(&r, "line 7: expanded 'LAUNCH(4)', a macro that launches (line 1)");
    expect_account(&r, "launch 2, line 9: k<1><<<rows, 256>>>(out, in, w, eps, cols)");
    kiln_import_result_free(&r);
    char fixed[1024];
    snprintf(fixed, sizeof fixed, "%.*s}\n", (int)(strstr(src, "  k<2>") - src), src);
    assert_int_equal(import(fixed, RMS, NULL, &r), 0);
    expect_clean(&r);
    assert_non_null(strstr(r.candidate, "// kiln import: removed #define LAUNCH (a macro that launches"));
    assert_null(strstr(r.candidate, "<<<"));
    kiln_manifest *m = parse(&r, RMS);
    assert_int_equal(m->nlaunches, 2);
    assert_string_equal(m->launches[0].kernel, "k_4");
    assert_string_equal(m->launches[1].when, "!(cols % 4 == 0)");
    free(m);
    kiln_import_result_free(&r);
}

/* What the dropped host headers gave the device code: torch's scalar
 * types as CUDA's, CUDA_VERSION from the compiler's. */
static void test_shim(void **state)
{
    static const char src[] =
        "#include <torch/all.h>\n"
        "#if defined(CUDA_VERSION) && CUDA_VERSION >= 12000\n"
        "__device__ float cvt(c10::Half h) { return __half2float(h); }\n"
        "#endif\n"
        "__device__ float cvt2(at::BFloat16 h) { return __bfloat162float(h); }\n"
        "__device__ float cvt3(torch::headeronly::Half h) { return __half2float(h); }\n"
        "__global__ void k(float* y, const float* x, const float* w, float eps, int cols) { }\n"
        "void f(float* y, const float* x, const float* w, float eps, int rows, int cols)\n"
        "{ k<<<rows, 256>>>(y, x, w, eps, cols); }\n";
    kiln_import_result r;
    (void)state;
    assert_int_equal(import(src, RMS, NULL, &r), 0);
    expect_clean(&r);
    assert_non_null(strstr(r.candidate, "namespace c10 { using Half = __half; using BFloat16 = "
                                        "__nv_bfloat16; }\nnamespace at { using c10::Half; using "
                                        "c10::BFloat16; }\n"));
    assert_non_null(strstr(r.candidate, "namespace torch { namespace headeronly { using c10::Half; "
                                        "using c10::BFloat16; } }\n"));
    assert_non_null(strstr(r.candidate, "#ifndef CUDA_VERSION"));
    assert_null(strstr(r.candidate, "kiln_cuda.h"));   /* no kiln_t used: none needed */
    kiln_import_result_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_expr_text),
        cmocka_unit_test(test_expr_refused),
        cmocka_unit_test(test_expr_differential),
        cmocka_unit_test(test_rmsnorm),
        cmocka_unit_test(test_lets_helpers_smem),
        cmocka_unit_test(test_template_instance_2d),
        cmocka_unit_test(test_dispatch_when),
        cmocka_unit_test(test_forced_manifest_is_json),
        cmocka_unit_test(test_runtime_values_refused),
        cmocka_unit_test(test_kernel_types_checked),
        cmocka_unit_test(test_function_and_map),
        cmocka_unit_test(test_file_level_refusals),
        cmocka_unit_test(test_torch_host),
        cmocka_unit_test(test_torch_refusals),
        cmocka_unit_test(test_name_expression),
        cmocka_unit_test(test_maps_scratch_const_knob),
        cmocka_unit_test(test_map_refusals),
        cmocka_unit_test(test_map_nonsense),
        cmocka_unit_test(test_map_in_place),
        cmocka_unit_test(test_headers),
        cmocka_unit_test(test_launch_macro),
        cmocka_unit_test(test_shim),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
