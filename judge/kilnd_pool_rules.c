/* kilnd_pool_rules.c - the rules of many verifiers that need no socket and no
 * clock (see kilnd_pool.h): addresses, job ids naming their verifier, a
 * status reply and an endpoint file read, the down/retry bookkeeping and the
 * choice of a verifier for the next job. The time is an argument, so
 * tests/unit/test_kilnd_pool.c tests all of it alone. */
#include "kilnd_pool.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

#include <cjson/cJSON.h>

/* ---- job ids ------------------------------------------------------------- */

void kiln_verifier_tag(const char *address, char tag[13])
{
    uint64_t h = 1469598103934665603ull;   /* FNV-1a, 64 bits */
    for (const unsigned char *p = (const unsigned char *)address; *p; p++)
        h = (h ^ *p) * 1099511628211ull;
    snprintf(tag, 13, "%012llx", (unsigned long long)(h & 0xffffffffffffull));
}

/* n characters of kilnd's job id alphabet ([A-Za-z0-9_.-]), n >= 1. */
static int raw_ok(const char *s, size_t n)
{
    if (n == 0)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-", s[i]) ||
            !s[i])
            return 0;
    return 1;
}

/* Exactly 12 lowercase hex digits, as kiln_verifier_tag writes them. */
static int tag_ok(const char *s)
{
    if (strlen(s) != 12)
        return 0;
    for (int i = 0; i < 12; i++)
        if (!strchr("0123456789abcdef", s[i]) || !s[i])
            return 0;
    return 1;
}

int kiln_verifier_job_id(const char *tag, const char *raw, char out[32])
{
    size_t n = strlen(raw);
    if (n > 18 || !raw_ok(raw, n) || !tag_ok(tag))
        return -1;
    snprintf(out, 32, "%.18s@%.12s", raw, tag);   /* lengths checked: at most 31 */
    return 0;
}

int kiln_verifier_parse_job(const char *job, char raw[32], char tag[13], kiln_error *err)
{
    raw[0] = tag[0] = '\0';
    size_t n = strlen(job);
    if (n == 0)
        return kiln_fail(err, "an empty job id");
    if (n >= 32)
        return kiln_fail(err, "job id '%.40s...' is longer than 31 characters", job);
    const char *at = strchr(job, '@');
    size_t nraw = at ? (size_t)(at - job) : n;
    if (!raw_ok(job, nraw))
        return kiln_fail(err, "job id '%s' is malformed: kilnd's part must be letters, digits, "
                         "'_', '.' or '-'", job);
    if (at && (nraw > 18 || !tag_ok(at + 1)))
        return kiln_fail(err, "job id '%s' is malformed: RAW@TAG needs a RAW of at most 18 "
                         "characters and a TAG of 12 hex digits", job);
    snprintf(raw, 32, "%.*s", (int)nraw, job);
    if (!at)
        return 0;
    snprintf(tag, 13, "%s", at + 1);
    return 1;
}

int kiln_verifier_split_job(const char *job, char raw[32], char tag[13])
{
    return kiln_verifier_parse_job(job, raw, tag, NULL);
}

/* ---- addresses and the set -------------------------------------------------- */

/* "tcp://HOST:PORT": a host without spaces or slashes, a port of digits only. */
static int check_tcp(const char *a, char *why, size_t len)
{
    const char *host = a + 6, *colon = strrchr(host, ':');
    if (!colon || colon == host)
        return snprintf(why, len, "tcp://HOST:PORT needs a host and a port"), -1;
    if (strcspn(host, " \t/") < (size_t)(colon - host))
        return snprintf(why, len, "the host may not hold a space or a '/'"), -1;
    size_t digits = strspn(colon + 1, "0123456789");
    long port = digits && digits <= 5 ? strtol(colon + 1, NULL, 10) : 0;
    if (!digits || colon[1 + digits] || port < 1 || port > 65535)
        return snprintf(why, len, "the port must be a number from 1 to 65535"), -1;
    return 0;
}

int kiln_verifier_check_address(const char *a, char *why, size_t len)
{
    if (!*a)
        return snprintf(why, len, "an empty address"), -1;
    if (a[0] == ' ' || a[0] == '\t' || a[strlen(a) - 1] == ' ' || a[strlen(a) - 1] == '\t')
        return snprintf(why, len, "a space before or after the address"), -1;
    if (strncmp(a, "tcp://", 6) == 0)
        return check_tcp(a, why, len);
    if (strstr(a, "://"))
        return snprintf(why, len, "not a Unix socket path or tcp://HOST:PORT"), -1;
    if (strlen(a) >= sizeof ((struct sockaddr_un *)0)->sun_path)
        return snprintf(why, len, "a Unix socket path must be shorter than %zu bytes",
                        sizeof ((struct sockaddr_un *)0)->sun_path), -1;
    return 0;
}

