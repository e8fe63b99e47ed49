/* test_connect.c - kiln_connect (common/protocol.c) gives up on a TCP
 * verifier that does not answer within its timeout, instead of the
 * kernel's two minutes of SYN retries. A listener whose accept queue is
 * full stands in for the silent host: Linux drops further SYNs to it. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "protocol.h"

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void test_silent_host_times_out(void **state)
{
    (void)state;
    int l = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    assert_int_equal(bind(l, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(l, 0), 0);
    assert_int_equal(getsockname(l, (struct sockaddr *)&a, &len), 0);
    char addr[64];
    snprintf(addr, sizeof addr, "tcp://127.0.0.1:%d", ntohs(a.sin_port));
    kiln_error err = {0};
    int first = kiln_connect(addr, &err);   /* fills the queue (never accepted) */
    assert_true(first >= 0);
    double t0 = now_s();
    int second = kiln_connect(addr, &err);
    double took = now_s() - t0;
    assert_true(second < 0);
    assert_true(took >= 4.0 && took < 15.0);
    assert_non_null(strstr(err.msg, "cannot connect to 127.0.0.1"));
    assert_non_null(strstr(err.msg, "timed out"));
    close(first);
    close(l);
}

static void test_refused_is_immediate(void **state)
{
    (void)state;
    int l = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    assert_int_equal(bind(l, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(getsockname(l, (struct sockaddr *)&a, &len), 0);
    close(l);   /* the port is closed: a refusal */
    char addr[64];
    snprintf(addr, sizeof addr, "tcp://127.0.0.1:%d", ntohs(a.sin_port));
    kiln_error err = {0};
    double t0 = now_s();
    assert_true(kiln_connect(addr, &err) < 0);
    assert_true(now_s() - t0 < 2.0);
    assert_non_null(strstr(err.msg, "refused"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_silent_host_times_out),
        cmocka_unit_test(test_refused_is_immediate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
