/* task.h - a kernel task: its dims, args, inputs, shapes, cost and tolerance.
 *
 * A task is a directory with task.json (what an agent may see) and
 * hidden.json (shapes and random ranges it must not see) plus trusted code.
 * The loader validates everything up front so later stages can trust the
 * struct; docs/task-format.md describes the files. */
#ifndef KILN_TASK_H
#define KILN_TASK_H

#include <limits.h>
#include <stdint.h>

#include "dtype.h"
#include "kiln_error.h"

#define KILN_MAX_DIMS 8
#define KILN_MAX_ARGS 16
#define KILN_MAX_SHAPES 48
#define KILN_MAX_GROUPS 16              /* "groups" and "cuda_groups" together */
#define KILN_MAX_SECTION_GROUPS 8       /* in each of the two */
#define KILN_MAX_VARIANTS 16
#define KILN_MAX_DTYPES 4
#define KILN_NAME_MAX 32
#define KILN_EXPR_MAX 256
#define KILN_MAX_BUFFER_BYTES (1ull << 40)   /* one buffer at most, as doubles */

typedef enum kiln_arg_kind {
    KILN_ARG_INPUT,
    KILN_ARG_OUTPUT,
    KILN_ARG_DIM,
    KILN_ARG_SCALAR,
} kiln_arg_kind;

typedef enum kiln_dist {
    KILN_DIST_NONE,
    KILN_DIST_NORMAL,   /* a = mean, b = standard deviation */
    KILN_DIST_UNIFORM,  /* a = low, b = high */
    KILN_DIST_INTEGERS, /* i32/i8 inputs: uniform integers in [int_low, int_high], both
                           ends included (expressions over the dims, resolved per shape
                           into a and b by kiln_input_resolve), a share of them at an
                           ignore value */
} kiln_dist;

typedef struct kiln_arg {
    char name[KILN_NAME_MAX];
    kiln_arg_kind kind;
    int dtype_is_var;             /* dtype is the task's type variable T */
    kiln_dtype dtype;             /* concrete dtype when !dtype_is_var */
    int rank;
    int shape[KILN_MAX_DIMS];     /* indices into kiln_task.dims */
    int shape_mul[KILN_MAX_DIMS]; /* "2*half_dim": 2 (0 or 1: the dim itself) */
    double value;                 /* scalars: the value passed */
    kiln_dist dist;               /* inputs: how values are drawn */
    double dist_a, dist_b;
    /* KILN_DIST_INTEGERS: the bounds as written (integer expressions over the
     * dims), and the ignore value drawn for a share of the elements. */
    char int_low[KILN_EXPR_MAX], int_high[KILN_EXPR_MAX];
    int has_ignore;
    double ignore_value;          /* an integer of the arg's dtype, outside [low, high] */
    double ignore_share;          /* in [0, 1] */
} kiln_arg;

typedef enum kiln_pattern {
    KILN_PAT_NONE,
    KILN_PAT_CONSTANT_ROWS,       /* each row (last dim) holds one value */
    KILN_PAT_MIXED,               /* magnitudes spread over 10^-4 .. 10^4 */
    KILN_PAT_TINY,                /* values near the dtype's smallest normal */
    KILN_PAT_EXTREMES,            /* integers: every element low or high */
} kiln_pattern;

typedef struct kiln_variant {
    char name[KILN_NAME_MAX];
    int arg;                      /* index of the input it changes */
    double scale, offset;         /* value = drawn * scale + offset */
    kiln_pattern pattern;
    /* Integer inputs: every element not at the ignore value is `value` (an
     * integer expression over the dims, resolved per shape into `set`), and
     * the ignore share may be replaced (ignore_share >= 0). */
    int has_value;
    char value[KILN_EXPR_MAX];
    double set;                   /* value at the current shape (kiln_input_resolve) */
    double ignore_share;          /* -1: the input's own share */
} kiln_variant;

typedef struct kiln_shape {
    int64_t d[KILN_MAX_DIMS];
} kiln_shape;

/* Which backends a group serves (kiln_group.backends). */
#define KILN_GROUP_CPU 1
#define KILN_GROUP_CUDA 2