kiln_verifier *kiln_verifiers_at(const kiln_verifiers *vs, const char *address)
{
    for (int i = 0; i < vs->n; i++)
        if (strcmp(vs->v[i]->address, address) == 0)
            return vs->v[i];
    return NULL;
}

kiln_verifier *kiln_verifiers_add(kiln_verifiers *vs, const char *address, kiln_error *err)
{
    if (vs->n == vs->cap) {
        int cap = vs->cap ? vs->cap * 2 : 8;
        kiln_verifier **nv = realloc(vs->v, (size_t)cap * sizeof *nv);
        if (!nv)
            return kiln_fail(err, "out of memory"), NULL;
        vs->v = nv;
        vs->cap = cap;
    }
    kiln_verifier *v = calloc(1, sizeof *v);
    if (!v)
        return kiln_fail(err, "out of memory"), NULL;
    snprintf(v->address, sizeof v->address, "%s", address);
    kiln_verifier_tag(address, v->tag);
    vs->v[vs->n++] = v;
    return v;
}

/* One item of a list: checked, not given before, added. */
static int list_item(kiln_verifiers *vs, int i, const char *p, size_t n, kiln_error *err)
{
    char addr[512], why[128];
    if (n >= sizeof addr)
        return kiln_fail(err, "--verifiers: address %d ('%.40s...') is too long", i, p);
    snprintf(addr, sizeof addr, "%.*s", (int)n, p);
    if (kiln_verifier_check_address(addr, why, sizeof why) < 0)
        return kiln_fail(err, "--verifiers: address %d ('%s'): %s", i, addr, why);
    if (kiln_verifiers_at(vs, addr))
        return kiln_fail(err, "--verifiers: '%s' is given twice", addr);
    return kiln_verifiers_add(vs, addr, err) ? 0 : -1;
}

int kiln_verifiers_list(kiln_verifiers *vs, const char *list, kiln_error *err)
{
    memset(vs, 0, sizeof *vs);
    const char *p = list;
    for (int i = 1;; i++) {
        size_t n = strcspn(p, ",");
        if (list_item(vs, i, p, n, err) < 0) {
            kiln_verifiers_free(vs);
            return -1;
        }
        if (!p[n])
            return 0;
        p += n + 1;
    }
}

void kiln_verifiers_free(kiln_verifiers *vs)
{
    for (int i = 0; i < vs->n; i++)
        free(vs->v[i]);
    free(vs->v);
    memset(vs, 0, sizeof *vs);
}

int kiln_verifier_endpoint(const char *text, char *addr, size_t len, char *why, size_t wlen)
{
    cJSON *ep = cJSON_Parse(text);
    const char *a = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ep, "endpoint"));
    char w[128];
    int rc = -1;
    if (!ep)
        snprintf(why, wlen, "not JSON");
    else if (!a)
        snprintf(why, wlen, "no \"endpoint\" string");
    else if (kiln_verifier_check_address(a, w, sizeof w) < 0)
        snprintf(why, wlen, "endpoint '%.200s': %s", a, w);
    else if (strlen(a) >= len)
        snprintf(why, wlen, "endpoint '%.40s...' is too long", a);
    else
        rc = 0, snprintf(addr, len, "%s", a);
    cJSON_Delete(ep);
    return rc;
}

const char *kiln_verifiers_news(kiln_verifiers *vs)
{
    if (!vs->bad_news)
        return NULL;
    vs->bad_news = 0;
    return vs->bad;
}

/* ---- health and status ------------------------------------------------------- */

void kiln_verifier_down_at(kiln_verifier *v, const char *why, uint64_t now)
{
    v->down = 1;
    v->known = 0;
    v->down_at = now;
    snprintf(v->why, sizeof v->why, "%.299s", why);
}

int kiln_verifier_resting(const kiln_verifier *v, uint64_t now)
{
    return v->down && (now < v->down_at || now - v->down_at < KILN_VERIFIER_RETRY_S * 1000000000ull);
}

int kiln_verifier_stale(const kiln_verifier *v, uint64_t now)
{
    return !v->known || (now > v->status_at && now - v->status_at > KILN_VERIFIER_STATUS_MS * 1000000ull);
}

