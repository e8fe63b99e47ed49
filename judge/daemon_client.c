/* daemon_client.c - the client side of kilnd's protocol (see daemon_client.h). */
#include "daemon_client.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "paths.h"
#include "protocol.h"

int kiln_client_address(const char *flag, char *buf, size_t len, kiln_error *err)
{
    if (flag && *flag) {
        snprintf(buf, len, "%s", flag);
        return 0;
    }
    return kiln_default_socket(buf, len, err);
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* What the child wrote on the pipe before it closed it (kilnd's reason for
 * not starting), its first line, up to len - 1 bytes. */
static void read_reason(int fd, char *buf, size_t len)
{
    size_t n = 0;
    ssize_t r;
    while (n + 1 < len && ((r = read(fd, buf + n, len - 1 - n)) > 0 || (r < 0 && errno == EINTR)))
        n += r > 0 ? (size_t)r : 0;
    buf[n] = '\0';
    buf[strcspn(buf, "\n")] = '\0';
}

int kiln_start_daemon(const char *socket_path, const char *state_dir, int idle_s, kiln_error *err)
{
    char kilnd[PATH_MAX + 16], idle[16];
    int pipefd[2];
    if (kiln_kilnd_path(kilnd, sizeof kilnd, err) < 0)
        return -1;
    snprintf(idle, sizeof idle, "%d", idle_s);
    /* kilnd's stderr, until it daemonizes: why it did not start, if it did not */
    if (pipe2(pipefd, O_CLOEXEC) < 0)
        return kiln_fail(err, "pipe: %s", strerror(errno));
    pid_t pid = fork();
    if (pid == 0) {
        char *argv[] = {kilnd, "--socket", (char *)socket_path, "--idle-exit", idle,
                        state_dir ? "--state" : NULL, (char *)state_dir, NULL};
        dup2(pipefd[1], 2);
        execv(kilnd, argv);
        _exit(127);
    }
    close(pipefd[1]);
    char why[1024] = "";
    if (pid > 0)
        read_reason(pipefd[0], why, sizeof why);
    close(pipefd[0]);
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        return kiln_fail(err, "could not start %s (exit status %d)%s%s", kilnd,
                         WIFEXITED(st) ? WEXITSTATUS(st) : -1, why[0] ? ": " : "", why);
    return 0;
}

static int authenticate(kiln_client *c, kiln_error *err)
{
    const char *path = getenv("KILN_TOKEN_FILE");
    char token[256] = "";
    FILE *f = path ? fopen(path, "r") : NULL;
    if (!f)
        return kiln_fail(err, "%s needs a token: set KILN_TOKEN_FILE", c->address);
    if (!fgets(token, sizeof token, f))
        token[0] = '\0';
    fclose(f);
    token[strcspn(token, "\r\n")] = '\0';
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "op", "auth");
    cJSON_AddStringToObject(m, "token", token);
    int rc = kiln_client_send(c, m, err);
    cJSON_Delete(m);
    cJSON *r = rc < 0 ? NULL : kiln_client_next(c, 10000, err);
    const char *ev = r ? cJSON_GetStringValue(cJSON_GetObjectItem(r, "event")) : NULL;
    if (ev && strcmp(ev, "authenticated") == 0)
        rc = 0;
    else if (!r)   /* no answer at all: a daemon stopping closes what it accepted */
        rc = kiln_fail(err, "kilnd at %s closed the connection before answering the token "
                       "(stopping?)", c->address);
    else
        rc = kiln_fail(err, "kilnd at %s refused the token", c->address);
    cJSON_Delete(r);
    return rc;
}

/* Connect to a Unix socket, starting kilnd there when nothing listens. */
static int connect_local(kiln_client *c, const char *address, kiln_error *err)
{
    c->fd = kiln_connect(address, err);
    if (c->fd >= 0)
        return 0;
    if (kiln_start_daemon(address, NULL, 600, err) < 0)
        return -1;
    for (int i = 0; i < 200 && c->fd < 0; i++) {   /* up to 10 s */
        sleep_ms(50);
        c->fd = kiln_connect(address, err);
    }
    return c->fd < 0 ? -1 : 0;
}

/* Ask a daemon to stop and wait until it has closed the connection (its
 * running jobs finish first; queued ones stay spooled for the next one). */
static void stop_daemon(kiln_client *c)
{
    kiln_error err;
    cJSON *r = kiln_client_request(c, "shutdown", 10000, &err);
    while (r) {
        cJSON_Delete(r);
        r = kiln_client_next(c, 600000, &err);
    }
    kiln_client_close(c);
}

/* Is the daemon on c the kilnd this kiln would start (or keep, the build
 * the caller has been using)? 1 yes, 0 no (with *on_demand and why set),
 * -1 no answer. */
