/* llm.c - OpenAI-compatible chat completions and Anthropic Messages over
 * libcurl (see llm.h).
 *
 * kiln_llm_complete_each() runs n "drafts" (each its own request) on one curl
 * multi handle.  Each draft owns an easy handle and a request body; the
 * handle is re-added to the multi handle for every attempt; a failed attempt
 * that may succeed later (connection error, timeout, 408/409/429/5xx) is
 * parked with a time for its next attempt, so the backoff of one draft never
 * delays the others.  The loop polls until every
 * draft is done.  Errors are written into each draft's result, never printed. */
#include "llm.h"

#include <cjson/cJSON.h>
#include <curl/curl.h>

#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define BACKOFF_CAP_S 8.0
#define RETRY_AFTER_MAX_S 120.0
#define MAX_BODY_BYTES (64u << 20)   /* no sane completion is bigger */
#define SNIPPET_CHARS 200            /* how much of an error body we quote */

/* ---- configuration ----------------------------------------------------- */

/* curl_global_init is not thread-safe, so it runs once, from config_init
 * (which callers invoke before starting threads).  This flag is the only
 * global state in the module. */
static int g_curl_ready;

static int global_init(kiln_error *err)
{
    if (g_curl_ready)
        return 0;
    CURLcode c = curl_global_init(CURL_GLOBAL_DEFAULT);
    if (c != CURLE_OK)
        return kiln_fail(err, "llm: curl_global_init failed: %s", curl_easy_strerror(c));
    g_curl_ready = 1;
    return 0;
}

static int copy_field(char *dst, size_t cap, const char *src, const char *what, kiln_error *err)
{
    size_t len = strlen(src);
    if (len >= cap)
        return kiln_fail(err, "llm config: %s is too long (%zu bytes, at most %zu)", what, len,
                         cap - 1);
    memcpy(dst, src, len + 1);
    return 0;
}

int kiln_llm_config_init(kiln_llm_config *cfg, kiln_llm_dialect d, const char *model,
                         const char *base_url, kiln_error *err)
{
    if (!cfg)
        return kiln_fail(err, "llm config: no config to fill");
    memset(cfg, 0, sizeof *cfg);
    if (d != KILN_LLM_OPENAI && d != KILN_LLM_ANTHROPIC)
        return kiln_fail(err, "llm config: unknown dialect %d", (int)d);
    if (!model || !*model)
        return kiln_fail(err, "llm config: no model name given");
    int openai = d == KILN_LLM_OPENAI;
    const char *url_env = openai ? "OPENAI_BASE_URL" : "ANTHROPIC_BASE_URL";
    const char *key_env = openai ? "OPENAI_API_KEY" : "ANTHROPIC_API_KEY";
    const char *url = base_url && *base_url ? base_url : getenv(url_env);
    if (!url || !*url)
        url = openai ? "https://api.openai.com/v1" : "https://api.anthropic.com";
    const char *key = getenv(key_env);

    cfg->dialect = d;
    if (copy_field(cfg->model, sizeof cfg->model, model, "model name", err) < 0 ||
        copy_field(cfg->base_url, sizeof cfg->base_url, url, "base URL", err) < 0 ||
        copy_field(cfg->api_key, sizeof cfg->api_key, key ? key : "", key_env, err) < 0)
        return -1;
    /* "{base}/v1/messages" with a trailing slash in base would give "//". */
    for (size_t n = strlen(cfg->base_url); n > 0 && cfg->base_url[n - 1] == '/'; n--)
        cfg->base_url[n - 1] = '\0';

    /* Local OpenAI-compatible servers usually need no key; the real APIs do. */
    if (!cfg->api_key[0] && (!openai || strstr(cfg->base_url, "api.openai.com")))
        return kiln_fail(err, "llm config: %s is not set (the %s API at %s needs a key)",
                         key_env, openai ? "OpenAI" : "Anthropic", cfg->base_url);

    cfg->max_tokens = 4096;
    cfg->temperature = -1;
    cfg->cache_system = 1;
    cfg->timeout_ms = 300000;
    cfg->connect_timeout_ms = 10000;
    cfg->max_retries = 4;
    cfg->backoff_base_s = 0.5;
    return global_init(err);
}

void kiln_llm_result_free(kiln_llm_result *r)
{
    if (!r)
        return;
    free(r->text);
    r->text = NULL;
}

