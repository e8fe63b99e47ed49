/* rng.c - random numbers and task input generation (see rng.h). */
#include "rng.h"

#include <math.h>
#include <sys/random.h>
#include <time.h>

#include "numeric.h"

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

static uint64_t splitmix(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

void kiln_rng_seed(kiln_rng *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix(&seed);
    r->has_spare = 0;
}

uint64_t kiln_rng_next(kiln_rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double kiln_rng_uniform(kiln_rng *r)
{
    return (double)(kiln_rng_next(r) >> 11) * 0x1p-53;
}

double kiln_rng_normal(kiln_rng *r)
{
    /* Marsaglia's polar form of Box-Muller, both values of each pair used:
     * no sine or cosine (those were a quarter of a verification's CPU
     * time), at the price of rejecting 21% of the (u, v) draws. */
    if (r->has_spare) {
        r->has_spare = 0;
        return r->spare;
    }
    double u, v, s;
    do {
        u = 2.0 * kiln_rng_uniform(r) - 1.0;
        v = 2.0 * kiln_rng_uniform(r) - 1.0;
        s = u * u + v * v;
    } while (s >= 1.0 || s == 0.0);
    double f = sqrt(-2.0 * log(s) / s);
    r->spare = v * f;
    r->has_spare = 1;
    return u * f;
}

int64_t kiln_rng_range(kiln_rng *r, int64_t lo, int64_t hi)
{
    uint64_t span = (uint64_t)(hi - lo) + 1;
    return lo + (int64_t)(kiln_rng_next(r) % span);
}

uint64_t kiln_secret_seed(void)
{
    uint64_t s = 0;
    if (getrandom(&s, sizeof s, 0) != (ssize_t)sizeof s) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        s = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 32);
    }
    return s;
}

static double draw(kiln_rng *r, const kiln_arg *arg)
{
    if (arg->dist == KILN_DIST_UNIFORM)
        return arg->dist_a + (arg->dist_b - arg->dist_a) * kiln_rng_uniform(r);
    return arg->dist_a + arg->dist_b * kiln_rng_normal(r);
}

static double smallest_normal(kiln_dtype dt)
{
    switch (dt) {
    case KILN_DT_F16: return 0x1p-14;
    case KILN_DT_BF16: return 0x1p-126;
    case KILN_DT_F64: return 0x1p-1022;
    default: return 0x1p-126;
    }
}

static void apply_pattern(kiln_rng *r, const kiln_variant *v, kiln_dtype dt, int64_t row_len,
                          double *out, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        switch (v->pattern) {
        case KILN_PAT_CONSTANT_ROWS:
            if (row_len > 0 && i % (size_t)row_len != 0)
                out[i] = out[i - i % (size_t)row_len];
            break;
        case KILN_PAT_MIXED:
            out[i] *= pow(10.0, (double)kiln_rng_range(r, -4, 4));
            break;
        case KILN_PAT_TINY:
            out[i] *= smallest_normal(dt) * 4;
            break;
        case KILN_PAT_NONE:
            break;
        }
    }
}

void kiln_fill_input(kiln_rng *r, const kiln_arg *arg, const kiln_variant *v, kiln_dtype dt,
                     int64_t row_len, double *out, void *bytes, size_t n)
{
    for (size_t i = 0; i < n; i++)
        out[i] = draw(r, arg);
    if (v) {
        apply_pattern(r, v, dt, row_len, out, n);
        for (size_t i = 0; i < n; i++)
            out[i] = out[i] * v->scale + v->offset;
    }
    /* Round to dt, in place, through the dtype's own storage. */
    uint64_t cell = 0;
    for (size_t i = 0; i < n; i++) {
        void *to = bytes ? bytes : &cell;
        size_t at = bytes ? i : 0;
        kiln_store_from_double(dt, to, at, out[i]);
        out[i] = kiln_load_as_double(dt, to, at);
    }
}
