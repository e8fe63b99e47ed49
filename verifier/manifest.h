/* manifest.h - a CUDA candidate's launch manifest and tuning knobs.
 *
 * A CUDA candidate is device code only; how kiln launches it is declared
 * in a block comment
 *
 *   / *@kiln launch { "launches": [...], "scratch": [...], "require": [...] } @* /
 *
 * (without the spaces) and its knobs in lines `#define NAME VALUE //@kiln
 * tune v1 v2 ...` (parsed by knobs.h, as the tuner parses them). Its
 * expressions (expr.h) may also use the file's plain `#define NAME INTEGER`
 * constants and the manifest's own named values, "let". This module parses
 * and checks that declaration against the task (static stage) and resolves
 * it, per shape, into the launches the worker performs (kiln_wire_launch).
 * Nothing here touches a GPU. */
#ifndef KILN_MANIFEST_H
#define KILN_MANIFEST_H

#include <stddef.h>
#include <stdint.h>

#include "kiln_error.h"
#include "knobs.h"
#include "precond.h"
#include "task.h"
#include "worker_proto.h"

#define KILN_MAX_KNOBS KILN_KNOBS_MAX
#define KILN_MANIFEST_MAX_LETS 16      /* names in "let" */
#define KILN_MANIFEST_MAX_DEFINES 32   /* distinct #define constants the expressions use */

typedef struct kiln_manifest_knob {   /* a #define the manifest may use */
    char name[KILN_NAME_MAX];
    char value[64];                          /* the #define's current value */
} kiln_manifest_knob;

typedef struct kiln_manifest_let {    /* "let": {"NAME": "expr", ...} */
    char name[KILN_NAME_MAX];
    char expr[KILN_EXPR_MAX];                /* may use the lets before it */
} kiln_manifest_let;

/* A launch argument computed at each shape: "i64(cols)", "BLOCK", "f32(1e-5)". */
typedef struct kiln_imm_spec {
    int kind;                                /* KILN_WIRE_I32, I64, F32 or F64 */
    char expr[KILN_EXPR_MAX];                /* the expression inside the cast */
} kiln_imm_spec;

typedef struct kiln_launch_spec {
    char kernel[KILN_KERNEL_NAME_MAX];
    int by_name_expr;                        /* kernel is an NVRTC name expression (a
                                                template instance, a C++ or
                                                macro-made name), found after
                                                compiling; 0: extern "C" by name */
    char when[KILN_EXPR_MAX];                /* launched only where nonzero; "" = always */
    int ngrid, nblock, ncluster;             /* 1..3 each; ncluster 0 = none */
    char grid[3][KILN_EXPR_MAX];
    char block[3][KILN_EXPR_MAX];
    char cluster[3][KILN_EXPR_MAX];
    char smem[KILN_EXPR_MAX];                /* "0" when absent */
    int nargs;
    int arg[KILN_WORKER_MAX_LAUNCH_ARGS];    /* >= 0 task arg index, < 0 scratch -(i+1),
                                                >= KILN_WIRE_ARG_IMM: imm[arg - it] */
    int nimm;
    kiln_imm_spec imm[KILN_WORKER_MAX_IMMS];
} kiln_launch_spec;

typedef struct kiln_scratch_spec {
    char name[KILN_NAME_MAX];
    char bytes[KILN_EXPR_MAX];
    int zero;                                /* "init": "zero" (else "none") */
} kiln_scratch_spec;

typedef struct kiln_manifest {
    int nlaunches;
    kiln_launch_spec launches[KILN_WORKER_MAX_LAUNCHES];
    int nscratch;
    kiln_scratch_spec scratch[KILN_WORKER_MAX_SCRATCH];
    int nknobs;
    kiln_manifest_knob knobs[KILN_MAX_KNOBS];
    int nlets;
    kiln_manifest_let lets[KILN_MANIFEST_MAX_LETS];     /* in the order written */
    int ndefines;                                       /* only those expressions use */
    kiln_manifest_knob defines[KILN_MANIFEST_MAX_DEFINES];
    kiln_preconds require;                              /* "require": [...], precond.h */
} kiln_manifest;

/* What the device allows; kiln_device_limits_default() is an sm_90 part
 * (block 1024 threads, 232448 bytes of opt-in shared memory, cluster 16:
 * 8 is portable, 16 the non-portable size the worker opts into for a
 * launch whose cluster has more than 8 blocks). */
typedef struct kiln_device_limits {
    int64_t max_threads_per_block;
    int64_t max_block[3];
    int64_t max_grid[3];
    int64_t max_smem_optin;                  /* dynamic shared memory per block */
    int64_t max_cluster;                     /* blocks per cluster (non-portable) */
    int64_t max_scratch_bytes;
} kiln_device_limits;

void kiln_device_limits_default(kiln_device_limits *lim);

/* Parse src (len bytes, the whole .cu file) for task t. Checks: exactly one
 * manifest block whose JSON has the fields of docs/cuda.md and no others;
 * every kernel named is defined in src as an extern "C" __global__
 * function; every launch arg names a task arg or a declared scratch buffer,
 * or is an expression, optionally cast as i32(...), i64(...), f32(...) or
 * f64(...) (default i32), passed as a value of that type;
 * every expression parses and names only the task's dims, the file's knobs,
 * its #define constants (one `#define NAME INTEGER` outside #if, the name
 * neither #defined again nor #undef'd), the lets before it and sizeof(T);
 * the knobs follow knobs.h's rules, none is named as a task dim and none is
 * #defined or #undef'd elsewhere; a let's name is an identifier that is no
 * dim, knob, function, #defined name or earlier let; "require" entries
 * are DIM % N == 0 (precond.h) into m->require. Errors name the field,
 * e.g. "manifest: launches[0].grid[1]: unknown name 'foo'". */
int kiln_manifest_parse(const char *src, size_t len, const kiln_task *t, kiln_manifest *m,
                        kiln_error *err);

/* Resolve every expression at shape s for dtype dt (the lets first, in
 * order; any failure among them fails the shape) and check it against lim:
 * no zero or negative dims, threads per block, grid and cluster limits (the
 * grid divisible by the cluster), shared memory, scratch size. Fills
 * rq->launches/nlaunches and rq->scratch/nscratch; the task args keep the
 * indices the verifier uses for rq->args. */
/* The identifier a launch's kernel names in the code: the name itself, or
 * a template instance's name ("k" of "k<float, 4>"); "" for a qualified
 * name (a::k), which no renaming can reach. */
void kiln_manifest_kernel_base(const char *kernel, char *base, size_t len);

/* The kernels the worker must look up through NVRTC name expressions,
 * one per line, each once ("" when none). */
void kiln_manifest_name_exprs(const kiln_manifest *m, char *buf, size_t len);

int kiln_manifest_resolve(const kiln_manifest *m, const kiln_task *t, kiln_dtype dt,
                          const kiln_shape *s, const kiln_device_limits *lim,
                          kiln_call_req *rq, kiln_error *err);

/* Where a source's launch manifest lies: the block comment from block_at
 * to block_end (past its closing "* /"), its JSON from json_at to json_end.
 * 1 when there is a complete "/ *@kiln launch ... @* /" block, else 0
 * (kiln_manifest_parse says what is wrong). */
typedef struct kiln_manifest_span {
    size_t block_at, block_end, json_at, json_end;
} kiln_manifest_span;
int kiln_manifest_locate(const char *src, size_t len, kiln_manifest_span *sp);

#endif
