/* fake_llm.c - a scripted fake LLM HTTP server for the client tests.
 *
 *   fake_llm --port-file F --script S [--log L] [--bodies DIR]
 *
 * Listens on 127.0.0.1 (ephemeral port, written to F once listening) and
 * answers OpenAI chat completions (POST /v1/chat/completions or
 * /chat/completions) and Anthropic Messages (POST /v1/messages) with the
 * responses listed in the script, one per request, the last line repeating:
 *
 *   ok FILE | status CODE [RETRY_AFTER] | slow MS FILE | truncated FILE |
 *   malformed | nocontent | expect-key KEY | no-temperature FILE |
 *   completion-tokens FILE | length FILE
 *
 * length answers FILE as a model cut off at its token limit does:
 * finish_reason "length" (OpenAI), stop_reason "max_tokens" (Anthropic).
 * no-temperature answers FILE to a request without a temperature and 400
 * naming "temperature" to one with it, as OpenAI's reasoning models do;
 * completion-tokens answers 400 to a request that names its length limit
 * "max_tokens" ("Use 'max_completion_tokens' instead", as those models do)
 * and FILE to one that names it "max_completion_tokens". An Anthropic
 * request whose system prompt is a block marked cache_control gets usage
 * with cache_read_input_tokens (a quarter of that block's length), as a
 * warm cache answers.
 * FILE is relative to the script's directory.  Blank lines and lines
 * starting with '#' are skipped.  The parent takes the script line at accept
 * time and forks one child per connection, so slow answers never hold up the
 * others while the script order stays that of the connections.  The log
 * has a line per request: method, path, dialect, step, model, then t= the
 * request's temperature ("-": none), mt= the name of its length limit
 * ("-": none), c= 1 when its system prompt is marked for the cache, and
 * h= a 64-bit FNV-1a hash of its body
 * (so a test can tell requests apart) and at= the wall time the request was
 * read (seconds since the epoch, to the nanosecond: a test can order
 * requests against other events); --bodies DIR keeps each body as
 * DIR/<that hash>.json (so a test can read what was asked).  It exits on
 * SIGTERM, or by itself after 120 s without a request, so a crashed test
 * cannot leave it behind. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <cjson/cJSON.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define IDLE_EXIT_MS 120000
#define IO_TIMEOUT_MS 10000
#define MAX_HEAD 65536
#define MAX_BODY (32 << 20)

typedef enum {
    S_OK, S_STATUS, S_SLOW, S_TRUNCATED, S_MALFORMED, S_NOCONTENT, S_EXPECT_KEY, S_NO_TEMPERATURE,
    S_COMPLETION_TOKENS, S_LENGTH
} step_kind;

typedef struct step {
    step_kind kind;
    int code;          /* status */
    int retry_after;   /* status: seconds, -1 if none */
    int ms;            /* slow */
    char *text;        /* ok / slow / truncated / no-temperature: the answer (file contents) */
    char *key;         /* expect-key */
} step;

typedef struct script {
    step *steps;
    int n;
} script;

/* One parsed request, as the child sees it. */
typedef struct request {
    char method[16], path[256];
    char auth[512], xkey[512];
    char *body;
    size_t body_len;
    char temperature[32];      /* as sent, "%g"; "-" when none */
    char limit[32];            /* "max_tokens", "max_completion_tokens" or "-" */
    size_t cached_system;      /* bytes of a system block marked cache_control; 0 none */
    unsigned long long hash;   /* FNV-1a of the body */
} request;

static volatile sig_atomic_t g_stop;
static const char *g_bodies;   /* --bodies DIR, or NULL */

static void on_term(int sig)
{
    (void)sig;
    g_stop = 1;
}

/* Startup errors only (bad arguments or script): say why and stop. */
__attribute__((format(printf, 1, 2), noreturn)) static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "fake_llm: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(2);
}

/* ---- the script ---------------------------------------------------------- */

static char *read_file(const char *dir, const char *name)
{
    char path[4096];
    if (name[0] == '/')
        snprintf(path, sizeof path, "%s", name);
    else
        snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f)
        die("cannot open %s: %s", path, strerror(errno));
    size_t cap = 4096, len = 0, got;
    char *text = malloc(cap);
    while (text && (got = fread(text + len, 1, cap - len - 1, f)) > 0) {
        len += got;
        if (cap - len - 1 == 0 && !(text = realloc(text, cap *= 2)))
            break;
    }
    fclose(f);
    if (!text)
        die("out of memory reading %s", path);
    text[len] = '\0';
    return text;
}