/* ---- small helpers ------------------------------------------------------- */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* xorshift64*: backoff jitter without touching rand()'s global state. */
static double rng_unit(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return (double)((*s * 0x2545F4914F6CDD1DULL) >> 11) / 9007199254740992.0;
}

/* Quote at most SNIPPET_CHARS of a body on one line: whitespace runs become
 * one space and control bytes '?', so an HTML error page stays readable.
 * cap must be at least 8. */
static void snippet(const char *s, size_t len, char *out, size_t cap)
{
    size_t o = 0, limit = cap - 4 < SNIPPET_CHARS ? cap - 4 : SNIPPET_CHARS;
    int space = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (isspace(c)) {
            space = o > 0;
            continue;
        }
        if (o + (size_t)space >= limit) {
            memcpy(out + o, "...", 3);   /* limit + 4 <= cap leaves room */
            o += 3;
            break;
        }
        if (space)
            out[o++] = ' ';
        space = 0;
        out[o++] = c < 0x20 || c == 0x7f ? '?' : (char)c;
    }
    out[o] = '\0';
}

/* ---- one draft: an easy handle, its response and its schedule ------------ */

enum { D_WAITING, D_RUNNING, D_DONE };

typedef struct draft {
    CURL *easy;
    kiln_llm_result *res;
    const kiln_llm_request *req;
    char *req_body;          /* what this draft sends (cJSON's allocator) */
    char *body;              /* response body of the current attempt */
    size_t len, cap;
    int too_big;             /* body exceeded MAX_BODY_BYTES or memory ran out */
    double retry_after_ms_s; /* "retry-after-ms" of this attempt, in s; 0: none */
    double retry_after_s;    /* "retry-after" (seconds form) of this attempt; 0: none */
    double next_at;          /* monotonic time of the next attempt */
    int state;
    int swapped;             /* sent again once with the other length limit's name */
    char curl_err[CURL_ERROR_SIZE];
} draft;

static size_t on_body(char *data, size_t size, size_t nmemb, void *user)
{
    draft *d = user;
    size_t n = size * nmemb;
    if (d->len + n + 1 > MAX_BODY_BYTES) {
        d->too_big = 1;
        return 0;   /* makes curl abort with CURLE_WRITE_ERROR */
    }
    if (d->len + n + 1 > d->cap) {
        size_t cap = d->cap ? d->cap : 16384;
        while (cap < d->len + n + 1)
            cap *= 2;
        char *p = realloc(d->body, cap);
        if (!p) {
            d->too_big = 1;
            return 0;
        }
        d->body = p;
        d->cap = cap;
    }
    memcpy(d->body + d->len, data, n);
    d->len += n;
    d->body[d->len] = '\0';
    return n;
}

/* Parse "name: value" into seconds when name matches (case-insensitively). */
static int header_seconds(const char *line, size_t len, const char *name, double scale,
                          double *out)
{
    size_t nl = strlen(name);
    if (len <= nl || strncasecmp(line, name, nl) != 0 || line[nl] != ':')
        return 0;
    char val[64];
    size_t vl = len - nl - 1 < sizeof val - 1 ? len - nl - 1 : sizeof val - 1;
    memcpy(val, line + nl + 1, vl);
    val[vl] = '\0';
    char *end;
    double v = strtod(val, &end);
    while (*end && isspace((unsigned char)*end))
        end++;
    /* An HTTP-date form of retry-after does not parse and is ignored. */
    if (end != val && *end == '\0' && isfinite(v))
        *out = v * scale;
    return 1;
}

static size_t on_header(char *data, size_t size, size_t nmemb, void *user)
{
    draft *d = user;
    size_t n = size * nmemb;
    /* A new status line (e.g. after "100 Continue") starts a new header set. */
    if (n >= 5 && memcmp(data, "HTTP/", 5) == 0)
        d->retry_after_ms_s = d->retry_after_s = 0;
    else if (!header_seconds(data, n, "retry-after-ms", 1e-3, &d->retry_after_ms_s))
        header_seconds(data, n, "retry-after", 1.0, &d->retry_after_s);
    return n;
}

/* The error message an API put in its error body ({"error":{"message"}} in
 * both dialects), else the body itself, trimmed to one line. */
