/* cpu_agree.c - the CPU backend's time and timer check (see cpu_agree.h).
 *
 * The candidate shares its worker's address space, so whatever that worker
 * measures or reports is the candidate's to forge: a candidate rewrote the
 * worker's GOT slot for clock_gettime and passed at 1.70x with the
 * baseline's own code. So no time that counts comes from there. What the
 * candidate cannot forge is the CPU time the kernel charges its worker,
 * read here while the worker is blocked before the request and again once
 * it is blocked after the answer. Over that round trip it is the call's
 * own CPU time plus what taking a request and answering it costs (waking,
 * the two pipe transfers, decoding, the clock readings), the same binary's
 * same work on either side. That overhead is measured on trusted code: the
 * reference's worker, a kiln-worker that runs nothing of the candidate's
 * or of a search's parent, answering a call of no library once a pair.
 * The time is the charged CPU less that overhead, for the candidate and the
 * baseline alike. Waiting for a core is not CPU, so it holds on a busy
 * machine; the stack scribbling is a round trip of its own, before the
 * call's data are staged (docs/sandbox.md), so a candidate that skips it
 * gains nothing.
 *
 * The worker's report is judged against that time, as a tripwire, at
 * shapes whose call is at least as long as the round trip's overhead: a
 * median shortfall beyond a quarter of the time, four standard errors and
 * a floor for the overhead's own spread, plus what an honest report is
 * seen to leave out beside it (the baseline's own shortfall), is
 * `timer-disagreement`.
 *
 * A worker that runs between its calls (a candidate that hooked the
 * worker's loop) is judged apart: the baseline runs on the same core, so
 * any CPU the candidate's worker takes while it should be blocked reading
 * can only come out of the baseline's time or the verifier's; and CPU
 * that a read while it ran missed shows up there. */
#include "cpu_agree.h"

#include <math.h>
#include <stdio.h>

#include "timing.h"

#define KILN_CPU_BETWEEN_FLOOR_NS 20e3
#define KILN_CPU_FIGURE_FLOOR_NS 10.0
#define KILN_CPU_REPORT_FLOOR_NS 500.0

double kiln_cpu_overhead(const kiln_cpu_timers *t)
{
    int n = t->n < 512 ? t->n : 512;
    return n > 0 && t->null_cpu ? fmax(0, kiln_median(t->null_cpu, n)) : 0;
}

/* The time's resolution: the spread of the overhead itself (a robust
 * standard deviation of the calls of no library). A call shorter than
 * that is read as that long, on either side: below it no ratio means
 * anything, and a candidate can only lose by it. */
static double resolution(const kiln_cpu_timers *t, double o)
{
    double dev[512];
    int n = t->n < 512 ? t->n : 512;
    for (int i = 0; i < n; i++)
        dev[i] = fabs(t->null_cpu[i] - o);
    return fmax(KILN_CPU_FIGURE_FLOOR_NS, n > 0 ? 1.4826 * kiln_median(dev, n) : 0);
}

void kiln_cpu_figures(const kiln_cpu_timers *t, double *cand, double *base)
{
    int n = t->n < 512 ? t->n : 512;
    double o = kiln_cpu_overhead(t), floor = t->null_cpu ? resolution(t, o) : KILN_CPU_FIGURE_FLOOR_NS;
    for (int i = 0; i < n; i++) {
        cand[i] = fmax(floor, t->cand_cpu[i] - o);
        base[i] = fmax(floor, t->base_cpu[i] - o);
    }
}

/* What an honest report leaves out of a call's round trip beyond the
 * trusted overhead, as measured beside the candidate: the baseline's own
 * shortfall, its report against its time, the same kind of call on the
 * same shape, interleaved (a plain C starter fell 0.7 us short of its time
 * at 1x1024 on a loaded machine). It widens only the allowance: the time
 * that counts still takes off the trusted overhead alone, and a report is
 * never a time. (A call of no library on the candidate's own worker would
 * measure its state's cost too, but it warmed that worker before its
 * timed call: the same code timed against itself came out 1.08x.) */
