/* worker_proto.h - the wire format between the verifier and kiln-worker.
 *
 * The verifier owns a shared arena (a memfd the worker maps at fd
 * KILN_WORKER_ARENA_FD). For each call it writes guards, inputs and poisoned
 * outputs into the arena, sends a request naming where each argument lives,
 * and the worker answers with the time the call took. The worker never
 * learns seeds, gold outputs or hidden dims beyond the sizes it is called
 * with, and everything it reports is cross-checked by the verifier. */
#ifndef KILN_WORKER_PROTO_H
#define KILN_WORKER_PROTO_H

#include <stdint.h>

#define KILN_WORKER_REQ_FD 3
#define KILN_WORKER_RESP_FD 4
#define KILN_WORKER_ARENA_FD 5
#define KILN_WORKER_MAX_ARGS 16
#define KILN_WORKER_MAX_LIBS 2

#define KILN_MSG_READY 0x6b6c6e52u   /* worker -> verifier once loaded */
#define KILN_MSG_CALL 0x6b6c6e43u    /* verifier -> worker */
#define KILN_MSG_DONE 0x6b6c6e44u    /* worker -> verifier */
#define KILN_MSG_PREP 0x6b6c6e50u    /* verifier -> CPU worker, before a call's data
                                        are staged: scribble the stack and the freed
                                        heap with `scribble`, answer DONE. Outside the
                                        call's round trip, so a candidate that skips
                                        it gains no time (docs/sandbox.md) */

/* kiln_call_req.lib of a call of no library: the worker decodes the
 * request, reads its clock twice and answers, and nothing else. The CPU
 * the kernel charges a trusted worker for it is the overhead that every
 * call's round trip carries. */
#define KILN_WORKER_NULL_LIB 0xffffffffu

/* kiln_call_resp.status */
#define KILN_ST_OK 0
#define KILN_ST_COMPILE 1    /* READY (CUDA): a module did not compile; info has the
                                log's head, DIR/compile-<lib>.log all of it */
#define KILN_ST_LAUNCH 2     /* DONE (CUDA): a launch was refused (no such kernel,
                                too many resources, bad configuration) */
#define KILN_ST_FAULT 3      /* DONE (CUDA): the kernel faulted (illegal address,
                                trap); the context is lost and the worker exits */
#define KILN_ST_SETUP 4      /* READY: the worker could not set up (no device) */
#define KILN_ST_GUARD 5      /* DONE (CUDA): the guard bytes around a scratch buffer
                                were overwritten */
#define KILN_ST_RESOURCE 6   /* DONE (CUDA): the device could not hold the call's
                                buffers (a candidate asking for too much scratch);
                                READY (CUDA): a compile ran into the compiler's
                                limits ("lib N: the compiler ...") */

/* Exit codes of kiln-worker that mean something to the verifier. */
#define KILN_WORKER_EXIT_VIOLATION 97   /* seccomp trapped a forbidden syscall */
#define KILN_WORKER_EXIT_SETUP 98       /* could not set up (bad args, load error) */

typedef enum kiln_wire_kind {
    KILN_WIRE_BUFFER = 0,   /* pointer: arena + offset */
    KILN_WIRE_I32,
    KILN_WIRE_I64,
    KILN_WIRE_F32,
    KILN_WIRE_F64,
} kiln_wire_kind;

typedef struct kiln_wire_arg {
    uint32_t kind;
    uint32_t pad;
    uint64_t offset;        /* buffers: where the data starts in the arena */
    int64_t ival;           /* i32 / i64 */
    double fval;            /* f32 / f64 */
    uint64_t bytes;         /* buffers: data bytes (guards of KILN_GUARD_BYTES
                               lie before and after); the CUDA worker copies
                               guards and data to the device and back */
} kiln_wire_arg;

/* CUDA calls: the launches of one call, resolved by the verifier from the
 * candidate's manifest (see manifest.h), so the worker evaluates nothing. */
