/* call.h - one checked call of a CPU library in a worker.
 *
 * A checked call draws fresh inputs, gets gold outputs from the reference
 * worker, lays out guards, inputs and poisoned outputs in the candidate
 * worker's arena, calls, and then checks everything the call could have
 * broken: guards, inputs, unwritten and non-finite outputs, and the error
 * against the budget. Timed calls are checked exactly the same way, so a
 * candidate cannot tell them apart. */
#ifndef KILN_CALL_H
#define KILN_CALL_H

#include <stddef.h>
#include <stdint.h>

#include "manifest.h"
#include "numeric.h"
#include "rng.h"
#include "task.h"
#include "verdict.h"
#include "worker_client.h"

#define KILN_GUARD_BYTES 512

typedef struct kiln_callset {
    const kiln_task *task;
    kiln_dtype dt;
    kiln_worker *cand;          /* libs: 0 candidate, 1 baseline (CUDA) */
    kiln_worker *base;          /* CPU: the baseline's own worker (its lib 0), so no
                                   candidate shares an address space with it; NULL:
                                   the baseline is cand's lib 1 */
    kiln_worker *ref;           /* lib 0: the reference over doubles */
    kiln_rng rng;
    int call_timeout_ms;
    /* The current inputs and gold, private to the verifier. */
    kiln_shape shape;
    double *in[KILN_MAX_ARGS];      /* inputs as doubles (exact values) */
    unsigned char *bytes[KILN_MAX_ARGS];   /* inputs in their dtype */
    double *gold[KILN_MAX_ARGS];
    size_t cap_elems[KILN_MAX_ARGS];
    unsigned char *last_out[KILN_MAX_ARGS];   /* outputs of the last call */
    int calls;
    int hidden;                 /* the shape is hidden: details must not reveal its size */
    /* CUDA: the launches of each lib (0 candidate, 1 baseline), resolved per
     * shape against the device's limits; NULL for CPU libraries. */
    const kiln_manifest *manifest[2];   /* manifest[1] NULL: a built-in baseline */
    const kiln_manifest *ref_manifest;  /* the CUDA reference's (over doubles), or NULL:
                                           ref is then a CPU worker */
    kiln_device_limits limits;
    /* Device-resident data (CUDA with a CUDA reference): the worker draws
     * the inputs from key, runs the reference and compares on the device;
     * nothing of the inputs or gold is held here. */
    int device;
    uint64_t key[2];                /* the prepared call's key */
    const kiln_variant *variant;    /* the prepared call's variant, or NULL */
    /* The prepared shape's inputs as drawn there: integer bounds (and a
     * variant's value) resolved (kiln_input_resolve). */
    kiln_arg drawn[KILN_MAX_ARGS];
    kiln_variant drawn_variant;
    uint32_t sets;                  /* input sets per call (timed together) */
    /* What the candidate printed: kept only for visible shapes, and only
     * until the first hidden shape runs, since a kernel could keep a hidden
     * shape's dims in device memory and print them on a later call. */
    int hidden_seen;
    char out_label[64];             /* the first call that printed something */
    char out_text[400];
    size_t out_bytes;
} kiln_callset;

typedef enum kiln_call_outcome {
    KILN_CALL_OK = 0,
    KILN_CALL_FAULT,        /* worker died or hung: see cand->fault */
    KILN_CALL_GUARD,
    KILN_CALL_INPUT,
    KILN_CALL_UNWRITTEN,
    KILN_CALL_NONFINITE,
    KILN_CALL_WRONG,
    KILN_CALL_LAUNCH,       /* CUDA: the manifest or the driver refused a launch */
} kiln_call_outcome;

typedef struct kiln_call_result {
    kiln_call_outcome outcome;
    char detail[320];
    double max_err_ulps, budget_ulps, rel_l2;
    uint64_t elapsed_ns, rt_ns, cpu_ns;
    uint64_t wait_ns;   /* the worker's time waiting for a core over the round trip */
    uint64_t cupti_ns, wall_ns;     /* CUDA: the other two timers */
    uint32_t kernels;               /* CUDA: kernels CUPTI saw */
    /* Device-resident calls: the times above are per set (one run of the
     * launches); kernel_ns is CUPTI's summed kernel durations per set. */
    uint64_t kernel_ns;
    uint64_t check_ns;              /* the worker's checks of the whole call */
    uint64_t draw_ns, setup_ns;     /* drawing the sets; graph, flush and poison */
    uint32_t sets;
    uint64_t out_hash;              /* of every output's bits */
    int nprofile;                   /* CUDA: the candidate's launches, as the driver saw them */
    kiln_kernel_profile profile[KILN_MAX_PROFILE];
    char output[400];               /* what the candidate printed during the call
                                       (visible shapes only, see kiln_callset) */
    size_t output_bytes;            /* how much it printed in all */
} kiln_call_result;

const char *kiln_call_code(kiln_call_outcome o);

/* Bytes an arena needs for the largest of the shapes (inputs and outputs
 * with guards), for the candidate (in dt) or the reference (doubles). */
size_t kiln_arena_bytes(const kiln_task *t, kiln_dtype dt, const kiln_shape *shapes, int n,
                        int reference);

int kiln_callset_init(kiln_callset *cs, const kiln_task *t, kiln_dtype dt,
                      const kiln_shape *shapes, int nshapes, uint64_t seed, kiln_error *err);
/* The same for device-resident data: no host buffers. */
void kiln_callset_init_device(kiln_callset *cs, const kiln_task *t, kiln_dtype dt, uint64_t seed);
void kiln_callset_free(kiln_callset *cs);

/* Draw fresh inputs for shape (with an optional stability variant) and
 * compute gold with the reference worker. -1: the reference failed.
 * Device-resident: only a fresh key is drawn; the worker does the rest. */
int kiln_callset_prepare(kiln_callset *cs, const kiln_shape *shape, const kiln_variant *variant,
                         kiln_error *err);

/* Call lib (0 candidate, 1 baseline) on the prepared inputs and check.
 * Calling it again without a prepare uses the same inputs. */
void kiln_callset_run(kiln_callset *cs, int lib, kiln_call_result *res);

#endif
