/* test_nvrtc_env.c - the compile environment of CUDA candidates, through
 * the worker's own NVRTC path (worker/cuda/nvrtc_build.c in a child,
 * nvrtc_child.c), without a GPU: every header docs/cuda.md lists compiles
 * alone and together, INFINITY, FLT_MAX, int64_t and numeric_limits have
 * their IEEE/C values (static_asserts the compiler checks), and an include
 * of a host file fails to compile with a message that says so, never with
 * the file's text in the log.
 * The integration fixture that uses them (verified on a GPU by ctest
 * integration_cuda_std_headers) compiles too, for every dtype.
 * Two parts, two ctest tests: "headers", each header alone (twenty NVRTC
 * compiles: unit_nvrtc_headers, normal build only, see tests/CMakeLists.txt),
 * and "rest", everything else (unit_nvrtc_env).
 *   test_nvrtc_env headers|rest KILN_CUDA_H CUDA_INCLUDE_DIR FIXTURE.cu */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/landlock.h>
#include <sys/syscall.h>
#include <cmocka.h>

#include "nvrtc_child.h"

static char *kiln_header;
static int landlock_skipped;   /* main reports the run as skipped (77) */
static const char *cuda_include, *fixture_path;

/* The file's text, in one of two buffers (the header's and the fixture's). */
static char *slurp(const char *path)
{
    static char bufs[2][1 << 16];
    static int next;
    FILE *f = fopen(path, "rb");
    if (!f || next == 2)
        return f ? fclose(f), NULL : NULL;
    char *buf = bufs[next++];
    size_t n = fread(buf, 1, sizeof bufs[0] - 1, f);
    fclose(f);
    buf[n] = '\0';
    return buf;
}

/* Compile src as a candidate for sm_90a of the dtype; the child's rc,
 * the log in *log. */
static int compile_dtype(const char *src, const char *include, const char *dtype, char **log)
{
    kiln_nvrtc_in in = {.source = src, .name = "candidate.cu", .arch = "sm_90a",
                        .dtype_define = dtype, .kiln_header = kiln_header,
                        .cuda_include = include};
    kiln_nvrtc_child c;
    kiln_nvrtc_start(&c, &in);
    kiln_nvrtc_wait(&c);
    free(c.cubin);
    *log = c.log;
    if (c.rc == KILN_NVRTC_LIMIT)
        print_error("compile ran into a limit: %s\n", c.limit);
    return c.rc;
}

static int compile_in(const char *src, const char *include, char **log)
{
    return compile_dtype(src, include, "KILN_DTYPE_BF16", log);
}

static int compile(const char *src, char **log)
{
    return compile_in(src, cuda_include, log);
}

static void expect_ok(const char *what, const char *src)
{
    char *log = NULL;
    int rc = compile(src, &log);
    if (rc != 0)
        print_error("%s: rc %d\n%.2000s\n", what, rc, log ? log : "(no log)");
    free(log);
    assert_int_equal(rc, 0);
}

/* Fails to compile (rc 1) with `want` in the log and `never` nowhere in it. */
static void expect_refused(const char *what, const char *src, const char *want, const char *never)
{
    char *log = NULL;
    int rc = compile(src, &log);
    if (rc != 1 || !log || !strstr(log, want) || (never && strstr(log, never)))
        print_error("%s: rc %d, wanted \"%s\" in\n%.2000s\n", what, rc, want, log ? log : "(none)");
    assert_int_equal(rc, 1);
    assert_non_null(log);
    assert_non_null(strstr(log, want));
    if (never)
        assert_null(strstr(log, never));
    free(log);
}

#define KERNEL "extern \"C\" __global__ void k(float *y, long long *z) { "