#define KILN_WORKER_MAX_LAUNCHES 8
#define KILN_WORKER_MAX_SCRATCH 4
#define KILN_WORKER_MAX_LAUNCH_ARGS (KILN_WORKER_MAX_ARGS + KILN_WORKER_MAX_SCRATCH)
#define KILN_KERNEL_NAME_MAX 64
#define KILN_WORKER_MAX_IMMS 8               /* values of one launch's own, per launch */
#define KILN_WIRE_ARG_IMM 0x10000            /* arg = KILN_WIRE_ARG_IMM + j: imm[j] */

/* A launch argument the manifest computes from the shape ("i64(cols)",
 * "BLOCK"), resolved by the verifier: kind KILN_WIRE_I32 ... F64. */
typedef struct kiln_wire_imm {
    uint32_t kind;
    uint32_t pad;
    int64_t ival;                             /* I32 (in range), I64 */
    double fval;                              /* F32, F64 */
} kiln_wire_imm;

typedef struct kiln_wire_launch {
    char kernel[KILN_KERNEL_NAME_MAX];
    uint32_t grid[3], block[3], cluster[3];   /* cluster {0,0,0}: none */
    uint32_t smem;                            /* dynamic shared memory bytes */
    uint32_t nargs;
    int32_t arg[KILN_WORKER_MAX_LAUNCH_ARGS]; /* >= 0: index into the call's args;
                                                 < 0: scratch buffer -(arg + 1);
                                                 >= KILN_WIRE_ARG_IMM: an immediate */
    uint32_t nimm, pad;
    kiln_wire_imm imm[KILN_WORKER_MAX_IMMS];
} kiln_wire_launch;

typedef struct kiln_wire_scratch {
    uint64_t bytes;
    uint32_t zero;          /* 1: zeroed on the stream inside the timed region;
                               0: filled with a poison pattern before it */
    uint32_t pad;
} kiln_wire_scratch;

/* Device-resident calls (CUDA): the worker draws inputs on the device from
 * the call's key and, after the launches, checks inputs and guards and
 * compares outputs with the reference's gold, all on the device; only the
 * summary below comes back. The arena is not used. */
typedef struct kiln_wire_data {
    uint32_t role;          /* 0 not a buffer, 1 input, 2 output */
    uint32_t dtype;         /* kiln_dtype of the candidate's buffer (inputs: also i32, i8) */
    uint32_t dist;          /* inputs: kiln_dist */
    uint32_t pattern;       /* inputs: kiln_pattern of the call's variant */
    double a, b;            /* the distribution's parameters (integers: low, high) */
    double scale, offset;   /* the variant's (1 and 0 without one) */
    double share, ignore;   /* integers: the share of elements at the ignore value */
    uint64_t elems;
    uint64_t row_len;       /* the last dim, for constant rows */
} kiln_wire_data;

#define KILN_MAX_SETS 64

typedef struct kiln_wire_device {
    uint32_t on;            /* 1: this call's data live on the device */
    uint32_t sets;          /* input sets (1..KILN_MAX_SETS): the launches run once
                               per set, back to back, timed together */
    uint32_t check;         /* 1: check every set against the reference's gold */
    uint32_t ref_nlaunches; /* the reference's launches, over doubles */
    uint32_t graph;         /* 1: several sets' launches run as one CUDA graph */
    uint32_t pad;
    uint64_t key[2];        /* the call's key: every input and guard byte follows from it */
    double budget_ulps, floor_rel, floor_abs;
    kiln_wire_data data[KILN_WORKER_MAX_ARGS];
    kiln_wire_arg ref_args[KILN_WORKER_MAX_ARGS];   /* dims as i64, scalars as f64 */
    kiln_wire_launch ref_launches[KILN_WORKER_MAX_LAUNCHES];
} kiln_wire_device;

