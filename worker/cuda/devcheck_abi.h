/* devcheck_abi.h - the structs kiln's own device kernels (kiln_devcheck.cu) take
 * as parameters and write as results, shared by the host worker (C) and the
 * kernels (compiled with NVRTC, this header prepended). Plain C types with
 * explicit padding, so both compilers lay them out the same way. */
#ifndef KILN_DEVCHECK_ABI_H
#define KILN_DEVCHECK_ABI_H

#ifdef __CUDACC__   /* NVRTC (and nvcc) */
typedef unsigned long long kiln_u64;
typedef long long kiln_i64;
typedef unsigned int kiln_u32;
#else
#include <stdint.h>
typedef uint64_t kiln_u64;
typedef int64_t kiln_i64;
typedef uint32_t kiln_u32;
#endif

/* dtype codes: the values of kiln_dtype (dtype.h). */
#define KILN_JDT_F32 1
#define KILN_JDT_F16 2
#define KILN_JDT_BF16 3
#define KILN_JDT_F64 4
#define KILN_JDT_I32 5      /* inputs only (integers: targets, indices) */
#define KILN_JDT_I8 7       /* inputs only (quantised weights) */

/* kiln_dist codes: 1 normal, 2 uniform, 3 integers. */
#define KILN_JDIST_INTEGERS 3
/* kiln_pattern codes: 1 constant rows, 2 mixed magnitudes, 3 tiny, 4 extremes. */
#define KILN_JPAT_EXTREMES 4

/* How one input buffer's values are drawn: element i is a function of
 * (key, stream, i) alone (Philox-4x32-10), so any element can be made
 * again later, by any thread, to check that the buffer still holds it. */
typedef struct kiln_gen_spec {
    kiln_u64 key0, key1;     /* the call's key, from the verifier's secret seed */
    kiln_u32 stream;         /* which buffer of which input set */
    kiln_u32 dtype;          /* KILN_JDT_* */
    kiln_u32 dist;           /* kiln_dist: 1 normal (a mean, b sd), 2 uniform [a, b),
                                3 integers in [a, b] (both ends), a share at ignore */
    kiln_u32 pattern;        /* kiln_pattern of a stability variant, 0 none */
    kiln_u32 stream_step;    /* how far the stream moves from one set to the next */
    kiln_u32 pad;
    double a, b;
    double scale, offset;    /* variant: value * scale + offset (1 and 0 without one) */
    double share, ignore;    /* integers: share of the elements at the ignore value */
    kiln_i64 n;              /* elements */
    kiln_i64 row_len;        /* the last dim, for constant rows */
    kiln_u64 slots;          /* device address of kiln_u32[sets]: set y's buffer is slot
                                slots[y] (devcheck.h says why the order is drawn) */
} kiln_gen_spec;

/* The kernels that take many sets at once work on set blockIdx.y: its
 * buffer is slot slots[y] of the argument's buffer, slots lying a fixed
 * stride apart; its accumulator KILN_DEVCHECK_ACC_STEP after the previous
 * set's, and its flags three words after. The guards are laid and checked
 * slot by slot (blockIdx.y is then the slot). */
#define KILN_DEVCHECK_ACC_STEP 16   /* = KILN_WORKER_MAX_ARGS */

/* One output buffer of one input set, compared with its gold. Counters are
 * filled by atomics; max_err and gmax are non-negative doubles kept as
 * their bits, which order like the doubles. */
typedef struct kiln_devcheck_acc {
    kiln_u64 unwritten, nonfinite, over_budget;
    kiln_u64 first_hard;     /* smallest index unwritten or non-finite; ~0 none */
    kiln_u64 worst_index;    /* smallest index with the largest error; ~0 none */
    kiln_u64 max_err_bits;
    kiln_u64 gmax_bits;      /* max |gold| over finite gold */
    kiln_u64 hash;           /* order-free hash of the output's bits */
    double diff2, gold2;     /* sums of squares relative to gmax */
    double worst_cand, worst_gold;
} kiln_devcheck_acc;

/* How one output is judged. */
typedef struct kiln_cmp_spec {
    kiln_u32 dtype;
    kiln_u32 pad;
    kiln_i64 n;
    double budget_ulps;
    double floor_rel;        /* errors are measured at max(|g|, floor_rel * max|g|, */
    double floor_abs;        /* floor_abs) */
    kiln_u64 slots;          /* as kiln_gen_spec's */
} kiln_cmp_spec;

#endif
