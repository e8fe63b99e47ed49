/* devcheck.h - the CUDA worker's device-resident data: the buffers of a
 * device-resident call's input sets, drawn on the device from the call's
 * key, and the trusted checks that follow the candidate's launches (inputs
 * and guards intact, outputs against the reference's gold). The gold and
 * the exact inputs exist only between the candidate's last launch and the
 * worker's answer, and are zeroed before it answers: no candidate kernel
 * ever runs while they hold anything (docs/sandbox.md). */
#ifndef KILN_DEVCHECK_H
#define KILN_DEVCHECK_H

#include <cuda.h>
#include <stddef.h>

#include "worker_proto.h"

typedef struct kiln_dbuf {
    CUdeviceptr p;
    size_t cap;
} kiln_dbuf;

/* Each argument's sets lie in slots of one buffer, a fixed stride apart
 * (guard, data, guard), so one launch of kiln's kernels draws or checks
 * every set (blockIdx.y is the set). Which slot holds which set is drawn
 * afresh for every call and every argument, from the worker's own random
 * source: a kernel that finds the other slots (they are a stride apart)
 * cannot tell which x goes with which y, so the launch for one set can
 * neither do another set's work nor find it done (issue: cross-set
 * batching). Every buffer also starts at a random multiple of 256 bytes
 * from its allocation, drawn once per worker, so two workers put the same
 * inputs at different addresses. The reference works on a chunk of sets
 * at a time: as many as fit in KILN_DEVCHECK_REF_BYTES of doubles. */
typedef struct kiln_devcheck {
    CUmodule mod;
    CUfunction gen, guard, absmax, compare, worst, worst_values, acc_init;
    unsigned grid;                                  /* blocks for grid-stride kernels */
    kiln_dbuf data[KILN_WORKER_MAX_ARGS];           /* every set of each argument */
    size_t stride[KILN_WORKER_MAX_ARGS];            /* bytes from one set to the next */
    kiln_dbuf exact[KILN_WORKER_MAX_ARGS];          /* a chunk's inputs as doubles */
    kiln_dbuf gold[KILN_WORKER_MAX_ARGS];           /* a chunk's reference outputs */
    uint32_t chunk;                                 /* sets per reference chunk */
    kiln_dbuf acc;                                  /* kiln_devcheck_acc [sets][MAX_ARGS] */
    kiln_dbuf flags;                                /* u32 [sets][3] */
    uint32_t slot[KILN_WORKER_MAX_ARGS][KILN_MAX_SETS];   /* set -> slot, this call */
    kiln_dbuf slots;                                /* the same on the device */
    size_t shift;                                   /* every buffer's start, this worker */
    uint64_t rng;                                   /* xorshift state, from getrandom */
} kiln_devcheck;

#define KILN_DEVCHECK_REF_BYTES ((size_t)1 << 30)

/* A device buffer of at least bytes (grown, never shrunk; the old
 * contents are not kept). 0, or -1 with info set. */
int kiln_dbuf_ensure(kiln_dbuf *b, size_t bytes, char *info, size_t len);

/* Load kiln's kernels: the fatbin nvcc built with the worker, or where it
 * has nothing for this device, NVRTC's build for arch. 0, or -1 with info
 * set. */
int kiln_devcheck_open(kiln_devcheck *j, CUdevice dev, const char *arch, const char *cuda_include,
                    char *info, size_t len);

/* Device memory for the call's sets (grown, never shrunk). KILN_ST_OK, or
 * KILN_ST_RESOURCE with info set. */
int kiln_devcheck_alloc(kiln_devcheck *j, const kiln_call_req *rq, int need_gold, char *info,
                     size_t len);

/* Where arg's data of a set starts (in its slot; 256-byte aligned), and where the
 * reference reads and writes it for a set (doubles; the set's place in
 * its chunk). */
CUdeviceptr kiln_devcheck_data(const kiln_devcheck *j, uint32_t set, uint32_t arg);
CUdeviceptr kiln_devcheck_ref(const kiln_devcheck *j, const kiln_call_req *rq, uint32_t arg,
                           uint32_t set);

/* Before the launches: draw which slot holds each set, draw every set's
 * inputs, poison its outputs, lay its guards. */
CUresult kiln_devcheck_stage(kiln_devcheck *j, const kiln_call_req *rq, CUstream st);

/* After the launches, per chunk of n sets from set0: check inputs and
 * guards and write the exact inputs for the reference (kiln_devcheck_inputs);
 * the reference runs on each set; then compare outputs with its gold
 * (kiln_devcheck_compare). */
CUresult kiln_devcheck_inputs(kiln_devcheck *j, const kiln_call_req *rq, uint32_t set0, uint32_t n,
                           CUstream st);
CUresult kiln_devcheck_compare(kiln_devcheck *j, const kiln_call_req *rq, uint32_t set0, uint32_t n,
                            CUstream st);

/* After a synchronize: the summaries of every set, merged into rs. */
int kiln_devcheck_collect(kiln_devcheck *j, const kiln_call_req *rq, kiln_call_resp *rs, char *info,
                       size_t len);

/* Zero the exact inputs and the gold the call used (and wait for it). */
void kiln_devcheck_scrub(kiln_devcheck *j, const kiln_call_req *rq, CUstream st);

#endif