static void body_error_message(const char *body, size_t len, char *out, size_t cap)
{
    if (!body || len == 0) {
        snprintf(out, cap, "(empty body)");
        return;
    }
    cJSON *j = cJSON_ParseWithLength(body, len);
    cJSON *e = cJSON_GetObjectItemCaseSensitive(j, "error");
    cJSON *m = cJSON_IsObject(e) ? cJSON_GetObjectItemCaseSensitive(e, "message") : e;
    if (!cJSON_IsString(m))
        m = cJSON_GetObjectItemCaseSensitive(j, "message");
    if (cJSON_IsString(m) && m->valuestring[0])
        snippet(m->valuestring, strlen(m->valuestring), out, cap);
    else
        snippet(body, len, out, cap);
    cJSON_Delete(j);
}

/* ---- request ------------------------------------------------------------- */

static cJSON *add_message(cJSON *messages, const char *role, const char *content)
{
    cJSON *m = cJSON_CreateObject();
    if (!m || !cJSON_AddItemToArray(messages, m)) {
        cJSON_Delete(m);
        return NULL;
    }
    if (!cJSON_AddStringToObject(m, "role", role) ||
        !cJSON_AddStringToObject(m, "content", content))
        return NULL;
    return m;
}

/* OpenAI's reasoning models take "max_completion_tokens" and refuse
 * "max_tokens" (HTTP 400); every other model here takes "max_tokens". */
static int wants_completion_tokens(const char *model)
{
    static const char *const prefix[] = {"o1", "o3", "o4", "gpt-5"};
    for (size_t i = 0; i < sizeof prefix / sizeof prefix[0]; i++)
        if (strncmp(model, prefix[i], strlen(prefix[i])) == 0)
            return 1;
    return 0;
}

/* The length limit's name for a first attempt: 1 max_tokens, 2
 * max_completion_tokens. */
static int first_token_field(const kiln_llm_config *cfg)
{
    if (cfg->dialect != KILN_LLM_OPENAI)
        return 1;   /* Anthropic's Messages API takes max_tokens only */
    if (cfg->token_field == 1 || cfg->token_field == 2)
        return cfg->token_field;
    return wants_completion_tokens(cfg->model) ? 2 : 1;
}

/* Anthropic: the system prompt as one text block marked for the prompt
 * cache, so later requests of the run read it from the cache. */
static int add_cached_system(cJSON *j, const char *system)
{
    cJSON *blocks = cJSON_AddArrayToObject(j, "system"), *b = cJSON_CreateObject();
    if (!blocks || !b || !cJSON_AddStringToObject(b, "type", "text") ||
        !cJSON_AddStringToObject(b, "text", system)) {
        cJSON_Delete(b);
        return 0;
    }
    cJSON *cc = cJSON_AddObjectToObject(b, "cache_control");
    cJSON_AddItemToArray(blocks, b);
    return cc && cJSON_AddStringToObject(cc, "type", "ephemeral") != NULL;
}

/* One draft's JSON body (malloc'd; NULL when out of memory); temperature
 * < 0 sends none; token_field names the length limit (1 or 2). */
static char *request_body(const kiln_llm_config *cfg, const char *system, const char *user,
                          double temperature, int token_field)
{
    int openai = cfg->dialect == KILN_LLM_OPENAI;
    int has_system = system && *system;
    cJSON *j = cJSON_CreateObject();
    cJSON *messages = NULL;
    int ok = j && cJSON_AddStringToObject(j, "model", cfg->model) &&
             cJSON_AddNumberToObject(j, token_field == 2 ? "max_completion_tokens" : "max_tokens",
                                     cfg->max_tokens);
    /* Anthropic takes the system prompt at the top level, OpenAI as a message. */
    if (ok && has_system && !openai)
        ok = cfg->cache_system ? add_cached_system(j, system)
                               : cJSON_AddStringToObject(j, "system", system) != NULL;
    if (ok && temperature >= 0)
        ok = cJSON_AddNumberToObject(j, "temperature", temperature) != NULL;
    if (ok)
        ok = (messages = cJSON_AddArrayToObject(j, "messages")) != NULL;
    if (ok && has_system && openai)
        ok = add_message(messages, "system", system) != NULL;
    if (ok)
        ok = add_message(messages, "user", user) != NULL;
    char *text = ok ? cJSON_PrintUnformatted(j) : NULL;
    cJSON_Delete(j);
    return text;
}

static int add_header(struct curl_slist **list, const char *name, const char *value)
{
    char line[700];
    snprintf(line, sizeof line, "%s%s", name, value);
    struct curl_slist *l = curl_slist_append(*list, line);
    if (!l)
        return -1;
    *list = l;
    return 0;
}

