/* test_bandwidth.c - the CPU roofline's bandwidth (verifier/measure/bandwidth.c):
 * the best of several readings counts, never one slow one; the cache keeps
 * the best figure ever read and never lowers it; a working set is never
 * given less than a larger one's figure; a cache of the first method (a
 * copy of twice the working set) is measured again; and on this machine a
 * working set in L1 reads no slower than one in DRAM. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "bandwidth.h"
#include "fileutil.h"
#include "paths.h"
#include "worker_client.h"

static char dir[] = "/tmp/kiln-test-bandwidth-XXXXXX";

typedef struct seq {
    const double *v;
    int n, i;
} seq;

static double scripted(size_t ws, void *ctx)
{
    (void)ws;
    seq *s = ctx;
    return s->v[s->i++ % s->n];
}

static void test_best_of(void **state)
{
    (void)state;
    const double v[] = {3e9, 9e9, 1e9, 7e9};
    seq s = {v, 4, 0};
    assert_true(kiln_bw_best_of(scripted, &s, 1 << 20, 4, 0) == 9e9);
    s.i = 0;
    assert_true(kiln_bw_best_of(scripted, &s, 1 << 20, 1, 0) == 3e9);
    s.i = 2;   /* a slow reading first, then a faster one */
    assert_true(kiln_bw_best_of(scripted, &s, 1 << 20, 2, 0) == 7e9);
    s.i = 0;
    uint64_t t0 = kiln_mono_ns();
    kiln_bw_best_of(scripted, &s, 1 << 20, 4, 1000);
    assert_true(kiln_mono_ns() - t0 >= 3000000u);   /* three pauses of 1 ms */
    assert_int_equal(s.i, 4);
}

static void test_bucket(void **state)
{
    (void)state;
    assert_int_equal(kiln_bw_bucket(1000), 16 << 10);
    assert_int_equal(kiln_bw_bucket(2113536), 2 << 20);   /* rmsnorm 64x4096: 2.02 MiB */
    assert_int_equal(kiln_bw_bucket(((size_t)2 << 20) - 1), 1 << 20);
    assert_int_equal(kiln_bw_bucket((size_t)1 << 40), 256 << 20);
}

static void test_bound(void **state)
{
    (void)state;
    cJSON *t = cJSON_Parse("{\"16384\": 100, \"65536\": 50, \"1048576\": 80, \"4194304\": 20,"
                           " \"junk\": 1e12, \"262144\": \"x\"}");
    assert_non_null(t);
    assert_true(kiln_bw_bound(t, 16384) == 100);
    assert_true(kiln_bw_bound(t, 65536) == 80);     /* a larger set read faster: its figure */
    assert_true(kiln_bw_bound(t, 1048576) == 80);
    assert_true(kiln_bw_bound(t, 4194304) == 20);
    assert_true(kiln_bw_bound(t, 262144) == 0);     /* none of its own: measure it */
    assert_true(kiln_bw_bound(t, 2097152) == 0);
    cJSON_Delete(t);
}

static void write_cache(const char *body)
{
    char path[256], text[1024], machine[256], host[64] = "";
    kiln_cpu_model(machine, sizeof machine - 70);
    gethostname(host, sizeof host - 1);
    snprintf(path, sizeof path, "%s/bandwidth-cpu.json", dir);
    snprintf(text, sizeof text, "{\"machine\": \"%s @ %s\", %s}", machine, host, body);
    kiln_error err;
    assert_int_equal(kiln_write_text(path, text, &err), 0);
}

static void test_cache(void **state)
{
    (void)state;
    kiln_error err;
    double bw = 0;
    assert_int_equal(kiln_cpu_bandwidth(64 << 10, &bw, &err), 0);
    assert_true(bw > 1e8);
    /* The cache's figure is used as it is, and measuring again never
     * lowers it: a busy moment cannot make the floor stricter. */
    write_cache("\"method\": 2, \"bytes_per_s\": {\"65536\": 1e15}");
    assert_int_equal(kiln_cpu_bandwidth(64 << 10, &bw, &err), 0);
    assert_true(bw == 1e15);
    assert_int_equal(kiln_cpu_bandwidth_again(64 << 10, &bw, &err), 0);
    assert_true(bw == 1e15);
    assert_int_equal(kiln_cpu_bandwidth(100 << 10, &bw, &err), 0);   /* the same bucket */
    assert_true(bw == 1e15);
    /* A slow figure for a small set is raised to a larger set's. */
    write_cache("\"method\": 2, \"bytes_per_s\": {\"65536\": 1e6, \"8388608\": 5e14}");
    assert_int_equal(kiln_cpu_bandwidth(64 << 10, &bw, &err), 0);
    assert_true(bw == 5e14);
    /* A cache of the first method (no "method"), or of another machine, is
     * measured again. */
    write_cache("\"bytes_per_s\": {\"65536\": 1e15}");
    assert_int_equal(kiln_cpu_bandwidth(64 << 10, &bw, &err), 0);
    assert_true(bw > 1e8 && bw < 1e14);
    char path[256], *text = NULL;
    snprintf(path, sizeof path, "%s/bandwidth-cpu.json", dir);
    assert_int_equal(kiln_read_file(path, 65535, &text, NULL, &err), 0);
    assert_non_null(strstr(text, "\"method\":\t2"));
    free(text);
}

/* On this machine: the best reading of a working set that fits in L1 is
 * no lower than that of one that does not fit in any cache. */
static void test_real_readings(void **state)
{
    (void)state;
    size_t small = 16 << 10, large = (size_t)64 << 20;
    unsigned char *a = aligned_alloc(64, small), *b = aligned_alloc(64, large);
    assert_non_null(a);
    assert_non_null(b);
    memset(a, 1, small);
    memset(b, 1, large);
    double fs = kiln_bw_best_of(kiln_bw_reading, a, small, 7, 0);
    double fl = kiln_bw_best_of(kiln_bw_reading, b, large, 7, 0);
    print_message("best reading: %.1f GB/s at 16 KiB, %.1f GB/s at 64 MiB\n", fs / 1e9, fl / 1e9);
    assert_true(fl > 1e8);
    assert_true(fs >= fl);
    free(a);
    free(b);
}

static int setup(void **state)
{
    (void)state;
    if (!mkdtemp(dir))
        return -1;
    return setenv("KILN_STATE", dir, 1);
}

static int teardown(void **state)
{
    (void)state;
    kiln_remove_tree(dir);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_best_of),
        cmocka_unit_test(test_bucket),
        cmocka_unit_test(test_bound),
        cmocka_unit_test(test_cache),
        cmocka_unit_test(test_real_readings),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