static double own_overhead_excess(const kiln_cpu_timers *t, const double *base_fig)
{
    int n = t->n < 512 ? t->n : 512;
    double d[512];
    if (n < 1 || !t->base)
        return 0;
    for (int i = 0; i < n; i++)
        d[i] = base_fig[i] - t->base[i];
    return fmax(0, kiln_median(d, n));
}

void kiln_cpu_excess(const kiln_cpu_timers *t, double *excess, double *allowed)
{
    double cand[512], base[512], d[512], dev[512];
    int n = t->n < 512 ? t->n : 512;
    *excess = *allowed = 0;
    if (n < 1)
        return;
    kiln_cpu_figures(t, cand, base);
    for (int i = 0; i < n; i++)
        d[i] = cand[i] - t->cand[i];
    *excess = kiln_median(d, n);
    for (int i = 0; i < n; i++)
        dev[i] = fabs(d[i] - *excess);
    /* Allow for the noise actually seen: a robust standard error of the
     * median; a quarter of the time (a lie that claims more than 1.25x is
     * caught once it stands out of the noise); and a floor for the
     * overhead's spread, which is most of a short call's time. */
    double se = 1.4826 * kiln_median(dev, n) * 1.2533 / sqrt((double)n);
    *allowed = fmax(fmax(KILN_CPU_REPORT_FLOOR_NS, 4 * se), 0.25 * kiln_median(cand, n)) +
               own_overhead_excess(t, base);
}

/* CPU the candidate's worker took between its calls, per pair, and how
 * much is allowed: its scribbling round trip (what the reference's worker
 * was charged for its own, the same code: 5 us here, over 20 us in a
 * sanitizer build), and its return into a blocking read after each answer
 * (a few microseconds) or a twentieth of the baseline's call, whichever is
 * more. Beyond that it could have moved the baseline's time, or hidden its
 * own from a read while it ran. */
static int between_calls(const kiln_cpu_timers *t, double *per_pair, double *allowed)
{
    double cand[512], base[512];
    if (t->cand_between_ns < 0 || t->n < 1)
        return 0;
    kiln_cpu_figures(t, cand, base);
    *per_pair = t->cand_between_ns / t->n;
    int n = t->n < 512 ? t->n : 512;
    double prep = t->prep_cpu ? kiln_median(t->prep_cpu, n) : 0;
    *allowed = prep + fmax(KILN_CPU_BETWEEN_FLOOR_NS, 0.05 * kiln_median(base, n));
    return *per_pair > *allowed;
}

/* Is the candidate's call at least as long as a round trip's own overhead?
 * Below that (a 1x1024 row: 0.2-1.4 us in a 4-5 us round trip) the
 * report's shortfall is within the overhead's noise: an honest start
 * kernel fell 1.0 us short of its time there on a loaded CI machine,
 * beside a baseline of the same code that did not, while the lies of the
 * timer plants (0.7-0.9 us there, bounded by the call itself) stand out
 * at every longer shape (4 us at 2x3000). And a report is never a time. */
static int long_enough(const kiln_cpu_timers *t)
{
    double cand[512], base[512];
    int n = t->n < 512 ? t->n : 512;
    if (n < 1)
        return 0;
    kiln_cpu_figures(t, cand, base);
    return kiln_median(cand, n) >= kiln_cpu_overhead(t);
}

void kiln_cpu_timers_agree(const kiln_cpu_timers *t, char *why, size_t len)
{
    double excess, allowed, per_pair;
    why[0] = '\0';
    kiln_cpu_excess(t, &excess, &allowed);
    if (excess > allowed && long_enough(t)) {
        snprintf(why, len, "the worker reported %.1f us less per candidate call than the CPU "
                 "the kernel charged it for the call (%.1f us allowed)", excess / 1e3,
                 allowed / 1e3);
        return;
    }
    if (between_calls(t, &per_pair, &allowed))
        snprintf(why, len, "the candidate's worker used %.0f us of CPU per pair between its "
                 "calls, while the baseline ran on its core", per_pair / 1e3);
}
