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

#endif
