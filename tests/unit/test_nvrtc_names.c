/* test_nvrtc_names.c - kernels found after compiling (issue 16): the
 * porting fixtures' manifests parsed by the verifier's manifest code, their
 * kernels that are not `extern "C" __global__ void NAME(` by name (a
 * template instance, a kernel in an extern "C" block, one a macro declares)
 * handed to the worker's NVRTC path as name expressions, and each one's
 * symbol found in the cubin. A name no kernel has is a compile error that
 * says so; a name the code never uses, a static one. And every task's
 * CUDA reference, as the verifier hands it to the worker. No GPU needed.
 *   test_nvrtc_names KILN_CUDA_H CUDA_INCLUDE_DIR TASKS_DIR PORTING_DIR */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "manifest.h"
#include "nvrtc_child.h"
#include "task.h"

static const char *cuda_include, *porting;
static char *kiln_header;
static kiln_task task;

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    if (buf)
        buf[n] = '\0';
    fclose(f);
    return buf;
}

/* Compile src for sm_90a bf16 with names; the child's result in *c. */
static void compile(const char *src, const char *names, kiln_nvrtc_child *c)
{
    kiln_nvrtc_in in = {.source = src, .name = "candidate.cu", .arch = "sm_90a",
                        .dtype_define = "KILN_DTYPE_BF16", .kiln_header = kiln_header,
                        .cuda_include = cuda_include, .names = names};
    kiln_nvrtc_start(c, &in);
    kiln_nvrtc_wait(c);
}

static void free_child(kiln_nvrtc_child *c)
{
    free(c->cubin);
    free(c->log);
    free(c->lowered);
}

/* The fixture's manifest names these kernels through name expressions (in
 * order), each found in the cubin under its lowered name. */
static void check_fixture(const char *file, const char *want_names)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", porting, file);
    char *src = slurp(path);
    assert_non_null(src);
    kiln_manifest m;
    kiln_error e = {0};
    if (kiln_manifest_parse(src, strlen(src), &task, &m, &e) < 0)
        fail_msg("%s: %s", file, e.msg);
    char names[1024];
    kiln_manifest_name_exprs(&m, names, sizeof names);
    assert_string_equal(names, want_names);
    kiln_nvrtc_child c;
    compile(src, names, &c);
    if (c.rc != 0)
        fail_msg("%s: rc %d: %s", file, c.rc, c.log ? c.log : c.limit);
    size_t k = 0;
    for (const char *p = names; *p; p += strcspn(p, "\n") + 1, k++) {
        assert_true(k < 8);
        const char *sym = c.lowered;
        for (size_t i = 0; i < k; i++)
            sym += strlen(sym) + 1;
        assert_true(sym < c.lowered + c.lowered_len);
        assert_non_null(memmem(c.cubin, c.n, sym, strlen(sym) + 1));   /* in its symbol table */
    }
    free_child(&c);
    free(src);
}

static void template_instances(void **state)
{
    (void)state;
    check_fixture("rmsnorm_template.cu", "rms_norm_kernel<kiln_t, 8>\nrms_norm_kernel<kiln_t, 1>\n");
}

static void extern_c_block(void **state)
{
    (void)state;
    check_fixture("rmsnorm_extern_block.cu", "rmsnorm_forward_kernel\n");
}

static void macro_declared(void **state)
{
    (void)state;
    check_fixture("rmsnorm_macro.cu", "rmsnorm_acc_f32\n");
}

/* The plain spelling needs no name expression, as before. */
static void plain_by_name(void **state)
{
    (void)state;
    check_fixture("rmsnorm_cub_assert.cu", "");
}

/* A template instance with the wrong arguments names no kernel: the
 * compile fails and the log says which name. */
static void wrong_instance_is_compile_error(void **state)
{
    (void)state;
    char path[4096];
    snprintf(path, sizeof path, "%s/rmsnorm_template.cu", porting);
    char *src = slurp(path);
    assert_non_null(src);
    kiln_nvrtc_child c;
    compile(src, "rms_norm_kernel<kiln_t>\n", &c);
    assert_int_equal(c.rc, 1);
    assert_non_null(c.log);
    free_child(&c);
    compile(src, "block_reduce_sum<256>\n", &c);   /* a __device__ function, not a kernel */
    assert_int_equal(c.rc, 1);
    free_child(&c);
    free(src);
}

