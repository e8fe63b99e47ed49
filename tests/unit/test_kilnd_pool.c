/* test_kilnd_pool.c - the socket-free rules of one search over many kilnds
 * (judge/kilnd_pool_rules.c, docs/fleet.md): --verifiers lists good and
 * malformed, job ids RAW@TAG (fit char[32], round-trip, an untagged id
 * accepted, a malformed one rejected with a message), kilnd's status read
 * into lanes, the choice rule (free lanes first, then in proportion to
 * lanes; a CUDA job only to a cuda lane) and the down/retry bookkeeping. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "kilnd_pool.h"

#define S 1000000000ull   /* a second in kiln_mono_ns units */

/* ---- lists ------------------------------------------------------------------ */

static void test_list_good(void **state)
{
    (void)state;
    kiln_verifiers vs;
    kiln_error err = {0};
    assert_int_equal(kiln_verifiers_list(&vs, "/tmp/a.sock,tcp://node7:40321,tcp://[::1]:9,b.sock",
                                         &err), 0);
    assert_int_equal(vs.n, 4);
    assert_string_equal(vs.v[0]->address, "/tmp/a.sock");
    assert_string_equal(vs.v[1]->address, "tcp://node7:40321");
    assert_string_equal(vs.v[2]->address, "tcp://[::1]:9");
    assert_string_equal(vs.v[3]->address, "b.sock");
    /* the tags the integration test's Python computes too (pinned: recorded
     * job ids carry them, so the hash may never change) */
    assert_string_equal(vs.v[0]->tag, "cb84fcbbfc61");
    assert_string_equal(vs.v[1]->tag, "c6b0df2ace41");
    assert_ptr_equal(kiln_verifiers_at(&vs, "b.sock"), vs.v[3]);
    assert_null(kiln_verifiers_at(&vs, "c.sock"));
    kiln_verifiers_free(&vs);
    assert_int_equal(vs.n, 0);
    assert_null(vs.v);
}

/* list must fail with a message holding want, and leave nothing allocated. */
static void bad_list(const char *list, const char *want)
{
    kiln_verifiers vs;
    kiln_error err = {0};
    assert_int_equal(kiln_verifiers_list(&vs, list, &err), -1);
    if (!strstr(err.msg, want))
        fail_msg("list '%s': message '%s' lacks '%s'", list, err.msg, want);
    assert_int_equal(vs.n, 0);
    assert_null(vs.v);
}

static void test_list_malformed(void **state)
{
    (void)state;
    bad_list("", "address 1 (''): an empty address");
    bad_list("a.sock,,b.sock", "address 2 (''): an empty address");
    bad_list("a.sock,", "address 2 (''): an empty address");
    bad_list(",a.sock", "address 1 (''): an empty address");
    bad_list("a.sock, b.sock", "address 2 (' b.sock'): a space before or after");
    bad_list("a.sock,b.sock,a.sock", "'a.sock' is given twice");
    bad_list("tcp://node7:1,tcp://node7:1", "'tcp://node7:1' is given twice");
    bad_list("tcp://localhost", "address 1 ('tcp://localhost'): tcp://HOST:PORT needs a host and a port");
    bad_list("tcp://:40321", "needs a host and a port");
    bad_list("tcp://", "needs a host and a port");
    bad_list("tcp://node7:", "the port must be a number from 1 to 65535");
    bad_list("tcp://node7:0", "the port must be a number from 1 to 65535");
    bad_list("tcp://node7:65536", "the port must be a number from 1 to 65535");
    bad_list("tcp://node7:+80", "the port must be a number from 1 to 65535");
    bad_list("tcp://node7: 80", "the port must be a number from 1 to 65535");
    bad_list("tcp://node7:80x", "the port must be a number from 1 to 65535");
    bad_list("tcp://node7:0000000080", "the port must be a number from 1 to 65535");
    bad_list("tcp://node 7:80", "the host may not hold a space or a '/'");
    bad_list("tcp://node7/x:80", "the host may not hold a space or a '/'");
    bad_list("http://node7:80", "not a Unix socket path or tcp://HOST:PORT");
    char long_path[200];
    memset(long_path, 'x', sizeof long_path - 1);
    long_path[sizeof long_path - 1] = '\0';
    bad_list(long_path, "a Unix socket path must be shorter than");
    char huge[700];
    memset(huge, 'y', sizeof huge - 1);
    huge[sizeof huge - 1] = '\0';
    bad_list(huge, "address 1 ('yyyy");
}

