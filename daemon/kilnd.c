/* kilnd.c - the verifier daemon: owns the machine's devices, queues
 * verification jobs from many clients, and answers every job it accepted.
 *
 * One thread runs this event loop (accepting, reading requests, writing
 * queued events without ever blocking on a slow client); compile threads
 * in kilnd_jobs.c run the jobs. See docs/protocol.md.
 *
 *   kilnd [--socket PATH] [--state DIR] [--devices LIST] [--compile-jobs N]
 *         [--foreground] [--idle-exit SECONDS] [--listen HOST:PORT --token-file F]
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "kilnd.h"
#include "paths.h"

#define MAX_CONNS 256       /* local (Unix socket) connections */
#define MAX_TCP_CONNS 64    /* TCP connections, counted apart: strangers cannot crowd out locals */
#define AUTH_TIMEOUT_S 5    /* a TCP connection that has not authenticated by then is closed */

static const char usage[] =
    "usage: kilnd [--socket PATH] [--state DIR] [--devices LIST] [--compile-jobs N]\n"
    "             [--foreground] [--idle-exit SECONDS] [--listen HOST:PORT --token-file F]\n"
    "             [--max-tcp N]\n"
    "\n"
    "The kiln verifier daemon. Each build has its own by default (BUILD: the first 16\n"
    "hex digits of this binary's SHA-256). Default socket: $KILN_SOCKET, else\n"
    "$XDG_RUNTIME_DIR/kiln/kilnd-BUILD.sock, else STATE/kilnd.sock. Default state\n"
    "directory: $KILN_STATE, else ~/.local/state/kiln/kilnd-BUILD ($XDG_STATE_HOME/kiln\n"
    "for ~/.local/state/kiln). Devices: 'cpu', the CPU backend's lane, and\n"
    "'cuda:N', GPU N's lane; timed runs on one lane never overlap. Default: cpu and one\n"
    "lane per visible GPU ($CUDA_VISIBLE_DEVICES, else /dev/nvidiaN), e.g. cpu,cuda:0,cuda:1.\n"
    "--compile-jobs: jobs compiled (and run) at once; default the online cores, from 2\n"
    "to 32.\n"
    "TCP clients (--listen) must authenticate within 5 s; at most --max-tcp (default 64)\n"
    "TCP connections are open at once, apart from up to 256 local ones.\n";

static volatile sig_atomic_t got_signal;
static int signal_pipe = -1;

static void on_signal(int sig)
{
    got_signal = sig;
    if (signal_pipe >= 0) {
        int saved = errno;
        (void)!write(signal_pipe, "s", 1);
        errno = saved;
    }
}

static void send_error(kilnd *d, kilnd_conn *c, const char *id, const char *code, const char *msg)
{
    char *e = kiln_event_error(id, NULL, code, msg);
    if (e)
        kilnd_send(d, c, e);
    free(e);
}

static void add_conn(kilnd *d, int fd, int tcp)
{
    kilnd_conn *c = calloc(1, sizeof *c);
    if (!c) {
        close(fd);
        return;
    }
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    c->fd = fd;
    c->refs = 1;
    c->tcp = tcp;
    c->opened = time(NULL);
    pthread_mutex_init(&c->mu, NULL);
    c->next = d->conns;
    d->conns = c;
}

/* ---- requests ----------------------------------------------------------------- */

static int token_ok(const kilnd *d, const char *given)
{
    size_t a = strlen(d->token), b = strlen(given);
    unsigned diff = (unsigned)(a ^ b);
    for (size_t i = 0; i < a; i++)
        diff |= (unsigned char)d->token[i] ^ (unsigned char)(i < b ? given[i] : 0);
    return a > 0 && diff == 0;
}

/* ---- who uses this daemon ------------------------------------------------------ */

/* A hold: the client names itself (pid, the build of the kilnd it starts,
 * what it is) and keeps the connection open for as long as it uses us. */
