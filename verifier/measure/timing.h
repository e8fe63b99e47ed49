/* timing.h - summary statistics of timed calls. */
#ifndef KILN_TIMING_H
#define KILN_TIMING_H

#include "verdict.h"

/* Median, 20th and 80th percentile of n samples (n >= 1); input untouched. */
void kiln_time_stats_of(const double *samples, int n, kiln_time_stats *out);
double kiln_median(const double *samples, int n);

/* Stop adding pairs once the median is known to about 1%: the 20-80 spread
 * over sqrt(count) is below 1% of the median. */
int kiln_timing_converged(const kiln_time_stats *a, const kiln_time_stats *b);

/* The speedup base/cand from n paired samples (both sides timed in the
 * same round, alternating who goes first): the geometric mean of the
 * paired ratios, and its 95% interval from Student's t on the log ratios.
 * Returns the interval's half-width in log units (INFINITY for n < 2). */
double kiln_ratio_interval(const double *base, const double *cand, int n, double *est,
                           double *lo, double *hi);

#endif