/* ---- job ids ---------------------------------------------------------------- */

static void test_job_id_round_trip(void **state)
{
    (void)state;
    char tag[13], out[32], raw[32], back[13];
    kiln_verifier_tag("/tmp/a.sock", tag);
    assert_int_equal(kiln_verifier_job_id(tag, "j00000042", out), 0);
    assert_string_equal(out, "j00000042@cb84fcbbfc61");
    kiln_error err = {0};
    assert_int_equal(kiln_verifier_parse_job(out, raw, back, &err), 1);
    assert_string_equal(raw, "j00000042");
    assert_string_equal(back, tag);
    /* the longest raw id fits char[32] with its NUL */
    assert_int_equal(kiln_verifier_job_id(tag, "j12345678901234567", out), 0);
    assert_int_equal(strlen(out), 31);
    assert_int_equal(kiln_verifier_split_job(out, raw, back), 1);
    assert_string_equal(raw, "j12345678901234567");
    /* what does not fit, or would not parse back, is refused */
    assert_int_equal(kiln_verifier_job_id(tag, "j123456789012345678", out), -1);
    assert_int_equal(kiln_verifier_job_id(tag, "", out), -1);
    assert_int_equal(kiln_verifier_job_id(tag, "j1@x", out), -1);
    assert_int_equal(kiln_verifier_job_id(tag, "j 1", out), -1);
    assert_int_equal(kiln_verifier_job_id("cb84fcbbfc6", "j1", out), -1);
    assert_int_equal(kiln_verifier_job_id("cb84fcbbfc6z", "j1", out), -1);
}

static void test_job_id_untagged(void **state)
{
    (void)state;
    char raw[32] = "x", tag[13] = "x";
    kiln_error err = {0};
    assert_int_equal(kiln_verifier_parse_job("j00000042", raw, tag, &err), 0);
    assert_string_equal(raw, "j00000042");
    assert_string_equal(tag, "");
}

static void bad_job(const char *job, const char *want)
{
    char raw[32] = "x", tag[13] = "x";
    kiln_error err = {0};
    assert_int_equal(kiln_verifier_parse_job(job, raw, tag, &err), -1);
    if (!strstr(err.msg, want))
        fail_msg("job '%s': message '%s' lacks '%s'", job, err.msg, want);
    assert_string_equal(raw, "");   /* nothing a caller could send */
    assert_string_equal(tag, "");
    assert_int_equal(kiln_verifier_split_job(job, raw, tag), -1);
}

static void test_job_id_malformed(void **state)
{
    (void)state;
    bad_job("", "an empty job id");
    bad_job("j00000042@", "a TAG of 12 hex digits");
    bad_job("j00000042@cb84fcbbfc6", "a TAG of 12 hex digits");
    bad_job("j00000042@cb84fcbbfc61a", "a TAG of 12 hex digits");   /* not cut to a real tag */
    bad_job("j00000042@CB84FCBBFC61", "a TAG of 12 hex digits");
    bad_job("j00000042@cb84fcbbfc6g", "a TAG of 12 hex digits");
    bad_job("j1@cb84fc@bbfc61", "a TAG of 12 hex digits");
    bad_job("j123456789012345678@cb84fcbbfc61", "longer than 31");
    bad_job("@cb84fcbbfc61", "malformed: kilnd's part");
    bad_job("j 42", "malformed: kilnd's part");
    bad_job("j0000000000000000000000000000000000042", "longer than 31 characters");
}

/* ---- status and choice ----------------------------------------------------------- */

