/* rng.h - the verifier's random numbers: xoshiro256** seeded from a secret
 * job seed, plus the input generators and stability variants of a task. */
#ifndef KILN_RNG_H
#define KILN_RNG_H

#include <stddef.h>
#include <stdint.h>

#include "task.h"

typedef struct kiln_rng {
    uint64_t s[4];
} kiln_rng;

void kiln_rng_seed(kiln_rng *r, uint64_t seed);
uint64_t kiln_rng_next(kiln_rng *r);
double kiln_rng_uniform(kiln_rng *r);            /* [0, 1) */
double kiln_rng_normal(kiln_rng *r);             /* mean 0, sd 1 */
/* The normal generator's table (for its tests): the layers' right edges
 * x[0..layers] and the density exp(-x^2/2) at each, f[0..layers]. */
void kiln_rng_ziggurat(const double **x, const double **f, int *layers);
int64_t kiln_rng_range(kiln_rng *r, int64_t lo, int64_t hi);   /* inclusive */
/* A seed nobody can predict (getrandom). */
uint64_t kiln_secret_seed(void);

/* Fill n values of input arg (last dim = row_len) as the task draws them
 * (an integer input's bounds resolved at the shape: kiln_input_resolve),
 * then apply variant (may be NULL), then round each to dt so the values are
 * exactly what the candidate will see. Writes doubles to out and, unless
 * bytes is NULL, the same values stored as dt to bytes. */
void kiln_fill_input(kiln_rng *r, const kiln_arg *arg, const kiln_variant *variant,
                     kiln_dtype dt, int64_t row_len, double *out, void *bytes, size_t n);

#endif
