/* bandwidth.h - the memory bandwidth a roofline floor is computed from.
 *
 * Measured by the verifier (never by a worker) as the best of several
 * memcpy passes over a working set of a given size, counting bytes read
 * plus bytes written, and cached per machine in the state directory. */
#ifndef KILN_BANDWIDTH_H
#define KILN_BANDWIDTH_H

#include <stddef.h>

#include "kiln_error.h"

/* Bytes per second for a working set of about `bytes` (rounded down to a
 * power of two, at least 16 KiB, at most 256 MiB). */
int kiln_cpu_bandwidth(size_t bytes, double *bytes_per_s, kiln_error *err);
/* The same measured once more now, the cache keeping the better of the
 * two: a measurement taken while the machine was busy reads low. */
int kiln_cpu_bandwidth_again(size_t bytes, double *bytes_per_s, kiln_error *err);

/* "model name" from /proc/cpuinfo, or "unknown". */
void kiln_cpu_model(char *buf, size_t len);

#endif