/* A verifier at address whose status (devices JSON, queued) was seen at now. */
static kiln_verifier *with_status(kiln_verifiers *vs, const char *address, const char *devices,
                                  int queued, uint64_t now)
{
    char text[1024];
    snprintf(text, sizeof text, "{\"event\":\"status\",\"queued\":%d,\"devices\":%s}", queued, devices);
    cJSON *r = cJSON_Parse(text);
    assert_non_null(r);
    kiln_error err = {0};
    kiln_verifier *v = kiln_verifiers_add(vs, address, &err);
    assert_non_null(v);
    assert_int_equal(kiln_verifier_apply_status(v, r, now, &err), 0);
    cJSON_Delete(r);
    return v;
}

static void test_status_read(void **state)
{
    (void)state;
    kiln_verifiers vs = {0};
    kiln_verifier *v = with_status(&vs, "a.sock",
                                   "[{\"name\":\"cpu\",\"load\":1},{\"name\":\"cuda:0\",\"load\":2},"
                                   "{\"name\":\"cuda:1\"},{\"name\":\"rocm:0\",\"load\":5},{}]",
                                   3, 7 * S);
    assert_int_equal(v->lanes[0], 1);
    assert_int_equal(v->lanes[1], 2);
    assert_int_equal(v->load[0], 1);
    assert_int_equal(v->load[1], 2);   /* no load (an older kilnd): 0, not a NaN cast */
    assert_int_equal(v->queued, 3);
    assert_true(v->known);
    assert_false(kiln_verifier_stale(v, 7 * S + S / 2));
    assert_true(kiln_verifier_stale(v, 8 * S + 1));
    /* not a status: refused, v as it was */
    cJSON *r = cJSON_Parse("{\"event\":\"error\",\"error\":{\"code\":\"unauthorized\"}}");
    kiln_error err = {0};
    v->sent = 4;
    assert_int_equal(kiln_verifier_apply_status(v, r, 9 * S, &err), -1);
    assert_non_null(strstr(err.msg, "kilnd at a.sock did not answer its status"));
    assert_int_equal(v->sent, 4);
    assert_int_equal(v->lanes[1], 2);
    cJSON_Delete(r);
    kiln_verifiers_free(&vs);
}

static void test_choice_free_lanes_first(void **state)
{
    (void)state;
    kiln_verifiers vs = {0};
    kiln_error err = {0};
    /* a: 8 lanes, all busy; b: 2 lanes, one free. Per lane after the job:
     * a 9/8, b 2/2: the free lane wins though a has more lanes. */
    kiln_verifier *a = with_status(&vs, "a.sock",
        "[{\"name\":\"cpu\",\"load\":8},{\"name\":\"cpu\",\"load\":0},{\"name\":\"cpu\",\"load\":0},"
        "{\"name\":\"cpu\",\"load\":0},{\"name\":\"cpu\",\"load\":0},{\"name\":\"cpu\",\"load\":0},"
        "{\"name\":\"cpu\",\"load\":0},{\"name\":\"cpu\",\"load\":0}]", 0, S);
    kiln_verifier *b = with_status(&vs, "b.sock", "[{\"name\":\"cpu\",\"load\":1},{\"name\":\"cpu\"}]", 0, S);
    assert_int_equal(a->lanes[0], 8);
    for (unsigned turn = 0; turn < 4; turn++) {   /* whoever's turn it is */
        vs.turn = turn;
        b->sent = 0;
        assert_ptr_equal(kiln_verifiers_choose(&vs, 0, NULL, 0, S, &err), b);
        assert_int_equal(b->sent, 1);
    }
    /* now b is full too (2 of 2): a's 9/8 beats b's 3/2 */
    assert_ptr_equal(kiln_verifiers_choose(&vs, 0, NULL, 0, S, &err), a);
    kiln_verifiers_free(&vs);
}

/* n jobs of kind over vs from idle: how many each verifier got. */
static void spread(kiln_verifiers *vs, int kind, int n)
{
    kiln_error err = {0};
    for (int i = 0; i < n; i++)
        assert_non_null(kiln_verifiers_choose(vs, kind, NULL, 0, S, &err));
}

