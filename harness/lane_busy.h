/* lane_busy.h - how busy the verifiers' device lanes were while a search
 * ran. kilnd counts the seconds jobs held each lane (status's "busy_s");
 * the search takes one sample when a session starts and one when it ends,
 * and the lanes' busy seconds between the two over their lane-seconds are
 * the share reported (docs/search.md, "Where the time goes"). A lane
 * counts whoever's job held it: with other clients on the same daemon the
 * share is the daemon's, not this run's alone. */
#ifndef KILN_LANE_BUSY_H
#define KILN_LANE_BUSY_H

#include <cjson/cJSON.h>

#include "judge.h"

#define KILN_LANE_BUSY_MAX 64   /* daemons one sample holds */

typedef struct kiln_lane_sample {
    int n;
    struct {
        char address[512];
        double busy_s;          /* the busy seconds of its lanes of the kind, summed */
        int lanes;              /* how many lanes of the kind it has */
        double uptime_s;        /* how long it has run (whole seconds) */
    } d[KILN_LANE_BUSY_MAX];
    double at;                  /* kiln_wall_now() of the sample */
} kiln_lane_sample;

/* Of one status event: the lanes of kind ("cpu", or "cuda" for cuda:N),
 * their busy seconds summed, and the daemon's uptime. -1 when the event is
 * no status or a lane of the kind lacks busy_s (a kilnd from before it
 * counted them). */
int kiln_lane_status_busy(const cJSON *status, const char *kind, int *lanes, double *busy_s,
                          double *uptime_s);

/* Ask every daemon the judge sends to (its verifiers, or the one kilnd at
 * its address) for its lanes of the judge's backend. The number that
 * answered; 0 in process or when none did (no error: the share is then
 * unknown, the search goes on). */
int kiln_lane_sample_take(const kiln_judge *j, kiln_lane_sample *out);

/* Between samples a and b: the busy seconds and the lane-seconds of the
 * daemons in b. One also in a counts from a; one that started (or
 * restarted) in between, as kiln starts its daemon on the first job,
 * counts from its start, which its uptime dates. One that was running
 * before a but did not answer then is left out. */
void kiln_lane_sample_diff(const kiln_lane_sample *a, const kiln_lane_sample *b, double *busy_s,
                           double *lane_s);

#endif