/* Headers shared by all drafts.  "Expect:" stops curl from waiting for a
 * "100 Continue" before sending bodies over 1 KiB, which costs up to 1 s
 * per attempt with servers that never send one. */
static struct curl_slist *request_headers(const kiln_llm_config *cfg)
{
    struct curl_slist *h = NULL;
    int bad = add_header(&h, "Content-Type: ", "application/json") < 0 ||
              add_header(&h, "Expect:", "") < 0;
    if (cfg->dialect == KILN_LLM_ANTHROPIC)
        bad = bad || add_header(&h, "x-api-key: ", cfg->api_key) < 0 ||
              add_header(&h, "anthropic-version: ", "2023-06-01") < 0;
    else if (cfg->api_key[0])
        bad = bad || add_header(&h, "Authorization: Bearer ", cfg->api_key) < 0;
    if (bad) {
        curl_slist_free_all(h);
        return NULL;
    }
    return h;
}

/* ---- response ------------------------------------------------------------ */

static long usage_field(const cJSON *usage, const char *name)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(usage, name);
    return cJSON_IsNumber(v) && v->valuedouble >= 0 ? (long)v->valuedouble : 0;
}

static void copy_finish(kiln_llm_result *r, const cJSON *v)
{
    if (cJSON_IsString(v))
        snprintf(r->finish, sizeof r->finish, "%s", v->valuestring);
}

/* choices[0].message.content, finish_reason and usage. */
static int parse_openai(const cJSON *j, kiln_llm_result *r)
{
    const cJSON *c0 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "choices"), 0);
    const cJSON *msg = cJSON_GetObjectItemCaseSensitive(c0, "message");
    const cJSON *content = cJSON_GetObjectItemCaseSensitive(msg, "content");
    if (!cJSON_IsString(content))
        return -1;
    if (!(r->text = strdup(content->valuestring)))
        return -1;
    copy_finish(r, cJSON_GetObjectItemCaseSensitive(c0, "finish_reason"));
    const cJSON *usage = cJSON_GetObjectItemCaseSensitive(j, "usage");
    r->prompt_tokens = usage_field(usage, "prompt_tokens");
    r->completion_tokens = usage_field(usage, "completion_tokens");
    return 0;
}

/* The text blocks of content[] concatenated (thinking / tool_use skipped). */
static int parse_anthropic(const cJSON *j, kiln_llm_result *r)
{
    const cJSON *content = cJSON_GetObjectItemCaseSensitive(j, "content");
    const cJSON *b;
    size_t total = 0;
    int blocks = 0;
    cJSON_ArrayForEach(b, content) {
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(b, "type");
        const cJSON *text = cJSON_GetObjectItemCaseSensitive(b, "text");
        if (cJSON_IsString(type) && !strcmp(type->valuestring, "text") && cJSON_IsString(text))
            total += strlen(text->valuestring), blocks++;
    }
    if (!blocks || !(r->text = malloc(total + 1)))
        return -1;
    size_t o = 0;
    cJSON_ArrayForEach(b, content) {
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(b, "type");
        const cJSON *text = cJSON_GetObjectItemCaseSensitive(b, "text");
        if (cJSON_IsString(type) && !strcmp(type->valuestring, "text") && cJSON_IsString(text)) {
            size_t n = strlen(text->valuestring);
            memcpy(r->text + o, text->valuestring, n);
            o += n;
        }
    }
    r->text[o] = '\0';
    copy_finish(r, cJSON_GetObjectItemCaseSensitive(j, "stop_reason"));
    const cJSON *usage = cJSON_GetObjectItemCaseSensitive(j, "usage");
    r->prompt_tokens = usage_field(usage, "input_tokens");
    r->completion_tokens = usage_field(usage, "output_tokens");
    r->cache_read_tokens = usage_field(usage, "cache_read_input_tokens");
    r->cache_write_tokens = usage_field(usage, "cache_creation_input_tokens");
    return 0;
}

/* A 2xx body: the answer, or a non-retryable error (the model's reply is
 * garbage; paying for it again is unlikely to help). */
