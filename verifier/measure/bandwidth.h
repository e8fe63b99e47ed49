/* bandwidth.h - the CPU memory bandwidth a roofline floor is computed from.
 *
 * The floor says "no honest kernel moves these bytes faster", so the
 * bandwidth must be an upper bound on what one reaches with the shape's
 * compulsory bytes as its whole working set. It is measured by the
 * verifier (never by a worker) over a working set of that size in all,
 * by the fastest of several access patterns (memcpy, a wide-vector read,
 * memset, a triad), bytes read plus bytes written counted as a task's cost
 * counts them; the best of several readings, cached per machine in the
 * state directory as the best ever seen, and never below the figure for a
 * larger working set. A busy machine can only lower a reading, so it never
 * makes a floor stricter once a quiet reading was taken. */
#ifndef KILN_BANDWIDTH_H
#define KILN_BANDWIDTH_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "kiln_error.h"

/* Bytes per second for a working set of `bytes` in all (rounded down to a
 * power of two, at least 16 KiB, at most 256 MiB): the cached figure, or
 * one measured now. */
int kiln_cpu_bandwidth(size_t bytes, double *bytes_per_s, kiln_error *err);
/* The same measured once more now, with more readings spread over a few
 * tens of milliseconds, the cache keeping the best: asked before a floor
 * may judge a kernel impossible. */
int kiln_cpu_bandwidth_again(size_t bytes, double *bytes_per_s, kiln_error *err);

/* "model name" from /proc/cpuinfo, or "unknown". */
void kiln_cpu_model(char *buf, size_t len);

/* ---- the parts, for tests/unit/test_bandwidth.c -------------------------- */

/* One reading: bytes per second over a working set of ws bytes in all. */
typedef double (*kiln_bw_reading_fn)(size_t ws, void *ctx);
/* The best of n readings (pause_us between them): one slow reading, a
 * moment the machine was busy, never counts. */
double kiln_bw_best_of(kiln_bw_reading_fn reading, void *ctx, size_t ws, int n, unsigned pause_us);
/* One reading of this machine: the fastest of the access patterns, each
 * run over ws bytes in all (ws at least 16 KiB). 0 if out of memory. */
double kiln_bw_reading(size_t ws, void *ctx);
/* The working-set size a figure is kept for: bytes rounded down to a power
 * of two, within [16 KiB, 256 MiB]. */
size_t kiln_bw_bucket(size_t bytes);
/* The bound for bucket b in a cache's "bytes_per_s" table: the best figure
 * kept for b or any larger bucket (a kernel whose working set is smaller is
 * never slower), or 0 when b itself has none yet. */
double kiln_bw_bound(const cJSON *table, size_t b);

#endif