/* Each header docs/cuda.md lists, alone, with what it is included for. */
static void test_each_header(void **state)
{
    (void)state;
    static const char *const cases[][2] = {
        {"cstdint", "std::int64_t a = INT64_MAX; int64_t b = INT32_MIN; uint8_t c = UINT8_MAX; "
                    "z[0] = a + b + c; }"},
        {"stdint.h", "int64_t a = INT64_MIN; uint32_t b = UINT32_MAX; z[0] = a + b; }"},
        {"cstddef", "std::size_t n = sizeof(float); std::ptrdiff_t d = -1; z[0] = n + d; }"},
        {"stddef.h", "size_t n = offsetof(float2, y); z[0] = n; }"},
        {"climits", "z[0] = INT_MAX + (long long)CHAR_BIT + LLONG_MIN; }"},
        {"limits.h", "z[0] = UINT_MAX + (long long)SHRT_MIN; }"},
        {"cfloat", "y[0] = FLT_MAX + FLT_MIN + FLT_EPSILON; z[0] = FLT_MANT_DIG; }"},
        {"float.h", "y[0] = (float)(DBL_EPSILON + DBL_MIN) + FLT_TRUE_MIN; }"},
        {"cmath", "y[0] = std::sqrt(y[1]) + std::exp(y[2]) + std::fmod(y[3], 2.0f) + "
                  "std::fmax(y[4], -INFINITY) + (std::isnan(y[5]) ? NAN : HUGE_VALF) + "
                  "(float)M_PI; }"},
        {"math.h", "y[0] = sqrtf(y[1]) + erff(y[2]) + (isinf(y[3]) ? 1.0f : (float)M_LN2) + "
                   "INFINITY; }"},
        {"limits", "y[0] = std::numeric_limits<float>::infinity() + "
                   "std::numeric_limits<float>::lowest(); z[0] = std::numeric_limits<int>::max(); }"},
        {"cassert", "assert(y != nullptr); y[0] = 1.0f; }"},
        {"assert.h", "assert(z != nullptr); z[0] = 1; }"},
        {"cub/cub.cuh", "using R = cub::BlockReduce<float, 128>; __shared__ R::TempStorage t; "
                        "float s = R(t).Sum(y[threadIdx.x]); if (threadIdx.x == 0) y[0] = s; }"},
        {"cub/block/block_reduce.cuh", "using R = cub::BlockReduce<float, 64>; "
                                       "__shared__ R::TempStorage t; y[0] = R(t).Sum(y[1]); }"},
        {"cub/warp/warp_reduce.cuh", "using W = cub::WarpReduce<float>; "
                                     "__shared__ W::TempStorage t; y[0] = W(t).Sum(y[1]); }"},
        {"cuda/std/cmath", "y[0] = cuda::std::sqrt(y[1]); }"},
        {"cuda/std/limits", "y[0] = cuda::std::numeric_limits<float>::max(); }"},
        {"cooperative_groups.h", "namespace cg = cooperative_groups; auto b = cg::this_thread_block(); "
                                 "b.sync(); y[0] = b.size(); }"},
        {"cooperative_groups/reduce.h", "namespace cg = cooperative_groups; "
                                        "auto w = cg::tiled_partition<32>(cg::this_thread_block()); "
                                        "y[0] = cg::reduce(w, y[1], cg::plus<float>()); }"},
        {"cuda_fp8.h", "__nv_fp8_e4m3 v(y[1]); y[0] = float(v); }"},
        {"mma.h", "using namespace nvcuda; wmma::fragment<wmma::accumulator, 16, 16, 16, float> f; "
                  "wmma::fill_fragment(f, 0.0f); y[0] = f.x[0]; }"},
        {"cuda/barrier", "__shared__ cuda::barrier<cuda::thread_scope_block> *b; y[0] = b != nullptr; }"},
        {"cuda_fp16.h", "__half h = __float2half(y[1]); y[0] = __half2float(h); }"},
        {"cuda_bf16.h", "__nv_bfloat16 h = __float2bfloat16(y[1]); y[0] = __bfloat162float(h); }"},
        {"kiln_cuda.h", "kiln_t v = kiln_from_float(y[1]); y[0] = kiln_to_float(v); }"},
    };
    /* The compiles run as the worker runs them, each in a child of its
     * own, a batch at a time: one after another they took most of this
     * test's time on two cores. A batch is as many as there are cores,
     * up to 4: more would only crowd the test that runs beside this one
     * (a timing test, it may be). */
    enum { N = sizeof cases / sizeof cases[0] };
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    size_t batch = cores < 1 ? 1 : cores > 4 ? 4 : (size_t)cores;
    static char src[N][2048];
    kiln_nvrtc_in in[N];
    kiln_nvrtc_child c[N];
    for (size_t b = 0; b < N; b += batch) {
        size_t e = b + batch < N ? b + batch : N;
        for (size_t i = b; i < e; i++) {
            snprintf(src[i], sizeof src[i], "#include <%s>\n" KERNEL "%s\n", cases[i][0],
                     cases[i][1]);
            in[i] = (kiln_nvrtc_in){.source = src[i], .name = "candidate.cu", .arch = "sm_90a",
                                    .dtype_define = "KILN_DTYPE_BF16", .kiln_header = kiln_header,
                                    .cuda_include = cuda_include};
            kiln_nvrtc_start(&c[i], &in[i]);
        }
        for (size_t i = b; i < e; i++)
            kiln_nvrtc_wait(&c[i]);
        for (size_t i = b; i < e; i++) {
            if (c[i].rc != 0)
                print_error("%s: rc %d\n%.2000s\n", cases[i][0], c[i].rc,
                            c[i].log ? c[i].log : c[i].limit);
            free(c[i].cubin);
            free(c[i].log);
            free(c[i].lowered);
        }
        for (size_t i = b; i < e; i++)
            assert_int_equal(c[i].rc, 0);
    }
}

