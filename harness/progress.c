/* progress.c - reporting a search as it goes (see progress.h). */
#include "progress.h"

#include "live_width.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void kiln_progress_init(kiln_progress *p, int json)
{
    memset(p, 0, sizeof *p);
    p->json = json;
    p->tty = !json && isatty(STDOUT_FILENO);
}

void kiln_progress_event(kiln_progress *p, const char *name, cJSON *fields)
{
    if (!p->json) {
        cJSON_Delete(fields);
        return;
    }
    cJSON *o = fields ? fields : cJSON_CreateObject();
    cJSON_AddStringToObject(o, "event", name);
    cJSON_AddStringToObject(o, "run", p->run);
    /* When it happened: seconds since the epoch to the millisecond, a
     * number any reader subtracts (docs/search.md, "Events"). */
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    cJSON_AddNumberToObject(o, "t", (double)now.tv_sec + (double)(now.tv_nsec / 1000000) / 1000.0);
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (s)
        printf("%s\n", s);
    free(s);
    fflush(stdout);
}

static void fmt_clock(double s, char *buf, size_t len)
{
    int t = (int)s;
    snprintf(buf, len, "%02d:%02d:%02d", t / 3600, t / 60 % 60, t % 60);
}

void kiln_progress_update(kiln_progress *p, int end_of_iteration)
{
    if (p->json)
        return;
    char el[16], left[32] = "", it[32];
    fmt_clock(p->elapsed_s, el, sizeof el);
    double eta;
    if (p->budget_s > 0) {
        char l[16];
        fmt_clock(p->budget_s > p->elapsed_s ? p->budget_s - p->elapsed_s : 0, l, sizeof l);
        snprintf(left, sizeof left, " (%s left)", l);
    } else if ((eta = kiln_eta_seconds(p->elapsed_s, p->iteration, p->budget_iterations)) >= 0) {
        /* --iterations alone: the mean of the iterations done so far,
         * rounded up so that work left never reads as 00:00:00 */
        char l[16];
        fmt_clock(ceil(eta), l, sizeof l);
        snprintf(left, sizeof left, " (about %s left)", l);
    }
    if (p->budget_iterations > 0)
        snprintf(it, sizeof it, "%d/%d", p->iteration, p->budget_iterations);
    else
        snprintf(it, sizeof it, "%d", p->iteration);
    char line[640];
    snprintf(line, sizeof line, "[%s] it %s  %s%s  best %.2fx (%.0f%% roofline)  last: %.200s",
             p->run, it, el, left, p->best_speedup, 100 * p->best_roofline, p->last);
    if (p->tty) {
        /* fitted to the terminal's width: a longer line would wrap, and
         * the next redraw ("\r") would leave its first part behind */
        int fit = (int)kiln_fit_columns(line, kiln_term_columns(STDOUT_FILENO));
        printf("\r\033[K%.*s", fit, line);
        fflush(stdout);
    } else if (end_of_iteration) {
        printf("%s\n", line);
        fflush(stdout);
    }
}

void kiln_progress_finish_line(kiln_progress *p)
{
    if (p->tty)
        printf("\n");
}

void kiln_progress_error(kiln_progress *p, const char *msg)
{
    if (!p->json)
        return;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "message", msg);
    kiln_progress_event(p, "error", o);
}
