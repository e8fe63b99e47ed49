/* timing.c - medians and spreads of per-call times (see timing.h). */
#include "timing.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Linear interpolation between order statistics. */
static double quantile(const double *sorted, int n, double q)
{
    double pos = q * (n - 1);
    int lo = (int)pos;
    int hi = lo + 1 < n ? lo + 1 : lo;
    return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo);
}

void kiln_time_stats_of(const double *samples, int n, kiln_time_stats *out)
{
    memset(out, 0, sizeof *out);
    if (n <= 0)
        return;
    double *s = malloc((size_t)n * sizeof *s);
    if (!s)
        return;
    memcpy(s, samples, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    out->median_ns = quantile(s, n, 0.5);
    out->p20_ns = quantile(s, n, 0.2);
    out->p80_ns = quantile(s, n, 0.8);
    out->count = n;
    free(s);
}

double kiln_median(const double *samples, int n)
{
    kiln_time_stats st;
    kiln_time_stats_of(samples, n, &st);
    return st.median_ns;
}

static int settled(const kiln_time_stats *s)
{
    if (s->count < 2 || s->median_ns <= 0)
        return 0;
    return (s->p80_ns - s->p20_ns) / sqrt((double)s->count) < 0.01 * s->median_ns;
}

int kiln_timing_converged(const kiln_time_stats *a, const kiln_time_stats *b)
{
    return settled(a) && settled(b);
}
