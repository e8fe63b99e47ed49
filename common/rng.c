/* rng.c - random numbers and task input generation (see rng.h). */
#include "rng.h"

#include <math.h>
#include <pthread.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "hot.h"
#include "numeric.h"

HOT uint64_t rotl(uint64_t x, int k)
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

static pthread_once_t zig_once = PTHREAD_ONCE_INIT;
static void zig_init(void);

void kiln_rng_seed(kiln_rng *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix(&seed);
    pthread_once(&zig_once, zig_init);   /* every generator is seeded before use */
}

HOT uint64_t next(kiln_rng *r)
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

HOT double uniform(kiln_rng *r)
{
    return (double)(next(r) >> 11) * 0x1p-53;
}

uint64_t kiln_rng_next(kiln_rng *r)
{
    return next(r);
}

double kiln_rng_uniform(kiln_rng *r)
{
    return uniform(r);
}

/* Normal draws: Marsaglia and Tsang's ziggurat, 128 layers of equal area
 * under the half-normal density. Most draws cost one 64-bit number and a
 * compare; the polar method it replaced paid a log, a square root and a
 * division for every two values, and drawing inputs was the largest part of
 * a CPU verification's own work (docs/BENCHMARKS.md). One 64-bit number
 * gives the layer (bits 0-6), the sign (bit 7) and the position (bits 11-63),
 * so they do not share bits. */
#define ZIG_N 128
#define ZIG_R 3.442619855899              /* where the tail begins */
#define ZIG_V 9.91256303526217e-3         /* each layer's area */

/* zig_x[i]: the right edge of layer i (zig_x[0] the base strip's virtual
 * width, zig_x[ZIG_N] = 0); zig_f[i] = exp(-x^2/2) there. */
static double zig_x[ZIG_N + 1], zig_f[ZIG_N + 1];

static void zig_init(void)
{
    zig_f[1] = exp(-0.5 * ZIG_R * ZIG_R);
    zig_x[0] = ZIG_V / zig_f[1];
    zig_f[0] = 0;
    zig_x[1] = ZIG_R;
    for (int i = 2; i < ZIG_N; i++) {
        zig_x[i] = sqrt(-2.0 * log(ZIG_V / zig_x[i - 1] + zig_f[i - 1]));
        zig_f[i] = exp(-0.5 * zig_x[i] * zig_x[i]);
    }
    zig_x[ZIG_N] = 0;
    zig_f[ZIG_N] = 1;
}

void kiln_rng_ziggurat(const double **x, const double **f, int *layers)
{
    pthread_once(&zig_once, zig_init);
    *x = zig_x;
    *f = zig_f;
    *layers = ZIG_N;
}

/* Beyond ZIG_R, by Marsaglia's exponential method; 1 - u is in (0, 1]. */
HOT double zig_tail(kiln_rng *r)
{
    double x, y;
    do {
        x = -log(1.0 - uniform(r)) / ZIG_R;
        y = -log(1.0 - uniform(r));
    } while (y + y < x * x);
    return ZIG_R + x;
}

/* x with the sign bit set where neg is 1: no branch on a coin flip. */
HOT double with_sign(double x, uint64_t neg)
{
    union { double d; uint64_t u; } b = {.d = x};   /* as numeric.c: no address taken */
    b.u |= neg << 63;
    return b.d;
}

/* The tables are built when the generator is seeded (kiln_rng_seed). */
HOT double normal(kiln_rng *r)
{
    for (;;) {
        uint64_t u = next(r);
        int i = (int)(u & (ZIG_N - 1));
        uint64_t neg = (u >> 7) & 1;
        double x = (double)(u >> 11) * 0x1p-53 * zig_x[i];
        if (x < zig_x[i + 1])   /* inside the layer's part wholly under the curve */
            return with_sign(x, neg);
        if (i == 0)
            return with_sign(zig_tail(r), neg);
        double y = zig_f[i] + uniform(r) * (zig_f[i + 1] - zig_f[i]);
        if (y < exp(-0.5 * x * x))
            return with_sign(x, neg);
    }
}

double kiln_rng_normal(kiln_rng *r)
{
    return normal(r);
}

int64_t kiln_rng_range(kiln_rng *r, int64_t lo, int64_t hi)
{
    uint64_t span = (uint64_t)(hi - lo) + 1;
    return lo + (int64_t)(next(r) % span);
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

HOT double draw(kiln_rng *r, const kiln_arg *arg)
{
    if (arg->dist == KILN_DIST_UNIFORM)
        return arg->dist_a + (arg->dist_b - arg->dist_a) * uniform(r);
    return arg->dist_a + arg->dist_b * normal(r);
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
        case KILN_PAT_EXTREMES:   /* integers (fill_integers) */
            break;
        }
    }
}

/* The plain case, f32 or f64 with no variant, without a call per value:
 * the same values as the general path (a cast rounds to nearest even, as
 * kiln_store_from_double does), a third of its time. */
HOT_LOOP void fill_plain(kiln_rng *r, const kiln_arg *arg, kiln_dtype dt, double *out,
                        void *bytes, size_t n)
{
    /* A local copy of the generator and the argument, so their state stays
     * in registers over the loop. */
    kiln_rng g = *r;
    kiln_arg a = *arg;
    unsigned char *b = bytes;
    for (size_t i = 0; i < n; i++) {
        double v = draw(&g, &a);
        if (dt == KILN_DT_F32) {
            float f = (float)v;
            if (b)
                memcpy(b + 4 * i, &f, sizeof f);
            v = f;
        } else if (b) {
            memcpy(b + 8 * i, &v, sizeof v);
        }
        out[i] = v;
    }
    *r = g;
}

/* An integer input (bounds resolved: kiln_input_resolve): each element at
 * the ignore value with the input's share, else uniform in [a, b] (low or
 * high alone for the extremes pattern). */
static void fill_integers(kiln_rng *r, const kiln_arg *arg, const kiln_variant *v, kiln_dtype dt,
                          double *out, void *bytes, size_t n)
{
    int64_t lo = (int64_t)arg->dist_a, hi = (int64_t)arg->dist_b;
    double share = arg->has_ignore ? arg->ignore_share : 0;
    int extremes = v && v->pattern == KILN_PAT_EXTREMES;
    for (size_t i = 0; i < n; i++) {
        double x;
        if (share > 0 && uniform(r) < share)
            x = arg->ignore_value;
        else if (extremes)
            x = (double)(next(r) & 1 ? hi : lo);
        else
            x = (double)kiln_rng_range(r, lo, hi);
        out[i] = x;
        if (bytes)
            kiln_store_from_double(dt, bytes, i, x);
    }
}

void kiln_fill_input(kiln_rng *r, const kiln_arg *arg, const kiln_variant *v, kiln_dtype dt,
                     int64_t row_len, double *out, void *bytes, size_t n)
{
    if (arg->dist == KILN_DIST_INTEGERS) {
        fill_integers(r, arg, v, dt, out, bytes, n);
        return;
    }
    if (!v && (dt == KILN_DT_F32 || dt == KILN_DT_F64)) {
        kiln_hot_region(out, n * sizeof *out);
        if (bytes)
            kiln_hot_region(bytes, n * kiln_dtype_size(dt));
        fill_plain(r, arg, dt, out, bytes, n);
        return;
    }
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