/* A named list of visible shapes with its hidden shapes. A task's "groups"
 * serve both backends, or the CPU alone when the task also has
 * "cuda_groups", which serve CUDA alone; a CPU group and a CUDA group may
 * share a name, so look groups up by backend (kiln_task_group_for). */
typedef struct kiln_group {
    char name[KILN_NAME_MAX];
    int backends;                         /* KILN_GROUP_CPU | KILN_GROUP_CUDA bits */
    kiln_shape visible[KILN_MAX_SHAPES];
    int nvisible;
    kiln_shape hidden[KILN_MAX_SHAPES];   /* from hidden.json */
    int nhidden;
    int nrandom;                          /* fresh shapes drawn per job */
    int64_t range_lo[KILN_MAX_DIMS], range_hi[KILN_MAX_DIMS];
} kiln_group;

typedef struct kiln_tolerance_spec {
    kiln_dtype dtype;
    double ulps;                  /* base budget in ULPs of the output dtype */
    double per_sqrt;              /* added per sqrt(reduction length) */
    double per_n;                 /* added per element of the reduction: the
                                     worst case of one float accumulator */
    double per_n_variants;        /* added per element on stability variants only:
                                     their terms can be (nearly) equal, and then a
                                     float accumulator's roundings do not cancel */
    double ulps_variants;         /* added on stability variants only: what their
                                     magnitudes cost whatever the width (a mean far
                                     from zero, products in subnormals) */
} kiln_tolerance_spec;

typedef struct kiln_task {
    char dir[PATH_MAX];
    char name[KILN_NAME_MAX];     /* the task's own: runs, branches, tags, lessons */
    char function[KILN_NAME_MAX]; /* the C function a CPU candidate defines (and the
                                     reference's FUNCTION_reference): "function", else
                                     the name, so a copied task keeps its kernels */
    char description[512];
    int ndims;
    char dims[KILN_MAX_DIMS][KILN_NAME_MAX];
    int nargs;
    kiln_arg args[KILN_MAX_ARGS];
    int ncpu_dtypes;              /* per backend; 0: the task has no such backend */
    kiln_dtype cpu_dtypes[KILN_MAX_DTYPES];
    int ncuda_dtypes;
    kiln_dtype cuda_dtypes[KILN_MAX_DTYPES];
    int nvariants;
    kiln_variant variants[KILN_MAX_VARIANTS];
    int ngroups;
    kiln_group groups[KILN_MAX_GROUPS];   /* "groups", then "cuda_groups" */
    int default_group;            /* the CPU default (index into groups), -1 when no
                                     group serves the CPU (a CUDA-only task with
                                     cuda_groups alone) */
    int cuda_default_group;       /* the CUDA default: default_group unless the task
                                     has cuda_groups */
    int has_cuda_groups;
    char cost_bytes[2 * KILN_EXPR_MAX + 16];   /* read + written; with a split, "(R) + (W)" */
    char cost_flops[KILN_EXPR_MAX];
    int cost_split;               /* the task gave read_bytes and write_bytes */
    char cost_read[KILN_EXPR_MAX], cost_write[KILN_EXPR_MAX];
    int reduction_dim;            /* index into dims, -1 if none */
    double floor_rel;
    double floor_abs;             /* errors measured at this magnitude at least (0: none) */
    int ntolerances;
    kiln_tolerance_spec tolerances[KILN_MAX_DTYPES];
    int deterministic;            /* determinism stage required */
    char reference_cpu[PATH_MAX]; /* absolute paths: the double reference (C), gold for
                                     every backend unless there is a CUDA one */
    char reference_cuda[PATH_MAX];/* "" or the double reference as CUDA, run in a worker
                                     of its own: gold for the CUDA backend */
    char baseline_cpu[PATH_MAX];  /* "" when the task has no CPU backend */
    char baseline_cuda[PATH_MAX]; /* "" when the task has no CUDA backend or the
                                     baseline is built in */
    char baseline_cuda_builtin[16];   /* "cublas" (a vendor library call) or "" */
    char starter_cuda[PATH_MAX];  /* where a CUDA search starts: "starter", else
                                     the baseline */
} kiln_task;

/* Built-in CUDA baselines: "cublas" is cublasGemmEx on bf16 a (M x K) and
 * b (N x K), c = a * b^T in fp32, for a task whose args are exactly
 * (a, b, c, M, N, K) in that order. */
