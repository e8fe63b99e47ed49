/* test_verdict.c - the verdict's one encoder (verdict.c) and one decoder
 * (verdict_parse.c) are inverses: a verdict of every form (CPU, CUDA with
 * host data, CUDA device-resident; visible and hidden shapes; null
 * numbers; flags; a GPU description) encodes, decodes and encodes again to
 * the same text, and malformed JSON is refused with a message. Neither lets
 * a candidate's raw bytes through: the encoder writes escape sequences and
 * invalid UTF-8 as visible text, and the decoder cleans a verdict whose
 * JSON carries them (\u001b), as kiln_verdict_clean does in place. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verdict.h"

static kiln_task task2(void)
{
    kiln_task t;
    memset(&t, 0, sizeof t);
    snprintf(t.name, sizeof t.name, "rmsnorm");
    t.ndims = 2;
    snprintf(t.dims[0], sizeof t.dims[0], "rows");
    snprintf(t.dims[1], sizeof t.dims[1], "cols");
    return t;
}

static void visible(kiln_shape_result *r, int i, int64_t rows)
{
    snprintf(r->id, sizeof r->id, "v%d", i);
    r->visible = 1;
    r->shape.d[0] = rows;
    r->shape.d[1] = 4096;
    r->checked = 1;
    r->max_err_ulps = 3.25;
    r->budget_ulps = 136;
    r->rel_l2 = 1.5e-8;
    r->timed = 1;
    r->cand = (kiln_time_stats){1234.5, 1200, 1300.25, 9};
    r->base = (kiln_time_stats){2469, 2400, 2600, 9};
    r->cand_rt_ns = 5000;
    r->base_rt_ns = 6000;
    r->cand_cpu_ns = 1300;
    r->base_cpu_ns = 2500;
    r->speedup = 2469 / 1234.5;
    r->bytes = 2.0 * rows * 4096 * 4;
    r->flops = 3.0 * rows * 4096;
    r->floor_ns = 700;
    r->roofline_fraction = 700 / 1234.5;
}

static kiln_verdict *sample(const char *backend, int device_resident)
{
    kiln_verdict *v = calloc(1, sizeof *v);
    snprintf(v->status, sizeof v->status, "pass");
    snprintf(v->stage, sizeof v->stage, "plausibility");
    snprintf(v->code, sizeof v->code, "ok");
    snprintf(v->reason, sizeof v->reason, "correct on every shape; \"quoted\" and \\ kept");
    snprintf(v->feedback, sizeof v->feedback, "pass: fine");
    snprintf(v->task, sizeof v->task, "rmsnorm");
    snprintf(v->backend, sizeof v->backend, "%s", backend);
    snprintf(v->dtype, sizeof v->dtype, "bf16");
    snprintf(v->group, sizeof v->group, "prefill");
    visible(&v->results[0], 1, 32);
    visible(&v->results[1], 2, 16384);
    v->results[1].speedup = NAN;   /* encoded as null */
    v->results[1].speedup_lo = 0.97;
    v->results[1].speedup_hi = 1.04;
    if (strcmp(backend, "cuda") == 0) {   /* the driver's view of the launches */
        kiln_kernel_profile *p = &v->results[0].profile[0];
        v->results[0].nprofile = 1;
        snprintf(p->kernel, sizeof p->kernel, "rmsnorm_fwd");
        p->regs = 40;
        p->local_bytes = 16;
        p->static_smem = 1024;
        p->dynamic_smem = 65536;
        p->threads = 256;
        p->blocks_per_sm = 3;
        p->cluster = 2;
        p->occupancy = 0.375;
    }
    if (device_resident) {
        v->results[0].sets = v->results[1].sets = 16;
        v->results[0].pairs = 10;
        v->results[0].cand_events_ns = 1500;
        v->results[0].cand_check_ns = 300;
        v->results[0].cand_draw_ns = 100;
        v->results[0].cand_setup_ns = 250;
        v->results[0].cand_cupti_ns = 1400;
    }
    v->nresults = 2;
    v->nhidden = 11;
    v->hidden_ran = 1;
    snprintf(v->hidden_code, sizeof v->hidden_code, "wrong-output");
    v->geomean_speedup = 1.9;
    v->min_speedup = 1.8;
    v->median_roofline = 0.55;
    kiln_verdict_flag(v, "below-roofline: shape v1 ran in %.1f us", 0.4);
    kiln_verdict_flag(v, "timer-disagreement: shape v2");
    snprintf(v->sandbox, sizeof v->sandbox, "landlock,seccomp,rlimits");
    snprintf(v->cpu_model, sizeof v->cpu_model, "Some CPU @ 2.0GHz");
    snprintf(v->hostname, sizeof v->hostname, "host1");
    snprintf(v->kernel, sizeof v->kernel, "6.1.0");
    v->bandwidth_gbps = 3912.5;
    if (strcmp(backend, "cuda") == 0) {
        v->peak_tflops = 989.4;
        snprintf(v->gpu, sizeof v->gpu, "name=NVIDIA H200|cc=9.0|driver=13000|pageable=0|sms=132");
        snprintf(v->verifier_host, sizeof v->verifier_host, "node7");   /* judged by a kilnd */
        snprintf(v->verifier_endpoint, sizeof v->verifier_endpoint, "tcp://node7:7077");
        snprintf(v->lane, sizeof v->lane, "cuda:1");
    }
    v->trust_level_cpu = strcmp(backend, "cpu") == 0;
    v->worker_user_s = 1.2;
    v->worker_sys_s = 0.3;
    v->worker_wall_s = 2.5;
    v->reported_s = 0.9;
    snprintf(v->source_sha256, sizeof v->source_sha256, "%064d", 7);
    snprintf(v->baseline_sha256, sizeof v->baseline_sha256, "%064d", 9);
    v->baseline_is_task = 1;
    v->seconds = 3.8;
    v->compile_s = 0.3;
    v->correctness_s = 1.3;
    v->timing_s = 2.1;
    v->calls = 113;
    if (device_resident) {   /* preconditions, and the visible shape they left out */
        v->nrequire = 1;
        snprintf(v->require[0], sizeof v->require[0], "cols %% 8 == 0");
        v->nleft_out = 1;
        snprintf(v->left_out_id[0], sizeof v->left_out_id[0], "v3");
        v->left_out[0].d[0] = 33;
        v->left_out[0].d[1] = 1001;
    }
    return v;
}

