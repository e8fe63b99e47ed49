/* search_state.c - what every part of a search shares (search_state.h):
 * interrupts, the clock, and the numbers a search reads from verdicts. */
#include "search_state.h"
#include "worker_io.h"   /* kiln_mono_ns */

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
    return (double)kiln_mono_ns() / 1e9;   /* the one monotonic clock, in seconds */
}

/* ---- verdict numbers ------------------------------------------------------- */

/* The noise of a verdict's speedup: per timed shape, the half 20-80 spread
 * of candidate and baseline relative to their medians, combined; the median
 * over shapes; never below 2%. */
double kiln_verdict_noise(const kiln_verdict *v)
{
    double rel[KILN_MAX_RESULTS];
    int n = 0;
    for (int i = 0; i < v->nresults; i++) {
        const kiln_shape_result *r = &v->results[i];
        if (!r->timed)
            continue;
        rel[n++] = kiln_shape_noise(r);
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

void kiln_cand_from_verdict(kiln_cand *c, const kiln_verdict *v)
{
    snprintf(c->status, sizeof c->status, "%s", v->status);
    snprintf(c->stage, sizeof c->stage, "%s", v->stage);
    snprintf(c->code, sizeof c->code, "%s", v->code);
    snprintf(c->reason, sizeof c->reason, "%s", v->reason);
    c->speedup = v->geomean_speedup;
}

/* What the next iteration will take, as the budget judges it: the slowest
 * so far (the start kernel's verification at first) with half again to
 * spare, or the average of earlier sessions of a resumed run. */
double kiln_search_next_iteration_s(const search *s)
{
    const kiln_run *r = &s->run;
    double next = 1.5 * s->slowest_iteration_s;
    if (r->iterations_done > 0 && r->seconds_used / r->iterations_done > next)
        next = r->seconds_used / r->iterations_done;
    return next;
}
