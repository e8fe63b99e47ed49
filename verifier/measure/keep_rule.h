/* keep_rule.h - the search's keep rule (docs/search.md, "Keep rule"): the
 * speedup intervals a decision rests on, and the decision with its reason.
 * Pure arithmetic on a decoded verdict: no database, no git. */
#ifndef KILN_KEEP_RULE_H
#define KILN_KEEP_RULE_H

#include <stddef.h>

#include "kiln_error.h"
#include "task.h"
#include "verdict.h"

#define KILN_OBJECTIVE_MAX 16

/* A speedup and its interval; measured: 1 when the backend gave the
 * interval (speedup_lo/hi), 0 when it comes from the timing spreads. */
typedef struct kiln_interval {
    double point, lo, hi;
    int measured;
} kiln_interval;

/* The keep rule's settings, as `kiln search` takes and a run records them. */
typedef struct kiln_keep_opts {
    double margin;              /* the objective's lower end must exceed 1 + margin */
    double max_regression;      /* no shape's speedup below 1 - max_regression */
    char objective[KILN_OBJECTIVE_MAX];   /* "geomean", "min" or a visible shape id */
} kiln_keep_opts;

#define KILN_KEEP_MARGIN_DEFAULT 0.02
#define KILN_MAX_REGRESSION_DEFAULT 0.03

/* "2%" -> 0.02. The % is required, so 0.02 is never read as 2% or the
 * other way round; 0 <= value < 100%. -1 with err naming flag and text. */
int kiln_keep_parse_percent(const char *flag, const char *text, double *out, kiln_error *err);
/* objective is geomean, min or the id of a visible shape of group g of
 * task t (v1 .. vN); -1 with err listing what is accepted. */
int kiln_keep_check_objective(const char *objective, const kiln_task *t, int g,
                              const char *backend, kiln_error *err);

/* One shape's relative noise: the half 20-80 spreads of candidate and
 * baseline relative to their medians, combined in quadrature (a side
 * without timings counts 1). The CPU interval's half-width in log space,
 * and kiln_verdict_noise's per-shape figure. */
double kiln_shape_noise(const kiln_shape_result *r);

/* Shape r's speedup interval (a timed shape): the backend's 95% interval,
 * else the point widened by the combined half 20-80 spreads. */
kiln_interval kiln_shape_interval(const kiln_shape_result *r);
/* The geomean over the visible timed shapes with its interval (independent
 * errors in log space); 0 shapes: all zeros. Returns the number of shapes. */
int kiln_geomean_interval(const kiln_verdict *v, kiln_interval *out);
/* The objective's value and interval; -1 when the verdict has no timed
 * shape for it (why says so). */
int kiln_objective_interval(const kiln_verdict *v, const char *objective, kiln_interval *out,
                            char *why, size_t len);

/* The rule on a verdict against the parent: 1 keep, 0 revert; why holds
 * the reason either way ("kept: geomean 1.083x [1.041, 1.126] clears 2%"). */
int kiln_keep_rule(const kiln_verdict *v, const kiln_keep_opts *k, char *why, size_t len);

#endif
