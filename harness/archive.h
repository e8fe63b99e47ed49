/* archive.h - the run's population (docs/search.md, "Population"): a
 * MAP-Elites archive of kept kernels, one elite per cell, cells keyed by
 * two descriptors; and the seeded choice of an iteration's parent and its
 * inspirations. Pure functions: the run database stores the cells
 * (rundb.c), the workspace their refs (workspace.c). */
#ifndef KILN_ARCHIVE_H
#define KILN_ARCHIVE_H

#include <stddef.h>

#include "verdict.h"

#define KILN_CELL_MAX 64
#define KILN_ARCHIVE_MAX 64       /* cells a run keeps at most (4 buckets x knob values) */
#define KILN_PARENT_BEST_P 0.5    /* --parents archive: the best with this probability */
#define KILN_INSPIRATIONS 3       /* other elites a prompt shows at most */

typedef struct kiln_elite {
    char cell[KILN_CELL_MAX];
    int n;                        /* the candidate's number in the run */
    char commit[41];
    double speedup, lo, hi;       /* the objective against the task's baseline, with its interval */
} kiln_elite;

/* "none", "some", "most" or "all": how many of the visible timed shapes
 * beat the task's baseline (speedup > 1) out of shapes. */
const char *kiln_wins_bucket(int wins, int shapes);

/* The code features of a source without knobs, lexically (comments and
 * string literals skipped), as tags joined by '-' in this order
 * (docs/search.md, "Population"): "v<bits>" the widest vector type or
 * intrinsic used, "u<N>" the largest unroll pragma ("u" without a count),
 * "shm" __shared__, "shfl" warp shuffles, "omp" OpenMP pragmas, "rs"
 * restrict pointers. "" when it has none. */
void kiln_code_features(const char *source, char *out, size_t len);

/* The cell of a kernel: "<wins bucket>.<source>" from its verdict against
 * the task's baseline and its source, the source part being the first
 * //@kiln tune knob and its value ("all.BLOCK256"), else the source's
 * code features ("all.v256-omp-rs"), else "noknob". */
void kiln_archive_cell(const kiln_verdict *record, const char *source, char *cell, size_t len);

/* The cell update rule: e takes its cell when the cell is empty or e's
 * objective is higher than the incumbent's (ties keep the incumbent, so an
 * earlier kernel is not displaced by noise). Returns the index e went to,
 * or -1 when it did not (or the archive is full). */
int kiln_archive_offer(kiln_elite *a, int *n, int cap, const kiln_elite *e);

/* The index of the highest objective (the earliest of equals); -1 when empty. */
int kiln_archive_best(const kiln_elite *a, int n);

/* 1 when every other elite of the archive surely beats a[i]: the lower
 * end of each one's interval against the task's baseline is above a[i]'s
 * upper end. Such a kernel (the untouched start kernel, once the run has
 * moved on) is never a parent nor an inspiration. 0 when a[i] is the only
 * elite, or its upper end is unknown (hi <= 0: unbounded). */
int kiln_archive_surely_beaten(const kiln_elite *a, int n, int i);

/* The parent of iteration it: -1 (the run's best, its branch's head) with
 * probability p_best or when no elite is left to draw, else the index of
 * an elite drawn uniformly from those not surely beaten. The draws depend
 * only on seed and it, so a run (and its resume) reproduces. */
int kiln_archive_pick(const kiln_elite *a, int n, double p_best, unsigned long long seed, int it);

/* Up to k elites other than the parent and not surely beaten for the
 * prompt, the best first, then the rest by objective; their indexes into
 * out. Returns how many. */
int kiln_archive_inspirations(const kiln_elite *a, int n, int parent, int *out, int k);

#endif