static void test_choice_in_proportion(void **state)
{
    (void)state;
    kiln_verifiers vs = {0};
    kiln_verifier *a = with_status(&vs, "a.sock", "[{\"name\":\"cpu\"}]", 0, S);
    kiln_verifier *b = with_status(&vs, "b.sock", "[{\"name\":\"cpu\"}]", 0, S);
    spread(&vs, 0, 8);   /* docs/fleet.md: four and four */
    assert_int_equal(a->sent, 4);
    assert_int_equal(b->sent, 4);
    kiln_verifiers_free(&vs);

    const char *eight = "[{\"name\":\"cpu\"},{\"name\":\"cuda:0\"},{\"name\":\"cuda:1\"},{\"name\":\"cuda:2\"},"
                        "{\"name\":\"cuda:3\"},{\"name\":\"cuda:4\"},{\"name\":\"cuda:5\"},"
                        "{\"name\":\"cuda:6\"},{\"name\":\"cuda:7\"}]";
    const char *four = "[{\"name\":\"cpu\"},{\"name\":\"cuda:0\"},{\"name\":\"cuda:1\"},{\"name\":\"cuda:2\"},"
                       "{\"name\":\"cuda:3\"}]";
    a = with_status(&vs, "a.sock", eight, 0, S);
    b = with_status(&vs, "b.sock", four, 0, S);
    spread(&vs, 1, 8);   /* five or six and two or three */
    assert_in_range(a->sent, 5, 6);
    assert_int_equal(a->sent + b->sent, 8);
    spread(&vs, 1, 4);   /* 12 in all: 8 and 4, one a lane */
    assert_int_equal(a->sent, 8);
    assert_int_equal(b->sent, 4);
    spread(&vs, 1, 12);   /* then two to one */
    assert_int_equal(a->sent, 16);
    assert_int_equal(b->sent, 8);
    kiln_verifiers_free(&vs);
}

static void test_choice_backend(void **state)
{
    (void)state;
    kiln_verifiers vs = {0};
    kiln_error err = {0};
    kiln_verifier *cpu = with_status(&vs, "cpu.sock", "[{\"name\":\"cpu\"},{\"name\":\"cpu\"}]", 0, S);
    assert_null(kiln_verifiers_choose(&vs, 1, NULL, 0, S, &err));
    assert_non_null(strstr(err.msg, "no verifier can take a cuda job"));
    assert_non_null(strstr(err.msg, "cpu.sock: has no lane of that kind"));
    assert_int_equal(cpu->sent, 0);
    /* a busy cuda lane still beats an idle daemon without one */
    kiln_verifier *gpu = with_status(&vs, "gpu.sock", "[{\"name\":\"cpu\"},{\"name\":\"cuda:0\",\"load\":6}]",
                                     9, S);
    for (int i = 0; i < 5; i++)
        assert_ptr_equal(kiln_verifiers_choose(&vs, 1, NULL, 0, S, &err), gpu);
    assert_int_equal(cpu->sent, 0);
    /* and a cpu job goes to the idle cpu lanes, not behind gpu's queue */
    assert_ptr_equal(kiln_verifiers_choose(&vs, 0, NULL, 0, S, &err), cpu);
    kiln_verifiers_free(&vs);
}

static void test_choice_avoid_and_gone(void **state)
{
    (void)state;
    kiln_verifiers vs = {0};
    kiln_error err = {0};
    kiln_verifier *a = with_status(&vs, "a.sock", "[{\"name\":\"cpu\"}]", 0, S);
    kiln_verifier *b = with_status(&vs, "b.sock", "[{\"name\":\"cpu\",\"load\":5}]", 0, S);
    kiln_verifier *avoid[] = {a};
    assert_ptr_equal(kiln_verifiers_choose(&vs, 0, avoid, 1, S, &err), b);
    a->gone = 1;
    assert_ptr_equal(kiln_verifiers_choose(&vs, 0, NULL, 0, S, &err), b);
    kiln_verifier *both[] = {b};
    assert_null(kiln_verifiers_choose(&vs, 0, both, 1, S, &err));
    assert_non_null(strstr(err.msg, "a.sock: left the fleet"));
    assert_non_null(strstr(err.msg, "b.sock: lost this job"));
    kiln_verifiers_free(&vs);
}