#define KILN_BUILTIN_CUBLAS "cublas"

/* Load and validate dir/task.json and dir/hidden.json. */
int kiln_task_load(const char *dir, kiln_task *task, kiln_error *err);

/* Find a task by name (in $KILN_TASKS, then the built-in tasks directory)
 * or, when name_or_dir contains a '/', load that directory. */
int kiln_task_find(const char *name_or_dir, kiln_task *task, kiln_error *err);

/* Is s a name a task may have: a C identifier shorter than KILN_NAME_MAX? */
int kiln_task_name_ok(const char *s);

/* The group named `name` that serves `backend` ("cpu" or "cuda"), as an
 * index into task->groups, or -1 (also for an unknown backend). */
int kiln_task_group_for(const kiln_task *task, const char *backend, const char *name);
/* The default group of `backend`, an index into task->groups, or -1. */
int kiln_task_default_group_for(const kiln_task *task, const char *backend);
/* kiln_task_group_for(task, "cpu", name). */
int kiln_task_group(const kiln_task *task, const char *name);
int kiln_task_dim(const kiln_task *task, const char *name);
const kiln_tolerance_spec *kiln_task_tolerance(const kiln_task *task, kiln_dtype dt);
/* Does the CPU backend (kiln_task_supports) or the named backend ("cpu",
 * "cuda") run dtype dt? 0 for an unknown backend. */
int kiln_task_supports(const kiln_task *task, kiln_dtype dt);
int kiln_task_supports_backend(const kiln_task *task, const char *backend, kiln_dtype dt);

/* The concrete dtype of an arg for a run whose type variable is dt. */
kiln_dtype kiln_arg_dtype(const kiln_arg *arg, kiln_dtype dt);

/* Elements of an input/output arg at a shape (a "2*half_dim" entry counts twice
 * the dim's size). */
int64_t kiln_arg_elems(const kiln_arg *arg, const kiln_shape *shape);

/* Evaluate a cost expression at a shape; dims and sizeof(T) are known. */
int kiln_task_cost(const kiln_task *task, const char *expr, const kiln_shape *shape,
                   kiln_dtype dt, double *out, kiln_error *err);

/* The compulsory bytes read and written at a shape. A task that gives
 * "bytes" alone is taken to read and write equal halves of them (a copy's
 * mix: the bandwidth its floor was always taken from). */
int kiln_task_cost_rw(const kiln_task *task, const kiln_shape *shape, kiln_dtype dt,
                      double *read, double *write, kiln_error *err);

/* Is arg an integer input (KILN_DIST_INTEGERS)? */
int kiln_arg_is_integer(const kiln_arg *arg);

/* Input arg as drawn at shape: for an integer input, a copy with dist_a and
 * dist_b set to the bounds there, and (variant given, else NULL) the
 * variant with its value resolved into `set`. Float inputs are copied as
 * they are. The loader checked every shape a task names; a random shape
 * can still put a bound out of range, and that is an error here. */
int kiln_input_resolve(const kiln_task *task, const kiln_arg *arg, const kiln_variant *variant,
                       const kiln_shape *shape, kiln_arg *arg_out, kiln_variant *variant_out,
                       kiln_error *err);

/* "rows=64 cols=4096" */
void kiln_shape_format(const kiln_task *task, const kiln_shape *shape, char *buf, size_t len);

/* The C prototype a CPU candidate defines (named task->function), e.g. for
 * rmsnorm f32: "void rmsnorm(const float *x, ..., float eps)". */
void kiln_task_cpu_signature(const kiln_task *task, kiln_dtype dt, char *buf, size_t len);

/* The parameter list a CUDA kernel of the task takes when the manifest
 * passes every task arg in order, e.g. for rmsnorm: "(const kiln_t *x,
 * const kiln_t *w, kiln_t *y, int rows, int cols, float eps)". Buffers of
 * the type variable are kiln_t (kiln_cuda.h), other buffers their CUDA
 * type; dims are int (long long for i64), scalars float/double. */
void kiln_task_cuda_params(const kiln_task *task, char *buf, size_t len);

/* The CUDA spelling of an arg's type: "const kiln_t *", "float", ... */
const char *kiln_arg_cuda_type(const kiln_arg *arg);

#endif
