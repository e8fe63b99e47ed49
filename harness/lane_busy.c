/* lane_busy.c - samples of the verifiers' lane busy seconds (see
 * lane_busy.h). */
#include "lane_busy.h"

#include <stdio.h>
#include <string.h>

#include "daemon_client.h"
#include "search_state.h"   /* kiln_wall_now */
#include "kilnd_pool.h"

int kiln_lane_status_busy(const cJSON *status, const char *kind, int *lanes, double *busy_s,
                          double *uptime_s)
{
    const char *ev = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(status, "event"));
    if (!ev || strcmp(ev, "status") != 0)
        return -1;
    int cuda = strcmp(kind, "cuda") == 0;
    *lanes = 0;
    *busy_s = 0;
    const cJSON *up = cJSON_GetObjectItemCaseSensitive(status, "uptime_s");
    *uptime_s = cJSON_IsNumber(up) && up->valuedouble >= 0 ? up->valuedouble : 0;
    const cJSON *d;
    cJSON_ArrayForEach(d, cJSON_GetObjectItemCaseSensitive(status, "devices")) {
        const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(d, "name"));
        if (!name || (cuda ? strncmp(name, "cuda:", 5) != 0 : strcmp(name, "cpu") != 0))
            continue;
        const cJSON *b = cJSON_GetObjectItemCaseSensitive(d, "busy_s");
        if (!cJSON_IsNumber(b) || b->valuedouble < 0)
            return -1;
        (*lanes)++;
        *busy_s += b->valuedouble;
    }
    return 0;
}

/* One daemon's lanes of kind into out->d[out->n]; 0 when it answered. */
static int sample_one(const char *address, const char *kind, kiln_lane_sample *out)
{
    kiln_error err = {0};
    cJSON *r = kiln_client_status(address, 5000, &err);
    int lanes = 0;
    double busy = 0, up = 0;
    int rc = r ? kiln_lane_status_busy(r, kind, &lanes, &busy, &up) : -1;
    cJSON_Delete(r);
    if (rc < 0 || lanes == 0)
        return -1;
    snprintf(out->d[out->n].address, sizeof out->d[0].address, "%s", address);
    out->d[out->n].busy_s = busy;
    out->d[out->n].lanes = lanes;
    out->d[out->n].uptime_s = up;
    out->n++;
    return 0;
}

int kiln_lane_sample_take(const kiln_judge *j, kiln_lane_sample *out)
{
    memset(out, 0, sizeof *out);
    out->at = kiln_wall_now();
    if (j->in_process)
        return 0;
    const char *kind = j->backend && strcmp(j->backend, "cuda") == 0 ? "cuda" : "cpu";
    if (!j->verifiers) {
        sample_one(j->address, kind, out);
        return out->n;
    }
    for (int i = 0; i < j->verifiers->n && out->n < KILN_LANE_BUSY_MAX; i++)
        if (!j->verifiers->v[i]->gone)
            sample_one(j->verifiers->v[i]->address, kind, out);
    return out->n;
}

/* Where b's daemon i is in a, or -1. */
static int find(const kiln_lane_sample *a, const char *address)
{
    for (int k = 0; k < a->n; k++)
        if (strcmp(a->d[k].address, address) == 0)
            return k;
    return -1;
}

void kiln_lane_sample_diff(const kiln_lane_sample *a, const kiln_lane_sample *b, double *busy_s,
                           double *lane_s)
{
    *busy_s = *lane_s = 0;
    double wall = b->at - a->at;
    if (wall <= 0)
        return;
    for (int i = 0; i < b->n; i++) {
        int k = find(a, b->d[i].address);
        /* uptime is whole seconds: a daemon up less than the span (less
         * one second of rounding) restarted inside it; one not asked at a
         * and up no longer than the span (plus that second) started
         * inside it */
        double up = b->d[i].uptime_s;
        int restarted = k >= 0 && (up + 1 < wall || b->d[i].busy_s < a->d[k].busy_s ||
                                   b->d[i].lanes != a->d[k].lanes);
        double busy, span;
        if (k >= 0 && !restarted) {
            busy = b->d[i].busy_s - a->d[k].busy_s;
            span = wall;
        } else if (restarted || up <= wall + 1) {
            busy = b->d[i].busy_s;   /* all of it since its start */
            span = up + 1 < wall ? up + 1 : wall;
        } else {
            continue;   /* up before a, yet not asked then: its part is unknown */
        }
        /* a lane cannot be busier than the span: clocks and rounding aside */
        double cap = span * b->d[i].lanes;
        *busy_s += busy < cap ? busy : cap;
        *lane_s += cap;
    }
}
