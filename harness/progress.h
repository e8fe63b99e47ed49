/* progress.h - what a search tells the person or script watching it: a
 * live status line on a terminal, one line per iteration otherwise, or one
 * JSON event per line with --json. */
#ifndef KILN_PROGRESS_H
#define KILN_PROGRESS_H

#include <cjson/cJSON.h>

typedef struct kiln_progress {
    int json, tty;
    char run[32];
    int iteration, budget_iterations;
    double elapsed_s, budget_s;
    double best_speedup, best_roofline;
    char last[256];
} kiln_progress;

void kiln_progress_init(kiln_progress *p, int json);
/* A one-off event: {"event": name, ...fields} (fields is consumed). */
void kiln_progress_event(kiln_progress *p, const char *name, cJSON *fields);
/* The state changed: redraw the status line (tty) or print a line. */
void kiln_progress_update(kiln_progress *p, int end_of_iteration);
void kiln_progress_error(kiln_progress *p, const char *msg);
void kiln_progress_finish_line(kiln_progress *p);

#endif