static int same_build(kiln_client *c, const char *keep, int *on_demand, char *why, size_t len,
                      kiln_error *err)
{
    char path[PATH_MAX + 16], mine[17];
    if (kiln_kilnd_path(path, sizeof path, err) < 0)
        return -1;
    kiln_build_id(path, mine);
    cJSON *r = kiln_client_request(c, "ping", 10000, err);
    if (!r)
        return -1;
    const char *build = cJSON_GetStringValue(cJSON_GetObjectItem(r, "build"));
    const char *version = cJSON_GetStringValue(cJSON_GetObjectItem(r, "version"));
    *on_demand = cJSON_IsTrue(cJSON_GetObjectItem(r, "on_demand"));
    int same = build && (strcmp(build, mine) == 0 || (keep && strcmp(build, keep) == 0));
    if (same)
        snprintf(c->build, sizeof c->build, "%s", build);
    snprintf(why, len, "kilnd at %.1000s (pid %.0f, version %.20s) is build %.40s, but this kiln's "
             "kilnd (%.1000s) is build %s", c->address, cJSON_GetNumberValue(cJSON_GetObjectItem(r, "pid")),
             version ? version : "?", build ? build : "(none: an older kilnd)", path, mine);
    cJSON_Delete(r);
    return same;
}

/* Is the daemon on c in use: jobs queued or running, a client's hold (a
 * search), or a connection besides ours? 1 with what says so, 0 idle. */
static int in_use(kiln_client *c, char *what, size_t len)
{
    kiln_error e;
    cJSON *r = kiln_client_request(c, "status", 10000, &e);
    if (!r)
        return snprintf(what, len, "it does not answer status: %s", e.msg), 1;
    double jobs = cJSON_GetNumberValue(cJSON_GetObjectItem(r, "queued")) +
                  cJSON_GetNumberValue(cJSON_GetObjectItem(r, "active"));
    const cJSON *conns = cJSON_GetObjectItem(r, "connections"), *h;
    size_t w = 0;
    what[0] = '\0';
    if (jobs > 0)
        w += (size_t)snprintf(what, len, "%.0f job%s queued or running", jobs, jobs == 1 ? "" : "s");
    cJSON_ArrayForEach(h, cJSON_GetObjectItem(r, "holds")) {
        const char *hw = cJSON_GetStringValue(cJSON_GetObjectItem(h, "what"));
        const char *hb = cJSON_GetStringValue(cJSON_GetObjectItem(h, "build"));
        if (w < len)
            w += (size_t)snprintf(what + w, len - w, "%sheld by %.300s (pid %.0f, build %.16s)",
                                  w ? "; " : "", hw && *hw ? hw : "a client",
                                  cJSON_GetNumberValue(cJSON_GetObjectItem(h, "pid")), hb ? hb : "?");
    }
    if (!what[0] && cJSON_IsNumber(conns) && conns->valuedouble > 1)
        snprintf(what, len, "%.0f other client%s connected", conns->valuedouble - 1,
                 conns->valuedouble > 2 ? "s" : "");
    cJSON_Delete(r);
    return what[0] != '\0';
}

/* The way out of a refusal: this build's own daemon, or one of the user's. */
static void fix_text(char *buf, size_t len)
{
    char build[17], sock[4096];
    kiln_error e;
    kiln_kilnd_build(build);
    const char *env = getenv("KILN_SOCKET");
    if (env && *env)
        snprintf(buf, len, "unset KILN_SOCKET (and KILN_STATE) and this kiln uses a kilnd of its "
                 "own build, or give it a socket and state directory of its own (--socket PATH, "
                 "KILN_STATE=DIR)");
    else if (kiln_default_socket_of(build, sock, sizeof sock, &e) == 0)
        snprintf(buf, len, "use this kiln's own kilnd (its default socket is %.2000s), or give it "
                 "a socket and state directory of its own (--socket PATH, KILN_STATE=DIR)", sock);
    else
        snprintf(buf, len, "give this kiln a socket and state directory of its own (--socket "
                 "PATH, KILN_STATE=DIR)");
}

/* A local daemon must be the kilnd this kiln would start (after a rebuild
 * an old one would go on judging with old code), or the one the caller
 * keeps. One kiln started on demand is stopped and started again, but only
 * while nobody uses it: a daemon with jobs, a hold or other clients is never
 * taken from under a search; it, and any other, is refused, naming both
 * builds and the way out. */
static int check_identity(kiln_client *c, const char *address, const char *keep, kiln_error *err)
{
    char why[2400], busy[1200], fix[2400];
    int on_demand = 0, used = 0;
    for (int attempt = 0; attempt < 2; attempt++) {
        int same = same_build(c, keep, &on_demand, why, sizeof why, err);
        if (same != 0)
            return same < 0 ? -1 : 0;
        used = in_use(c, busy, sizeof busy);
        if (!on_demand || attempt || used)
            break;
        stop_daemon(c);
        if (connect_local(c, address, err) < 0)
            return -1;
    }
    kiln_client_close(c);
    fix_text(fix, sizeof fix);
    if (used)
        return kiln_fail(err, "%s; it is in use (%s), so kiln leaves it alone: %s", why, busy, fix);
    return kiln_fail(err, "%s; stop it (kiln daemon stop --socket %.1000s), or %s", why, address,
                     fix);
}

