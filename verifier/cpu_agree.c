/* cpu_agree.c - the CPU backend's timer check (see cpu_agree.h).
 *
 * The candidate shares its worker's address space, so the time the worker
 * reports for a call is the candidate's to forge. What it cannot forge is
 * the CPU time the kernel charges the worker. Over one call's round trip
 * that is the call's own CPU time plus the worker's overhead per call
 * (decoding the request, the two pipe transfers): the same binary does
 * the same work for both sides. So the gap, charged minus reported, is
 *
 *     overhead - (time the call waited for a core) + (time left unreported)
 *
 * Waiting only lowers a gap. A lie raises the candidate's. The first
 * verifier compared the two workers' gaps pair by pair, which read a
 * baseline that waited for its core as a candidate that lied: CI's loaded
 * machine flagged an honest kernel for 19.7 ms, then 9.7 ms, "unreported"
 * per call, with the baseline's calls waiting in more than 80% of pairs.
 * Here the overhead comes from the baseline's calls that the kernel says
 * did not wait, and only the candidate's gap is judged against it.
 *
 * A worker that runs between its calls (a candidate that hooked the
 * worker's loop) is judged apart: the baseline runs on the same core, so
 * any CPU the candidate's worker takes while it should be blocked reading
 * can only come out of the baseline's time or the verifier's. */
#include "cpu_agree.h"

#include <math.h>
#include <stdio.h>

#include "timing.h"

#define KILN_CPU_BETWEEN_FLOOR_NS 20e3
#define KILN_CLEAN_WAIT_NS 100e3

/* The baseline's overhead per call: the median gap of its calls that did
 * not wait for a core (under 100 us over the round trip: what waiting a
 * call can do comes in scheduler slices of milliseconds, the wake-up is
 * tens of microseconds, outside the timed call). Without at least three
 * such calls, or where the kernel does not show the waits, the 80th
 * percentile of all its gaps. Never below 0: the round trip holds the call. */
static double overhead(const kiln_cpu_timers *t)
{
    double clean[512];
    int k = 0, n = t->n < 512 ? t->n : 512;
    for (int i = 0; t->base_wait && i < n; i++)
        if (t->base_wait[i] < KILN_CLEAN_WAIT_NS)
            clean[k++] = t->base_gap[i];
    if (k >= 3)
        return fmax(0, kiln_median(clean, k));
    kiln_time_stats st;
    kiln_time_stats_of(t->base_gap, n, &st);
    return fmax(0, st.p80_ns);
}

/* kiln_cpu_excess, with the overhead it was judged against. */
static void excess_over(const kiln_cpu_timers *t, double *o, double *excess, double *allowed)
{
    double d[512], dev[512];
    int n = t->n < 512 ? t->n : 512;
    *o = *excess = *allowed = 0;
    if (n < 1)
        return;
    *o = overhead(t);
    for (int i = 0; i < n; i++)
        d[i] = t->cand_gap[i] - *o;
    *excess = kiln_median(d, n);
    for (int i = 0; i < n; i++)
        dev[i] = fabs(d[i] - *excess);
    /* Allow for the noise actually seen: a robust standard error of the
     * median, plus a floor for clock granularity. */
    double se = 1.4826 * kiln_median(dev, n) * 1.2533 / sqrt((double)n);
    /* A quarter of the reported time: a lie that claims more than 1.25x is
     * caught once it stands out of the noise; honest calls on a loaded
     * machine were seen up to 16% apart. */
    *allowed = fmax(fmax(5e3, 4 * se), 0.25 * kiln_median(t->cand, n));
}

void kiln_cpu_excess(const kiln_cpu_timers *t, double *excess, double *allowed)
{
    double o;
    excess_over(t, &o, excess, allowed);
}

/* CPU the candidate's worker took between its calls, per pair, and how
 * much is allowed: the worker's return into its blocking read after each
 * answer (a few microseconds), or a twentieth of the baseline's call,
 * whichever is more. Beyond that it could have moved the baseline's time. */
static int between_calls(const kiln_cpu_timers *t, double *per_pair, double *allowed)
{
    if (t->cand_between_ns < 0 || t->n < 1)
        return 0;
    *per_pair = t->cand_between_ns / t->n;
    *allowed = fmax(KILN_CPU_BETWEEN_FLOOR_NS, 0.05 * kiln_median(t->base, t->n));
    return *per_pair > *allowed;
}

void kiln_cpu_timers_agree(const kiln_cpu_timers *t, char *why, size_t len)
{
    double o, excess, allowed, per_pair;
    why[0] = '\0';
    excess_over(t, &o, &excess, &allowed);
    if (excess > allowed) {
        snprintf(why, len, "the kernel charged the worker %.0f us more CPU per candidate call "
                 "than it reported, beyond the %.0f us a call costs the worker",
                 excess / 1e3, o / 1e3);
        return;
    }
    if (between_calls(t, &per_pair, &allowed))
        snprintf(why, len, "the candidate's worker used %.0f us of CPU per pair between its "
                 "calls, while the baseline ran on its core", per_pair / 1e3);
}