/* A count of a status reply: 0 when absent or not a sane number (an older
 * kilnd has no "load"; a NaN must not reach an int). */
static int count_of(const cJSON *o, const char *k)
{
    double d = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(o, k));
    return isfinite(d) && d > 0 && d < 1e6 ? (int)d : 0;
}

int kiln_verifier_apply_status(kiln_verifier *v, const cJSON *r, uint64_t now, kiln_error *err)
{
    const char *ev = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r, "event"));
    if (!ev || strcmp(ev, "status") != 0)
        return kiln_fail(err, "kilnd at %s did not answer its status", v->address);
    memset(v->lanes, 0, sizeof v->lanes);
    memset(v->load, 0, sizeof v->load);
    const cJSON *d;
    cJSON_ArrayForEach(d, cJSON_GetObjectItemCaseSensitive(r, "devices")) {
        const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(d, "name"));
        int k = !name ? -1 : strcmp(name, "cpu") == 0 ? 0 : strncmp(name, "cuda:", 5) == 0 ? 1 : -1;
        if (k < 0)
            continue;   /* a lane of a kind this kiln does not send */
        v->lanes[k]++;
        v->load[k] += count_of(d, "load");
    }
    v->queued = count_of(r, "queued");
    v->sent = 0;
    v->known = 1;
    v->down = 0;
    v->status_at = now;
    return 0;
}

/* ---- the choice ------------------------------------------------------------ */

static int avoided(const kiln_verifier *v, kiln_verifier *const *avoid, int navoid)
{
    for (int i = 0; i < navoid; i++)
        if (avoid[i] == v)
            return 1;
    return 0;
}

/* Why no verifier could take the job: each one's state, in err. */
static void explain(const kiln_verifiers *vs, int kind, kiln_verifier *const *avoid, int navoid,
                    uint64_t now, kiln_error *err)
{
    char msg[sizeof err->msg];
    int w = snprintf(msg, sizeof msg, "no verifier can take a %s job", kind ? "cuda" : "cpu");
    if (vs->n == 0)
        w += snprintf(msg + w, sizeof msg - (size_t)w, ": none known yet%s%s",
                      vs->fleet[0] ? " in " : "", vs->fleet[0] ? vs->fleet : "");
    for (int i = 0; i < vs->n && w < (int)sizeof msg - 1; i++) {
        const kiln_verifier *v = vs->v[i];
        const char *state = v->gone ? "left the fleet" : avoided(v, avoid, navoid) ? "lost this job"
                            : v->down ? v->why : v->known && !v->lanes[kind] ? "has no lane of that kind"
                            : kiln_verifier_resting(v, now) ? v->why : "not asked yet";
        w += snprintf(msg + w, sizeof msg - (size_t)w, "%s%s: %.200s", i ? "; " : ": ", v->address, state);
    }
    if (vs->bad[0] && w < (int)sizeof msg - 1)
        snprintf(msg + w, sizeof msg - (size_t)w, "; skipped: %s", vs->bad);
    kiln_fail(err, "%s", msg);
}

/* Can v take a job of kind now, from what is known (no daemon asked)? */
static int can_take(const kiln_verifier *v, int kind, kiln_verifier *const *avoid, int navoid,
                    uint64_t now)
{
    return !v->gone && !avoided(v, avoid, navoid) && !v->down && !kiln_verifier_resting(v, now) &&
           v->known && v->lanes[kind] > 0;
}

kiln_verifier *kiln_verifiers_choose(kiln_verifiers *vs, int kind, kiln_verifier *const *avoid,
                                     int navoid, uint64_t now, kiln_error *err)
{
    kiln_verifier *best = NULL;
    long best_jobs = 0;
    for (int k = 0; k < vs->n; k++) {
        kiln_verifier *v = vs->v[(vs->turn + (unsigned)k) % (unsigned)vs->n];
        if (!can_take(v, kind, avoid, navoid, now))
            continue;
        /* the fewest jobs per lane once this one is added: a daemon of 8
         * lanes gets twice the jobs of one of 4, the idle before the busy */
        long jobs = (long)v->load[kind] + v->queued + v->sent + 1;
        if (!best || jobs * best->lanes[kind] < best_jobs * v->lanes[kind])
            best = v, best_jobs = jobs;
    }
    vs->turn++;
    if (!best) {
        explain(vs, kind, avoid, navoid, now, err);
        return NULL;
    }
    best->sent++;
    return best;
}