/* The quoted spellings resolve to the same headers, kiln's in memory and
 * CUDA's on the include path (and CUDA's headers still find their
 * neighbours by quoted names: cooperative groups' "info.h"). */
static void test_quoted(void **state)
{
    (void)state;
    expect_ok("quoted",
              "#include \"cstdint\"\n#include \"cfloat\"\n#include \"cmath\"\n#include \"limits\"\n"
              "#include \"cooperative_groups.h\"\n#include \"cuda_fp16.h\"\n"
              KERNEL "z[0] = INT64_MAX; y[0] = FLT_MAX + std::sqrt(y[1]) + "
              "std::numeric_limits<float>::epsilon(); }\n");
}

/* The values, checked by the compiler: if one were wrong the candidate
 * would not compile. */
static const char VALUES[] =
    "#include <cstdint>\n#include <climits>\n#include <cfloat>\n#include <cmath>\n"
    "#include <limits>\n#include \"kiln_cuda.h\"\n"
    "static_assert(sizeof(int64_t) == 8 && sizeof(std::uint64_t) == 8, \"int64\");\n"
    "static_assert(INT64_MAX == 9223372036854775807LL && INT32_MIN == -2147483647 - 1, \"\");\n"
    "static_assert(INT_MAX == 2147483647 && CHAR_BIT == 8 && UINT_MAX == 4294967295u, \"\");\n"
    "static_assert(FLT_MAX == 0x1.fffffep127f && FLT_MAX == std::numeric_limits<float>::max(), \"\");\n"
    "static_assert(FLT_MIN == 0x1p-126f && FLT_TRUE_MIN == 0x1p-149f, \"FLT_MIN\");\n"
    "static_assert(FLT_EPSILON == 0x1p-23f && DBL_EPSILON == 0x1p-52, \"epsilon\");\n"
    "static_assert(DBL_MAX == std::numeric_limits<double>::max(), \"DBL_MAX\");\n"
    "static_assert(DBL_MIN == 0x1p-1022 && DBL_TRUE_MIN == 0x1p-1074, \"DBL_MIN\");\n"
    "static_assert(FLT_MANT_DIG == std::numeric_limits<float>::digits, \"digits\");\n"
    "static_assert(INFINITY > FLT_MAX && -INFINITY < -FLT_MAX, \"INFINITY\");\n"
    "static_assert(HUGE_VALF == INFINITY && HUGE_VAL > DBL_MAX, \"HUGE_VAL\");\n"
    "static_assert(std::numeric_limits<float>::infinity() == INFINITY, \"inf\");\n"
    "static_assert(M_PI > 3.14159265358 && M_PI < 3.14159265359, \"pi\");\n"
    "extern \"C\" __global__ void k(const kiln_t *x, kiln_t *y, int n) {\n"
    "  float m = -INFINITY; int64_t i = (int64_t)blockIdx.x * n + threadIdx.x;\n"
    "  m = fmaxf(m, kiln_to_float(x[i])); if (!(m < FLT_MAX)) m = FLT_MAX;\n"
    "  y[i] = kiln_from_float(std::isnan(m) ? 0.0f : m);\n}\n";

static void test_values(void **state)
{
    (void)state;
    expect_ok("values", VALUES);
}

static void test_fixture(void **state)
{
    (void)state;
    char *src = slurp(fixture_path);
    assert_non_null(src);
    static const char *const dtypes[] = {"KILN_DTYPE_F32", "KILN_DTYPE_F16", "KILN_DTYPE_BF16"};
    for (int i = 0; i < 3; i++) {
        char *log = NULL;
        int rc = compile_dtype(src, cuda_include, dtypes[i], &log);
        if (rc != 0)
            print_error("%s %s: rc %d\n%.2000s\n", fixture_path, dtypes[i], rc, log ? log : "");
        free(log);
        assert_int_equal(rc, 0);
    }
}

