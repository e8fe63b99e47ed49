/* cpu_agree.h - whether a CPU worker's reported call times agree with the
 * CPU time the kernel charged it: the CPU backend's timer check. */
#ifndef KILN_CPU_AGREE_H
#define KILN_CPU_AGREE_H

#include <stddef.h>

/* One shape's timed pairs, as the verifier saw them. A gap is the CPU time
 * the kernel charged a worker over one call's round trip, less the time
 * the worker reported for it. */
typedef struct kiln_cpu_timers {
    const double *cand;       /* reported per candidate call */
    const double *cand_gap;
    const double *base_gap;
    const double *base;       /* reported per baseline call */
    const double *base_wait;  /* time each baseline call's worker spent waiting
                                 for a core over its round trip (NULL: unknown) */
    int n;                    /* pairs */
    double cand_between_ns;   /* CPU charged to the candidate's worker while
                                 none of its calls was in flight (-1: unknown) */
} kiln_cpu_timers;

/* The CPU per candidate call that the report leaves out, beyond the
 * worker's own overhead per call; and how much of it noise allows. */
void kiln_cpu_excess(const kiln_cpu_timers *t, double *excess, double *allowed);

/* Writes what disagrees into why (empty when they agree). */
void kiln_cpu_timers_agree(const kiln_cpu_timers *t, char *why, size_t len);

#endif