static void take_hold(kilnd *d, kilnd_conn *c, const cJSON *msg, const char *id)
{
    const char *build = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(msg, "build"));
    const char *what = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(msg, "what"));
    const cJSON *pid = cJSON_GetObjectItemCaseSensitive(msg, "pid");
    c->held = 1;
    c->hold_pid = cJSON_IsNumber(pid) ? pid->valuedouble : 0;
    snprintf(c->hold_build, sizeof c->hold_build, "%s", build ? build : "");
    snprintf(c->hold_what, sizeof c->hold_what, "%s", what ? what : "");
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", id);
    cJSON_AddStringToObject(o, "event", "held");
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (s)
        kilnd_send(d, c, s);
    free(s);
}

static void handle_op(kilnd *d, kilnd_conn *c, const cJSON *msg, const char *id, const char *op)
{
    if (c->tcp && !c->authed) {
        const char *tok = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(msg, "token"));
        if (strcmp(op, "auth") == 0 && tok && token_ok(d, tok)) {
            c->authed = 1;
            kilnd_send(d, c, "{\"event\":\"authenticated\"}");
        } else {
            send_error(d, c, id, "unauthorized", "send {\"op\":\"auth\",\"token\":...} first");
            pthread_mutex_lock(&c->mu);
            c->closed = 1;
            pthread_mutex_unlock(&c->mu);
        }
        return;
    }
    if (strcmp(op, "ping") == 0) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "id", id);
        cJSON_AddStringToObject(o, "event", "pong");
        cJSON_AddStringToObject(o, "version", KILN_PROTO_VERSION);
        /* who answers: kiln compares the build with the kilnd it would start */
        cJSON_AddStringToObject(o, "build", d->build);
        cJSON_AddNumberToObject(o, "pid", (double)getpid());
        cJSON_AddBoolToObject(o, "on_demand", d->idle_exit_s > 0);
        kilnd_add_clients(d, o);
        char *s = cJSON_PrintUnformatted(o);
        cJSON_Delete(o);
        kilnd_send(d, c, s);
        free(s);
    } else if (strcmp(op, "hold") == 0) {
        take_hold(d, c, msg, id);
    } else if (strcmp(op, "verify") == 0) {
        kilnd_submit(d, c, msg, id);
    } else if (strcmp(op, "result") == 0) {
        const char *job = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(msg, "job"));
        kilnd_result(d, c, id, job ? job : "");
    } else if (strcmp(op, "status") == 0) {
        char *s = kilnd_status_json(d, id);
        kilnd_send(d, c, s);
        free(s);
    } else if (strcmp(op, "shutdown") == 0) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "id", id);
        cJSON_AddStringToObject(o, "event", "shutting-down");
        char *s = cJSON_PrintUnformatted(o);
        cJSON_Delete(o);
        if (s)
            kilnd_send(d, c, s);
        free(s);
        got_signal = SIGTERM;
    } else {
        char msgtxt[160];
        snprintf(msgtxt, sizeof msgtxt,
                 "unknown op '%.60s' (ping, verify, result, status, hold, shutdown)", op);
        send_error(d, c, id, "unknown-op", msgtxt);
    }
}

/* A TCP client gets one chance to authenticate: anything else closes it, so
 * strangers cannot hold connections or buffers. */
static void drop_unauthenticated(kilnd_conn *c)
{
    if (!c->tcp || c->authed)
        return;
    pthread_mutex_lock(&c->mu);
    c->closed = 1;
    pthread_mutex_unlock(&c->mu);
}

static void handle_line(kilnd *d, kilnd_conn *c, const char *line, size_t len)
{
    /* One JSON value and nothing else: cJSON alone would stop at a NUL byte
     * (truncating a string) and ignore whatever follows the value. */
    const char *end = NULL;
    size_t bad = kiln_utf8_invalid_at(line, len);
    if (bad != SIZE_MAX) {   /* JSON is UTF-8; nothing else is echoed back in ids */
        char why[96];
        snprintf(why, sizeof why, "a request must be UTF-8 (byte %zu is not)", bad);
        send_error(d, c, NULL, "malformed", why);
        drop_unauthenticated(c);
        return;
    }
    cJSON *msg = memchr(line, '\0', len) ? NULL : cJSON_ParseWithLengthOpts(line, len, &end, 0);
    if (msg) {
        while (end < line + len && (*end == ' ' || *end == '\t' || *end == '\r'))
            end++;
        if (end != line + len) {
            cJSON_Delete(msg);
            msg = NULL;
        }
    }
    if (!msg || !cJSON_IsObject(msg)) {
        send_error(d, c, NULL, "malformed", msg ? "a request must be a JSON object"
                                                 : "a request must be one line of valid JSON");
        cJSON_Delete(msg);
        drop_unauthenticated(c);
        return;
    }
    const cJSON *idj = cJSON_GetObjectItemCaseSensitive(msg, "id");
    const char *id = cJSON_IsString(idj) && strlen(idj->valuestring) < 64 ? idj->valuestring : "";
    const char *op = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(msg, "op"));
    if (!op)
        send_error(d, c, id, "malformed", "field 'op' is missing or not a string");
    else
        handle_op(d, c, msg, id, op);
    cJSON_Delete(msg);
}

