/* test_lane_busy.c - how busy the verifiers' lanes were (search
 * lane_busy.h): reading a status event, the difference of two samples
 * (a daemon asked twice, one started or restarted in between, one up
 * before yet not asked), and the share the summary prints (shares.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "lane_busy.h"
#include "shares.h"

static cJSON *parse(const char *text)
{
    cJSON *o = cJSON_Parse(text);
    assert_non_null(o);
    return o;
}

static void test_status_kinds(void **state)
{
    (void)state;
    cJSON *o = parse("{\"event\":\"status\",\"uptime_s\":42,\"devices\":["
                     "{\"name\":\"cpu\",\"busy_s\":5.5},{\"name\":\"cuda:0\",\"busy_s\":10},"
                     "{\"name\":\"cuda:1\",\"busy_s\":2.25},{\"name\":\"tpu:0\",\"busy_s\":99}]}");
    int lanes;
    double busy, up;
    assert_int_equal(kiln_lane_status_busy(o, "cuda", &lanes, &busy, &up), 0);
    assert_int_equal(lanes, 2);
    assert_true(busy == 12.25);
    assert_true(up == 42);
    assert_int_equal(kiln_lane_status_busy(o, "cpu", &lanes, &busy, &up), 0);
    assert_int_equal(lanes, 1);
    assert_true(busy == 5.5);
    cJSON_Delete(o);
}

static void test_status_bad(void **state)
{
    (void)state;
    int lanes;
    double busy, up;
    /* a kilnd from before busy_s: no share, rather than a wrong one */
    cJSON *o = parse("{\"event\":\"status\",\"devices\":[{\"name\":\"cpu\",\"load\":0}]}");
    assert_int_equal(kiln_lane_status_busy(o, "cpu", &lanes, &busy, &up), -1);
    cJSON_Delete(o);
    o = parse("{\"event\":\"pong\"}");
    assert_int_equal(kiln_lane_status_busy(o, "cpu", &lanes, &busy, &up), -1);
    cJSON_Delete(o);
    o = parse("{\"event\":\"status\",\"devices\":[{\"name\":\"cpu\",\"busy_s\":-1}]}");
    assert_int_equal(kiln_lane_status_busy(o, "cpu", &lanes, &busy, &up), -1);
    cJSON_Delete(o);
}

static void put(kiln_lane_sample *s, const char *address, double busy, int lanes, double up)
{
    snprintf(s->d[s->n].address, sizeof s->d[0].address, "%s", address);
    s->d[s->n].busy_s = busy;
    s->d[s->n].lanes = lanes;
    s->d[s->n].uptime_s = up;
    s->n++;
}

static void test_diff_same_daemon(void **state)
{
    (void)state;
    kiln_lane_sample a = {.at = 1000}, b = {.at = 1100};
    put(&a, "/a.sock", 50, 2, 500);
    put(&b, "/a.sock", 200, 2, 600);
    double busy, lane;
    kiln_lane_sample_diff(&a, &b, &busy, &lane);
    assert_true(busy == 150);
    assert_true(lane == 200);   /* two lanes over 100 s */
}

static void test_diff_started_and_restarted(void **state)
{
    (void)state;
    kiln_lane_sample a = {.at = 1000}, b = {.at = 1100};
    put(&a, "/old.sock", 300, 1, 900);   /* restarted: its count went back */
    put(&b, "/old.sock", 20, 1, 30);
    put(&b, "/new.sock", 40, 1, 60);     /* started by the search's first job */
    put(&b, "/late.sock", 70, 1, 5000);  /* up long before a, never asked then */
    double busy, lane;
    kiln_lane_sample_diff(&a, &b, &busy, &lane);
    assert_true(busy == 20 + 40);
    assert_true(lane == 31 + 61);
}

