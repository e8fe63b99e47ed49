/* cuda_device.h - what the verifier knows about a GPU: the worker's
 * description of it ("name=...|cc=9.0|...|driver=13000|...") and its copy
 * bandwidth, measured once per device and driver by `kiln-worker-cuda
 * --probe` and cached in the state directory. */
#ifndef KILN_CUDA_DEVICE_H
#define KILN_CUDA_DEVICE_H

#include <stddef.h>

#include "dtype.h"
#include "kiln_error.h"
#include "manifest.h"

/* The value of key in a device description, or "" (buf holds it). */
const char *kiln_gpu_field(const char *desc, const char *key, char *buf, size_t len);

/* The device's limits for launches, from its description. */
void kiln_gpu_limits(const char *desc, kiln_device_limits *lim);

/* The device's peak rate of dense arithmetic for dt in flop/s (tensor
 * cores for f16 and bf16, FMA units for f32 and f64), from its SM count,
 * clock and architecture; 0 for an architecture kiln has no figure for.
 * A theoretical bound that nothing honest beats: the compute half of the
 * roofline floor. */
double kiln_gpu_peak_flops(const char *desc, kiln_dtype dt);

/* Device-to-device copy bandwidth in bytes per second (read + write). The
 * cache is keyed by device name and driver version; a miss runs the probe,
 * which needs the device to itself (call it inside the device lane). */
int kiln_gpu_bandwidth(const char *desc, double *bytes_per_s, kiln_error *err);

/* The same probe's two figures: copy bandwidth (read + write counted) and
 * read bandwidth (a read-and-reduce kernel over 1 GiB, nothing written). */
int kiln_gpu_bandwidths(const char *desc, double *copy_bytes_per_s, double *read_bytes_per_s,
                        kiln_error *err);

/* The bandwidth (bytes read + written per second) a floor takes for a mix
 * of read_bytes and write_bytes: the bytes that pair up as a copy's at the
 * copy rate, the reads beyond them at the read rate, the writes beyond them
 * at the copy rate. A copy's mix gets the copy bandwidth (the floor every
 * task had before), a read-only one the read bandwidth; read is taken at
 * least as fast as copy (reading cannot cost more per byte than a copy's
 * read and write together). */
double kiln_gpu_mix_bandwidth(double copy, double read, double read_bytes, double write_bytes);

#endif
