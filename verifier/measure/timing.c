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

/* Student's t, two-sided 95%, for df degrees of freedom. */
static double t975(int df)
{
    static const double t[] = {0, 12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306,
                               2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110,
                               2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
                               2.052, 2.048, 2.045, 2.042};
    if (df < 1)
        return INFINITY;
    return df <= 30 ? t[df] : df <= 60 ? 2.000 : df <= 120 ? 1.980 : 1.960;
}

double kiln_ratio_interval(const double *base, const double *cand, int n, double *est,
                           double *lo, double *hi)
{
    double sum = 0, sum2 = 0;
    int m = 0;
    for (int i = 0; i < n; i++) {
        if (!(base[i] > 0) || !(cand[i] > 0))
            continue;
        double x = log(base[i] / cand[i]);
        sum += x;
        sum2 += x * x;
        m++;
    }
    double mean = m ? sum / m : 0, hw = INFINITY;
    if (m >= 2) {
        double var = (sum2 - m * mean * mean) / (m - 1);
        hw = t975(m - 1) * sqrt(var > 0 ? var : 0) / sqrt((double)m);
    }
    *est = m ? exp(mean) : 0;
    *lo = m >= 2 ? exp(mean - hw) : 0;
    *hi = m >= 2 ? exp(mean + hw) : 0;
    return hw;
}
