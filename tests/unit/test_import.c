/* test_import.c - unit tests for `kiln import` (cli/import*.c): the C
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

static void test_dispatch_refused_and_forced(void **state)
{
    kiln_import_result r;
    kiln_import_opts o = {.file = "t.cu"};
    (void)state;
    assert_int_equal(import(DISPATCH_SRC, SOFTMAX, &o, &r), 0);
    assert_int_equal(r.problems.n, 2);
    assert_true(has_problem(&r, "t.cu:5: cannot translate the launch: it is inside 'if (cols % 4 == 0)'"));
    assert_true(has_problem(&r, "t.cu:7: cannot translate the launch: it is inside the else of"));
    assert_null(r.candidate);
    kiln_import_result_free(&r);
    o.force = 1;
    assert_int_equal(import(DISPATCH_SRC, SOFTMAX, &o, &r), 0);
    assert_non_null(r.candidate);
    kiln_manifest m;
    kiln_error err;
    assert_int_equal(kiln_manifest_parse(r.candidate, strlen(r.candidate), SOFTMAX, &m, &err), -1);
    assert_non_null(strstr(err.msg, "unknown field 'TODO'"));
    kiln_import_result_free(&r);
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
        {"{ rms_kernel<<<rows, 256, 0, s>>>(out, in, w, eps, rows * cols); }",
         "'rows * cols' is an expression"},
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

static void test_kernel_types_checked(void **state)
{
    static const char src[] =
        "__global__ void k(float* y, const float* x, const float* w, float eps, size_t cols) { }\n"
        "void rmsnorm(float* y, const float* x, const float* w, float eps, int rows, int cols)\n"
        "{ k<<<rows, 256>>>(y, x, w, eps, cols); }\n";
    static const char bf16[] =
        "__global__ void k(__nv_bfloat16* y, const float* x, const float* w, float eps, int cols) { }\n"
        "void rmsnorm(float* y, const float* x, const float* w, float eps, int rows, int cols)\n"
        "{ k<<<rows, 256>>>(y, x, w, eps, cols); }\n";
    kiln_import_result r;
    (void)state;
    assert_int_equal(import(src, RMS, NULL, &r), 0);
    assert_true(has_problem(&r, "'size_t cols' is a 64-bit int, and kiln passes the task's cols "
                                "as int"));
    kiln_import_result_free(&r);
    assert_int_equal(import(bf16, RMS, NULL, &r), 0);
    assert_true(has_problem(&r, "buffers of different fixed types"));
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_expr_text),
        cmocka_unit_test(test_expr_refused),
        cmocka_unit_test(test_expr_differential),
        cmocka_unit_test(test_rmsnorm),
        cmocka_unit_test(test_lets_helpers_smem),
        cmocka_unit_test(test_template_instance_2d),
        cmocka_unit_test(test_dispatch_refused_and_forced),
        cmocka_unit_test(test_runtime_values_refused),
        cmocka_unit_test(test_kernel_types_checked),
        cmocka_unit_test(test_function_and_map),
        cmocka_unit_test(test_file_level_refusals),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
