/* search_state.c - what every part of a search shares (search_state.h):
 * interrupts, the clock, and the numbers a search reads from verdicts. */
#include "search_state.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t interrupts;

static void on_interrupt(int sig)
{
    (void)sig;
    if (++interrupts >= 2) {
        static const char msg[] = "\nkiln search: aborted (resume with --resume)\n";
        (void)!write(2, msg, sizeof msg - 1);
        _exit(130);
    }
}

/* Ctrl-C (or SIGTERM) stops the search after the current step; a second
 * one exits at once. */
void kiln_search_catch_interrupts(void)
{
    struct sigaction sa = {.sa_handler = on_interrupt};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

int kiln_search_should_stop(void)
{
    return interrupts > 0;
}

double kiln_wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ---- verdict numbers ------------------------------------------------------- */

double kiln_verdict_speedup(const cJSON *v)
{
    const cJSON *sum = cJSON_GetObjectItemCaseSensitive(v, "summary");
    return cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(sum, "geomean_speedup"));
}

/* The noise of a verdict's speedup: per timed shape, the half 20-80 spread
 * of candidate and baseline relative to their medians, combined; the median
 * over shapes; never below 2%. */
double kiln_verdict_noise(const cJSON *v)
{
    double rel[128];
    int n = 0;
    const cJSON *s;
    cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(v, "shapes")) {
        const cJSON *tm = cJSON_GetObjectItemCaseSensitive(s, "time");
        if (!tm || n == 128)
            continue;
        double r2 = 0;
        for (int k = 0; k < 2; k++) {
            const cJSON *st = cJSON_GetObjectItemCaseSensitive(tm, k ? "baseline" : "candidate");
            double med = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(st, "median_ns"));
            double p20 = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(st, "p20_ns"));
            double p80 = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(st, "p80_ns"));
            double h = med > 0 ? (p80 - p20) / (2 * med) : 1;
            r2 += h * h;
        }
        rel[n++] = sqrt(r2);
    }
    for (int i = 1; i < n; i++)   /* insertion sort: n is small */
        for (int k = i; k > 0 && rel[k] < rel[k - 1]; k--) {
            double t = rel[k];
            rel[k] = rel[k - 1];
            rel[k - 1] = t;
        }
    double med = n ? (n % 2 ? rel[n / 2] : 0.5 * (rel[n / 2 - 1] + rel[n / 2])) : 1;
    return med > 0.02 ? med : 0.02;
}

static const char *vstr(const cJSON *v, const char *k)
{
    const char *s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(v, k));
    return s ? s : "";
}

void kiln_cand_from_verdict(kiln_cand *c, const cJSON *v)
{
    snprintf(c->status, sizeof c->status, "%s", vstr(v, "status"));
    snprintf(c->stage, sizeof c->stage, "%s", vstr(v, "stage"));
    snprintf(c->code, sizeof c->code, "%s", vstr(v, "code"));
    snprintf(c->reason, sizeof c->reason, "%s", vstr(v, "reason"));
    c->speedup = kiln_verdict_speedup(v);
}