/* One output's comparison, merged over the call's sets. */
typedef struct kiln_wire_check {
    uint64_t unwritten, nonfinite, over_budget;
    uint64_t worst_index;   /* first unwritten/non-finite element, else the largest error */
    uint32_t worst_set, pad;
    double max_err_ulps, rel_l2;
    double worst_cand, worst_gold;
    uint64_t hash;          /* of the output's bits: equal outputs, equal hashes */
} kiln_wire_check;

typedef struct kiln_call_req {
    uint32_t magic;         /* KILN_MSG_CALL */
    uint32_t lib;           /* which loaded library to call */
    uint64_t nonce;         /* echoed in the answer */
    uint32_t nargs;
    uint32_t scribble;      /* byte written over the stack and freed heap */
    kiln_wire_arg args[KILN_WORKER_MAX_ARGS];
    /* CUDA only (the CPU worker ignores them). */
    uint32_t nlaunches, nscratch;
    kiln_wire_launch launches[KILN_WORKER_MAX_LAUNCHES];
    kiln_wire_scratch scratch[KILN_WORKER_MAX_SCRATCH];
    kiln_wire_device dev;   /* CUDA, dev.on: device-resident data */
} kiln_call_req;

/* One launch's kernel as the driver sees it (cuFuncGetAttribute and the
 * occupancy calculator), at the launch's block size and shared memory. */
typedef struct kiln_wire_profile {
    uint32_t regs;            /* registers per thread */
    uint32_t local_bytes;     /* local memory per thread: spills and stack */
    uint32_t static_smem;     /* static shared memory per block */
    uint32_t dynamic_smem;    /* the launch's dynamic shared memory */
    uint32_t threads;         /* threads per block */
    uint32_t blocks_per_sm;   /* blocks that fit on one SM at once */
    uint32_t max_threads_sm;  /* the SM's limit: occupancy = blocks * threads / this */
    uint32_t cluster;         /* threads blocks per cluster (1: none) */
} kiln_wire_profile;

typedef struct kiln_call_resp {
    uint32_t magic;         /* KILN_MSG_DONE or KILN_MSG_READY */
    uint32_t status;        /* 0 ok */
    uint64_t nonce;
    uint64_t elapsed_ns;    /* CPU: CLOCK_MONOTONIC around the call, only
                               cross-checked (the time is the kernel's);
                               CUDA: CUDA events around the launches */
    uint64_t cupti_ns;      /* CUDA: first kernel start to last kernel end, as
                               CUPTI's activity records saw every kernel */
    uint64_t wall_ns;       /* CUDA: host clock around launches plus a
                               context-wide synchronize */
    uint32_t kernels;       /* CUDA: kernels CUPTI saw in the call */
    uint32_t pad;
    char info[472];         /* READY: the sandbox description (CUDA: then the
                               device); DONE with status != 0: what failed */
    /* Device-resident calls: times above are for all sets together. */
    uint32_t sets;
    uint32_t input_changed;     /* bit a: input arg a no longer held what was drawn */
    uint32_t guard_before, guard_after;   /* bit a: a guard of buffer arg a changed */
    uint64_t kernel_sum_ns;     /* CUPTI: the kernels' durations, summed */
    uint64_t check_ns;          /* host clock around kiln's checks after the launches */
    uint64_t draw_ns, setup_ns; /* host clock: drawing the sets; the batch's graph, the L2
                                   flush and the shared-memory poison, to the gate */
    kiln_wire_check check[KILN_WORKER_MAX_ARGS];   /* outputs, when dev.check */
    /* CUDA: what the driver says of each launch's kernel at this call's
     * launch configuration (a profiler's static view; the candidate's
     * launches only, lib 0). */
    uint32_t nprofile, pad2;
    kiln_wire_profile profile[KILN_WORKER_MAX_LAUNCHES];
} kiln_call_resp;

/* Every library kiln builds exports this, generated around the candidate or
 * reference, so the worker never needs to know the task's signature. */
typedef void (*kiln_entry_fn)(void *const *args);
#define KILN_ENTRY_SYMBOL "kiln_entry"

#endif