/* Split what arrived into lines; an oversized line is answered once and
 * skipped up to its newline, so the connection stays usable. */
static void consume_input(kilnd *d, kilnd_conn *c)
{
    size_t start = 0;
    for (size_t i = 0; i < c->in_len; i++) {
        if (c->in[i] != '\n')
            continue;
        /* A whole line can arrive in one read, past the limit: check it
         * here too, not only what is left over without a newline. */
        if (!c->discarding && i - start > KILN_PROTO_MAX_LINE) {
            send_error(d, c, NULL, "too-large", "a request line may be at most 1 MiB");
            drop_unauthenticated(c);
        } else if (!c->discarding && i > start)
            handle_line(d, c, c->in + start, i - start);
        c->discarding = 0;
        start = i + 1;
        if (c->tcp && !c->authed && c->closed)
            break;   /* refused: the rest of what it sent is not read */
    }
    memmove(c->in, c->in + start, c->in_len - start);
    c->in_len -= start;
    if (c->in_len > KILN_PROTO_MAX_LINE) {
        if (!c->discarding)
            send_error(d, c, NULL, "too-large", "a request line may be at most 1 MiB");
        drop_unauthenticated(c);
        c->discarding = 1;
        c->in_len = 0;
    }
}

static int read_conn(kilnd *d, kilnd_conn *c)
{
    for (;;) {
        if (c->in_cap - c->in_len < 65536) {
            size_t cap = c->in_cap ? c->in_cap * 2 : 131072;
            if (cap > 2 * KILN_PROTO_MAX_LINE + 131072)
                cap = 2 * KILN_PROTO_MAX_LINE + 131072;
            char *p = realloc(c->in, cap);
            if (!p)
                return -1;
            c->in = p;
            c->in_cap = cap;
        }
        ssize_t n = read(c->fd, c->in + c->in_len, c->in_cap - c->in_len);
        if (n > 0) {
            c->in_len += (size_t)n;
            consume_input(d, c);
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return 0;
        return -1;   /* closed or broken */
    }
}

static int flush_conn(kilnd_conn *c)
{
    pthread_mutex_lock(&c->mu);
    int rc = 0;
    while (c->out_len > 0) {
        ssize_t n = send(c->fd, c->out, c->out_len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            memmove(c->out, c->out + n, c->out_len - (size_t)n);
            c->out_len -= (size_t)n;
        } else {
            rc = n < 0 && (errno == EAGAIN || errno == EINTR) ? 0 : -1;
            break;
        }
    }
    if (c->closed && c->out_len == 0)
        rc = -1;
    pthread_mutex_unlock(&c->mu);
    return rc;
}

static void close_conn(kilnd *d, kilnd_conn *c)
{
    kilnd_conn **pp = &d->conns;
    while (*pp && *pp != c)
        pp = &(*pp)->next;
    if (*pp)
        *pp = c->next;
    pthread_mutex_lock(&c->mu);
    c->closed = 1;
    close(c->fd);
    c->fd = -1;
    pthread_mutex_unlock(&c->mu);
    kilnd_conn_release(c);
}

/* ---- listening ------------------------------------------------------------------ */

static int listen_unix(const char *path, kiln_error *err)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof sa.sun_path)
        return kiln_fail(err, "socket path too long: %s", path);
    strcpy(sa.sun_path, path);
    int probe = kiln_connect(path, NULL);
    if (probe >= 0) {
        close(probe);
        return kiln_fail(err, "another kilnd is already listening on %s", path);
    }
    unlink(path);   /* stale socket of a daemon that died */
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    mode_t old = umask(077);
    int rc = fd < 0 ? -1 : bind(fd, (struct sockaddr *)&sa, sizeof sa);
    umask(old);
    if (rc < 0 || chmod(path, 0600) < 0 || listen(fd, 64) < 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return kiln_fail(err, "cannot listen on %s: %s", path, strerror(e));
    }
    return fd;
}

