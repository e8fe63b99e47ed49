/* verifiers.c - the verifiers of one search: a list or a fleet directory,
 * their status, the choice of one for each job, and job ids naming the
 * verifier (see verifiers.h). */
#include "verifiers.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "daemon_client.h"
#include "fileutil.h"
#include "worker_io.h"   /* kiln_mono_ns */

/* ---- job ids ------------------------------------------------------------- */

void kiln_verifier_tag(const char *address, char tag[13])
{
    uint64_t h = 1469598103934665603ull;   /* FNV-1a, 64 bits */
    for (const unsigned char *p = (const unsigned char *)address; *p; p++)
        h = (h ^ *p) * 1099511628211ull;
    snprintf(tag, 13, "%012llx", (unsigned long long)(h & 0xffffffffffffull));
}

int kiln_verifier_job_id(const char *tag, const char *raw, char out[32])
{
    if (strlen(raw) > 18 || strlen(tag) > 12 || strchr(raw, '@'))
        return -1;
    snprintf(out, 32, "%.18s@%.12s", raw, tag);   /* lengths checked: at most 31 */
    return 0;
}

int kiln_verifier_split_job(const char *job, char raw[32], char tag[13])
{
    const char *at = strchr(job, '@');
    if (!at) {
        snprintf(raw, 32, "%s", job);
        tag[0] = '\0';
        return 0;
    }
    snprintf(raw, 32, "%.*s", (int)(at - job), job);
    snprintf(tag, 13, "%s", at + 1);
    return 1;
}

/* ---- the set ------------------------------------------------------------- */

static kiln_verifier *find_address(const kiln_verifiers *vs, const char *address)
{
    for (int i = 0; i < vs->n; i++)
        if (strcmp(vs->v[i]->address, address) == 0)
            return vs->v[i];
    return NULL;
}

static kiln_verifier *add(kiln_verifiers *vs, const char *address, kiln_error *err)
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

/* A Unix socket path or tcp://HOST:PORT with a port from 1 to 65535. */
static int check_address(const char *a, char *why, size_t len)
{
    if (!*a)
        return snprintf(why, len, "an empty address"), -1;
    if (strncmp(a, "tcp://", 6) == 0) {
        const char *colon = strrchr(a + 6, ':');
        char *end = NULL;
        long port = colon ? strtol(colon + 1, &end, 10) : 0;
        if (!colon || colon == a + 6)
            return snprintf(why, len, "tcp://HOST:PORT needs a host and a port"), -1;
        if (!colon[1] || *end || port < 1 || port > 65535)
            return snprintf(why, len, "the port must be a number from 1 to 65535"), -1;
        return 0;
    }
    if (strstr(a, "://"))
        return snprintf(why, len, "not a Unix socket path or tcp://HOST:PORT"), -1;
    if (strlen(a) >= sizeof ((struct sockaddr_un *)0)->sun_path)
        return snprintf(why, len, "a Unix socket path must be shorter than %zu bytes",
                        sizeof ((struct sockaddr_un *)0)->sun_path), -1;
    return 0;
}

int kiln_verifiers_list(kiln_verifiers *vs, const char *list, kiln_error *err)
{
    memset(vs, 0, sizeof *vs);
    const char *p = list;
    for (int i = 1;; i++) {
        size_t n = strcspn(p, ",");
        char addr[512], why[128];
        if (n >= sizeof addr)
            return kiln_fail(err, "--verifiers: address %d ('%.40s...') is too long", i, p);
        snprintf(addr, sizeof addr, "%.*s", (int)n, p);
        if (check_address(addr, why, sizeof why) < 0)
            return kiln_fail(err, "--verifiers: address %d ('%s'): %s", i, addr, why);
        if (find_address(vs, addr))
            return kiln_fail(err, "--verifiers: '%s' is given twice", addr);
        if (!add(vs, addr, err))
            return -1;
        if (!p[n])
            return 0;
        p += n + 1;
    }
}

/* Read DIR/endpoints again: new endpoints join; those whose file is gone
 * (kiln fleet down) are not chosen any more, but still found by tag. */