/* One script line into st; returns 0, or -1 when it is not a valid line. */
static int parse_step(char *line, const char *dir, step *st)
{
    char *words[4] = {0};
    int nw = 0;
    for (char *w = strtok(line, " \t\r\n"); w && nw < 4; w = strtok(NULL, " \t\r\n"))
        words[nw++] = w;
    memset(st, 0, sizeof *st);
    st->retry_after = -1;
    const char *k = words[0];
    if (!strcmp(k, "ok") && nw == 2)
        st->kind = S_OK, st->text = read_file(dir, words[1]);
    else if (!strcmp(k, "status") && (nw == 2 || nw == 3)) {
        st->kind = S_STATUS;
        st->code = atoi(words[1]);
        st->retry_after = nw == 3 ? atoi(words[2]) : -1;
        if (st->code < 100 || st->code > 999)
            return -1;
    } else if (!strcmp(k, "slow") && nw == 3)
        st->kind = S_SLOW, st->ms = atoi(words[1]), st->text = read_file(dir, words[2]);
    else if (!strcmp(k, "truncated") && nw == 2)
        st->kind = S_TRUNCATED, st->text = read_file(dir, words[1]);
    else if (!strcmp(k, "malformed") && nw == 1)
        st->kind = S_MALFORMED;
    else if (!strcmp(k, "nocontent") && nw == 1)
        st->kind = S_NOCONTENT;
    else if (!strcmp(k, "expect-key") && nw == 2)
        st->kind = S_EXPECT_KEY, st->key = strdup(words[1]);
    else if (!strcmp(k, "no-temperature") && nw == 2)
        st->kind = S_NO_TEMPERATURE, st->text = read_file(dir, words[1]);
    else if (!strcmp(k, "completion-tokens") && nw == 2)
        st->kind = S_COMPLETION_TOKENS, st->text = read_file(dir, words[1]);
    else if (!strcmp(k, "length") && nw == 2)
        st->kind = S_LENGTH, st->text = read_file(dir, words[1]);
    else
        return -1;
    return 0;
}

static void load_script(const char *path, script *sc)
{
    FILE *f = fopen(path, "r");
    if (!f)
        die("cannot open script %s: %s", path, strerror(errno));
    char *copy = strdup(path);
    const char *dir = dirname(copy);
    char line[4096];
    int lineno = 0;
    sc->steps = NULL;
    sc->n = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        char *s = line + strspn(line, " \t\r\n");
        if (!*s || *s == '#')
            continue;
        if (!(sc->steps = realloc(sc->steps, (size_t)(sc->n + 1) * sizeof *sc->steps)))
            die("%s", "out of memory");
        if (parse_step(s, dir, &sc->steps[sc->n]) < 0)
            die("bad script line %d", lineno);
        sc->n++;
    }
    fclose(f);
    free(copy);
    /* The last line repeats forever, so it must be a response. */
    if (sc->n == 0 || sc->steps[sc->n - 1].kind == S_EXPECT_KEY)
        die("script %s must end with a response line", path);
}

static void free_script(script *sc)
{
    for (int i = 0; i < sc->n; i++) {
        free(sc->steps[i].text);
        free(sc->steps[i].key);
    }
    free(sc->steps);
}

/* ---- HTTP I/O (child side) ----------------------------------------------- */

/* Wait for fd to be readable; 0 when it is, -1 on timeout or error. */
static int wait_readable(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    return poll(&p, 1, IO_TIMEOUT_MS) == 1 ? 0 : -1;
}