static int listen_tcp(const char *hostport, kiln_error *err)
{
    char host[256];
    snprintf(host, sizeof host, "%s", hostport);
    char *colon = strrchr(host, ':');
    if (!colon)
        return kiln_fail(err, "--listen needs HOST:PORT, got '%s'", hostport);
    *colon = '\0';
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE}, *res = NULL;
    int rc = getaddrinfo(host, colon + 1, &hints, &res);
    if (rc != 0)
        return kiln_fail(err, "--listen %s: %s", hostport, gai_strerror(rc));
    int fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
    if (fd >= 0)
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (fd < 0 || bind(fd, res->ai_addr, res->ai_addrlen) < 0 || listen(fd, 64) < 0) {
        int e = errno;
        freeaddrinfo(res);
        if (fd >= 0)
            close(fd);
        return kiln_fail(err, "cannot listen on %s: %s", hostport, strerror(e));
    }
    freeaddrinfo(res);
    return fd;
}

static void accept_all(kilnd *d, int lfd, int tcp, int *nconns)
{
    int limit = tcp ? d->max_tcp : MAX_CONNS;
    for (;;) {
        int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0)
            return;
        if (*nconns >= limit) {
            const char *msg = "{\"id\":null,\"event\":\"error\",\"error\":{\"code\":\"busy\","
                              "\"message\":\"too many connections\"}}\n";
            (void)!send(fd, msg, strlen(msg), MSG_NOSIGNAL | MSG_DONTWAIT);
            close(fd);
            continue;
        }
        add_conn(d, fd, tcp);
        (*nconns)++;
    }
}

/* ---- the loop ------------------------------------------------------------------ */

static int idle_expired(kilnd *d)
{
    if (d->idle_exit_s <= 0)
        return 0;
    if (d->conns || !kilnd_idle(d)) {
        d->idle_since = time(NULL);
        return 0;
    }
    return time(NULL) - d->idle_since >= d->idle_exit_s;
}

/* TCP connections that have not authenticated in time: told, then closed. */
static void expire_unauthenticated(kilnd *d)
{
    time_t now = time(NULL);
    for (kilnd_conn *c = d->conns, *next; c; c = next) {
        next = c->next;
        if (!c->tcp || c->authed || now - c->opened < AUTH_TIMEOUT_S)
            continue;
        send_error(d, c, NULL, "auth-timeout", "no auth within 5 s: closing the connection");
        flush_conn(c);
        close_conn(d, c);
    }
}

static void serve(kilnd *d, int ufd, int tfd)
{
    struct pollfd pfd[MAX_CONNS + MAX_TCP_CONNS + 3];
    kilnd_conn *who[MAX_CONNS + MAX_TCP_CONNS + 3];
    while (!got_signal && !idle_expired(d)) {
        int n = 0, nconns = 0, ntcp = 0;
        expire_unauthenticated(d);
        pfd[n++] = (struct pollfd){.fd = d->wake[0], .events = POLLIN};
        pfd[n++] = (struct pollfd){.fd = ufd, .events = POLLIN};
        pfd[n++] = (struct pollfd){.fd = tfd, .events = POLLIN};
        for (kilnd_conn *c = d->conns; c && n < MAX_CONNS + MAX_TCP_CONNS + 3; c = c->next) {
            if (c->tcp)
                ntcp++;
            else
                nconns++;
            pthread_mutex_lock(&c->mu);
            short ev = POLLIN | (c->out_len ? POLLOUT : 0);
            pthread_mutex_unlock(&c->mu);
            who[n] = c;
            pfd[n++] = (struct pollfd){.fd = c->fd, .events = ev};
        }
        if (poll(pfd, (nfds_t)n, 1000) < 0 && errno != EINTR)
            break;
        char drain[256];
        if (pfd[0].revents)
            while (read(d->wake[0], drain, sizeof drain) > 0) {
            }
        for (int i = 3; i < n; i++) {
            kilnd_conn *c = who[i];
            int dead = (pfd[i].revents & POLLIN) && read_conn(d, c) < 0;
            if (!dead)
                dead = flush_conn(c) < 0 || (pfd[i].revents & (POLLERR | POLLNVAL));
            else
                flush_conn(c);   /* a client that half-closed still reads its answers */
            if (dead)
                close_conn(d, c);
        }
        if (pfd[1].revents & POLLIN)
            accept_all(d, ufd, 0, &nconns);
        if (tfd >= 0 && (pfd[2].revents & POLLIN))
            accept_all(d, tfd, 1, &ntcp);
    }
}

