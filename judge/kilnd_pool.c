/* kilnd_pool.c - the verifiers of one search that need sockets, files or the
 * clock (see kilnd_pool.h): a fleet directory read and read again, each
 * daemon's status asked, a ping, and the choice of one for each job with
 * statuses fresh. The rules themselves are in kilnd_pool_rules.c. */
#include "kilnd_pool.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "daemon_client.h"
#include "fileutil.h"
#include "worker_io.h"   /* kiln_mono_ns */

/* One endpoint file: its verifier (added when new), or NULL with why. */
static kiln_verifier *endpoint_of(kiln_verifiers *vs, const char *file, char *why, size_t len)
{
    char *text = NULL, addr[512];
    size_t n;
    kiln_error err;
    if (kiln_read_file(file, 1 << 16, &text, &n, &err) < 0) {
        free(text);
        return snprintf(why, len, "%.200s", err.msg), NULL;
    }
    int rc = kiln_verifier_endpoint(text, addr, sizeof addr, why, len);
    free(text);
    if (rc < 0)
        return NULL;
    kiln_verifier *v = kiln_verifiers_at(vs, addr);
    if (!v && !(v = kiln_verifiers_add(vs, addr, &err)))
        snprintf(why, len, "%.200s", err.msg);
    return v;
}

/* Read DIR/endpoints again: new endpoints join; those whose file is gone
 * (kiln fleet down) are not chosen any more, but still found by tag. Files
 * that are not endpoint files (files are written whole: kilnd.sbatch
 * renames them into place) are skipped and named in vs->bad. */
static void scan(kiln_verifiers *vs)
{
    char path[4200], bad[sizeof vs->bad] = "";
    size_t w = 0;
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
        char file[4500], why[300];
        snprintf(file, sizeof file, "%s/%s", path, e->d_name);
        kiln_verifier *v = endpoint_of(vs, file, why, sizeof why);
        if (v)
            v->gone = 0;
        else if (w < sizeof bad)
            w += (size_t)snprintf(bad + w, sizeof bad - w, "%s%s: %s", w ? "; " : "", file, why);
    }
    closedir(dh);
    for (int i = 0; i < vs->n; i++)
        vs->v[i]->gone = vs->v[i]->gone != 0;
    if (strcmp(bad, vs->bad) != 0) {
        snprintf(vs->bad, sizeof vs->bad, "%s", bad);
        vs->bad_news = 1;
    }
}

int kiln_fleet_dir_check(const char *dir, char *token, size_t len, kiln_error *err)
{
    struct stat st;
    if (stat(dir, &st) < 0)
        return kiln_fail(err, "%s is not a fleet directory: %s", dir, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return kiln_fail(err, "%s is not a fleet directory: not a directory", dir);
    snprintf(token, len, "%s/token", dir);
    if (stat(token, &st) < 0)
        return kiln_fail(err, "no token file %s (kiln fleet up makes it): %s", token,
                         strerror(errno));
    if ((st.st_mode & 077) != 0)
        return kiln_fail(err, "the token file %s has mode %04o: it must be 0600 (chmod 600 %s)",
                         token, (unsigned)(st.st_mode & 07777), token);
    setenv("KILN_TOKEN_FILE", token, 1);
    return 0;
}

int kiln_verifiers_fleet(kiln_verifiers *vs, const char *dir, kiln_error *err)
{
    memset(vs, 0, sizeof *vs);
    char token[4200];
    if (kiln_fleet_dir_check(dir, token, sizeof token, err) < 0)
        return kiln_error_prefix(err, "--fleet");
    snprintf(vs->fleet, sizeof vs->fleet, "%s", dir);
    scan(vs);
    return 0;
}

/* ---- status and health ----------------------------------------------------- */

void kiln_verifier_down(kiln_verifier *v, const char *why)
{
    kiln_verifier_down_at(v, why, kiln_mono_ns());
}

/* Ask v for its status: lanes of each kind, their load, its queue. The
 * reply and the connection are freed on every path (this runs every second
 * per daemon for hours). */
static int refresh(kiln_verifier *v, kiln_error *err)
{
    cJSON *r = kiln_client_status(v->address, 5000, err);
    int rc = r ? kiln_verifier_apply_status(v, r, kiln_mono_ns(), err) : -1;
    cJSON_Delete(r);
    if (rc < 0)
        kiln_verifier_down(v, err->msg);
    return rc;
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

kiln_verifier *kiln_verifiers_pick(kiln_verifiers *vs, const char *backend,
                                   kiln_verifier *const *avoid, int navoid, kiln_error *err)
{
    int kind = backend && strcmp(backend, "cuda") == 0;
    rescan_if_due(vs);
    uint64_t now = kiln_mono_ns();
    for (int i = 0; i < vs->n; i++) {
        kiln_verifier *v = vs->v[i];
        int skip = v->gone || kiln_verifier_resting(v, now);
        for (int a = 0; a < navoid && !skip; a++)
            skip = avoid[a] == v;
        kiln_error e;
        if (!skip && kiln_verifier_stale(v, now))
            refresh(v, &e);   /* a failure marks it down, with why */
    }
    return kiln_verifiers_choose(vs, kind, avoid, navoid, kiln_mono_ns(), err);
}