static void test_down_and_retry(void **state)
{
    (void)state;
    kiln_verifiers vs = {0};
    kiln_error err = {0};
    kiln_verifier *busy = with_status(&vs, "busy.sock", "[{\"name\":\"cpu\",\"load\":7}]", 3, S);
    kiln_verifier *idle = with_status(&vs, "idle.sock", "[{\"name\":\"cpu\"}]", 0, S);
    uint64_t t0 = 100 * S;
    kiln_verifier_down_at(idle, "kilnd closed the connection", t0);
    assert_true(kiln_verifier_resting(idle, t0));
    assert_true(kiln_verifier_resting(idle, t0 + KILN_VERIFIER_RETRY_S * S - 1));
    assert_true(kiln_verifier_resting(idle, t0 - S));   /* a clock read before the mark */
    for (int s = 0; s < KILN_VERIFIER_RETRY_S; s++)
        assert_ptr_equal(kiln_verifiers_choose(&vs, 0, NULL, 0, t0 + (uint64_t)s * S, &err), busy);
    /* only the one left down: none, and why */
    kiln_verifier *avoid[] = {busy};
    assert_null(kiln_verifiers_choose(&vs, 0, avoid, 1, t0 + S, &err));
    assert_non_null(strstr(err.msg, "idle.sock: kilnd closed the connection"));
    /* its retry time: to be asked again, still not chosen before it answers */
    uint64_t t1 = t0 + KILN_VERIFIER_RETRY_S * S;
    assert_false(kiln_verifier_resting(idle, t1));
    assert_true(kiln_verifier_stale(idle, t1));
    assert_ptr_equal(kiln_verifiers_choose(&vs, 0, NULL, 0, t1, &err), busy);
    /* it answers: up again, and the idle one gets the job */
    cJSON *r = cJSON_Parse("{\"event\":\"status\",\"queued\":0,\"devices\":[{\"name\":\"cpu\",\"load\":0}]}");
    assert_int_equal(kiln_verifier_apply_status(idle, r, t1, &err), 0);
    cJSON_Delete(r);
    assert_false(idle->down);
    assert_false(kiln_verifier_stale(idle, t1));
    assert_ptr_equal(kiln_verifiers_choose(&vs, 0, NULL, 0, t1, &err), idle);
    kiln_verifiers_free(&vs);
}

/* ---- endpoint files ----------------------------------------------------------- */

static void test_endpoint_file(void **state)
{
    (void)state;
    char addr[512], why[300];
    assert_int_equal(kiln_verifier_endpoint("{\"endpoint\":\"tcp://node7:40321\",\"lanes\":[\"cpu\"]}",
                                            addr, sizeof addr, why, sizeof why), 0);
    assert_string_equal(addr, "tcp://node7:40321");
    assert_int_equal(kiln_verifier_endpoint("{\"endpoint\":\"tcp://node7", addr, sizeof addr, why,
                                            sizeof why), -1);
    assert_string_equal(why, "not JSON");
    assert_int_equal(kiln_verifier_endpoint("{\"host\":\"node7\"}", addr, sizeof addr, why, sizeof why), -1);
    assert_string_equal(why, "no \"endpoint\" string");
    assert_int_equal(kiln_verifier_endpoint("{\"endpoint\":\"tcp://node7:0\"}", addr, sizeof addr, why,
                                            sizeof why), -1);
    assert_non_null(strstr(why, "endpoint 'tcp://node7:0': the port must be"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_list_good),
        cmocka_unit_test(test_list_malformed),
        cmocka_unit_test(test_job_id_round_trip),
        cmocka_unit_test(test_job_id_untagged),
        cmocka_unit_test(test_job_id_malformed),
        cmocka_unit_test(test_status_read),
        cmocka_unit_test(test_choice_free_lanes_first),
        cmocka_unit_test(test_choice_in_proportion),
        cmocka_unit_test(test_choice_backend),
        cmocka_unit_test(test_choice_avoid_and_gone),
        cmocka_unit_test(test_down_and_retry),
        cmocka_unit_test(test_endpoint_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