/* Answer what can still be answered, then close every connection. */
static void drain_and_close(kilnd *d)
{
    for (int tries = 0; tries < 50; tries++) {
        int pending = 0;
        for (kilnd_conn *c = d->conns; c; c = c->next) {
            flush_conn(c);
            pthread_mutex_lock(&c->mu);
            pending += c->out_len > 0;
            pthread_mutex_unlock(&c->mu);
        }
        if (!pending)
            break;
        usleep(20000);
    }
    while (d->conns)
        close_conn(d, d->conns);
}

/* ---- start-up ------------------------------------------------------------------ */

static int parse_args(int argc, char **argv, kilnd *d, char *token_file, size_t tlen, char *devices)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(usage, stdout);
            exit(0);
        } else if (strcmp(a, "--foreground") == 0) {
            d->foreground = 1;
            continue;
        }
        if (!v) {
            fprintf(stderr, "kilnd: %s needs a value\n%s", a, usage);
            return -1;
        }
        if (strcmp(a, "--socket") == 0)
            snprintf(d->socket_path, sizeof d->socket_path, "%s", v);
        else if (strcmp(a, "--state") == 0)
            snprintf(d->state_dir, sizeof d->state_dir, "%s", v);
        else if (strcmp(a, "--devices") == 0)
            snprintf(devices, 256, "%s", v);
        else if (strcmp(a, "--compile-jobs") == 0)
            d->compile_jobs = atoi(v);
        else if (strcmp(a, "--idle-exit") == 0)
            d->idle_exit_s = atoi(v);
        else if (strcmp(a, "--listen") == 0)
            snprintf(d->listen_addr, sizeof d->listen_addr, "%s", v);
        else if (strcmp(a, "--token-file") == 0)
            snprintf(token_file, tlen, "%s", v);
        else if (strcmp(a, "--max-tcp") == 0)
            d->max_tcp = atoi(v);
        else {
            fprintf(stderr, "kilnd: unknown argument '%s'\n%s", a, usage);
            return -1;
        }
        i++;
    }
    if (d->compile_jobs <= 0 || d->compile_jobs > 64) {
        fprintf(stderr, "kilnd: --compile-jobs must be from 1 to 64\n");
        return -1;
    }
    if (d->max_tcp <= 0 || d->max_tcp > MAX_TCP_CONNS) {
        fprintf(stderr, "kilnd: --max-tcp must be from 1 to %d\n", MAX_TCP_CONNS);
        return -1;
    }
    return 0;
}

static int read_token(const char *path, char *out, size_t len, kiln_error *err)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return kiln_fail(err, "cannot read token file %s: %s", path, strerror(errno));
    if (!fgets(out, (int)len, f))
        out[0] = '\0';
    fclose(f);
    out[strcspn(out, "\r\n")] = '\0';
    if (strlen(out) < 16)
        return kiln_fail(err, "token in %s must be at least 16 characters", path);
    return 0;
}

/* How many GPUs this process sees: the entries of $CUDA_VISIBLE_DEVICES
 * (Slurm sets it to the job's GPUs), else the /dev/nvidiaN device nodes. */
static int visible_gpus(void)
{
    const char *cvd = getenv("CUDA_VISIBLE_DEVICES");
    int n = 0;
    if (cvd) {
        if (strncmp(cvd, "-1", 2) == 0 || strncmp(cvd, "NoDevFile", 9) == 0)
            return 0;
        for (const char *p = cvd; *p; p++)   /* non-empty comma-separated entries */
            n += *p != ',' && (p == cvd || p[-1] == ',');
        return n;
    }
    for (char path[32];; n++) {
        snprintf(path, sizeof path, "/dev/nvidia%d", n);
        if (access(path, F_OK) != 0)
            return n;
    }
}

