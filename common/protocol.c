/* protocol.c - parsing and formatting kilnd messages (see protocol.h). */
#include "protocol.h"

#define KILN_CONNECT_TIMEOUT_MS 5000   /* a TCP verifier that does not answer */

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

size_t kiln_utf8_invalid_at(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        unsigned c = p[i];
        size_t len = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3
                   : (c & 0xF8) == 0xF0 ? 4 : 0;
        if (!len || i + len > n)
            return i;
        unsigned cp = len == 1 ? c : c & (0x7F >> len);
        for (size_t k = 1; k < len; k++) {
            if ((p[i + k] & 0xC0) != 0x80)
                return i;
            cp = cp << 6 | (p[i + k] & 0x3F);
        }
        /* overlong forms, surrogates and code points past U+10FFFF */
        if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
            (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
            return i;
        i += len;
    }
    return SIZE_MAX;
}

static int get_str(const cJSON *msg, const char *key, int required, char *buf, size_t len,
                   kiln_error *err)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(msg, key);
    if (!it) {
        if (required)
            return kiln_fail(err, "field '%s' is missing", key);
        buf[0] = '\0';
        return 0;
    }
    if (!cJSON_IsString(it))
        return kiln_fail(err, "field '%s' must be a string", key);
    if (strlen(it->valuestring) >= len)
        return kiln_fail(err, "field '%s' is too long (limit %zu)", key, len - 1);
    strcpy(buf, it->valuestring);
    return 0;
}

static int get_int(const cJSON *msg, const char *key, int dflt, int lo, int hi, int *out,
                   kiln_error *err)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(msg, key);
    if (!it) {
        *out = dflt;
        return 0;
    }
    if (!cJSON_IsNumber(it) || it->valuedouble < lo || it->valuedouble > hi)
        return kiln_fail(err, "field '%s' must be a number from %d to %d", key, lo, hi);
    *out = (int)it->valuedouble;
    return 0;
}

int kiln_parse_verify(const cJSON *msg, kiln_verify_request *rq, kiln_error *err)
{
    memset(rq, 0, sizeof *rq);
    char language[16];
    if (get_str(msg, "id", 0, rq->id, sizeof rq->id, err) < 0 ||
        get_str(msg, "task", 1, rq->task, sizeof rq->task, err) < 0 ||
        get_str(msg, "language", 0, language, sizeof language, err) < 0 ||
        get_str(msg, "backend", 0, rq->backend, sizeof rq->backend, err) < 0 ||
        get_str(msg, "dtype", 0, rq->dtype, sizeof rq->dtype, err) < 0 ||
        get_str(msg, "group", 0, rq->group, sizeof rq->group, err) < 0 ||
        get_str(msg, "mode", 0, rq->mode, sizeof rq->mode, err) < 0 ||
        get_str(msg, "key", 0, rq->key, sizeof rq->key, err) < 0 ||
        get_int(msg, "timing_ms", 2000, 1, 600000, &rq->timing_ms, err) < 0 ||
        get_int(msg, "call_timeout_ms", 10000, 100, 600000, &rq->call_timeout_ms, err) < 0)
        return -1;
    if (!rq->backend[0])
        strcpy(rq->backend, "cpu");
    int cuda = strcmp(rq->backend, "cuda") == 0;
    snprintf(rq->language, sizeof rq->language, "%.7s", language[0] ? language : cuda ? "cuda" : "c");
    if (!rq->mode[0])
        strcpy(rq->mode, "full");
    if (!(strcmp(rq->backend, "cpu") == 0 && strcmp(rq->language, "c") == 0) &&
        !(cuda && strcmp(rq->language, "cuda") == 0))
        return kiln_fail(err, "backend '%s' with language '%s' is not available (cpu with c, "
                         "or cuda with cuda)", rq->backend, rq->language);
    if (strcmp(rq->mode, "full") != 0)
        return kiln_fail(err, "unknown mode '%s' (full)", rq->mode);
    const cJSON *src = cJSON_GetObjectItemCaseSensitive(msg, "source");
    if (!cJSON_IsString(src))
        return kiln_fail(err, "field 'source' is missing or not a string");
    rq->source = strdup(src->valuestring);
    if (!rq->source)
        return kiln_fail(err, "out of memory");
    const cJSON *base = cJSON_GetObjectItemCaseSensitive(msg, "baseline");
    if (base && !cJSON_IsString(base) && !cJSON_IsNull(base))
        return kiln_fail(err, "field 'baseline' must be a string (a source to time against)");
    if (cJSON_IsString(base) && !(rq->baseline = strdup(base->valuestring)))
        return kiln_fail(err, "out of memory");
    return 0;
}