static int send_all(int fd, const char *data, size_t len)
{
    while (len > 0) {
        ssize_t w = send(fd, data, len, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        data += w;
        len -= (size_t)w;
    }
    return 0;
}

/* Copy the value of header `name` from the header block into out. */
static void header_value(const char *head, const char *name, char *out, size_t cap)
{
    size_t nl = strlen(name);
    out[0] = '\0';
    for (const char *l = strstr(head, "\r\n"); l; l = strstr(l, "\r\n")) {
        l += 2;
        if (strncasecmp(l, name, nl) != 0 || l[nl] != ':')
            continue;
        const char *v = l + nl + 1;
        v += strspn(v, " \t");
        size_t vl = strcspn(v, "\r\n");
        snprintf(out, cap, "%.*s", (int)vl, v);
        return;
    }
}

/* Read one request: head up to the blank line, then Content-Length bytes. */
static int read_request(int fd, request *rq)
{
    char *buf = malloc(MAX_HEAD + 1);
    size_t len = 0;
    char *end = NULL;
    while (buf && !end && len < MAX_HEAD && wait_readable(fd) == 0) {
        ssize_t r = recv(fd, buf + len, MAX_HEAD - len, 0);
        if (r <= 0)
            break;
        len += (size_t)r;
        buf[len] = '\0';
        end = strstr(buf, "\r\n\r\n");
    }
    if (!end || sscanf(buf, "%15s %255s", rq->method, rq->path) != 2) {
        free(buf);
        return -1;
    }
    char clen[32];
    *end = '\0';
    header_value(buf, "content-length", clen, sizeof clen);
    header_value(buf, "authorization", rq->auth, sizeof rq->auth);
    header_value(buf, "x-api-key", rq->xkey, sizeof rq->xkey);
    long want = atol(clen);
    size_t have = len - (size_t)(end + 4 - buf);
    if (want < 0 || want > MAX_BODY || (size_t)want < have || !(rq->body = malloc((size_t)want + 1))) {
        free(buf);
        return -1;
    }
    memcpy(rq->body, end + 4, have);
    free(buf);
    while (have < (size_t)want && wait_readable(fd) == 0) {
        ssize_t r = recv(fd, rq->body + have, (size_t)want - have, 0);
        if (r <= 0)
            break;
        have += (size_t)r;
    }
    rq->body_len = have;
    rq->body[have] = '\0';
    rq->hash = 14695981039346656037ULL;
    for (size_t i = 0; i < have; i++)
        rq->hash = (rq->hash ^ (unsigned char)rq->body[i]) * 1099511628211ULL;
    return have == (size_t)want ? 0 : -1;
}

static const char *reason(int code)
{
    switch (code) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 529: return "Overloaded";
    default: return "Status";
    }
}

/* Send a whole response.  declared_len > body_len fakes a cut-off body. */
static void respond(int fd, int code, int retry_after, const char *body, size_t body_len,
                    size_t declared_len)
{
    char head[512], extra[64] = "";
    if (retry_after >= 0)
        snprintf(extra, sizeof extra, "retry-after: %d\r\n", retry_after);
    int hl = snprintf(head, sizeof head,
                      "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\n"
                      "Content-Length: %zu\r\n%sConnection: close\r\n\r\n",
                      code, reason(code), declared_len, extra);
    if (send_all(fd, head, (size_t)hl) == 0)
        send_all(fd, body, body_len);
}

/* ---- response bodies ----------------------------------------------------- */

static const char *error_type(int code)
{
    switch (code) {
    case 400: return "invalid_request_error";
    case 401: return "authentication_error";
    case 403: return "permission_error";
    case 404: return "not_found_error";
    case 429: return "rate_limit_error";
    case 529: return "overloaded_error";
    default: return code >= 500 ? "api_error" : "invalid_request_error";
    }
}

/* {"error":{"message","type"}} (openai) or {"type":"error","error":{...}}. */
static char *error_body(int anthropic, int code, const char *message)
{
    cJSON *j = cJSON_CreateObject();
    if (anthropic)
        cJSON_AddStringToObject(j, "type", "error");
    cJSON *e = cJSON_AddObjectToObject(j, "error");
    cJSON_AddStringToObject(e, "type", error_type(code));
    cJSON_AddStringToObject(e, "message", message);
    char *s = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    return s;
}

/* Anthropic answers come as two text blocks (split on a UTF-8 character
 * boundary) so the client's concatenation is exercised. */
static void add_anthropic_content(cJSON *j, const char *text)
{
    cJSON *content = cJSON_AddArrayToObject(j, "content");
    size_t len = strlen(text), cut = len / 2;
    while (cut > 0 && ((unsigned char)text[cut] & 0xC0) == 0x80)
        cut--;
    char *first = strndup(text, cut);
    const char *parts[2] = {first, text + cut};
    for (int i = 0; i < 2; i++) {
        cJSON *b = cJSON_CreateObject();
        cJSON_AddStringToObject(b, "type", "text");
        cJSON_AddStringToObject(b, "text", parts[i]);
        cJSON_AddItemToArray(content, b);
    }
    free(first);
}