/* The default --devices: "cpu", then "cuda:N" for each visible GPU. */
static void default_devices(char *out, size_t len)
{
    int n = visible_gpus(), w = snprintf(out, len, "cpu");
    for (int i = 0; i < n && i < KILND_MAX_LANES - 1; i++)
        w += snprintf(out + w, len - (size_t)w, ",cuda:%d", i);
}

static int setup_lanes(kilnd *d, const char *devices, kiln_error *err)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", devices);
    for (char *save, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *end = NULL;
        if (strcmp(tok, "cpu") != 0 &&
            !(strncmp(tok, "cuda:", 5) == 0 && tok[5] >= '0' && tok[5] <= '9' &&
              strtol(tok + 5, &end, 10) < 64 && *end == '\0'))
            return kiln_fail(err, "unknown device '%s' (cpu or cuda:N)", tok);
        if (d->nlanes == KILND_MAX_LANES)
            return kiln_fail(err, "too many devices");
        kilnd_lane *l = &d->lanes[d->nlanes++];
        snprintf(l->name, sizeof l->name, "%s", tok);
        pthread_mutex_init(&l->mu, NULL);
        pthread_cond_init(&l->cv, NULL);
    }
    return d->nlanes ? 0 : kiln_fail(err, "--devices lists no device");
}

static int default_paths(kilnd *d, kiln_error *err)
{
    /* By default each build has a state directory and a socket of its own
     * (paths.h): a kiln of another build never meets this daemon. */
    if (!d->state_dir[0] &&
        kiln_daemon_state_dir(d->build, d->state_dir, sizeof d->state_dir, err) < 0)
        return -1;
    if (kiln_mkdirs(d->state_dir, err) < 0)
        return -1;
    if (!d->socket_path[0] &&
        kiln_default_socket_of(d->build, d->socket_path, sizeof d->socket_path, err) < 0)
        return -1;
    char parent[4096];
    snprintf(parent, sizeof parent, "%s", d->socket_path);
    char *slash = strrchr(parent, '/');
    if (slash && slash != parent) {
        *slash = '\0';
        return kiln_mkdirs(parent, err);
    }
    return 0;
}

/* One daemon per state directory: the spool is not shared. The lock file
 * says who holds it (pid, build, socket), so the next one's refusal can
 * name it and the way out. */
static int lock_state(kilnd *d, kiln_error *err)
{
    char path[4200], who[4400];
    snprintf(path, sizeof path, "%s/kilnd.lock", d->state_dir);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0)
        return fd;   /* note_lock says who we are once our pid is final */
    ssize_t n = fd >= 0 ? pread(fd, who, sizeof who - 1, 0) : -1;
    who[n > 0 ? n : 0] = '\0';
    if (fd >= 0)
        close(fd);
    return kiln_fail(err, "another kilnd (%s) is using the state directory %s; use that one "
                     "(--socket its socket), or give this one a state directory of its own "
                     "(--state DIR; for kiln, KILN_STATE=DIR)", n > 0 ? who : "an older kilnd",
                     d->state_dir);
}

static void note_lock(kilnd *d, int fd)
{
    char who[4400];
    int n = snprintf(who, sizeof who, "pid %d, build %s, socket %s", (int)getpid(), d->build,
                     d->socket_path);
    if (ftruncate(fd, 0) < 0 || pwrite(fd, who, (size_t)n, 0) != n)
        kilnd_log(d, "cannot say who holds %s/kilnd.lock: %s", d->state_dir, strerror(errno));
}

static void daemonize(void)
{
    if (fork() > 0)
        _exit(0);
    setsid();
    if (fork() > 0)
        _exit(0);
    int fd = open("/dev/null", O_RDWR);
    dup2(fd, 0);
    dup2(fd, 1);
    dup2(fd, 2);
    if (fd > 2)
        close(fd);
}

static void install_signals(kilnd *d)
{
    signal_pipe = d->wake[1];
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}

