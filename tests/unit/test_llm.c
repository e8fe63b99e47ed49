/* test_llm.c - cmocka tests for the LLM client (agent/llm.c).
 *
 * Each test writes a script (and answer files) into a fresh mkdtemp
 * directory, starts tests/fake_llm on a loopback port (its path is argv[1])
 * and checks what kiln_llm_complete makes of the scripted responses: answers,
 * token counts, retries and their timing, and the exact kind of failure; and
 * that kiln_llm_complete_each sends each request with its own temperature.
 * Backoff is set to 10 ms so the whole file runs in a few seconds; only the
 * retry-after cases wait the server's 1 s. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <ftw.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#include "llm.h"

static const char *g_fake;   /* path of the fake_llm binary */

typedef struct fixture {
    char dir[64];
    pid_t pid;
    int port;
    char openai_url[64], anthropic_url[64];
} fixture;

/* ---- helpers ------------------------------------------------------------- */

static void write_file(const fixture *f, const char *name, const char *text)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", f->dir, name);
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs(text, fp);
    assert_int_equal(fclose(fp), 0);
}

static char *read_log(const fixture *f)
{
    static char buf[8192];
    char path[256];
    snprintf(path, sizeof path, "%s/log", f->dir);
    FILE *fp = fopen(path, "r");
    if (!fp)
        return strcpy(buf, "");
    size_t n = fread(buf, 1, sizeof buf - 1, fp);
    buf[n] = '\0';
    fclose(fp);
    return buf;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Start fake_llm on `script` and wait (up to 5 s) for its port file. */
static void start_fake(fixture *f, const char *script)
{
    char script_path[256], port_path[256], log_path[256];
    write_file(f, "script", script);
    snprintf(script_path, sizeof script_path, "%s/script", f->dir);
    snprintf(port_path, sizeof port_path, "%s/port", f->dir);
    snprintf(log_path, sizeof log_path, "%s/log", f->dir);
    f->pid = fork();
    assert_true(f->pid >= 0);
    if (f->pid == 0) {
        execl(g_fake, g_fake, "--port-file", port_path, "--script", script_path, "--log",
              log_path, (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 500 && !f->port; i++) {
        FILE *fp = fopen(port_path, "r");
        if (fp) {
            if (fscanf(fp, "%d", &f->port) != 1)
                f->port = 0;
            fclose(fp);
        }
        if (!f->port)
            sleep_ms(10);
    }
    assert_true(f->port > 0);
    snprintf(f->openai_url, sizeof f->openai_url, "http://127.0.0.1:%d/v1", f->port);
    snprintf(f->anthropic_url, sizeof f->anthropic_url, "http://127.0.0.1:%d", f->port);
}

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    snprintf(f->dir, sizeof f->dir, "/tmp/test_llm.XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    write_file(f, "a.txt", "answer A: __global__ void k() {}\n");
    write_file(f, "b.txt", "answer B \xc3\xa9\xc3\xa9 (two-byte characters)\n");
    write_file(f, "c.txt", "answer C\n");
    *state = f;
    return 0;
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

static int teardown(void **state)
{
    fixture *f = *state;
    if (f->pid > 0) {
        kill(f->pid, SIGTERM);
        waitpid(f->pid, NULL, 0);
    }
    nftw(f->dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    free(f);
    return 0;
}

static kiln_llm_config openai_cfg(const fixture *f)
{
    kiln_llm_config c;
    kiln_error err = {0};
    unsetenv("OPENAI_API_KEY");   /* a real key must never reach the fake */
    assert_int_equal(kiln_llm_config_init(&c, KILN_LLM_OPENAI, "fake-gpt", f->openai_url, &err),
                     0);
    c.backoff_base_s = 0.01;
    c.timeout_ms = 5000;
    c.max_tokens = 256;
    c.temperature = 0.7;
    return c;
}

static kiln_llm_config anthropic_cfg(const fixture *f)
{
    kiln_llm_config c;
    kiln_error err = {0};
    setenv("ANTHROPIC_API_KEY", "test-key", 1);
    assert_int_equal(
        kiln_llm_config_init(&c, KILN_LLM_ANTHROPIC, "fake-claude", f->anthropic_url, &err), 0);
    c.backoff_base_s = 0.01;
    c.timeout_ms = 5000;
    return c;
}

/* One completion; asserts that the call itself worked. */
static kiln_llm_result ask(const kiln_llm_config *c)
{
    kiln_llm_result r;
    kiln_error err = {0};
    assert_int_equal(kiln_llm_complete(c, "You write kernels.", "Write one.", 1, &r, &err), 0);
    return r;
}

/* ---- answers ------------------------------------------------------------- */

static void test_openai_ok(void **state)
{
    fixture *f = *state;
    start_fake(f, "ok a.txt\n");
    kiln_llm_config c = openai_cfg(f);
    kiln_llm_result r = ask(&c);
    assert_true(r.ok);
    assert_string_equal(r.text, "answer A: __global__ void k() {}\n");
    assert_string_equal(r.finish, "stop");
    assert_true(r.prompt_tokens > 10);   /* request body length / 4 */
    assert_int_equal(r.completion_tokens, (long)strlen(r.text) / 4);
    assert_int_equal(r.attempts, 1);
    assert_int_equal(r.http_status, 200);
    assert_false(r.fatal);
    assert_non_null(strstr(read_log(f), "POST /v1/chat/completions openai ok fake-gpt"));
    kiln_llm_result_free(&r);
    assert_null(r.text);
    kiln_llm_result_free(&r);   /* twice is harmless */
}

static void test_anthropic_ok(void **state)
{
    fixture *f = *state;
    start_fake(f, "ok b.txt\n");
    kiln_llm_config c = anthropic_cfg(f);
    kiln_llm_result r = ask(&c);
    assert_true(r.ok);
    /* The fake splits the text into two blocks; the client joins them. */
    assert_string_equal(r.text, "answer B \xc3\xa9\xc3\xa9 (two-byte characters)\n");
    assert_string_equal(r.finish, "end_turn");
    assert_true(r.prompt_tokens > 10);
    assert_int_equal(r.completion_tokens, (long)strlen(r.text) / 4);
    assert_non_null(strstr(read_log(f), "POST /v1/messages anthropic ok fake-claude"));
    kiln_llm_result_free(&r);
}

static void test_key_checked(void **state)
{
    fixture *f = *state;
    start_fake(f, "expect-key right-key\nok a.txt\n");
    kiln_llm_config c = openai_cfg(f);
    strcpy(c.api_key, "wrong-key");
    kiln_llm_result r = ask(&c);
    assert_false(r.ok);
    assert_true(r.fatal);
    assert_int_equal(r.attempts, 1);
    assert_int_equal(r.http_status, 401);
    assert_non_null(strstr(r.error, "rejected"));
    assert_non_null(strstr(r.error, "invalid x-api-key"));   /* quoted from the body */
    assert_null(strstr(r.error, "wrong-key"));
    kiln_llm_result_free(&r);

    strcpy(c.api_key, "right-key");   /* sent as Authorization: Bearer */
    r = ask(&c);
    assert_true(r.ok);
    kiln_llm_result_free(&r);

    kiln_llm_config a = anthropic_cfg(f);   /* sent as x-api-key */
    strcpy(a.api_key, "right-key");
    r = ask(&a);
    assert_true(r.ok);
    kiln_llm_result_free(&r);
}

/* ---- retries ------------------------------------------------------------- */

static void test_retry_after_honoured(void **state)
{
    fixture *f = *state;
    start_fake(f, "status 429 1\nok a.txt\n");
    kiln_llm_config c = openai_cfg(f);
    kiln_llm_result r = ask(&c);
    assert_true(r.ok);
    assert_int_equal(r.attempts, 2);
    assert_true(r.latency_s >= 1.0);   /* not the 10 ms backoff */
    assert_true(r.latency_s < 3.0);
    kiln_llm_result_free(&r);
}

static void test_server_errors_retried(void **state)
{
    fixture *f = *state;
    start_fake(f, "status 500\nstatus 500\nok a.txt\n");
    kiln_llm_config c = anthropic_cfg(f);
    kiln_llm_result r = ask(&c);
    assert_true(r.ok);
    assert_int_equal(r.attempts, 3);
    assert_int_equal(r.http_status, 200);
    assert_true(r.latency_s < 1.0);
    kiln_llm_result_free(&r);
}

static void test_retries_exhausted(void **state)
{
    fixture *f = *state;
    start_fake(f, "status 529\n");
    kiln_llm_config c = anthropic_cfg(f);
    c.max_retries = 2;
    kiln_llm_result r = ask(&c);
    assert_false(r.ok);
    assert_false(r.fatal);
    assert_int_equal(r.attempts, 3);
    assert_int_equal(r.http_status, 529);
    assert_non_null(strstr(r.error, "HTTP 529 after 3 attempts"));
    assert_non_null(strstr(r.error, "scripted HTTP 529"));
    kiln_llm_result_free(&r);
}

static void test_bad_request_not_retried(void **state)
{
    fixture *f = *state;
    start_fake(f, "status 400\nok a.txt\n");
    kiln_llm_config c = openai_cfg(f);
    kiln_llm_result r = ask(&c);
    assert_false(r.ok);
    assert_true(r.fatal);
    assert_int_equal(r.attempts, 1);
    assert_non_null(strstr(r.error, "HTTP 400: fake_llm: scripted HTTP 400"));
    kiln_llm_result_free(&r);
}

static void test_timeout(void **state)
{
    fixture *f = *state;
    start_fake(f, "slow 3000 a.txt\n");
    kiln_llm_config c = openai_cfg(f);
    c.timeout_ms = 300;
    c.max_retries = 1;
    kiln_llm_result r = ask(&c);
    assert_false(r.ok);
    assert_false(r.fatal);
    assert_int_equal(r.attempts, 2);
    assert_int_equal(r.http_status, 0);
    assert_non_null(strstr(r.error, "timed out after 300 ms"));
    assert_true(r.latency_s >= 0.6 && r.latency_s < 2.0);
    kiln_llm_result_free(&r);
}

static void test_truncated_retried(void **state)
{
    fixture *f = *state;
    start_fake(f, "truncated a.txt\nok a.txt\n");
    kiln_llm_config c = openai_cfg(f);
    kiln_llm_result r = ask(&c);
    assert_true(r.ok);
    assert_int_equal(r.attempts, 2);
    assert_string_equal(r.text, "answer A: __global__ void k() {}\n");
    kiln_llm_result_free(&r);
}

static void test_truncated_every_time(void **state)
{
    fixture *f = *state;
    start_fake(f, "truncated a.txt\n");
    kiln_llm_config c = openai_cfg(f);
    c.max_retries = 1;
    kiln_llm_result r = ask(&c);
    assert_false(r.ok);
    assert_int_equal(r.attempts, 2);
    assert_non_null(strstr(r.error, "cut off"));
    assert_null(r.text);
    kiln_llm_result_free(&r);
}

static void test_connection_refused(void **state)
{
    (void)state;
    /* A port that was just free: nothing listens there. */
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t al = sizeof a;
    assert_int_equal(bind(s, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(getsockname(s, (struct sockaddr *)&a, &al), 0);
    close(s);
    fixture f = {.port = ntohs(a.sin_port)};
    snprintf(f.openai_url, sizeof f.openai_url, "http://127.0.0.1:%d/v1", f.port);
    kiln_llm_config c = openai_cfg(&f);
    c.max_retries = 2;
    kiln_llm_result r = ask(&c);
    assert_false(r.ok);
    assert_int_equal(r.attempts, 3);
    assert_int_equal(r.http_status, 0);
    assert_non_null(strstr(r.error, "connection error"));
    kiln_llm_result_free(&r);
}

/* ---- bad answers ---------------------------------------------------------- */

static void test_malformed(void **state)
{
    fixture *f = *state;
    start_fake(f, "malformed\nok a.txt\n");
    kiln_llm_config c = openai_cfg(f);
    kiln_llm_result r = ask(&c);
    assert_false(r.ok);
    assert_false(r.fatal);
    assert_int_equal(r.attempts, 1);   /* a garbage reply is not paid for twice */
    assert_int_equal(r.http_status, 200);
    assert_non_null(strstr(r.error, "malformed"));
    assert_null(r.text);
    kiln_llm_result_free(&r);
}

static void test_nocontent(void **state)
{
    fixture *f = *state;
    start_fake(f, "nocontent\n");
    kiln_llm_config c = openai_cfg(f);
    kiln_llm_result r = ask(&c);
    assert_false(r.ok);
    assert_int_equal(r.attempts, 1);
    assert_non_null(strstr(r.error, "choices[0].message.content"));
    kiln_llm_result_free(&r);

    kiln_llm_config a = anthropic_cfg(f);
    r = ask(&a);
    assert_false(r.ok);
    assert_non_null(strstr(r.error, "content"));
    assert_null(r.text);
    kiln_llm_result_free(&r);
}

/* ---- concurrency ---------------------------------------------------------- */

static int has_text(const kiln_llm_result *r, int n, const char *prefix)
{
    int found = 0;
    for (int i = 0; i < n; i++)
        found += r[i].ok && !strncmp(r[i].text, prefix, strlen(prefix));
    return found;
}

static void test_concurrent_drafts(void **state)
{
    fixture *f = *state;
    /* 3 x 1 s answers: about 1 s together, 3 s one after another. */
    start_fake(f, "slow 1000 a.txt\nslow 1000 b.txt\nslow 1000 c.txt\n");
    kiln_llm_config c = openai_cfg(f);
    kiln_llm_result r[3];
    kiln_error err = {0};
    assert_int_equal(kiln_llm_complete(&c, NULL, "Write one.", 3, r, &err), 0);
    assert_int_equal(has_text(r, 3, "answer A"), 1);
    assert_int_equal(has_text(r, 3, "answer B"), 1);
    assert_int_equal(has_text(r, 3, "answer C"), 1);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(r[i].attempts, 1);
        assert_true(r[i].latency_s >= 0.9 && r[i].latency_s < 2.5);
        kiln_llm_result_free(&r[i]);
    }
}

/* ---- giving up (kiln_llm_complete_each_until) ----------------------------- */

static void *raise_after_300ms(void *p)
{
    struct timespec ts = {0, 300 * 1000 * 1000};
    nanosleep(&ts, NULL);
    atomic_store((atomic_int *)p, 1);
    return NULL;
}

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A stop raised by another thread ends 5 s answers within a second, each
 * marked cancelled, none with text; an answer already in stays. */
static void test_stop_cancels(void **state)
{
    fixture *f = *state;
    start_fake(f, "ok a.txt\nslow 5000 b.txt\nslow 5000 c.txt\nok c.txt\n");
    kiln_llm_config c = openai_cfg(f);
    kiln_llm_request req[3] = {{NULL, "one", 0.2}, {NULL, "two", 0.5}, {NULL, "three", 0.8}};
    kiln_llm_result r[3];
    kiln_error err = {0};
    atomic_int stop = 0;
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, raise_after_300ms, &stop), 0);
    double t0 = mono_s();
    assert_int_equal(kiln_llm_complete_each_until(&c, req, 3, r, &stop, &err), 0);
    double took = mono_s() - t0;
    pthread_join(th, NULL);
    assert_true(took < 1.5);
    int ok = 0, cancelled = 0;
    for (int i = 0; i < 3; i++) {
        ok += r[i].ok;
        if (r[i].cancelled) {
            cancelled++;
            assert_false(r[i].ok);
            assert_null(r[i].text);
            assert_string_equal(r[i].error, "cancelled");
        }
        kiln_llm_result_free(&r[i]);
    }
    assert_int_equal(ok, 1);
    assert_int_equal(cancelled, 2);
    /* Never raised: the same as complete_each. */
    atomic_int never = 0;
    assert_int_equal(kiln_llm_complete_each_until(&c, req, 1, r, &never, &err), 0);
    assert_true(r[0].ok && !r[0].cancelled);
    kiln_llm_result_free(&r[0]);
}

static void test_retry_does_not_block_others(void **state)
{
    fixture *f = *state;
    /* Whichever draft gets the 429 waits 1 s; the other must not. */
    start_fake(f, "status 429 1\nok a.txt\nok b.txt\n");
    kiln_llm_config c = anthropic_cfg(f);
    kiln_llm_result r[2];
    kiln_error err = {0};
    assert_int_equal(kiln_llm_complete(&c, "sys", "user", 2, r, &err), 0);
    assert_true(r[0].ok && r[1].ok);
    assert_int_equal(r[0].attempts + r[1].attempts, 3);
    double fast = r[0].latency_s < r[1].latency_s ? r[0].latency_s : r[1].latency_s;
    double slow = r[0].latency_s < r[1].latency_s ? r[1].latency_s : r[0].latency_s;
    assert_true(fast < 0.5);
    assert_true(slow >= 1.0);
    kiln_llm_result_free(&r[0]);
    kiln_llm_result_free(&r[1]);
}

/* ---- one request per draft ------------------------------------------------ */

/* The temperatures the fake logged ("t=..."), in the log's order. */
static int log_temperatures(const fixture *f, char t[][16], int max)
{
    const char *log = read_log(f), *p = log;
    int n = 0;
    while (n < max && (p = strstr(p, " t=")) != NULL) {
        p += 3;
        snprintf(t[n++], 16, "%.*s", (int)strcspn(p, " \n"), p);
    }
    return n;
}

static int temperature_logged(char t[][16], int n, const char *want)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(t[i], want))
            return 1;
    return 0;
}

/* The temperature goes into the body: cfg's for every request, or each
 * request's own, in both dialects; none when it is unset. */
static void test_temperature_sent(void **state)
{
    fixture *f = *state;
    start_fake(f, "ok a.txt\n");
    kiln_llm_config c = openai_cfg(f);   /* temperature 0.7 */
    kiln_llm_result r = ask(&c);
    assert_true(r.ok && r.temperature == 0.7);
    kiln_llm_result_free(&r);
    kiln_llm_config a = anthropic_cfg(f);   /* temperature unset */
    r = ask(&a);
    assert_true(r.ok && r.temperature == -1);
    kiln_llm_result_free(&r);
    char t[8][16];
    assert_int_equal(log_temperatures(f, t, 8), 2);
    assert_string_equal(t[0], "0.7");
    assert_string_equal(t[1], "-");

    kiln_llm_request req[3] = {{"sys", "draft 0", 0.2}, {"sys", "draft 1", 0.5},
                               {NULL, "draft 2", -1}};
    kiln_llm_result rs[3];
    kiln_error err = {0};
    assert_int_equal(kiln_llm_complete_each(&a, req, 3, rs, &err), 0);
    for (int i = 0; i < 3; i++) {
        assert_true(rs[i].ok);
        kiln_llm_result_free(&rs[i]);
    }
    assert_true(rs[0].temperature == 0.2 && rs[1].temperature == 0.5 && rs[2].temperature == -1);
    assert_int_equal(log_temperatures(f, t, 8), 5);
    assert_true(temperature_logged(t + 2, 3, "0.2") && temperature_logged(t + 2, 3, "0.5") &&
                temperature_logged(t + 2, 3, "-"));
    req[1].user = NULL;
    assert_int_equal(kiln_llm_complete_each(&a, req, 3, rs, &err), -1);
    assert_non_null(strstr(err.msg, "request 1"));
}

/* A model that refuses "max_tokens" is asked again at once with
 * "max_completion_tokens"; a reasoning model's name gets that from the
 * first request; anything else keeps "max_tokens". */
static void test_completion_tokens(void **state)
{
    fixture *f = *state;
    start_fake(f, "completion-tokens a.txt\n");
    kiln_llm_config c = openai_cfg(f);
    kiln_llm_result r = ask(&c);
    assert_true(r.ok);
    assert_int_equal(r.attempts, 2);
    assert_int_equal(r.token_field, 2);
    assert_true(r.latency_s < 1.0);
    kiln_llm_result_free(&r);
    const char *log = read_log(f);
    assert_non_null(strstr(log, "completion-tokens:400 fake-gpt t=0.7 mt=max_tokens "));
    assert_non_null(strstr(log, "completion-tokens fake-gpt t=0.7 mt=max_completion_tokens "));
    /* told once (as the search does from the result), asked right at once */
    c.token_field = r.token_field;
    r = ask(&c);
    assert_true(r.ok);
    assert_int_equal(r.attempts, 1);
    kiln_llm_result_free(&r);
    /* a reasoning model's name: right from the first request */
    snprintf(c.model, sizeof c.model, "o3-mini");
    c.token_field = 0;
    r = ask(&c);
    assert_true(r.ok);
    assert_int_equal(r.attempts, 1);
    kiln_llm_result_free(&r);
}

/* Anthropic: the system prompt is one text block marked for the prompt
 * cache, and the cache's usage is read back. */
static void test_anthropic_prompt_cache(void **state)
{
    fixture *f = *state;
    start_fake(f, "ok a.txt\n");
    kiln_llm_config c = anthropic_cfg(f);
    kiln_llm_result r = ask(&c);
    assert_true(r.ok);
    assert_int_equal(r.cache_read_tokens, (long)(strlen("You write kernels.") / 4));
    kiln_llm_result_free(&r);
    assert_non_null(strstr(read_log(f), "anthropic ok fake-claude t=- mt=max_tokens c=1 "));
    c.cache_system = 0;
    r = ask(&c);
    assert_true(r.ok);
    assert_int_equal(r.cache_read_tokens, 0);
    kiln_llm_result_free(&r);
    assert_non_null(strstr(read_log(f), "anthropic ok fake-claude t=- mt=max_tokens c=0 "));
}

/* Different prompts are different bodies (the log's h= hashes differ). */
static void test_requests_differ(void **state)
{
    fixture *f = *state;
    start_fake(f, "ok a.txt\n");
    kiln_llm_config c = openai_cfg(f);
    kiln_llm_request req[2] = {{"sys", "same", 0.2}, {"sys", "same", 0.8}};
    kiln_llm_result r[2];
    kiln_error err = {0};
    assert_int_equal(kiln_llm_complete_each(&c, req, 2, r, &err), 0);
    kiln_llm_result_free(&r[0]);
    kiln_llm_result_free(&r[1]);
    const char *log = read_log(f), *h1 = strstr(log, " h=");
    const char *h2 = h1 ? strstr(h1 + 1, " h=") : NULL;
    assert_non_null(h2);
    assert_int_not_equal(strncmp(h1, h2, 20), 0);
}

/* A model that takes no temperature is asked again without one, at once. */
static void test_temperature_refused(void **state)
{
    fixture *f = *state;
    start_fake(f, "no-temperature a.txt\n");
    kiln_llm_config c = openai_cfg(f);
    kiln_llm_result r = ask(&c);
    assert_true(r.ok);
    assert_int_equal(r.attempts, 2);
    assert_true(r.temperature == -1);
    assert_true(r.latency_s < 1.0);
    assert_string_equal(r.text, "answer A: __global__ void k() {}\n");
    kiln_llm_result_free(&r);
    const char *log = read_log(f);
    assert_non_null(strstr(log, "no-temperature:400 fake-gpt t=0.7 "));
    assert_non_null(strstr(log, "no-temperature fake-gpt t=- "));
    /* without a temperature there is nothing to drop: the answer comes at once */
    c.temperature = -1;
    r = ask(&c);
    assert_true(r.ok);
    assert_int_equal(r.attempts, 1);
    kiln_llm_result_free(&r);
}

/* ---- configuration -------------------------------------------------------- */

static void test_config(void **state)
{
    (void)state;
    kiln_llm_config c;
    kiln_error err = {0};
    unsetenv("ANTHROPIC_API_KEY");
    unsetenv("ANTHROPIC_BASE_URL");
    assert_int_equal(kiln_llm_config_init(&c, KILN_LLM_ANTHROPIC, "claude", NULL, &err), -1);
    assert_non_null(strstr(err.msg, "ANTHROPIC_API_KEY"));

    unsetenv("OPENAI_API_KEY");
    unsetenv("OPENAI_BASE_URL");
    assert_int_equal(kiln_llm_config_init(&c, KILN_LLM_OPENAI, "gpt", NULL, &err), -1);
    assert_non_null(strstr(err.msg, "OPENAI_API_KEY"));

    /* A local server needs no key; the base URL comes from the environment. */
    setenv("OPENAI_BASE_URL", "http://localhost:8080/v1/", 1);
    assert_int_equal(kiln_llm_config_init(&c, KILN_LLM_OPENAI, "local", NULL, &err), 0);
    assert_string_equal(c.base_url, "http://localhost:8080/v1");
    assert_string_equal(c.api_key, "");
    assert_int_equal(c.timeout_ms, 300000);
    assert_int_equal(c.connect_timeout_ms, 10000);
    assert_int_equal(c.max_retries, 4);
    assert_true(c.backoff_base_s == 0.5);
    unsetenv("OPENAI_BASE_URL");

    setenv("ANTHROPIC_API_KEY", "k", 1);
    assert_int_equal(kiln_llm_config_init(&c, KILN_LLM_ANTHROPIC, "claude", NULL, &err), 0);
    assert_string_equal(c.base_url, "https://api.anthropic.com");
    assert_string_equal(c.api_key, "k");

    assert_int_equal(kiln_llm_config_init(&c, KILN_LLM_ANTHROPIC, "", NULL, &err), -1);
    assert_non_null(strstr(err.msg, "model"));

    assert_int_equal(kiln_llm_config_init(&c, KILN_LLM_ANTHROPIC, "claude", NULL, &err), 0);
    kiln_llm_result r[1];
    assert_int_equal(kiln_llm_complete(&c, NULL, "u", 0, r, &err), -1);
    strcpy(c.api_key, "bad\nkey");
    assert_int_equal(kiln_llm_complete(&c, NULL, "u", 1, r, &err), -1);
    assert_non_null(strstr(err.msg, "control"));
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s PATH_TO_FAKE_LLM\n", argv[0]);
        return 2;
    }
    g_fake = argv[1];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_openai_ok, setup, teardown),
        cmocka_unit_test_setup_teardown(test_anthropic_ok, setup, teardown),
        cmocka_unit_test_setup_teardown(test_key_checked, setup, teardown),
        cmocka_unit_test_setup_teardown(test_retry_after_honoured, setup, teardown),
        cmocka_unit_test_setup_teardown(test_server_errors_retried, setup, teardown),
        cmocka_unit_test_setup_teardown(test_retries_exhausted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_request_not_retried, setup, teardown),
        cmocka_unit_test_setup_teardown(test_timeout, setup, teardown),
        cmocka_unit_test_setup_teardown(test_truncated_retried, setup, teardown),
        cmocka_unit_test_setup_teardown(test_truncated_every_time, setup, teardown),
        cmocka_unit_test(test_connection_refused),
        cmocka_unit_test_setup_teardown(test_malformed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_nocontent, setup, teardown),
        cmocka_unit_test_setup_teardown(test_concurrent_drafts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_retry_does_not_block_others, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stop_cancels, setup, teardown),
        cmocka_unit_test_setup_teardown(test_temperature_sent, setup, teardown),
        cmocka_unit_test_setup_teardown(test_requests_differ, setup, teardown),
        cmocka_unit_test_setup_teardown(test_completion_tokens, setup, teardown),
        cmocka_unit_test_setup_teardown(test_anthropic_prompt_cache, setup, teardown),
        cmocka_unit_test_setup_teardown(test_temperature_refused, setup, teardown),
        cmocka_unit_test(test_config),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