static void scan(kiln_verifiers *vs)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/endpoints", vs->fleet);
    vs->scanned_at = kiln_mono_ns();
    DIR *dh = opendir(path);
    if (!dh)
        return;
    for (int i = 0; i < vs->n; i++)
        vs->v[i]->gone = 2;   /* 2: not seen in this pass yet */
    for (struct dirent *e; (e = readdir(dh));) {
        size_t len = strlen(e->d_name);
        if (e->d_name[0] == '.' || len < 6 || strcmp(e->d_name + len - 5, ".json") != 0)
            continue;
        char file[4500], *text = NULL;
        size_t n;
        kiln_error err;
        snprintf(file, sizeof file, "%s/%s", path, e->d_name);
        cJSON *ep = kiln_read_file(file, 1 << 16, &text, &n, &err) == 0 ? cJSON_Parse(text) : NULL;
        free(text);
        const char *addr = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ep, "endpoint"));
        char why[128];
        kiln_verifier *v = addr && check_address(addr, why, sizeof why) == 0 ? find_address(vs, addr) : NULL;
        if (!v && addr && check_address(addr, why, sizeof why) == 0)
            v = add(vs, addr, &err);   /* a file being written is read next time */
        if (v)
            v->gone = 0;
        cJSON_Delete(ep);
    }
    closedir(dh);
    for (int i = 0; i < vs->n; i++)
        vs->v[i]->gone = vs->v[i]->gone != 0;
}

int kiln_verifiers_fleet(kiln_verifiers *vs, const char *dir, kiln_error *err)
{
    memset(vs, 0, sizeof *vs);
    struct stat st;
    char token[4200];
    if (stat(dir, &st) < 0)
        return kiln_fail(err, "--fleet: %s is not a fleet directory: %s", dir, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return kiln_fail(err, "--fleet: %s is not a fleet directory: not a directory", dir);
    snprintf(token, sizeof token, "%s/token", dir);
    if (stat(token, &st) < 0)
        return kiln_fail(err, "--fleet: no token file %s (kiln fleet up makes it): %s", token,
                         strerror(errno));
    if ((st.st_mode & 077) != 0)
        return kiln_fail(err, "--fleet: the token file %s has mode %04o: it must be 0600", token,
                         (unsigned)(st.st_mode & 07777));
    snprintf(vs->fleet, sizeof vs->fleet, "%s", dir);
    setenv("KILN_TOKEN_FILE", token, 1);   /* what kiln_client_open authenticates with */
    scan(vs);
    return 0;
}

void kiln_verifiers_free(kiln_verifiers *vs)
{
    for (int i = 0; i < vs->n; i++)
        free(vs->v[i]);
    free(vs->v);
    memset(vs, 0, sizeof *vs);
}

/* ---- status and health ----------------------------------------------------- */

void kiln_verifier_down(kiln_verifier *v, const char *why)
{
    v->down = 1;
    v->known = 0;
    v->down_at = kiln_mono_ns();
    snprintf(v->why, sizeof v->why, "%.299s", why);
}

/* Ask v for its status: lanes of each kind, their load, its queue. */
static int refresh(kiln_verifier *v, kiln_error *err)
{
    kiln_client c;
    cJSON *r = NULL;
    if (kiln_client_open(&c, v->address, 0, err) == 0) {
        r = kiln_client_request(&c, "status", 5000, err);
        kiln_client_close(&c);
    }
    const char *ev = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r, "event"));
    if (!ev || strcmp(ev, "status") != 0) {
        if (r)
            kiln_fail(err, "kilnd at %s did not answer its status", v->address);
        cJSON_Delete(r);
        kiln_verifier_down(v, err->msg);
        return -1;
    }
    memset(v->lanes, 0, sizeof v->lanes);
    memset(v->load, 0, sizeof v->load);
    const cJSON *d;
    cJSON_ArrayForEach(d, cJSON_GetObjectItemCaseSensitive(r, "devices")) {
        const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(d, "name"));
        int k = name && strncmp(name, "cuda:", 5) == 0;
        v->lanes[k]++;
        v->load[k] += (int)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(d, "load"));
    }
    v->queued = (int)cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(r, "queued"));
    cJSON_Delete(r);
    v->sent = 0;
    v->known = 1;
    v->down = 0;
    v->status_at = kiln_mono_ns();
    return 0;
}