/* An include of a host file: refused before NVRTC opens it. */
static void test_host_paths_refused(void **state)
{
    (void)state;
    const char *why = "is not allowed";
    expect_refused("absolute", "#include \"/etc/passwd\"\n", why, "root:");
    expect_refused("absolute <>", "#include </etc/passwd>\n", why, "root:");
    expect_refused("dot-dot", "#include <cuda/../../../../../../etc/passwd>\n", why, "root:");
    expect_refused("dot-dot quoted", "#include \"../worker.log\"\n", why, NULL);
    expect_refused("spliced", "#inc\\\nlude \"/etc/passwd\"\n", why, "root:");
    expect_refused("digraph", "%:include \"/etc/passwd\"\n", why, "root:");
    expect_refused("comment", "# /* x */ include_next </etc/passwd>\n", why, "root:");
    expect_refused("has_include",
                   "#if __has_include(\"/etc/passwd\")\n#error here\n#endif\n", why, NULL);
    expect_refused("macro", "#define P \"/etc/passwd\"\n#include P\n", "macro or computed name",
                   "root:");
    /* The line of the directive, as NVRTC would name it. */
    expect_refused("line", "// a kernel\n\n#include </proc/self/environ>\n",
                   "candidate.cu(3): error: #include </proc/self/environ>", NULL);
}

/* Names that pass the check but are no CUDA header: NVRTC cannot open them
 * (host headers are not on its path; the working directory is not searched). */
static void test_host_headers_missing(void **state)
{
    (void)state;
    expect_refused("stdio.h", "#include <stdio.h>\n", "cannot open source file \"stdio.h\"", NULL);
    expect_refused("iostream", "#include <iostream>\n", "cannot open source file", NULL);
    FILE *f = fopen("kiln_env_secret.h", "w");
    assert_non_null(f);
    fputs("kiln_secret_text_here\n", f);
    fclose(f);
    expect_refused("cwd", "#include \"kiln_env_secret.h\"\n", "cannot open source file",
                   "kiln_secret_text_here");
    unlink("kiln_env_secret.h");
    /* Device-wide CUB is host code: not in kiln's <cub/cub.cuh>, and its own
     * header does not compile under NVRTC. */
    expect_refused("DeviceReduce", "#include <cub/cub.cuh>\n" KERNEL "cub::DeviceReduce r; }\n",
                   "DeviceReduce", NULL);
}

/* The compiler child's Landlock layer: a relative name the check passes,
 * on the include path, that leads outside CUDA's directories (a symlink),
 * cannot be opened. Skipped without Landlock. */
static void test_landlock_child(void **state)
{
    (void)state;
    if (syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION) <= 0) {
        landlock_skipped = 1;
        skip();
    }
    char dir[] = "/tmp/kiln-nvrtc-env-XXXXXX", link[64], secret[64];
    assert_non_null(mkdtemp(dir));
    snprintf(secret, sizeof secret, "%s.secret", dir);
    snprintf(link, sizeof link, "%s/evil.h", dir);
    FILE *f = fopen(secret, "w");
    assert_non_null(f);
    fputs("kiln_secret_text_here\n", f);
    fclose(f);
    assert_int_equal(symlink(secret, link), 0);
    char *log = NULL;
    int rc = compile_in("#include <evil.h>\n", dir, &log);
    unlink(link);
    unlink(secret);
    rmdir(dir);
    assert_int_equal(rc, 1);
    assert_non_null(log);
    assert_null(strstr(log, "kiln_secret_text_here"));
    assert_non_null(strstr(log, "evil.h"));
    free(log);
}

int main(int argc, char **argv)
{
    int headers = argc == 5 && strcmp(argv[1], "headers") == 0;
    if (argc != 5 || (!headers && strcmp(argv[1], "rest") != 0) || !(kiln_header = slurp(argv[2]))) {
        fprintf(stderr, "usage: test_nvrtc_env headers|rest KILN_CUDA_H CUDA_INCLUDE_DIR FIXTURE.cu\n");
        return 2;
    }
    cuda_include = argv[3];
    fixture_path = argv[4];
    const struct CMUnitTest header_tests[] = {
        cmocka_unit_test(test_each_header),
    };
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quoted),
        cmocka_unit_test(test_values),
        cmocka_unit_test(test_fixture),
        cmocka_unit_test(test_host_paths_refused),
        cmocka_unit_test(test_host_headers_missing),
        cmocka_unit_test(test_landlock_child),
    };
    int failed = headers ? cmocka_run_group_tests_name("headers", header_tests, NULL, NULL)
                         : cmocka_run_group_tests_name("rest", tests, NULL, NULL);
    if (!failed && landlock_skipped) {   /* a check that did not run is a skip, not a pass */
        printf("SKIP: no Landlock here: the compiler child's Landlock layer was not checked\n");
        return 77;
    }
    return failed;
}