int kiln_client_open_keep(kiln_client *c, const char *address, const char *keep, kiln_error *err)
{
    memset(c, 0, sizeof *c);
    snprintf(c->address, sizeof c->address, "%s", address);
    if (strncmp(address, "tcp://", 6) == 0)
        return kiln_client_open(c, address, 0, err);
    if (connect_local(c, address, err) < 0 || check_identity(c, address, keep, err) < 0)
        return -1;
    return 0;
}

int kiln_client_open(kiln_client *c, const char *address, int autostart, kiln_error *err)
{
    int tcp = strncmp(address, "tcp://", 6) == 0;
    if (autostart && !tcp)
        return kiln_client_open_keep(c, address, NULL, err);
    memset(c, 0, sizeof *c);
    snprintf(c->address, sizeof c->address, "%s", address);
    c->fd = kiln_connect(address, err);
    if (c->fd < 0)
        return -1;
    if (tcp && authenticate(c, err) < 0) {
        kiln_client_close(c);   /* its descriptor and read buffer */
        return -1;
    }
    return 0;
}

int kiln_client_hold(kiln_client *c, const char *what, kiln_error *err)
{
    char build[17];
    kiln_kilnd_build(build);
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "op", "hold");
    cJSON_AddStringToObject(m, "id", "hold");
    cJSON_AddNumberToObject(m, "pid", (double)getpid());
    cJSON_AddStringToObject(m, "build", build);
    cJSON_AddStringToObject(m, "what", what);
    int rc = kiln_client_send(c, m, err);
    cJSON_Delete(m);
    cJSON *r = rc < 0 ? NULL : kiln_client_next(c, 10000, err);
    cJSON_Delete(r);   /* "held", or an older kilnd's unknown-op: the connection still counts */
    return r ? 0 : -1;
}

int kiln_client_alive(kiln_client *c)
{
    struct pollfd p = {.fd = c->fd, .events = POLLIN};
    if (c->fd < 0)
        return 0;
    if (poll(&p, 1, 0) == 0)
        return 1;
    char buf[256];
    return !(p.revents & (POLLHUP | POLLERR)) && recv(c->fd, buf, sizeof buf, MSG_DONTWAIT) > 0;
}

void kiln_client_close(kiln_client *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    free(c->buf);
    c->buf = NULL;
    c->len = c->cap = 0;
}

int kiln_client_send(kiln_client *c, const cJSON *msg, kiln_error *err)
{
    char *s = cJSON_PrintUnformatted(msg);
    if (!s)
        return kiln_fail(err, "out of memory");
    size_t n = strlen(s);
    s[n] = '\n';   /* overwrite the NUL: we send n + 1 bytes */
    size_t off = 0;
    while (off < n + 1) {
        ssize_t w = send(c->fd, s + off, n + 1 - off, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            free(s);
            return kiln_fail(err, "lost the connection to kilnd: %s", strerror(errno));
        }
        off += (size_t)w;
    }
    free(s);
    return 0;
}

static cJSON *take_line(kiln_client *c, kiln_error *err)
{
    char *nl = memchr(c->buf, '\n', c->len);
    if (!nl)
        return NULL;
    size_t n = (size_t)(nl - c->buf);
    cJSON *o = cJSON_ParseWithLength(c->buf, n);
    memmove(c->buf, nl + 1, c->len - n - 1);
    c->len -= n + 1;
    if (!o)
        kiln_fail(err, "kilnd sent a line that is not JSON");
    return o;
}

cJSON *kiln_client_next(kiln_client *c, int timeout_ms, kiln_error *err)
{
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        if (c->buf && memchr(c->buf, '\n', c->len))
            return take_line(c, err);
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        long spent = (now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000;
        if (spent >= timeout_ms) {
            kiln_fail(err, "kilnd did not answer within %d ms", timeout_ms);
            return NULL;
        }
        struct pollfd p = {.fd = c->fd, .events = POLLIN};
        if (poll(&p, 1, (int)(timeout_ms - spent)) <= 0)
            continue;
        if (c->cap - c->len < 65536) {
            size_t cap = c->cap ? c->cap * 2 : 131072;
            char *nb = cap <= (64u << 20) ? realloc(c->buf, cap) : NULL;
            if (!nb) {
                kiln_fail(err, "kilnd sent an event larger than 64 MiB");
                return NULL;
            }
            c->buf = nb;
            c->cap = cap;
        }
        ssize_t r = read(c->fd, c->buf + c->len, c->cap - c->len);
        if (r <= 0) {
            c->closed = 1;
            kiln_fail(err, "kilnd closed the connection");
            return NULL;
        }
        c->len += (size_t)r;
    }
}

cJSON *kiln_client_request(kiln_client *c, const char *op, int timeout_ms, kiln_error *err)
{
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "op", op);
    cJSON_AddStringToObject(m, "id", op);
    int rc = kiln_client_send(c, m, err);
    cJSON_Delete(m);
    return rc < 0 ? NULL : kiln_client_next(c, timeout_ms, err);
}

cJSON *kiln_client_status(const char *address, int timeout_ms, kiln_error *err)
{
    kiln_client c;
    if (kiln_client_open(&c, address, 0, err) < 0)
        return NULL;
    cJSON *r = kiln_client_request(&c, "status", timeout_ms, err);
    kiln_client_close(&c);
    return r;
}
