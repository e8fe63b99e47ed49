/* test_family_nvrtc.c - the CUDA kernel families (kernels/T/cuda/tunable.cu)
 * compile through the worker's own NVRTC path (nvrtc_child.c, kiln's
 * headers from memory, sm_90a), as kiln compiles a candidate: at the
 * default, with every knob at its smallest value and with every knob at
 * its largest, for f32, f16 and bf16, with an empty log (no warnings).
 * Each knob alone at its extremes (twelve times the compiles, a minute
 * on two cores) is family_compile_test.sh's, with nvcc: the code is the
 * same, what this adds is NVRTC's environment.
 * No GPU needed; family_compile_test.sh compiles each knob extreme with
 * nvcc, test_families.c checks the manifests.
 *   test_family_nvrtc KILN_CUDA_H CUDA_INCLUDE_DIR SOURCE_DIR */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "nvrtc_child.h"
#include "tune.h"

static const char *cuda_include, *root;
static char *kiln_header;

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = calloc(1, 1 << 20);
    size_t n = buf ? fread(buf, 1, (1 << 20) - 1, f) : 0;
    fclose(f);
    if (buf && n == 0) {
        free(buf);
        buf = NULL;
    }
    return buf;
}

/* Index of the numerically smallest (or largest) of k's values. */
static int extreme(const kiln_knob *k, int largest)
{
    int at = 0;
    for (int j = 1; j < k->nvalues; j++) {
        long long v = atoll(k->values[j]), a = atoll(k->values[at]);
        if (largest ? v > a : v < a)
            at = j;
    }
    return at;
}

static void check_family(const char *task)
{
    static const char *const dtypes[] = {"KILN_DTYPE_F32", "KILN_DTYPE_F16", "KILN_DTYPE_BF16"};
    char path[4096];
    snprintf(path, sizeof path, "%s/kernels/%s/cuda/tunable.cu", root, task);
    char *src = slurp(path);
    assert_non_null(src);
    kiln_knob k[KILN_KNOBS_MAX];
    kiln_error err = {0};
    const int nk = kiln_knobs_parse(src, k, KILN_KNOBS_MAX, &err);
    if (nk < 1)
        fail_msg("%s: %s", task, err.msg);
    for (int s = 0; s < 3; s++) {   /* the default, all smallest, all largest */
        static const char *const whats[] = {"default", "all smallest", "all largest"};
        const char *what = whats[s];
        char vals[KILN_KNOBS_MAX][64];
        for (int i = 0; i < nk; i++)
            snprintf(vals[i], 64, "%.63s", s == 0 ? k[i].value : k[i].values[extreme(&k[i], s == 2)]);
        char *setting = kiln_knobs_apply(src, k, nk, (const char (*)[64])vals);
        assert_non_null(setting);
        kiln_nvrtc_in in[3];
        kiln_nvrtc_child c[3];
        for (int d = 0; d < 3; d++) {   /* three children at once, as the worker runs them */
            in[d] = (kiln_nvrtc_in){.source = setting, .name = "candidate.cu", .arch = "sm_90a",
                                    .dtype_define = dtypes[d], .kiln_header = kiln_header,
                                    .cuda_include = cuda_include};
            kiln_nvrtc_start(&c[d], &in[d]);
        }
        for (int d = 0; d < 3; d++) {
            kiln_nvrtc_wait(&c[d]);
            if (c[d].rc != 0 || c[d].n == 0)
                fail_msg("%s %s %s: rc %d: %s", task, what, dtypes[d], c[d].rc,
                         c[d].log ? c[d].log : c[d].limit);
            if (c[d].log && c[d].log[strspn(c[d].log, " \n")])
                fail_msg("%s %s %s: the compile said: %.600s", task, what, dtypes[d], c[d].log);
            free(c[d].cubin);
            free(c[d].log);
            free(c[d].lowered);
        }
        free(setting);
    }
    free(src);
}

static void test_rmsnorm(void **state)
{
    (void)state;
    check_family("rmsnorm");
}

static void test_layernorm(void **state)
{
    (void)state;
    check_family("layernorm");
}

static void test_softmax(void **state)
{
    (void)state;
    check_family("softmax");
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: test_family_nvrtc KILN_CUDA_H CUDA_INCLUDE_DIR SOURCE_DIR\n");
        return 2;
    }
    kiln_header = slurp(argv[1]);
    cuda_include = argv[2];
    root = argv[3];
    if (!kiln_header) {
        fprintf(stderr, "cannot read %s\n", argv[1]);
        return 2;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rmsnorm),
        cmocka_unit_test(test_layernorm),
        cmocka_unit_test(test_softmax),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    free(kiln_header);
    return rc;
}