static void round_trip(const char *backend, int device_resident)
{
    kiln_task t = task2();
    kiln_verdict *v = sample(backend, device_resident), *w = calloc(1, sizeof *w);
    char *a = kiln_verdict_json(v, &t, 0);
    kiln_error err = {0};
    assert_int_equal(kiln_verdict_parse(a, w, &err), 0);
    char *b = kiln_verdict_json(w, &t, 0);
    assert_string_equal(a, b);
    /* A decoded verdict names its own dims: no task needed to encode it. */
    char *c = kiln_verdict_json(w, NULL, 0);
    assert_string_equal(a, c);
    assert_int_equal(w->ndims, 2);
    assert_string_equal(w->dims[1], "cols");
    free(c);
    /* Plain fields read back as numbers, not only as text. */
    assert_true(fabs(w->results[0].speedup - 2.0) < 1e-12);
    assert_true(isnan(w->results[1].speedup));
    assert_int_equal(w->results[1].shape.d[0], 16384);
    assert_int_equal(w->nflags, 2);
    assert_int_equal(w->nresults, 2);   /* the visible shapes */
    if (strcmp(backend, "cuda") == 0) {
        assert_int_equal(w->results[0].nprofile, 1);
        assert_string_equal(w->results[0].profile[0].kernel, "rmsnorm_fwd");
        assert_int_equal(w->results[0].profile[0].dynamic_smem, 65536);
        assert_int_equal(w->results[0].profile[0].cluster, 2);
        assert_true(fabs(w->results[0].profile[0].occupancy - 0.375) < 1e-12);
    }
    assert_int_equal(w->nhidden, 11);
    assert_string_equal(w->hidden_code, "wrong-output");
    assert_non_null(strstr(a, "\"hidden\":{\"shapes\":11,\"status\":\"fail\",\"code\":\"wrong-output\"}"));
    assert_int_equal(w->trust_level_cpu, strcmp(backend, "cpu") == 0);
    assert_int_equal(w->nrequire, device_resident);
    assert_int_equal(w->nleft_out, device_resident);
    assert_int_equal(!strstr(a, "\"preconditions\""), !device_resident);
    /* Who judged it: only when a daemon did (the cuda samples), and read back. */
    assert_int_equal(!strstr(a, "\"verifier\":{"), strcmp(backend, "cuda") != 0);
    assert_string_equal(w->lane, strcmp(backend, "cuda") == 0 ? "cuda:1" : "");
    assert_string_equal(w->verifier_endpoint, strcmp(backend, "cuda") == 0 ? "tcp://node7:7077" : "");
    if (device_resident) {
        assert_string_equal(w->require[0], "cols % 8 == 0");
        assert_string_equal(w->left_out_id[0], "v3");
        assert_int_equal(w->left_out[0].d[1], 1001);
    }
    free(a);
    free(b);
    free(v);
    free(w);
}

static void test_cpu(void **state)
{
    (void)state;
    round_trip("cpu", 0);
}

static void test_cuda_host(void **state)
{
    (void)state;
    round_trip("cuda", 0);
}

static void test_cuda_device(void **state)
{
    (void)state;
    round_trip("cuda", 1);
}

/* A verdict recorded before the hidden stage was one outcome listed each
 * hidden shape with its code: it decodes into the one outcome (the first
 * failure's code), and encodes without the entries. */