static void parse_success(const kiln_llm_config *cfg, draft *d)
{
    kiln_llm_result *r = d->res;
    char quote[SNIPPET_CHARS + 8];
    cJSON *j = cJSON_ParseWithLength(d->body ? d->body : "", d->len);
    if (!j) {
        snippet(d->body, d->len, quote, sizeof quote);
        snprintf(r->error, sizeof r->error, "malformed JSON in response body (%zu bytes): %s",
                 d->len, d->len ? quote : "(empty)");
        return;
    }
    int openai = cfg->dialect == KILN_LLM_OPENAI;
    if ((openai ? parse_openai : parse_anthropic)(j, r) == 0) {
        r->ok = 1;
    } else {
        body_error_message(d->body, d->len, quote, sizeof quote);
        snprintf(r->error, sizeof r->error, "response has no %s: %s",
                 openai ? "choices[0].message.content" : "text content blocks", quote);
        r->finish[0] = '\0';
    }
    cJSON_Delete(j);
}

/* ---- attempts ------------------------------------------------------------ */

static int retryable_status(long status)
{
    return status == 408 || status == 409 || status == 429 || status >= 500;
}

/* Seconds to wait before the next attempt: the server's retry-after(-ms) when
 * it is in (0, 120] s, else min(base * 2^(attempts-1), 8 s) with up to 25 %
 * jitter so concurrent drafts do not retry in lockstep. */
static double backoff_s(const kiln_llm_config *cfg, const draft *d, uint64_t *rng)
{
    double ra = d->retry_after_ms_s > 0 ? d->retry_after_ms_s : d->retry_after_s;
    if (ra > 0 && ra <= RETRY_AFTER_MAX_S)
        return ra;
    double base = cfg->backoff_base_s > 0 ? cfg->backoff_base_s : 0;
    double wait = fmin(base * ldexp(1.0, d->res->attempts - 1), BACKOFF_CAP_S);
    return wait * (1.0 - 0.25 * rng_unit(rng));
}

static int start_attempt(CURLM *multi, draft *d)
{
    d->len = 0;
    d->too_big = 0;
    d->retry_after_ms_s = d->retry_after_s = 0;
    d->curl_err[0] = '\0';
    d->res->attempts++;
    if (curl_multi_add_handle(multi, d->easy) != CURLM_OK)
        return -1;
    d->state = D_RUNNING;
    return 0;
}

/* Describe a failed transfer (no usable HTTP response) into what[]. */
static void transfer_error(const kiln_llm_config *cfg, const draft *d, CURLcode code,
                           char *what, size_t cap)
{
    const char *why = d->curl_err[0] ? d->curl_err : curl_easy_strerror(code);
    if (code == CURLE_OPERATION_TIMEDOUT)
        snprintf(what, cap, "timed out after %ld ms", cfg->timeout_ms);
    else if (code == CURLE_PARTIAL_FILE)
        snprintf(what, cap, "response cut off: %s", why);
    else
        snprintf(what, cap, "connection error: %s", why);
}

/* Make body the draft's request body (the old one freed); -1 when curl
 * refuses it. */
static int set_body(draft *d, char *body)
{
    int bad = curl_easy_setopt(d->easy, CURLOPT_POSTFIELDS, body) != CURLE_OK;
    bad |= curl_easy_setopt(d->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body))
           != CURLE_OK;
    cJSON_free(d->req_body);
    d->req_body = body;
    return bad ? -1 : 0;
}

/* Some models take no temperature (OpenAI's reasoning models answer 400
 * "Unsupported value: 'temperature' ..."). A draft refused so is sent again
 * without one, once, instead of failing the whole search. 1 when it will. */
static int drop_temperature(const kiln_llm_config *cfg, draft *d, long status, const char *message)
{
    if (status != 400 || d->res->temperature < 0 || !strstr(message, "temperature"))
        return 0;
    char *body = request_body(cfg, d->req->system, d->req->user, -1, d->res->token_field);
    if (!body || set_body(d, body) < 0)
        return 0;   /* then the 400 stands, as it came */
    d->res->temperature = -1;
    d->state = D_WAITING;
    d->next_at = now_s();
    return 1;
}

/* OpenAI's reasoning models refuse "max_tokens" ("Unsupported parameter:
 * 'max_tokens' is not supported with this model. Use
 * 'max_completion_tokens' instead."), and older servers the other name:
 * a draft refused so is sent again with the other name, once. 1 when it
 * will. */
static int swap_token_field(const kiln_llm_config *cfg, draft *d, long status, const char *message)
{
    int now = d->res->token_field, other = now == 2 ? 1 : 2;
    const char *sent = now == 2 ? "max_completion_tokens" : "max_tokens";
    if (status != 400 || cfg->dialect != KILN_LLM_OPENAI || d->swapped || !strstr(message, sent))
        return 0;
    if (now == 1 && strstr(message, "max_completion_tokens") == NULL &&
        strstr(message, "nsupported") == NULL)
        return 0;   /* a 400 about the value of max_tokens, not its name */
    char *body = request_body(cfg, d->req->system, d->req->user, d->res->temperature, other);
    if (!body || set_body(d, body) < 0)
        return 0;
    d->swapped = 1;
    d->res->token_field = other;
    d->state = D_WAITING;
    d->next_at = now_s();
    return 1;
}

