/* incumbents.h - the per-shape objective's state (--objective per-shape;
 * docs/search.md, "Per-shape search"): for every visible shape, the kept
 * kept kernel with the highest pooled speedup against the task's baseline
 * there (the one the export serves there), with that speedup and its
 * interval. A candidate is kept when it surely beats the incumbent at one
 * shape or more: the lower end of its pooled interval above the upper end
 * of the incumbent's. Once kept, it takes every shape where its pooled
 * speedup is the highest, surely or not. So a kernel that is the
 * best at 8192 columns and worse at 4096 survives, as the geomean rule
 * never let it, and the export, which composes the kept kernels shape by
 * shape, serves each shape with its incumbent.
 *
 * Pure arithmetic on decoded verdicts: no database, no git. */
#ifndef KILN_INCUMBENTS_H
#define KILN_INCUMBENTS_H

#include <stddef.h>

#include "keep_rule.h"
#include "verdict.h"

#define KILN_OBJECTIVE_PER_SHAPE "per-shape"

typedef struct kiln_incumbent {
    char id[16];                /* the visible shape (v1 ..) */
    int n;                      /* the candidate that holds it */
    kiln_interval iv;           /* its pooled speedup against the task's baseline there */
    double roofline;            /* its fraction of the shape's floor (0: unknown) */
    char commit[41];            /* its commit, where the caller knows it ("" otherwise) */
} kiln_incumbent;

typedef struct kiln_incumbents {
    kiln_incumbent s[KILN_MAX_RESULTS];
    int n;
} kiln_incumbents;

/* The incumbent at shape id, or NULL (none yet). */
const kiln_incumbent *kiln_incumbent_at(const kiln_incumbents *in, const char *id);
/* Kept candidate n's pooled verdict against the baseline offered, in the
 * run's order of keeps: it takes every shape with no incumbent and every
 * shape where its pooled speedup is above the incumbent's. Returns the
 * shapes it took. */
int kiln_incumbents_offer(kiln_incumbents *in, int n, const kiln_verdict *pooled);
/* The shapes where pooled surely beats the incumbent (or there is none):
 * their count, and why lists them ("v2 1.310x [1.290, 1.330] over #4's
 * 1.200x [1.180, 1.220]"), or, with none, the closest shape. */
int kiln_incumbents_wins(const kiln_incumbents *in, const kiln_verdict *pooled, char *why,
                         size_t len);
/* The screen on a verdict against the parent: the shapes where the
 * estimate against the baseline (the speedup over the parent there times
 * the parent's pooled speedup there) is above the incumbent's point by
 * more than margin. Without the parent's pooled verdict, a shape counts
 * when its speedup over the parent is above 1 + margin. why as above. */
int kiln_incumbents_may_win(const kiln_incumbents *in, const kiln_verdict *vs_parent,
                            const kiln_verdict *parent_pooled, double margin, char *why,
                            size_t len);
/* The shape furthest from its floor (the lowest roofline fraction of its
 * incumbent; ties by order), or NULL when no incumbent knows its floor. */
const kiln_incumbent *kiln_incumbents_worst(const kiln_incumbents *in);

#endif
