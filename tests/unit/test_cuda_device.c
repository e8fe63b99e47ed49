/* test_cuda_device.c - reading the CUDA worker's device description and
 * the cached copy bandwidth (verifier/backend/cuda/cuda_device.c), without a GPU: the
 * cache is seeded so no probe runs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "cuda_device.h"
#include "paths.h"

static const char *H200 =
    "name=NVIDIA H200|cc=9.0|sms=132|l2=62914560|driver=13000|pageable=0|smem_optin=232448|"
    "clock_khz=1980000";

static void test_fields(void **state)
{
    (void)state;
    char buf[128];
    assert_string_equal(kiln_gpu_field(H200, "name", buf, sizeof buf), "NVIDIA H200");
    assert_string_equal(kiln_gpu_field(H200, "cc", buf, sizeof buf), "9.0");
    assert_string_equal(kiln_gpu_field(H200, "clock_khz", buf, sizeof buf), "1980000");
    assert_string_equal(kiln_gpu_field(H200, "clock", buf, sizeof buf), "");   /* a prefix is not a key */
    assert_string_equal(kiln_gpu_field(H200, "missing", buf, sizeof buf), "");
    assert_string_equal(kiln_gpu_field("", "name", buf, sizeof buf), "");
    char tiny[4];
    assert_string_equal(kiln_gpu_field(H200, "name", tiny, sizeof tiny), "NVI");
}

static void test_limits(void **state)
{
    (void)state;
    kiln_device_limits lim;
    kiln_gpu_limits("name=Small|smem_optin=101376", &lim);
    assert_int_equal(lim.max_smem_optin, 101376);
    assert_int_equal(lim.max_threads_per_block, 1024);
    kiln_gpu_limits("name=Unknown", &lim);   /* no field: the defaults */
    assert_int_equal(lim.max_smem_optin, 232448);
}

static void test_cached_bandwidth(void **state)
{
    (void)state;
    char dir[] = "/tmp/kiln-test-gpu-XXXXXX";
    assert_non_null(mkdtemp(dir));
    setenv("KILN_STATE", dir, 1);
    char path[256];
    snprintf(path, sizeof path, "%s/gpu-bandwidth.txt", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fprintf(f, "NVIDIA A100|driver=12000\t1.5e12\t1.7e12\nNVIDIA H200|driver=13000\t4.25e12\t4.5e12\n"
               "NVIDIA H200|driver=12080\t4.0e12\n");
    fclose(f);
    double bw = 0, rbw = 0;
    kiln_error err = {0};
    assert_int_equal(kiln_gpu_bandwidth(H200, &bw, &err), 0);
    assert_true(bw > 4.24e12 && bw < 4.26e12);
    assert_int_equal(kiln_gpu_bandwidths(H200, &bw, &rbw, &err), 0);
    assert_true(bw > 4.24e12 && bw < 4.26e12 && rbw > 4.49e12 && rbw < 4.51e12);
    /* A line of an older kiln has no read bandwidth: it is a miss, and the
     * probe (which fails here) is asked for both. */
    setenv("KILN_CUDA_WORKER", "/nonexistent/kiln-worker-cuda", 1);
    assert_int_equal(kiln_gpu_bandwidths("name=NVIDIA H200|driver=12080", &bw, &rbw, &err) < 0, 1);
    assert_non_null(strstr(err.msg, "probe"));
    /* Another driver is another key: it needs a probe, which fails here
     * (no kiln-worker-cuda next to this test) with an error saying so. */
    setenv("KILN_CUDA_WORKER", "/nonexistent/kiln-worker-cuda", 1);
    const char *other = "name=NVIDIA H200|driver=13010";
    assert_int_equal(kiln_gpu_bandwidth(other, &bw, &err) < 0, 1);
    assert_non_null(strstr(err.msg, "probe"));
    unlink(path);
    rmdir(dir);
}

/* The floor's bandwidth for a mix of reads and writes: a copy's mix gets
 * the copy figure, a read-only task the read figure, and in between the
 * time of the copy-like part plus the extra reads at the read rate. */
static void test_mix_bandwidth(void **state)
{
    (void)state;
    const double copy = 4.0e12, read = 4.4e12;
    assert_true(fabs(kiln_gpu_mix_bandwidth(copy, read, 1e9, 1e9) - copy) < 1);
    assert_true(fabs(kiln_gpu_mix_bandwidth(copy, read, 1e9, 0) - read) < 1);
    /* cross-entropy's mix: 8 bytes of logits read per byte of loss written */
    double ce = kiln_gpu_mix_bandwidth(copy, read, 8e9, 1e9);
    double want = 9e9 / (2e9 / copy + 7e9 / read);
    assert_true(fabs(ce - want) < 1 && ce > copy && ce < read);
    /* more written than read: the extra writes at the copy rate */
    assert_true(fabs(kiln_gpu_mix_bandwidth(copy, read, 0, 1e9) - copy) < 1);
    /* a read figure below the copy one counts as the copy one */
    assert_true(fabs(kiln_gpu_mix_bandwidth(copy, 3e12, 1e9, 0) - copy) < 1);
    assert_true(fabs(kiln_gpu_mix_bandwidth(copy, read, 0, 0) - copy) < 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fields),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_cached_bandwidth),
        cmocka_unit_test(test_mix_bandwidth),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