/* Judge the attempt that just ended: the draft is done (answer or final
 * error) or parked until its next attempt. */
static void finish_attempt(const kiln_llm_config *cfg, draft *d, CURLcode code, double t0,
                           uint64_t *rng)
{
    kiln_llm_result *r = d->res;
    long status = 0;
    curl_easy_getinfo(d->easy, CURLINFO_RESPONSE_CODE, &status);
    r->http_status = status;
    char what[CURL_ERROR_SIZE + 64], quote[SNIPPET_CHARS + 8] = "";
    int retry = 0, http = 0;

    if (d->too_big) {
        snprintf(r->error, sizeof r->error, "response body over %u MiB or out of memory",
                 MAX_BODY_BYTES >> 20);
    } else if (code != CURLE_OK) {
        /* Includes bodies cut off by the connection: the reply is incomplete,
         * not wrong, so another attempt may well succeed. */
        transfer_error(cfg, d, code, what, sizeof what);
        retry = 1;
    } else if (status >= 200 && status < 300) {
        parse_success(cfg, d);
    } else {
        http = 1;
        body_error_message(d->body, d->len, quote, sizeof quote);
        if (drop_temperature(cfg, d, status, quote) || swap_token_field(cfg, d, status, quote))
            return;
        retry = retryable_status(status);
        r->fatal = !retry;   /* 400, 401, 403, 404, ...: the request itself is wrong */
        if (status == 401 || status == 403)
            snprintf(what, sizeof what, "API key rejected (HTTP %ld)", status);
        else
            snprintf(what, sizeof what, "HTTP %ld", status);
    }

    int max_retries = cfg->max_retries > 0 ? cfg->max_retries : 0;
    if (retry && r->attempts <= max_retries) {
        d->state = D_WAITING;
        d->next_at = now_s() + backoff_s(cfg, d, rng);
        return;
    }
    if (http && r->attempts > 1)
        snprintf(r->error, sizeof r->error, "%.200s after %d attempts: %s", what, r->attempts, quote);
    else if (http)
        snprintf(r->error, sizeof r->error, "%.200s: %s", what, quote);
    else if (retry && r->attempts > 1)
        snprintf(r->error, sizeof r->error, "%s (%d attempts)", what, r->attempts);
    else if (retry)
        snprintf(r->error, sizeof r->error, "%s", what);
    d->state = D_DONE;
    r->latency_s = now_s() - t0;
}

/* ---- the multi loop ------------------------------------------------------ */

static void draft_fail(draft *d, double t0, const char *why)
{
    snprintf(d->res->error, sizeof d->res->error, "%s", why);
    d->state = D_DONE;
    d->res->latency_s = now_s() - t0;
}

/* Start every parked draft whose backoff has expired. */
static void start_due(CURLM *multi, draft *d, int n, double t0)
{
    double t = now_s();
    for (int i = 0; i < n; i++)
        if (d[i].state == D_WAITING && d[i].next_at <= t && start_attempt(multi, &d[i]) < 0)
            draft_fail(&d[i], t0, "curl could not start the request");
}

/* Judge every transfer curl reports finished. */
static void collect_done(const kiln_llm_config *cfg, CURLM *multi, double t0, uint64_t *rng)
{
    CURLMsg *msg;
    int queued;
    while ((msg = curl_multi_info_read(multi, &queued))) {
        if (msg->msg != CURLMSG_DONE)
            continue;
        /* msg dies with curl_multi_remove_handle: copy what we need first. */
        CURL *easy = msg->easy_handle;
        CURLcode code = msg->data.result;
        draft *d = NULL;
        curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&d);
        curl_multi_remove_handle(multi, easy);
        finish_attempt(cfg, d, code, t0, rng);
    }
}

/* How long poll may sleep: until the earliest parked draft is due (at most
 * 1 s; curl_multi_poll also wakes for curl's own timers and socket events). */
