/* pooled.h - pooled measurements (docs/search.md, "Pooled measurements"):
 * two verdicts of one kernel against one baseline, each from a fresh
 * worker, taken as one. Per visible timed shape the speedup is the
 * geometric mean of the two, its interval the hull of both; where the two
 * intervals do not overlap, the lower figure (and its timings) is taken and
 * the reason says so. A claimed speedup (vs the parent: the verdict and its
 * re-time; vs the task's baseline: the record and its re-record) is always
 * such a pool, never one measurement. Pure arithmetic on decoded verdicts:
 * no database, no git. */
#ifndef KILN_POOLED_H
#define KILN_POOLED_H

#include <stddef.h>

#include "keep_rule.h"
#include "verdict.h"

/* n >= 1 intervals of one figure pooled: the point the geometric mean of
 * the points, the interval the hull (lowest lo, highest hi); when they do
 * not all overlap (the highest lo above the lowest hi), the point is the
 * lowest point. Returns 1 when they did not overlap, else 0. */
int kiln_pool_intervals(const kiln_interval *x, int n, kiln_interval *out);

/* a and b (two measurements of one kernel against one baseline) pooled
 * into out (which is neither). A verdict that did not pass makes the pool that verdict (the
 * first of the two that failed). Otherwise out is a with, per visible timed
 * shape, the pooled speedup and interval (speedup_lo/hi, so the keep rule's
 * arithmetic reads it as measured), times and roofline fraction (geometric
 * means, or the lower measurement's); a shape that b did not time is left
 * untimed (one measurement is no claim). geomean_speedup is the geometric
 * mean of the pooled shapes (the lower of the two verdicts' geomeans when
 * their intervals do not overlap), min_speedup their minimum.
 * why gets "" or what was set aside ("v2's two intervals do not overlap:
 * the lower taken"). Returns the number of shapes pooled (0: none timed). */
int kiln_pool_verdicts(const kiln_verdict *a, const kiln_verdict *b, kiln_verdict *out,
                       char *why, size_t len);

/* The pooled geomean with its interval (kiln_geomean_interval of a pool). */
void kiln_pool_geomean(const kiln_verdict *pooled, double *point, double *lo, double *hi);

#endif