void kiln_verify_request_free(kiln_verify_request *rq)
{
    free(rq->source);
    free(rq->baseline);
    rq->source = rq->baseline = NULL;
}

cJSON *kiln_verify_request_json(const kiln_verify_request *rq)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "op", "verify");
    cJSON_AddStringToObject(o, "id", rq->id);
    cJSON_AddStringToObject(o, "task", rq->task);
    cJSON_AddStringToObject(o, "language", rq->language);
    cJSON_AddStringToObject(o, "backend", rq->backend);
    cJSON_AddStringToObject(o, "dtype", rq->dtype);
    cJSON_AddStringToObject(o, "group", rq->group);
    cJSON_AddStringToObject(o, "mode", rq->mode);
    if (rq->key[0])
        cJSON_AddStringToObject(o, "key", rq->key);
    cJSON_AddNumberToObject(o, "timing_ms", rq->timing_ms);
    cJSON_AddNumberToObject(o, "call_timeout_ms", rq->call_timeout_ms);
    cJSON_AddStringToObject(o, "source", rq->source ? rq->source : "");
    if (rq->baseline)
        cJSON_AddStringToObject(o, "baseline", rq->baseline);
    return o;
}

char *kiln_event_error(const char *id, const char *job, const char *code, const char *message)
{
    cJSON *o = cJSON_CreateObject();
    if (id)
        cJSON_AddStringToObject(o, "id", id);
    else
        cJSON_AddNullToObject(o, "id");
    if (job)
        cJSON_AddStringToObject(o, "job", job);
    cJSON_AddStringToObject(o, "event", "error");
    cJSON *e = cJSON_AddObjectToObject(o, "error");
    cJSON_AddStringToObject(e, "code", code);
    cJSON_AddStringToObject(e, "message", message);
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

/* connect(), but a host that does not answer at all (powered off, cut off
 * by the network) fails after timeout_ms instead of the kernel's two
 * minutes of SYN retries: a search over many verifiers must move its jobs
 * on, not hang on one. Returns 0, or -1 with errno. */
static int connect_within(int fd, const struct sockaddr *sa, socklen_t len, int timeout_ms)
{
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
        return -1;
    int rc = connect(fd, sa, len);
    if (rc < 0 && errno == EINPROGRESS) {
        struct pollfd p = {.fd = fd, .events = POLLOUT};
        int n;
        do
            n = poll(&p, 1, timeout_ms);
        while (n < 0 && errno == EINTR);
        int soerr = 0;
        socklen_t sl = sizeof soerr;
        if (n == 0)
            soerr = ETIMEDOUT;
        else if (n < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0)
            soerr = soerr ? soerr : errno;
        rc = soerr ? -1 : 0;
        errno = soerr;
    }
    int e = errno;
    if (fcntl(fd, F_SETFL, flags) < 0 && rc == 0)
        return -1;
    errno = e;
    return rc;
}

static int connect_tcp(const char *hostport, kiln_error *err)
{
    char host[256];
    snprintf(host, sizeof host, "%s", hostport);
    char *colon = strrchr(host, ':');
    if (!colon)
        return kiln_fail(err, "tcp address '%s' needs host:port", hostport);
    *colon = '\0';
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
    int rc = getaddrinfo(host, colon + 1, &hints, &res);
    if (rc != 0)
        return kiln_fail(err, "cannot resolve %s: %s", hostport, gai_strerror(rc));
    int fd = -1;
    for (struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd >= 0 && connect_within(fd, ai->ai_addr, ai->ai_addrlen, KILN_CONNECT_TIMEOUT_MS) < 0) {
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(res);
    if (fd < 0)
        return kiln_fail(err, "cannot connect to %s: %s", hostport, strerror(errno));
    return fd;
}

int kiln_connect(const char *address, kiln_error *err)
{
    if (strncmp(address, "tcp://", 6) == 0)
        return connect_tcp(address + 6, err);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(address) >= sizeof sa.sun_path)
        return kiln_fail(err, "socket path too long: %s", address);
    strcpy(sa.sun_path, address);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return kiln_fail(err, "socket: %s", strerror(errno));
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
        int e = errno;
        close(fd);
        errno = e;
        return kiln_fail(err, "cannot connect to kilnd at %s: %s", address, strerror(e));
    }
    return fd;
}
