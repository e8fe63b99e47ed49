/* test_cuda_device.c - reading the CUDA worker's device description and
 * the cached copy bandwidth (verifier/backend/cuda/cuda_device.c), without a GPU: the
 * cache is seeded so no probe runs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
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
    fprintf(f, "NVIDIA A100|driver=12000\t1.5e12\nNVIDIA H200|driver=13000\t4.25e12\n");
    fclose(f);
    double bw = 0;
    kiln_error err = {0};
    assert_int_equal(kiln_gpu_bandwidth(H200, &bw, &err), 0);
    assert_true(bw > 4.24e12 && bw < 4.26e12);
    /* Another driver is another key: it needs a probe, which fails here
     * (no kiln-worker-cuda next to this test) with an error saying so. */
    setenv("KILN_CUDA_WORKER", "/nonexistent/kiln-worker-cuda", 1);
    const char *other = "name=NVIDIA H200|driver=13010";
    assert_int_equal(kiln_gpu_bandwidth(other, &bw, &err) < 0, 1);
    assert_non_null(strstr(err.msg, "probe"));
    unlink(path);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fields),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_cached_bandwidth),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