static char *ok_body(int anthropic, const char *model, const char *text, size_t req_len,
                     size_t cached, int cut)
{
    cJSON *j = cJSON_CreateObject(), *usage;
    cJSON_AddStringToObject(j, "model", model);
    if (anthropic) {
        cJSON_AddStringToObject(j, "id", "msg_fake");
        cJSON_AddStringToObject(j, "type", "message");
        cJSON_AddStringToObject(j, "role", "assistant");
        add_anthropic_content(j, text);
        cJSON_AddStringToObject(j, "stop_reason", cut ? "max_tokens" : "end_turn");
        usage = cJSON_AddObjectToObject(j, "usage");
        cJSON_AddNumberToObject(usage, "input_tokens", (double)((req_len - cached) / 4));
        cJSON_AddNumberToObject(usage, "output_tokens", (double)(strlen(text) / 4));
        if (cached)
            cJSON_AddNumberToObject(usage, "cache_read_input_tokens", (double)(cached / 4));
    } else {
        cJSON_AddStringToObject(j, "id", "chatcmpl-fake");
        cJSON_AddStringToObject(j, "object", "chat.completion");
        cJSON *c0 = cJSON_CreateObject();
        cJSON_AddItemToArray(cJSON_AddArrayToObject(j, "choices"), c0);
        cJSON_AddNumberToObject(c0, "index", 0);
        cJSON *msg = cJSON_AddObjectToObject(c0, "message");
        cJSON_AddStringToObject(msg, "role", "assistant");
        cJSON_AddStringToObject(msg, "content", text);
        cJSON_AddStringToObject(c0, "finish_reason", cut ? "length" : "stop");
        usage = cJSON_AddObjectToObject(j, "usage");
        cJSON_AddNumberToObject(usage, "prompt_tokens", (double)(req_len / 4));
        cJSON_AddNumberToObject(usage, "completion_tokens", (double)(strlen(text) / 4));
    }
    char *s = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    return s;
}

/* Valid JSON in the dialect's outer shape, but with nothing to read. */
static char *nocontent_body(int anthropic)
{
    return strdup(anthropic ? "{\"id\":\"msg_fake\",\"type\":\"message\",\"content\":[],"
                              "\"stop_reason\":\"end_turn\"}"
                            : "{\"id\":\"chatcmpl-fake\",\"object\":\"chat.completion\","
                              "\"choices\":[]}");
}

/* ---- serving one connection (child) -------------------------------------- */

static void log_line(const char *log, const request *rq, const char *dialect, const char *kind,
                     const char *model)
{
    if (!log)
        return;
    char line[1024];
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    int n = snprintf(line, sizeof line, "%s %s %s %s %s t=%s mt=%s c=%d h=%016llx at=%lld.%09ld\n",
                     rq->method[0] ? rq->method : "-", rq->path[0] ? rq->path : "-", dialect, kind,
                     model[0] ? model : "-", rq->temperature[0] ? rq->temperature : "-",
                     rq->limit[0] ? rq->limit : "-", rq->cached_system > 0, rq->hash,
                     (long long)now.tv_sec, now.tv_nsec);
    if (n >= (int)sizeof line)
        n = sizeof line - 1;
    /* One O_APPEND write per line keeps concurrent children's lines whole. */
    int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd >= 0 && write(fd, line, (size_t)n) < 0) {
        /* nothing to do: the log is a test aid */
    }
    if (fd >= 0)
        close(fd);
}

/* The body as DIR/<hash>.json for --bodies: a test aid, so failures are
 * not reported (the test finds the file missing). */
static void save_body(const request *rq)
{
    if (!g_bodies)
        return;
    char path[4096];
    snprintf(path, sizeof path, "%s/%016llx.json", g_bodies, rq->hash);
    FILE *f = fopen(path, "wb");
    if (!f)
        return;
    fwrite(rq->body, 1, rq->body_len, f);
    fclose(f);
}

/* NULL when the body is a valid request (model and temperature copied
 * out), else why not. */
