/* numeric.h - number formats and output comparison for kiln.
 *
 * Everything the verifier needs to reason about a kernel's numbers:
 *   - bit-exact conversions between f32/f64 and the 16-bit formats
 *     (IEEE round-to-nearest-even, NaN stays a quiet NaN, overflow to Inf,
 *     signed zero and subnormals handled both ways);
 *   - reading/writing one element of any kiln_dtype buffer through double;
 *   - the ULP spacing of a format at a given magnitude;
 *   - poison (a NaN pattern an arithmetic result is unlikely to produce, used
 *     to detect elements a kernel never wrote) and guard bytes (to detect
 *     writes past the end of a buffer);
 *   - comparison of a candidate output against a gold output computed in
 *     double, in ULPs of the candidate's dtype.
 * Nothing here prints or allocates. */
#ifndef KILN_NUMERIC_H
#define KILN_NUMERIC_H

#include <stddef.h>
#include <stdint.h>

#include "dtype.h"

/* ---- 16-bit formats ---------------------------------------------------- */

uint16_t kiln_f32_to_f16(float f);
float kiln_f16_to_f32(uint16_t h);
uint16_t kiln_f32_to_bf16(float f);
float kiln_bf16_to_f32(uint16_t b);

/* ---- element access through double ------------------------------------ */

/* Element i of a buffer of dt, exactly (except i64 beyond 2^53). */
double kiln_load_as_double(kiln_dtype dt, const void *buf, size_t i);
/* Store v as element i of a buffer of dt, rounding once (nearest-even).
 * f16/bf16 are rounded directly from the double, never via float.
 * Integer types round to nearest-even and saturate; NaN stores 0. */
void kiln_store_from_double(kiln_dtype dt, void *buf, size_t i, double v);

/* ---- ULPs --------------------------------------------------------------- */

/* Spacing of dt at |magnitude|: 2^(e - (p-1)), e = floor(log2|m|) clamped to
 * [min normal exponent, max exponent]. 1 for integer types; NaN for NaN. */
double kiln_ulp(kiln_dtype dt, double magnitude);

/* ---- poison and guards -------------------------------------------------- */

/* Fill n elements with dt's poison pattern (a signalling-style NaN for
 * floats: f32 0x7FA5A5A5, f16 0x7D5A, bf16 0x7FA5, f64 0x7FF4A5A5A5A5A5A5;
 * 0xA5 bytes for integers). */
void kiln_poison_fill(kiln_dtype dt, void *buf, size_t n);
/* Number of elements still holding exactly the poison bits; the first such
 * index goes to *first (SIZE_MAX if none; first may be NULL). */
size_t kiln_poison_count(kiln_dtype dt, const void *buf, size_t n,
                         size_t *first);

/* Fill bytes with a pseudo-random pattern derived from seed. */
void kiln_guard_fill(void *buf, size_t bytes, uint64_t seed);
/* 1 if buf still holds the pattern for seed, else 0 with the first differing
 * byte offset in *first_bad (SIZE_MAX when intact; first_bad may be NULL). */
int kiln_guard_check(const void *buf, size_t bytes, uint64_t seed,
                     size_t *first_bad);

/* ---- comparison --------------------------------------------------------- */

typedef struct kiln_tolerance {
    double budget_ulps;
    double floor_rel;
    double floor_abs;
} kiln_tolerance;
/* An element's error in ULPs is
 *   |c - g| / kiln_ulp(dt, max(|g|, floor_rel * max_j |g_j|, floor_abs)). */

typedef struct kiln_compare_result {
    size_t n, nonfinite, unwritten, over_budget;
    size_t worst_index;           /* index of the max error (or first non-finite / unwritten if any) */
    double max_err_ulps;          /* max over finite elements; INFINITY if any non-finite where gold is finite */
    double rel_l2;                /* ||c - g||_2 / ||g||_2 (0 if both zero) */
    double worst_candidate, worst_gold;
    int pass;                     /* 1 iff unwritten==0 && nonfinite==0 && max_err_ulps <= budget */
} kiln_compare_result;

/* Compare n elements of cand (of dt) against gold.
 *  - unwritten: elements still holding dt's poison; not counted otherwise.
 *  - nonfinite: candidate NaN/Inf where gold is finite (error INFINITY).
 *  - where gold is NaN/Inf the candidate must match it (NaN for NaN, the
 *    same infinity for an infinity); a mismatch counts in over_budget with
 *    error INFINITY.
 *  - rel_l2 sums over written elements with finite gold; it is INFINITY if
 *    any nonfinite candidate was found.
 * tol may be NULL (budget 0, no floor). */
/* Set (by tests only) to make kiln_compare take its general per-element
 * path for every dtype, so the f32 fast path can be checked against it. */
extern int kiln_compare_generic_only;
void kiln_compare(kiln_dtype dt, const void *cand, const double *gold,
                  size_t n, const kiln_tolerance *tol,
                  kiln_compare_result *out);
/* The same, element by element through the dtype-general code for every
 * dtype: what kiln_compare's f32, bf16 and f16 paths must agree with, bit
 * for bit (tests). */
void kiln_compare_general(kiln_dtype dt, const void *cand, const double *gold, size_t n,
                          const kiln_tolerance *tol, kiln_compare_result *out);

/* base_ulps + per_sqrt * sqrt(reduction_len); reduction_len < 1 counts as 1.
 * Rounding error of a sum grows roughly with the square root of its length. */
double kiln_reduction_budget(double base_ulps, double per_sqrt,
                             int64_t reduction_len);

#endif
