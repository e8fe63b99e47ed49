/* kiln_probe.c - a raw kilnd protocol client for the integration tests.
 *
 *   kiln_probe SOCKET [--timeout-ms N] [--finals N] [--close-after-accept]
 *              [--verify-file FILE --task T [--id ID] [--group G] [--dtype D]
 *               [--timing-ms N] [--call-timeout-ms N]]
 *   kiln_probe --print-request --verify-file FILE --task T [...]
 *
 * Connects to kilnd's Unix socket and writes stdin to it verbatim (raw
 * bytes: tests send malformed, oversized and partial lines), or, with
 * --verify-file, one verify request built from FILE (source JSON-escaped)
 * instead of stdin. Prints every line kilnd sends, one per line, until it
 * has seen N final events (verdict, error, pong, status, shutting-down,
 * authenticated; "pending", "accepted" and "progress" are not final), the
 * timeout passes (default 60000 ms) or kilnd closes the connection.
 * --close-after-accept exits right after the first "accepted" event, as a
 * client that goes away mid-job. --print-request prints the verify request
 * line and exits without connecting, so tests can send several in one stream.
 *
 * Exit status: 0 when N finals were seen (or, with --close-after-accept, an
 * "accepted"), 1 otherwise, 2 on bad usage or when it cannot connect.
 * The socket is never half-closed: kilnd drops a connection on EOF. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

typedef struct buf {
    char *p;
    size_t len, cap;
} buf;

static void buf_add(buf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = (b->len + n + 1) * 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            fprintf(stderr, "kiln_probe: out of memory\n");
            exit(2);
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void buf_str(buf *b, const char *s)
{
    buf_add(b, s, strlen(s));
}

/* Append s as a JSON string literal (quotes included). */
static void buf_json_string(buf *b, const char *s, size_t n)
{
    buf_add(b, "\"", 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        char esc[8];
        if (ch == '"' || ch == '\\') {
            esc[0] = '\\';
            esc[1] = (char)ch;
            buf_add(b, esc, 2);
        } else if (ch == '\n') {
            buf_add(b, "\\n", 2);
        } else if (ch == '\t') {
            buf_add(b, "\\t", 2);
        } else if (ch < 0x20 || ch == 0x7f) {
            snprintf(esc, sizeof esc, "\\u%04x", ch);
            buf_add(b, esc, 6);
        } else {
            buf_add(b, (const char *)&s[i], 1);
        }
    }
    buf_add(b, "\"", 1);
}

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static const char *arg_value(int argc, char **argv, int *i)
{
    if (*i + 1 >= argc) {
        fprintf(stderr, "kiln_probe: %s needs a value\n", argv[*i]);
        exit(2);
    }
    return argv[++*i];
}

/* The value of "event" in an unformatted JSON line (kilnd prints no spaces). */
static int event_is(const char *line, const char *ev)
{
    const char *k = strstr(line, "\"event\":\"");
    if (!k)
        return 0;
    k += 9;
    size_t n = strlen(ev);
    return strncmp(k, ev, n) == 0 && k[n] == '"';
}

static int is_final(const char *line)
{
    static const char *finals[] = {"verdict", "error", "pong", "status", "shutting-down",
                                   "authenticated"};
    for (size_t i = 0; i < sizeof finals / sizeof finals[0]; i++)
        if (event_is(line, finals[i]))
            return 1;
    return 0;
}

static int build_request(buf *out, const char *file, const char *task, const char *id,
                         const char *group, const char *dtype, long timing_ms, long call_ms)
{
    FILE *f = fopen(file, "rb");
    if (!f) {
        fprintf(stderr, "kiln_probe: cannot read %s: %s\n", file, strerror(errno));
        return -1;
    }
    buf src = {0};
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        buf_add(&src, chunk, n);
    fclose(f);
    buf_str(out, "{\"op\":\"verify\",\"id\":");
    buf_json_string(out, id, strlen(id));
    buf_str(out, ",\"task\":");
    buf_json_string(out, task, strlen(task));
    buf_str(out, ",\"language\":\"c\",\"backend\":\"cpu\"");
    if (group) {
        buf_str(out, ",\"group\":");
        buf_json_string(out, group, strlen(group));
    }
    if (dtype) {
        buf_str(out, ",\"dtype\":");
        buf_json_string(out, dtype, strlen(dtype));
    }
    char num[64];
    if (timing_ms > 0) {
        snprintf(num, sizeof num, ",\"timing_ms\":%ld", timing_ms);
        buf_str(out, num);
    }
    if (call_ms > 0) {
        snprintf(num, sizeof num, ",\"call_timeout_ms\":%ld", call_ms);
        buf_str(out, num);
    }
    buf_str(out, ",\"source\":");
    buf_json_string(out, src.p ? src.p : "", src.len);
    buf_str(out, "}\n");
    free(src.p);
    return 0;
}