static int poll_wait_ms(const draft *d, int n, int *left)
{
    double t = now_s(), wait = 1.0;
    *left = 0;
    for (int i = 0; i < n; i++) {
        if (d[i].state != D_DONE)
            (*left)++;
        if (d[i].state == D_WAITING)
            wait = fmin(wait, d[i].next_at - t);
    }
    return wait > 0 ? (int)ceil(wait * 1000) : 0;
}

/* Every request not yet answered, given up (the caller's stop). */
static void cancel_all(draft *d, int n, double t0)
{
    for (int i = 0; i < n; i++) {
        if (d[i].state == D_DONE)
            continue;
        draft_fail(&d[i], t0, "cancelled");
        d[i].res->ok = 0;
        d[i].res->cancelled = 1;
    }
}

static void run_all(const kiln_llm_config *cfg, CURLM *multi, draft *d, int n,
                    const atomic_int *stop)
{
    double t0 = now_s();
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t rng = ((uint64_t)ts.tv_nsec << 20) ^ (uint64_t)ts.tv_sec ^ (uintptr_t)d;
    rng |= 1;   /* xorshift must not start at 0 */
    for (int i = 0; i < n; i++) {
        d[i].state = D_WAITING;
        d[i].next_at = t0;
    }
    int left = n;
    while (left > 0) {
        if (stop && atomic_load(stop)) {
            cancel_all(d, n, t0);
            return;
        }
        start_due(multi, d, n, t0);
        int running;
        CURLMcode mc = curl_multi_perform(multi, &running);
        if (mc == CURLM_OK)
            collect_done(cfg, multi, t0, &rng);
        int wait_ms = poll_wait_ms(d, n, &left);
        if (stop && wait_ms > 50)
            wait_ms = 50;   /* how soon a stop is seen */
        if (mc == CURLM_OK && left > 0)
            mc = curl_multi_poll(multi, NULL, 0, wait_ms, NULL);
        if (mc != CURLM_OK) {
            /* The multi handle itself is broken: no draft can progress. */
            char why[128];
            snprintf(why, sizeof why, "curl multi error: %s", curl_multi_strerror(mc));
            for (int i = 0; i < n; i++)
                if (d[i].state != D_DONE)
                    draft_fail(&d[i], t0, why);
            return;
        }
    }
}

/* ---- entry point --------------------------------------------------------- */

/* The draft's easy handle and its request body (the effective temperature
 * recorded in its result). */
static int setup_easy(const kiln_llm_config *cfg, draft *d, const char *url,
                      struct curl_slist *headers)
{
    CURL *e = d->easy = curl_easy_init();
    double t = d->req->temperature >= 0 ? d->req->temperature : cfg->temperature;
    d->res->token_field = first_token_field(cfg);
    char *body = request_body(cfg, d->req->system, d->req->user, t, d->res->token_field);
    d->res->temperature = t >= 0 ? t : -1;
    if (!e || !body) {
        cJSON_free(body);
        return -1;
    }
    /* No CURLOPT_FAILONERROR: error bodies carry the API's explanation. */
    int bad = set_body(d, body) < 0;
    bad |= curl_easy_setopt(e, CURLOPT_URL, url) != CURLE_OK;
    bad |= curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers) != CURLE_OK;
    bad |= curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body) != CURLE_OK;
    bad |= curl_easy_setopt(e, CURLOPT_WRITEDATA, d) != CURLE_OK;
    bad |= curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header) != CURLE_OK;
    bad |= curl_easy_setopt(e, CURLOPT_HEADERDATA, d) != CURLE_OK;
    bad |= curl_easy_setopt(e, CURLOPT_ERRORBUFFER, d->curl_err) != CURLE_OK;
    bad |= curl_easy_setopt(e, CURLOPT_PRIVATE, (void *)d) != CURLE_OK;
    bad |= curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, cfg->timeout_ms > 0 ? cfg->timeout_ms : 0L)
           != CURLE_OK;
    bad |= curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS,
                            cfg->connect_timeout_ms > 0 ? cfg->connect_timeout_ms : 0L) != CURLE_OK;
    /* Signals (for DNS timeouts) are unsafe in a multi-threaded caller. */
    bad |= curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L) != CURLE_OK;
    bad |= curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "") != CURLE_OK;
    bad |= curl_easy_setopt(e, CURLOPT_USERAGENT, "kiln-llm/1") != CURLE_OK;
    return bad ? -1 : 0;
}