static const char *check_body(request *rq, int anthropic, char *model, size_t cap)
{
    cJSON *j = cJSON_ParseWithLength(rq->body, rq->body_len);
    const char *why = NULL;
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(j, "model");
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(j, "temperature");
    if (cJSON_IsNumber(t))
        snprintf(rq->temperature, sizeof rq->temperature, "%g", t->valuedouble);
    else
        snprintf(rq->temperature, sizeof rq->temperature, "-");
    const cJSON *mct = cJSON_GetObjectItemCaseSensitive(j, "max_completion_tokens");
    snprintf(rq->limit, sizeof rq->limit, "%s", cJSON_IsNumber(mct) ? "max_completion_tokens"
                                                : cJSON_GetObjectItemCaseSensitive(j, "max_tokens")
                                                    ? "max_tokens" : "-");
    const cJSON *sys = cJSON_GetObjectItemCaseSensitive(j, "system"), *blk;
    const cJSON *blocks = cJSON_IsArray(sys) ? sys : NULL;
    cJSON_ArrayForEach(blk, blocks) {
        const char *text = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(blk, "text"));
        if (text && cJSON_GetObjectItemCaseSensitive(blk, "cache_control"))
            rq->cached_system += strlen(text);
    }
    if (!j)
        why = "request body is not valid JSON";
    else if (!cJSON_IsString(m))
        why = "model: field required";
    else if (!cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(j, "messages")))
        why = "messages: field required";
    else if (anthropic && !cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(j, "max_tokens")))
        why = "max_tokens: field required";
    if (cJSON_IsString(m))
        snprintf(model, cap, "%s", m->valuestring);
    cJSON_Delete(j);
    return why;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

static void respond_error(int fd, int anthropic, int code, int retry_after, const char *msg)
{
    char *body = error_body(anthropic, code, msg);
    if (body)
        respond(fd, code, retry_after, body, strlen(body), strlen(body));
    free(body);
}

/* The name of a step in the log. */
static void step_name(const step *st, char *kind, size_t cap)
{
    static const char *names[] = {"ok", "status", "slow", "truncated", "malformed", "nocontent",
                                  "expect-key", "no-temperature", "completion-tokens", "length"};
    if (st->kind == S_STATUS)
        snprintf(kind, cap, "status:%d", st->code);
    else
        snprintf(kind, cap, "%s", names[st->kind]);
}

/* Serve the scripted step. */
static void serve_step(int fd, const step *st, int anthropic, const char *model,
                       const request *rq)
{
    static const char malformed[] = "{\"choices\": [ {\"message\": ";
    char *body = NULL;
    switch (st->kind) {
    case S_STATUS: {
        char msg[64];
        snprintf(msg, sizeof msg, "fake_llm: scripted HTTP %d", st->code);
        respond_error(fd, anthropic, st->code, st->retry_after, msg);
        return;
    }
    case S_MALFORMED:
        respond(fd, 200, -1, malformed, strlen(malformed), strlen(malformed));
        return;
    case S_NOCONTENT:
        body = nocontent_body(anthropic);
        break;
    case S_SLOW:
        sleep_ms(st->ms);
        /* fall through */
    default:
        body = ok_body(anthropic, model, st->text, rq->body_len, rq->cached_system,
                       st->kind == S_LENGTH);
        break;
    }
    size_t len = body ? strlen(body) : 0;
    /* truncated: the full length is announced, half the body is sent. */
    if (body)
        respond(fd, 200, -1, body, st->kind == S_TRUNCATED ? len / 2 : len, len);
    free(body);
}

static int key_ok(const request *rq, const char *key)
{
    char bearer[600];
    snprintf(bearer, sizeof bearer, "Bearer %s", key);
    return !strcmp(rq->auth, bearer) || !strcmp(rq->xkey, key);
}

/* Serve one request.  The log line is written before the response goes
 * out, so a test that has its answer can read the log at once. */