int main(int argc, char **argv)
{
    const char *sock = NULL, *file = NULL, *task = NULL, *id = "probe", *group = NULL,
               *dtype = NULL;
    long timeout_ms = 60000, finals_wanted = 1, timing_ms = 0, call_ms = 0;
    int close_after_accept = 0, print_request = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--timeout-ms") == 0)
            timeout_ms = atol(arg_value(argc, argv, &i));
        else if (strcmp(a, "--finals") == 0)
            finals_wanted = atol(arg_value(argc, argv, &i));
        else if (strcmp(a, "--close-after-accept") == 0)
            close_after_accept = 1;
        else if (strcmp(a, "--print-request") == 0)
            print_request = 1;
        else if (strcmp(a, "--verify-file") == 0)
            file = arg_value(argc, argv, &i);
        else if (strcmp(a, "--task") == 0)
            task = arg_value(argc, argv, &i);
        else if (strcmp(a, "--id") == 0)
            id = arg_value(argc, argv, &i);
        else if (strcmp(a, "--group") == 0)
            group = arg_value(argc, argv, &i);
        else if (strcmp(a, "--dtype") == 0)
            dtype = arg_value(argc, argv, &i);
        else if (strcmp(a, "--timing-ms") == 0)
            timing_ms = atol(arg_value(argc, argv, &i));
        else if (strcmp(a, "--call-timeout-ms") == 0)
            call_ms = atol(arg_value(argc, argv, &i));
        else if (a[0] != '-' && !sock)
            sock = a;
        else {
            fprintf(stderr, "usage: kiln_probe SOCKET [--timeout-ms N] [--finals N] "
                            "[--close-after-accept] [--verify-file FILE --task T [--id ID] "
                            "[--group G] [--dtype D] [--timing-ms N] [--call-timeout-ms N]]\n"
                            "       kiln_probe --print-request --verify-file FILE --task T ...\n");
            return 2;
        }
    }
    if ((file && !task) || (print_request && !file) || (!print_request && !sock)) {
        fprintf(stderr, "kiln_probe: need SOCKET (or --print-request), and --task with --verify-file\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);

    buf pending = {0};   /* bytes still to write to the socket */
    int stdin_open = 1;
    if (file) {
        if (build_request(&pending, file, task, id, group, dtype, timing_ms, call_ms) < 0)
            return 2;
        stdin_open = 0;
    }
    if (print_request) {
        fwrite(pending.p, 1, pending.len, stdout);
        free(pending.p);
        return fflush(stdout) == 0 ? 0 : 2;
    }

    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(sock) >= sizeof sa.sun_path) {
        fprintf(stderr, "kiln_probe: socket path too long\n");
        return 2;
    }
    strcpy(sa.sun_path, sock);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
        fprintf(stderr, "kiln_probe: cannot connect to %s: %s\n", sock, strerror(errno));
        free(pending.p);
        return 2;
    }

    buf in = {0};
    size_t off = 0;   /* written part of pending */
    long finals = 0;
    long long deadline = now_ms() + timeout_ms;
    int eof = 0, accepted = 0;
    while (finals < finals_wanted && !eof && !accepted) {
        long long left = deadline - now_ms();
        if (left <= 0)
            break;
        struct pollfd p[2];
        int n = 0;
        p[n++] = (struct pollfd){.fd = fd, .events = POLLIN | (off < pending.len ? POLLOUT : 0)};
        int want_stdin = stdin_open && pending.len - off < (4u << 20);
        if (want_stdin)
            p[n++] = (struct pollfd){.fd = STDIN_FILENO, .events = POLLIN};
        if (poll(p, (nfds_t)n, (int)(left > 1000 ? 1000 : left)) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (want_stdin && p[1].revents) {
            char chunk[65536];
            ssize_t r = read(STDIN_FILENO, chunk, sizeof chunk);
            if (r > 0)
                buf_add(&pending, chunk, (size_t)r);
            else if (r == 0 || (errno != EINTR && errno != EAGAIN))
                stdin_open = 0;
        }
        if ((p[0].revents & POLLOUT) && off < pending.len) {
            ssize_t w = send(fd, pending.p + off, pending.len - off, MSG_NOSIGNAL | MSG_DONTWAIT);
            if (w > 0)
                off += (size_t)w;
            else if (w < 0 && errno != EAGAIN && errno != EINTR)
                off = pending.len;   /* the daemon is gone; reading tells us the rest */
            if (off == pending.len) {
                off = pending.len = 0;
            }
        }
        if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
            char chunk[65536];
            ssize_t r = read(fd, chunk, sizeof chunk);
            if (r <= 0) {
                if (r < 0 && (errno == EINTR || errno == EAGAIN))
                    continue;
                eof = 1;
            } else {
                buf_add(&in, chunk, (size_t)r);
            }
            char *nl;
            size_t start = 0;
            while ((nl = memchr(in.p + start, '\n', in.len - start)) != NULL) {
                *nl = '\0';
                const char *line = in.p + start;
                printf("%s\n", line);
                fflush(stdout);
                start = (size_t)(nl - in.p) + 1;
                if (close_after_accept && event_is(line, "accepted")) {
                    accepted = 1;
                    break;
                }
                if (is_final(line) && ++finals >= finals_wanted)
                    break;
            }
            memmove(in.p, in.p + start, in.len - start);
            in.len -= start;
        }
    }
    if (in.len > 0 && finals < finals_wanted && !accepted) {   /* a last line without its newline */
        fwrite(in.p, 1, in.len, stdout);
        printf("\n");
    }
    fflush(stdout);
    close(fd);
    free(in.p);
    free(pending.p);
    if (close_after_accept)
        return accepted ? 0 : 1;
    return finals >= finals_wanted ? 0 : 1;
}