/* The static stage: a name the code never uses, or one that programs. */
static void static_refusals(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "nowhere_kernel<kiln_t, 8>", "rms_norm_kernel<kiln_t, 8>; int x", "rms_norm_kernel<\\\"a\\\">",
        "rms_norm_kernel<kiln_t, 8", "::rms_norm_kernel", "rms_norm_kernel<kiln_t>>",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char src[2048];
        snprintf(src, sizeof src,
                 "template <typename T, int V> __global__ void rms_norm_kernel(T *y, int cols) {}\n"
                 "/*@kiln launch {\"launches\": [{\"kernel\": \"%s\", \"grid\": [\"rows\"],"
                 " \"block\": [256], \"args\": [\"y\", \"cols\"]}], \"scratch\": []} @*/\n",
                 bad[i]);
        kiln_manifest m;
        kiln_error e = {0};
        if (kiln_manifest_parse(src, strlen(src), &task, &m, &e) == 0)
            fail_msg("accepted kernel '%s'", bad[i]);
        if (!strstr(e.msg, "kernel"))
            fail_msg("kernel '%s': %s", bad[i], e.msg);
    }
}

static const char *tasks_dir;

/* Every built-in task's CUDA reference compiles through the worker's NVRTC
 * path as the verifier writes it (the run's dtype defined first: see
 * write_reference in verifier/backend/cuda/cuda.c), with KILN_DTYPE_F64;
 * and the starters and tunables of the tasks whose references round to the
 * run's dtype or read integer inputs compile for each of their dtypes. */
static void task_sources_compile(void **state)
{
    (void)state;
    static const char *names[] = {"rmsnorm", "softmax", "layernorm", "rope", "rope_interleaved",
                                  "gemm", "add_rmsnorm", "cross_entropy"};
    static kiln_task t;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char dir[4096];
        kiln_error e = {0};
        snprintf(dir, sizeof dir, "%s/%s", tasks_dir, names[i]);
        if (kiln_task_load(dir, &t, &e) < 0)
            fail_msg("%s: %s", names[i], e.msg);
        int is_new = i >= 6;
        for (int d = 0; d < t.ncuda_dtypes; d++) {
            kiln_dtype dt = t.cuda_dtypes[d];
            if (!is_new && dt != KILN_DT_BF16)
                continue;
            char *ref = slurp(t.reference_cuda);
            assert_non_null(ref);
            size_t n = strlen(ref) + 96;
            char *src = malloc(n);
            assert_non_null(src);
            snprintf(src, n, "#define %s 1\n#line 1 \"reference.cu\"\n%s", kiln_run_dtype_macro(dt), ref);
            kiln_nvrtc_in in = {.source = src, .name = "reference.cu", .arch = "sm_90a",
                                .dtype_define = "KILN_DTYPE_F64", .kiln_header = kiln_header,
                                .cuda_include = cuda_include};
            kiln_nvrtc_child c;
            kiln_nvrtc_start(&c, &in);
            kiln_nvrtc_wait(&c);
            if (c.rc != 0)
                fail_msg("%s reference for %s: %s", names[i], kiln_dtype_name(dt), c.log ? c.log : c.limit);
            free_child(&c);
            free(src);
            free(ref);
            if (!is_new)
                continue;
            char define[32], tunable[4200];
            snprintf(tunable, sizeof tunable, "%s/../kernels/%s/cuda/tunable.cu", tasks_dir, names[i]);
            for (int f = 0; f < 2; f++) {
            char *st = slurp(f ? tunable : t.starter_cuda);
            assert_non_null(st);
            snprintf(define, sizeof define, "KILN_DTYPE_%s", dt == KILN_DT_F32 ? "F32" : dt == KILN_DT_F16 ? "F16" : "BF16");
            in = (kiln_nvrtc_in){.source = st, .name = "baseline.cu", .arch = "sm_90a",
                                 .dtype_define = define, .kiln_header = kiln_header,
                                 .cuda_include = cuda_include};
            kiln_nvrtc_start(&c, &in);
            kiln_nvrtc_wait(&c);
            if (c.rc != 0)
                fail_msg("%s %s for %s: %s", names[i], f ? "tunable" : "starter", kiln_dtype_name(dt),
                         c.log ? c.log : c.limit);
            free_child(&c);
            free(st);
            }
        }
    }
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: test_nvrtc_names KILN_CUDA_H CUDA_INCLUDE_DIR TASKS_DIR PORTING_DIR\n");
        return 2;
    }
    kiln_header = slurp(argv[1]);
    cuda_include = argv[2];
    porting = argv[4];
    tasks_dir = argv[3];
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/rmsnorm", argv[3]);
    kiln_error e = {0};
    if (!kiln_header || kiln_task_load(dir, &task, &e) < 0) {
        fprintf(stderr, "cannot load %s or the rmsnorm task: %s\n", argv[1], e.msg);
        return 2;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(template_instances),    cmocka_unit_test(extern_c_block),
        cmocka_unit_test(macro_declared),        cmocka_unit_test(plain_by_name),
        cmocka_unit_test(wrong_instance_is_compile_error), cmocka_unit_test(static_refusals),
        cmocka_unit_test(task_sources_compile),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    free(kiln_header);
    return rc;
}