static int start(kilnd *d, const char *devices, const char *token_file, int *ufd, int *tfd,
                 int *lockfd, kiln_error *err)
{
    char logp[4200];
    char dflt[256];
    if (!devices[0])
        default_devices(dflt, sizeof dflt), devices = dflt;
    if (default_paths(d, err) < 0 || setup_lanes(d, devices, err) < 0 ||
        (*lockfd = lock_state(d, err)) < 0)
        return -1;
    if (d->listen_addr[0] && (!token_file[0] || read_token(token_file, d->token, sizeof d->token, err) < 0))
        return token_file[0] ? -1 : kiln_fail(err, "--listen needs --token-file");
    snprintf(logp, sizeof logp, "%s/kilnd.log", d->state_dir);
    d->log_fd = open(logp, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (kiln_spool_open(&d->spool, d->state_dir, err) < 0 ||
        (*ufd = listen_unix(d->socket_path, err)) < 0 ||
        (d->listen_addr[0] && (*tfd = listen_tcp(d->listen_addr, err)) < 0))
        return -1;
    if (pipe2(d->wake, O_CLOEXEC | O_NONBLOCK) < 0)
        return kiln_fail(err, "pipe: %s", strerror(errno));
    fcntl(*ufd, F_SETFL, O_NONBLOCK);
    if (*tfd >= 0)
        fcntl(*tfd, F_SETFL, O_NONBLOCK);
    return 0;
}

/* The default compile pool: one thread per online core, so a node with
 * many cores compiles many candidates while its lanes time others; at
 * least 2 (one compiles while one times) and at most 32 (past that the
 * lanes, not compiles, hold jobs back, and each thread holds a job). */
static int default_compile_jobs(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 2 ? 2 : n > 32 ? 32 : (int)n;
}

int main(int argc, char **argv)
{
    static kilnd d;
    char token_file[4096] = "", devices[256] = "";
    d.compile_jobs = default_compile_jobs();
    kiln_build_id("/proc/self/exe", d.build);
    d.max_tcp = MAX_TCP_CONNS;
    d.log_fd = -1;
    d.wake[0] = d.wake[1] = -1;
    pthread_mutex_init(&d.mu, NULL);
    pthread_cond_init(&d.cv, NULL);
    pthread_mutex_init(&d.log_mu, NULL);
    if (parse_args(argc, argv, &d, token_file, sizeof token_file, devices) < 0)
        return 2;
    kiln_error err = {0};
    int ufd = -1, tfd = -1, lockfd = -1;
    if (start(&d, devices, token_file, &ufd, &tfd, &lockfd, &err) < 0) {
        fprintf(stderr, "kilnd: %s\n", err.msg);
        return 1;
    }
    if (!d.foreground)
        daemonize();
    install_signals(&d);
    d.started = d.idle_since = time(NULL);
    note_lock(&d, lockfd);
    kilnd_log(&d, "kilnd %s started: pid %d, socket %s%s%s, state %s, %d compile jobs",
              KILN_PROTO_VERSION, (int)getpid(), d.socket_path, tfd >= 0 ? ", tcp " : "",
              tfd >= 0 ? d.listen_addr : "", d.state_dir, d.compile_jobs);
    if (kilnd_recover(&d, &err) < 0 || kilnd_jobs_start(&d, &err) < 0) {
        kilnd_log(&d, "cannot start: %s", err.msg);
        return 1;
    }
    serve(&d, ufd, tfd);
    kilnd_log(&d, "stopping (%s): running jobs finish, queued jobs stay spooled",
              got_signal ? "signal or shutdown request" : "idle");
    close(ufd);
    unlink(d.socket_path);
    if (tfd >= 0)
        close(tfd);
    kilnd_jobs_stop(&d);
    kilnd_log(&d, "stopped after %lu jobs", d.done);
    /* The state directory is free before the last connections close: a
     * client that asked for the shutdown starts the next kilnd as soon as
     * its connection ends, and that one takes the lock (under load the
     * old order lost that race: "another kilnd is using ..."). */
    close(lockfd);
    drain_and_close(&d);
    close(d.wake[0]);
    close(d.wake[1]);
    if (d.log_fd >= 0)
        close(d.log_fd);
    return 0;
}