/* What no attempt can fix: checked once, before anything is sent. */
static int check_config(const kiln_llm_config *cfg, kiln_error *err)
{
    if (cfg->dialect != KILN_LLM_OPENAI && cfg->dialect != KILN_LLM_ANTHROPIC)
        return kiln_fail(err, "llm: unknown dialect %d", (int)cfg->dialect);
    if (!memchr(cfg->model, '\0', sizeof cfg->model) || !cfg->model[0])
        return kiln_fail(err, "llm: no model name in the config");
    if (!memchr(cfg->base_url, '\0', sizeof cfg->base_url) || !cfg->base_url[0])
        return kiln_fail(err, "llm: no base URL in the config");
    if (!memchr(cfg->api_key, '\0', sizeof cfg->api_key))
        return kiln_fail(err, "llm: API key is not terminated");
    /* A newline in the key would inject headers. */
    for (const char *k = cfg->api_key; *k; k++)
        if ((unsigned char)*k < 0x20 || *k == 0x7f)
            return kiln_fail(err, "llm: API key contains control characters");
    if (cfg->dialect == KILN_LLM_ANTHROPIC && !cfg->api_key[0])
        return kiln_fail(err, "llm: no API key (set ANTHROPIC_API_KEY)");
    if (cfg->max_tokens < 1)
        return kiln_fail(err, "llm: max_tokens must be at least 1 (got %d)", cfg->max_tokens);
    return 0;
}

static void cleanup(CURLM *multi, draft *d, int n, struct curl_slist *headers)
{
    for (int i = 0; d && i < n; i++) {
        if (d[i].easy) {
            if (multi)
                curl_multi_remove_handle(multi, d[i].easy);   /* no-op if not added */
            curl_easy_cleanup(d[i].easy);
        }
        free(d[i].body);
        cJSON_free(d[i].req_body);
    }
    curl_multi_cleanup(multi);
    free(d);
    curl_slist_free_all(headers);
}

static int check_requests(const kiln_llm_request *req, int n, kiln_error *err)
{
    for (int i = 0; i < n; i++)
        if (!req[i].user)
            return kiln_fail(err, "llm: request %d has no user prompt", i);
    return 0;
}

int kiln_llm_complete_each(const kiln_llm_config *cfg, const kiln_llm_request *req, int n,
                           kiln_llm_result *out, kiln_error *err)
{
    return kiln_llm_complete_each_until(cfg, req, n, out, NULL, err);
}

int kiln_llm_complete_each_until(const kiln_llm_config *cfg, const kiln_llm_request *req, int n,
                                 kiln_llm_result *out, const atomic_int *stop, kiln_error *err)
{
    if (!cfg || !req || !out || n < 1)
        return kiln_fail(err, "llm: need a config, requests and n >= 1 results");
    memset(out, 0, (size_t)n * sizeof *out);
    if (check_requests(req, n, err) < 0 || check_config(cfg, err) < 0 || global_init(err) < 0)
        return -1;
    char url[sizeof cfg->base_url + 32];
    snprintf(url, sizeof url, "%s%s", cfg->base_url,
             cfg->dialect == KILN_LLM_OPENAI ? "/chat/completions" : "/v1/messages");

    struct curl_slist *headers = request_headers(cfg);
    draft *d = calloc((size_t)n, sizeof *d);
    CURLM *multi = curl_multi_init();
    int rc = -1;
    if (!headers || !d || !multi) {
        kiln_fail(err, "llm: out of memory preparing the request");
        goto done;
    }
    for (int i = 0; i < n; i++) {
        d[i].res = &out[i];
        d[i].req = &req[i];
        if (setup_easy(cfg, &d[i], url, headers) < 0) {
            kiln_fail(err, "llm: could not set up a curl handle");
            goto done;
        }
    }
    run_all(cfg, multi, d, n, stop);
    rc = 0;
done:
    cleanup(multi, d, n, headers);
    return rc;
}

int kiln_llm_complete(const kiln_llm_config *cfg, const char *system, const char *user,
                      int n, kiln_llm_result *out, kiln_error *err)
{
    if (!user || n < 1)
        return kiln_fail(err, "llm: need a config, a user prompt and n >= 1 results");
    kiln_llm_request *req = calloc((size_t)n, sizeof *req);
    if (!req)
        return kiln_fail(err, "llm: out of memory preparing the request");
    for (int i = 0; i < n; i++)
        req[i] = (kiln_llm_request){.system = system, .user = user, .temperature = -1};
    int rc = kiln_llm_complete_each(cfg, req, n, out, err);
    free(req);
    return rc;
}
