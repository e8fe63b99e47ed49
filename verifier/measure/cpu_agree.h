/* cpu_agree.h - the CPU backend's time: what the kernel charged a worker,
 * less an overhead measured on trusted code; and whether a worker's
 * reported call times agree with it (the CPU backend's timer check). */
#ifndef KILN_CPU_AGREE_H
#define KILN_CPU_AGREE_H

#include <stddef.h>

/* One shape's timed pairs, as the verifier saw them. */
typedef struct kiln_cpu_timers {
    const double *cand_cpu;   /* CPU the kernel charged the candidate's worker over
                                 each call's round trip */
    const double *base_cpu;   /* the same, the baseline's worker */
    const double *null_cpu;   /* the same, the reference's worker (trusted code)
                                 over a call of no library, one per pair */
    const double *prep_cpu;   /* the same, its scribbling round trip, one per pair
                                 (NULL: none measured) */
    const double *cand;       /* what the candidate's worker reported per call */
    const double *base;       /* ... and the baseline's (NULL: not given) */
    int n;                    /* pairs */
    double cand_between_ns;   /* CPU charged to the candidate's worker while
                                 none of its calls was in flight (-1: unknown) */
} kiln_cpu_timers;

/* What every call's round trip costs a worker beyond the call: the median
 * of null_cpu. */
double kiln_cpu_overhead(const kiln_cpu_timers *t);

/* The time that counts, per call (n into each): the CPU charged over the
 * call's round trip less the overhead, never below the overhead's own
 * spread (the time's resolution). */
void kiln_cpu_figures(const kiln_cpu_timers *t, double *cand, double *base);

/* How much CPU per candidate call its report leaves out, against that
 * time; and how much of it noise allows. */
void kiln_cpu_excess(const kiln_cpu_timers *t, double *excess, double *allowed);

/* Writes what disagrees into why (empty when they agree). */
void kiln_cpu_timers_agree(const kiln_cpu_timers *t, char *why, size_t len);

#endif