static void serve(int fd, const step *st, const char *key, const char *log)
{
    request rq = {0};
    char model[256] = "", kind[32];
    if (read_request(fd, &rq) < 0) {
        log_line(log, &rq, "-", "unreadable", model);
        free(rq.body);
        return;
    }
    save_body(&rq);
    int openai = !strcmp(rq.path, "/v1/chat/completions") || !strcmp(rq.path, "/chat/completions");
    int anthropic = !strcmp(rq.path, "/v1/messages");
    const char *dialect = anthropic ? "anthropic" : openai ? "openai" : "-";
    /* Like the real APIs: endpoint, then key, then body. */
    const char *why = check_body(&rq, anthropic, model, sizeof model);
    if (strcmp(rq.method, "POST") != 0 || (!openai && !anthropic)) {
        log_line(log, &rq, dialect, "404", model);
        respond_error(fd, 0, 404, -1, "fake_llm: no such endpoint");
    } else if (key && !key_ok(&rq, key)) {
        log_line(log, &rq, dialect, "401", model);
        respond_error(fd, anthropic, 401, -1, "fake_llm: invalid x-api-key / API key");
    } else if (why) {
        log_line(log, &rq, dialect, "400", model);
        respond_error(fd, anthropic, 400, -1, why);
    } else if (st->kind == S_NO_TEMPERATURE && strcmp(rq.temperature, "-") != 0) {
        log_line(log, &rq, dialect, "no-temperature:400", model);
        respond_error(fd, anthropic, 400, -1, "Unsupported value: 'temperature' does not support "
                      "this value with this model. Only the default (1) value is supported.");
    } else if (st->kind == S_COMPLETION_TOKENS && strcmp(rq.limit, "max_completion_tokens") != 0) {
        log_line(log, &rq, dialect, "completion-tokens:400", model);
        respond_error(fd, anthropic, 400, -1, "Unsupported parameter: 'max_tokens' is not "
                      "supported with this model. Use 'max_completion_tokens' instead.");
    } else {
        step_name(st, kind, sizeof kind);
        log_line(log, &rq, dialect, kind, model);
        serve_step(fd, st, anthropic, model, &rq);
    }
    free(rq.body);
}

/* ---- the accept loop (parent) -------------------------------------------- */

/* The step for the next connection: expect-key lines take effect on the way;
 * the last line is reused forever. */
static const step *next_step(const script *sc, int *pos, const char **key)
{
    while (sc->steps[*pos].kind == S_EXPECT_KEY) {
        *key = sc->steps[*pos].key;
        (*pos)++;
    }
    const step *st = &sc->steps[*pos];
    if (*pos < sc->n - 1)
        (*pos)++;
    return st;
}

static int listen_loopback(const char *port_file)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t al = sizeof a;
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) < 0 || listen(fd, 64) < 0 ||
        getsockname(fd, (struct sockaddr *)&a, &al) < 0)
        die("cannot listen on 127.0.0.1: %s", strerror(errno));
    /* Write then rename, so a reader never sees a half-written number. */
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", port_file);
    FILE *f = fopen(tmp, "w");
    if (!f || fprintf(f, "%d\n", ntohs(a.sin_port)) < 0 || fclose(f) != 0 ||
        rename(tmp, port_file) < 0)
        die("cannot write port file %s", port_file);
    return fd;
}

static void install_signals(void)
{
    struct sigaction sa = {0};
    sa.sa_handler = on_term;   /* no SA_RESTART: poll() must return */
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGCHLD, SIG_IGN);   /* children are reaped automatically */
    signal(SIGPIPE, SIG_IGN);   /* clients that time out close early */
}

static void serve_child(int lfd, int c, const step *st, const char *key, const char *log)
{
    close(lfd);
    /* A slow answer must not outlive the server (and the test). */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    signal(SIGTERM, SIG_DFL);
    serve(c, st, key, log);
    shutdown(c, SHUT_WR);
    close(c);
    _exit(0);
}

int main(int argc, char **argv)
{
    const char *port_file = NULL, *script_path = NULL, *log = NULL;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--port-file"))
            port_file = argv[i + 1];
        else if (!strcmp(argv[i], "--script"))
            script_path = argv[i + 1];
        else if (!strcmp(argv[i], "--log"))
            log = argv[i + 1];
        else if (!strcmp(argv[i], "--bodies"))
            g_bodies = argv[i + 1];
        else
            die("unknown option %s", argv[i]);
    }
    if (!port_file || !script_path || argc % 2 == 0)
        die("%s", "usage: fake_llm --port-file F --script S [--log L] [--bodies DIR]");
    script sc;
    load_script(script_path, &sc);
    install_signals();
    int lfd = listen_loopback(port_file);
    int pos = 0;
    const char *key = NULL;
    while (!g_stop) {
        struct pollfd p = {.fd = lfd, .events = POLLIN};
        int r = poll(&p, 1, IDLE_EXIT_MS);
        if (r == 0)
            break;   /* idle: the test that started us is gone */
        if (r < 0)
            continue;   /* EINTR: g_stop decides */
        int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0)
            continue;
        /* The script line is taken here, in accept order. */
        const step *st = next_step(&sc, &pos, &key);
        if (fork() == 0)
            serve_child(lfd, c, st, key, log);
        close(c);
    }
    close(lfd);
    free_script(&sc);
    return 0;
}