static void test_old_hidden_entries(void **state)
{
    (void)state;
    const char *old = "{\"status\":\"fail\",\"stage\":\"hidden\",\"code\":\"crash\","
                      "\"shapes\":[{\"id\":\"v1\",\"visible\":true,\"dims\":{\"rows\":2}},"
                      "{\"id\":\"h1\",\"visible\":false,\"status\":\"pass\"},"
                      "{\"id\":\"h2\",\"visible\":false,\"status\":\"fail\",\"code\":\"crash\"},"
                      "{\"id\":\"h3\",\"visible\":false,\"status\":\"fail\","
                      "\"code\":\"timeout\"}]}";
    kiln_verdict *v = calloc(1, sizeof *v);
    kiln_error err = {0};
    assert_int_equal(kiln_verdict_parse(old, v, &err), 0);
    assert_int_equal(v->nresults, 1);
    assert_int_equal(v->nhidden, 3);
    assert_true(v->hidden_ran);
    assert_string_equal(v->hidden_code, "crash");
    char *a = kiln_verdict_json(v, NULL, 0);
    assert_null(strstr(a, "\"h2\""));
    assert_non_null(strstr(a, "\"hidden\":{\"shapes\":3,\"status\":\"fail\",\"code\":\"crash\"}"));
    free(a);
    free(v);
}

/* No raw control or invalid UTF-8 in a's bytes, nor a JSON \u escape of
 * a control (which a reader would decode back into one). */
static void assert_shown_safely(const char *a)
{
    for (const unsigned char *p = (const unsigned char *)a; *p; p++) {
        if (*p < 0x20 || *p == 0x7f || *p >= 0x80)   /* compact JSON: all ASCII here */
            fail_msg("raw byte 0x%02x at %td", *p, (const char *)p - a);
        if (*p != '\\')
            continue;
        unsigned cp = 0;
        if (p[1] == 'u' && sscanf((const char *)p + 2, "%4x", &cp) == 1 &&
            (cp < 0x20 || (cp >= 0x7f && cp <= 0x9f)))
            fail_msg("a JSON escape of control U+%04X at %td", cp, (const char *)p - a);
        p++;   /* the escaped character */
    }
}

static void test_raw_text(void **state)
{
    (void)state;
    kiln_task t = task2();
    kiln_verdict *v = sample("cpu", 0), *w = calloc(1, sizeof *w);
    snprintf(v->reason, sizeof v->reason, "crash: \x1b[2K\r\x1b[1Apass 9.87x\xff\xc0\xaf");
    snprintf(v->feedback, sizeof v->feedback, "out:\n\xc2\x9b" "2J\xe2\x80\xae\x07\x7f");
    snprintf(v->flags[0], sizeof v->flags[0], "below-roofline: \x1b]0;t\x07");
    char *a = kiln_verdict_json(v, &t, 0);
    assert_shown_safely(a);
    assert_non_null(strstr(a, "crash: \\\\x1b[2K\\\\x0d\\\\x1b[1Apass 9.87x\\\\xff\\\\xc0\\\\xaf"));
    assert_non_null(strstr(a, "out:\\n\\\\u009b2J\\\\u202e\\\\x07\\\\x7f"));
    kiln_error err = {0};
    assert_int_equal(kiln_verdict_parse(a, w, &err), 0);
    assert_string_equal(w->reason, "crash: \\x1b[2K\\x0d\\x1b[1Apass 9.87x\\xff\\xc0\\xaf");
    /* In place, as kiln_verify leaves a verdict. */
    kiln_verdict_clean(v);
    assert_string_equal(v->reason, w->reason);
    assert_string_equal(v->flags[0], "below-roofline: \\x1b]0;t\\x07");
    /* A JSON verdict that carries controls as \u escapes (stored before
     * cleaning, or forged) decodes clean. */
    const char *forged = "{\"status\":\"fail\",\"reason\":\"a\\u001b[2Kb\\u009b\",\"flags\":"
                         "[\"x\\u202ey\"],\"shapes\":[{\"id\":\"v\\u00071\",\"visible\":true}]}";
    assert_int_equal(kiln_verdict_parse(forged, w, &err), 0);
    assert_string_equal(w->reason, "a\\x1b[2Kb\\u009b");
    assert_string_equal(w->flags[0], "x\\u202ey");
    assert_string_equal(w->results[0].id, "v\\x071");
    free(a);
    free(v);
    free(w);
}

static void test_malformed(void **state)
{
    (void)state;
    kiln_verdict *w = calloc(1, sizeof *w);
    const char *bad[] = {"", "{", "[]", "{\"stage\":\"x\"}", "{\"status\":\"pass\",\"shapes\":[1]}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        kiln_error err = {0};
        assert_int_equal(kiln_verdict_parse(bad[i], w, &err), -1);
        assert_true(strstr(err.msg, "verdict") != NULL);
    }
    kiln_error err = {0};
    assert_int_equal(kiln_verdict_parse(NULL, w, &err), -1);
    free(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cpu),
        cmocka_unit_test(test_cuda_host),
        cmocka_unit_test(test_cuda_device),
        cmocka_unit_test(test_old_hidden_entries),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_raw_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
