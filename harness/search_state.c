/* search_state.c - what every part of a search shares (search_state.h):
 * interrupts, the clock, and the numbers a search reads from verdicts. */
#include "search_state.h"
#include "worker_io.h"   /* kiln_mono_ns */

#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t interrupts;   /* Ctrl-C and SIGTERM */
static volatile sig_atomic_t first_signal; /* the first that asked the search to stop */
static int output_pipe;                    /* stdout is a pipe or socket (its reader can go) */

static void on_interrupt(int sig)
{
    if (!first_signal)
        first_signal = sig;
    if (sig == SIGHUP)   /* a dropped terminal can send several: none aborts */
        return;
    if (++interrupts >= 2) {
        static const char msg[] = "\nkiln search: aborted (resume with --resume)\n";
        (void)!write(2, msg, sizeof msg - 1);
        _exit(130);
    }
}

/* Ctrl-C, SIGTERM and SIGHUP (the terminal went away) stop the search after
 * the current step; a second Ctrl-C or SIGTERM exits at once. Under nohup
 * SIGHUP stays ignored. SIGPIPE is ignored: a write to a closed pipe fails
 * with EPIPE instead of killing the search, and kiln_search_should_stop
 * sees the reader gone. */
void kiln_search_catch_interrupts(void)
{
    struct sigaction sa = {.sa_handler = on_interrupt}, old;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    if (sigaction(SIGHUP, NULL, &old) == 0 && old.sa_handler != SIG_IGN)
        sigaction(SIGHUP, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    struct stat st;
    output_pipe = fstat(STDOUT_FILENO, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode));
}

int kiln_search_output_gone(void)
{
    struct pollfd p = {.fd = STDOUT_FILENO, .events = POLLOUT};
    return output_pipe && poll(&p, 1, 0) == 1 && (p.revents & (POLLERR | POLLHUP)) != 0;
}

int kiln_search_should_stop(void)
{
    return interrupts > 0 || first_signal != 0 || kiln_search_output_gone();
}

const char *kiln_search_stop_cause(void)
{
    switch (first_signal) {
    case SIGINT:
        return "Ctrl-C";
    case SIGTERM:
        return "SIGTERM";
    case SIGHUP:
        return "SIGHUP, the terminal went away";
    default:
        return kiln_search_output_gone() ? "SIGPIPE, the output's reader went away" : "";
    }
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

int kiln_search_best_kept(search *s, kiln_cand *best)
{
    kiln_cand *cs = NULL;
    int n = 0, found = -1;
    kiln_error e;
    if (kiln_db_cands(s->db, s->run.id, &cs, &n, &e) < 0) {
        free(cs);
        return -1;
    }
    for (int i = 0; i < n; i++)
        if (strcmp(cs[i].decision, "keep") == 0 && cs[i].commit[0] &&
            (found < 0 || cs[i].speedup_vs_baseline > cs[found].speedup_vs_baseline))
            found = i;
    if (found >= 0)
        *best = cs[found];
    free(cs);
    return found >= 0 ? 0 : -1;
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