static void test_diff_capped(void **state)
{
    (void)state;
    /* busier than the span (clock steps): capped, never above 100% */
    kiln_lane_sample a = {.at = 10}, b = {.at = 20};
    put(&a, "x", 0, 1, 100);
    put(&b, "x", 15, 1, 110);
    double busy, lane;
    kiln_lane_sample_diff(&a, &b, &busy, &lane);
    assert_true(busy == 10);
    assert_true(lane == 10);
    /* no time between: nothing */
    b.at = a.at;
    kiln_lane_sample_diff(&a, &b, &busy, &lane);
    assert_true(busy == 0 && lane == 0);
}

static void test_shares_text(void **state)
{
    (void)state;
    kiln_run r;
    memset(&r, 0, sizeof r);
    r.seconds_used = 100;
    r.verify_wait_s = 90;
    kiln_shares sh;
    char line[256];
    kiln_shares_of(&r, 10, &sh);
    assert_true(sh.lanes_busy < 0);
    kiln_shares_text(&sh, line, sizeof line);
    assert_null(strstr(line, "lanes"));
    r.lane_busy_s = 45;
    r.lane_s = 50;
    kiln_shares_of(&r, 10, &sh);
    assert_true(sh.lanes_busy == 0.9);
    kiln_shares_text(&sh, line, sizeof line);
    assert_non_null(strstr(line, "; verifier lanes busy 90.0%"));
}

/* Pipelining's rule (shares.h): used while min(M, V) is at least a fifth
 * of M + V, or while either is unmeasured; and the summary's line. */
static void test_pipeline_rule(void **state)
{
    (void)state;
    kiln_pipe_times p = {0};
    assert_int_equal(kiln_pipeline_pays(&p, 0), 1);          /* nothing measured */
    p.model_s = 30, p.model_n = 3;
    assert_int_equal(kiln_pipeline_pays(&p, 0), 1);          /* verification unmeasured */
    p.verify_s = 4, p.verify_n = 2;                       /* M 10, V 2: 2 < 0.2 * 12 */
    assert_int_equal(kiln_pipeline_pays(&p, 0), 0);
    p.verify_s = 5;                                       /* V 2.5: 2.5 >= 0.2 * 12.5 */
    assert_int_equal(kiln_pipeline_pays(&p, 0), 1);
    p.model_s = 0.3, p.verify_s = 4;                      /* M 0.1, V 2: the reverse */
    assert_int_equal(kiln_pipeline_pays(&p, 0), 0);
    assert_int_equal(kiln_pipeline_pays(&p, -1), 1);     /* a test's: always */
    assert_int_equal(kiln_pipeline_pays(&p, 0.01), 1);   /* 0.1 >= 0.01 * 2.1 */
    char line[256];
    p = (kiln_pipe_times){.model_s = 50, .model_n = 5, .verify_s = 40, .verify_n = 5,
                          .pipelined = 3, .saved_s = 41.2};
    kiln_pipelined_text(&p, 1, " (the run stopped first)", line, sizeof line);
    assert_string_equal(line, "pipelined 3 of 5 iterations: saved 41 s (model 10.0 s, "
                              "verification 8.0 s an iteration), 1 answer not used (the run "
                              "stopped first)");
    p = (kiln_pipe_times){.model_s = 0.3, .model_n = 3, .verify_s = 4.8, .verify_n = 4,
                          .declined = 2};
    kiln_pipelined_text(&p, 0, "", line, sizeof line);
    assert_string_equal(line, "pipelined 0 of 3 iterations: not worth it (model 0.1 s, "
                              "verification 1.2 s an iteration): the model was asked after the "
                              "verdicts");
    kiln_pipelined_text(&p, 2, " (the run stopped first)", line, sizeof line);
    assert_string_equal(line, "pipelined 0 of 3 iterations (model 0.1 s, verification 1.2 s an "
                              "iteration), 2 answers not used (the run stopped first)");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_status_kinds),
        cmocka_unit_test(test_status_bad),
        cmocka_unit_test(test_diff_same_daemon),
        cmocka_unit_test(test_diff_started_and_restarted),
        cmocka_unit_test(test_diff_capped),
        cmocka_unit_test(test_shares_text),
        cmocka_unit_test(test_pipeline_rule),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