int kiln_verifiers_check(kiln_verifiers *vs, kiln_error *err)
{
    for (int i = 0; i < vs->n; i++)
        if (refresh(vs->v[i], err) < 0)
            return kiln_fail(err, "verifier %s (%d of %d) does not answer: %s", vs->v[i]->address,
                             i + 1, vs->n, vs->v[i]->why);
    return 0;
}

int kiln_verifier_answers(const char *address, int timeout_ms, kiln_error *err)
{
    kiln_client c;
    if (kiln_client_open(&c, address, 0, err) < 0)
        return 0;
    cJSON *r = kiln_client_request(&c, "ping", timeout_ms, err);
    kiln_client_close(&c);
    const char *ev = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(r, "event"));
    int ok = ev && strcmp(ev, "pong") == 0;
    if (r && !ok)
        kiln_fail(err, "kilnd at %s did not answer a ping", address);
    cJSON_Delete(r);
    return ok;
}

/* ---- the choice ------------------------------------------------------------ */

static void rescan_if_due(kiln_verifiers *vs)
{
    if (vs->fleet[0] && kiln_mono_ns() - vs->scanned_at > KILN_VERIFIER_SCAN_MS * 1000000ull)
        scan(vs);
}

kiln_verifier *kiln_verifiers_find(kiln_verifiers *vs, const char *tag)
{
    rescan_if_due(vs);
    for (int i = 0; i < vs->n; i++)
        if (strcmp(vs->v[i]->tag, tag) == 0)
            return vs->v[i];
    return NULL;
}

static int avoided(const kiln_verifier *v, kiln_verifier *const *avoid, int navoid)
{
    for (int i = 0; i < navoid; i++)
        if (avoid[i] == v)
            return 1;
    return 0;
}

/* Why no verifier could take the job: each one's state, in err. */
static void explain(const kiln_verifiers *vs, int kind, kiln_verifier *const *avoid, int navoid,
                    kiln_error *err)
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
                                                                             : "not asked yet";
        w += snprintf(msg + w, sizeof msg - (size_t)w, "%s%s: %.200s", i ? "; " : ": ", v->address, state);
    }
    kiln_fail(err, "%s", msg);
}

kiln_verifier *kiln_verifiers_pick(kiln_verifiers *vs, const char *backend,
                                   kiln_verifier *const *avoid, int navoid, kiln_error *err)
{
    int kind = backend && strcmp(backend, "cuda") == 0;
    rescan_if_due(vs);
    uint64_t now = kiln_mono_ns();
    kiln_verifier *best = NULL;
    long best_jobs = 0;
    for (int k = 0; k < vs->n; k++) {
        kiln_verifier *v = vs->v[(vs->turn + (unsigned)k) % (unsigned)vs->n];
        if (v->gone || avoided(v, avoid, navoid))
            continue;
        if (v->down && now - v->down_at < KILN_VERIFIER_RETRY_S * 1000000000ull)
            continue;
        kiln_error e;
        if ((!v->known || now - v->status_at > KILN_VERIFIER_STATUS_MS * 1000000ull) &&
            refresh(v, &e) < 0)
            continue;
        if (!v->lanes[kind])
            continue;
        /* the fewest jobs per lane once this one is added: a daemon of 8
         * lanes gets twice the jobs of one of 4, the idle before the busy */
        long jobs = (long)v->load[kind] + v->queued + v->sent + 1;
        if (!best || jobs * best->lanes[kind] < best_jobs * v->lanes[kind])
            best = v, best_jobs = jobs;
    }
    vs->turn++;
    if (!best) {
        explain(vs, kind, avoid, navoid, err);
        return NULL;
    }
    best->sent++;
    return best;
}
