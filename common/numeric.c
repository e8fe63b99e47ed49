/* numeric.c - number formats, poison/guards and output comparison
 * (see numeric.h).
 *
 * The 16-bit conversions are done in software on bit patterns so they are
 * identical on every host and never depend on compiler support for
 * _Float16/__bf16. All narrowing goes through one routine that rounds an
 * exact double to a small binary format, so float->f16 (float->double is
 * exact) and double->f16 both round exactly once. */
#include "numeric.h"

#include <math.h>
#include <string.h>

#include "hot.h"

/* ---- generic small binary format --------------------------------------- */

/* A binary interchange-style format: p bits of precision (including the
 * hidden bit) and ebits exponent bits; sign in the top bit. */
typedef struct fmt {
    int p;
    int ebits;
} fmt;

static const fmt FMT_F16 = {11, 5};
static const fmt FMT_BF16 = {8, 8};

static int fmt_bias(fmt f) { return (1 << (f.ebits - 1)) - 1; }
static int fmt_emin(fmt f) { return 1 - fmt_bias(f); }
static int fmt_emax(fmt f) { return fmt_bias(f); }
static uint32_t fmt_expmask(fmt f) { return (uint32_t)((1u << f.ebits) - 1) << (f.p - 1); }
static uint32_t fmt_signbit(fmt f) { return 1u << (f.ebits + f.p - 1); }
static uint32_t fmt_quiet(fmt f) { return 1u << (f.p - 2); }

/* Bits to value and back through unions (C17 6.5.2.3): no local whose
 * address is taken, which a sanitizer build would guard on every call. */
HOT uint64_t f64_bits(double d)
{
    union { double d; uint64_t u; } x = {.d = d};
    return x.u;
}

HOT float f32_from_bits(uint32_t u)
{
    union { uint32_t u; float f; } x = {.u = u};
    return x.f;
}

/* Unaligned loads of an element, allowed to alias anything (GCC's may_alias):
 * a plain load, where memcpy into a local would take its address. */
typedef uint32_t __attribute__((may_alias, aligned(1))) u32_any;
typedef uint16_t __attribute__((may_alias, aligned(1))) u16_any;

/* NaN keeps its sign and the top payload bits, with the quiet bit forced on
 * (so a payload that truncates to zero still encodes a NaN). */
static uint32_t nan_to_fmt(fmt f, uint64_t dbits, uint32_t sign)
{
    uint32_t payload = (uint32_t)((dbits & 0x000FFFFFFFFFFFFFull) >> (53 - f.p));
    return sign | fmt_expmask(f) | fmt_quiet(f) | payload;
}

/* Round x >= 0 (already an integer-scaled value, exact) to an integer,
 * ties to even, without depending on the FP rounding mode. */
static double round_half_even(double x)
{
    double fl = floor(x);
    double frac = x - fl; /* exact: x < 2^53 */
    if (frac > 0.5 || (frac == 0.5 && fmod(fl, 2.0) != 0.0))
        fl += 1.0;
    return fl;
}

/* The common case of double_to_fmt, on the bits alone: d is in f's normal
 * range, so rounding to nearest-even is dropping low significand bits and
 * rounding up on more than half (a carry runs into the exponent field,
 * which is what it should do). Input generation converts tens of millions
 * of values per call of a large gemm; the general path's frexp, ldexp and
 * floor took most of that time. 0 when d is not in that range. */
static int double_to_fmt_normal(fmt f, uint64_t db, uint32_t sign, uint32_t *out)
{
    int e = (int)((db >> 52) & 0x7FF) - 1023;
    if (e < fmt_emin(f) || e > fmt_emax(f))
        return 0;   /* also zero, subnormal, Inf and NaN doubles */
    int drop = 52 - (f.p - 1);
    uint64_t m = db & 0x000FFFFFFFFFFFFFull, keep = m >> drop;
    uint64_t rest = m & ((1ull << drop) - 1), half = 1ull << (drop - 1);
    if (rest > half || (rest == half && (keep & 1)))
        keep++;
    uint32_t bits = ((uint32_t)(e + fmt_bias(f)) << (f.p - 1)) + (uint32_t)keep;
    *out = sign | (bits >= fmt_expmask(f) ? fmt_expmask(f) : bits);
    return 1;
}

/* Correctly rounded (nearest-even) encoding of d in format f. */
static uint32_t double_to_fmt(fmt f, double d)
{
    uint64_t db = f64_bits(d);
    uint32_t sign = (db >> 63) ? fmt_signbit(f) : 0, fast;
    if (double_to_fmt_normal(f, db, sign, &fast))
        return fast;
    if (isnan(d))
        return nan_to_fmt(f, db, sign);
    double a = fabs(d);
    if (isinf(a))
        return sign | fmt_expmask(f);
    if (a == 0.0)
        return sign;
    int ex;
    frexp(a, &ex);
    int e = ex - 1; /* a = 1.xxx * 2^e */
    if (e > fmt_emax(f))
        return sign | fmt_expmask(f);
    /* Below the normal range the quantum stays at the subnormal spacing. */
    int qexp = (e < fmt_emin(f) ? fmt_emin(f) : e) - (f.p - 1);
    /* Scaling by a power of two is exact here: the result is < 2^p. */
    double q = round_half_even(ldexp(a, -qexp));
    uint32_t n = (uint32_t)q;
    uint32_t bits;
    if (e < fmt_emin(f)) {
        /* Subnormal significand; a carry to 2^(p-1) lands exactly on the
         * smallest normal encoding. */
        bits = n;
    } else {
        /* n in [2^(p-1), 2^p]; n == 2^p carries into the exponent field. */
        uint32_t biased = (uint32_t)(e + fmt_bias(f));
        bits = (biased << (f.p - 1)) + (n - (1u << (f.p - 1)));
    }
    if (bits >= fmt_expmask(f))
        bits = fmt_expmask(f); /* rounded past the largest finite value */
    return sign | bits;
}

/* ---- public 16-bit conversions ----------------------------------------- */

uint16_t kiln_f32_to_f16(float f)
{
    return (uint16_t)double_to_fmt(FMT_F16, (double)f);
}

uint16_t kiln_f32_to_bf16(float f)
{
    return (uint16_t)double_to_fmt(FMT_BF16, (double)f);
}

float kiln_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t e = (h >> 10) & 0x1Fu;
    uint32_t m = h & 0x3FFu;
    if (e == 0x1F) /* Inf, or NaN made quiet */
        return f32_from_bits(sign | 0x7F800000u | (m ? 0x00400000u : 0) | (m << 13));
    if (e == 0) {
        /* Zero or subnormal: m * 2^-24, exact in float. */
        float v = ldexpf((float)m, -24);
        return sign ? -v : v;
    }
    return f32_from_bits(sign | ((e - 15 + 127) << 23) | (m << 13));
}

float kiln_bf16_to_f32(uint16_t b)
{
    uint32_t u = (uint32_t)b << 16;
    if ((u & 0x7F800000u) == 0x7F800000u && (u & 0x007FFFFFu))
        u |= 0x00400000u; /* quiet a signalling NaN */
    return f32_from_bits(u);
}

/* ---- element access ---------------------------------------------------- */

/* Element i of buf, each case with its own constant element size: this
 * runs once per element of every checked output and generated input, and
 * a call to find the size was a twentieth of a verification's time. */
double kiln_load_as_double(kiln_dtype dt, const void *buf, size_t i)
{
    const unsigned char *b = buf;
    switch (dt) {
    case KILN_DT_F32: { float v; memcpy(&v, b + 4 * i, sizeof v); return v; }
    case KILN_DT_F64: { double v; memcpy(&v, b + 8 * i, sizeof v); return v; }
    case KILN_DT_F16: { uint16_t v; memcpy(&v, b + 2 * i, sizeof v); return kiln_f16_to_f32(v); }
    case KILN_DT_BF16: { uint16_t v; memcpy(&v, b + 2 * i, sizeof v); return kiln_bf16_to_f32(v); }
    case KILN_DT_I32: { int32_t v; memcpy(&v, b + 4 * i, sizeof v); return (double)v; }
    case KILN_DT_I64: { int64_t v; memcpy(&v, b + 8 * i, sizeof v); return (double)v; }
    case KILN_DT_I8: { int8_t v; memcpy(&v, b + i, sizeof v); return (double)v; }
    default: return NAN;
    }
}

/* Nearest-even integer of v, saturated to [lo, hi]; NaN gives 0. The bounds
 * are compared as doubles, so hi may be rounded up (2^63 for i64) and is
 * then handled by the >= test. */
static int64_t to_int_sat(double v, double lo, double hi, int64_t ilo, int64_t ihi)
{
    if (isnan(v))
        return 0;
    double r = copysign(round_half_even(fabs(v)), v);
    if (r >= hi)
        return ihi;
    if (r <= lo)
        return ilo;
    return (int64_t)r;
}

void kiln_store_from_double(kiln_dtype dt, void *buf, size_t i, double v)
{
    unsigned char *p = buf;
    switch (dt) {   /* i scaled by each case's constant size (see the loader) */
    case KILN_DT_F32: { float x = (float)v; memcpy(p + 4 * i, &x, sizeof x); break; }
    case KILN_DT_F64: memcpy(p + 8 * i, &v, sizeof v); break;
    case KILN_DT_F16: {
        uint16_t x = (uint16_t)double_to_fmt(FMT_F16, v);
        memcpy(p + 2 * i, &x, sizeof x);
        break;
    }
    case KILN_DT_BF16: {
        uint16_t x = (uint16_t)double_to_fmt(FMT_BF16, v);
        memcpy(p + 2 * i, &x, sizeof x);
        break;
    }
    case KILN_DT_I32: {
        int32_t x = (int32_t)to_int_sat(v, INT32_MIN, INT32_MAX, INT32_MIN, INT32_MAX);
        memcpy(p + 4 * i, &x, sizeof x);
        break;
    }
    case KILN_DT_I64: {
        int64_t x = to_int_sat(v, -0x1p63, 0x1p63, INT64_MIN, INT64_MAX);
        memcpy(p + 8 * i, &x, sizeof x);
        break;
    }
    case KILN_DT_I8: {
        int8_t x = (int8_t)to_int_sat(v, INT8_MIN, INT8_MAX, INT8_MIN, INT8_MAX);
        memcpy(p + i, &x, sizeof x);
        break;
    }
    default: break;
    }
}

/* ---- ULPs ---------------------------------------------------------------- */

/* Precision and exponent range of a float dtype; 0 for non-float. */
static int float_params(kiln_dtype dt, int *p, int *emin, int *emax)
{
    switch (dt) {
    case KILN_DT_F32: *p = 24; *emin = -126; *emax = 127; return 1;
    case KILN_DT_F16: *p = 11; *emin = -14; *emax = 15; return 1;
    case KILN_DT_BF16: *p = 8; *emin = -126; *emax = 127; return 1;
    case KILN_DT_F64: *p = 53; *emin = -1022; *emax = 1023; return 1;
    default: return 0;
    }
}

/* 2^k; by its bits where that is a normal double (ldexp was a large part
 * of a comparison's cost). */
HOT double pow2(int k)
{
    if (k < -1022 || k > 1023)
        return ldexp(1.0, k);
    union { uint64_t u; double d; } x = {.u = (uint64_t)(k + 1023) << 52};
    return x.d;
}

double kiln_ulp(kiln_dtype dt, double magnitude)
{
    int p, emin, emax;
    if (!float_params(dt, &p, &emin, &emax))
        return 1.0;
    if (isnan(magnitude))
        return NAN;
    double a = fabs(magnitude);
    int e = emax; /* Inf: spacing of the top binade */
    int field = (int)(f64_bits(a) >> 52);   /* the biased exponent (a >= 0) */
    if (a == 0.0) {
        e = emin;
    } else if (field > 0 && !isinf(a)) {
        e = field - 1023;   /* a normal double: a = 1.xxx * 2^e */
    } else if (!isinf(a)) {
        int ex;
        frexp(a, &ex);
        e = ex - 1;
    }
    if (e < emin)
        e = emin;
    if (e > emax)
        e = emax;
    return pow2(e - (p - 1));
}

/* ---- poison -------------------------------------------------------------- */

/* Write dt's poison bits into one element slot (size bytes). */
static void poison_bits(kiln_dtype dt, unsigned char *out)
{
    switch (dt) {
    case KILN_DT_F32: { uint32_t v = 0x7FA5A5A5u; memcpy(out, &v, sizeof v); break; }
    case KILN_DT_F16: { uint16_t v = 0x7D5Au; memcpy(out, &v, sizeof v); break; }
    case KILN_DT_BF16: { uint16_t v = 0x7FA5u; memcpy(out, &v, sizeof v); break; }
    case KILN_DT_F64: { uint64_t v = 0x7FF4A5A5A5A5A5A5ull; memcpy(out, &v, sizeof v); break; }
    default:
        /* Integers: all bytes 0xA5 (i32 -1515870811, i8 -91): easy to spot
         * in a dump and not a typical result. */
        memset(out, 0xA5, kiln_dtype_size(dt));
        break;
    }
}

void kiln_poison_fill(kiln_dtype dt, void *buf, size_t n)
{
    size_t sz = kiln_dtype_size(dt);
    unsigned char pat[8], *p = buf;
    if (sz == 0 || n == 0)
        return;
    poison_bits(dt, pat);
    /* One element, then copies of what is filled so far: a few memcpy
     * calls instead of a store per element (which a sanitizer build checks
     * one by one). */
    size_t total = n * sz, done = sz;
    memcpy(p, pat, sz);
    while (done < total) {
        size_t k = done < total - done ? done : total - done;
        memcpy(p + done, p, k);
        done += k;
    }
}

/* Element i (of size sz) holds the poison pattern pat. */
static int is_poison_at(const unsigned char *pat, size_t sz, const void *buf, size_t i)
{
    const unsigned char *p = (const unsigned char *)buf + i * sz;
    switch (sz) {   /* fixed sizes: loads and a compare, not a call */
    case 2: return memcmp(p, pat, 2) == 0;
    case 4: return memcmp(p, pat, 4) == 0;
    case 8: return memcmp(p, pat, 8) == 0;
    default: return memcmp(p, pat, sz) == 0;
    }
}

size_t kiln_poison_count(kiln_dtype dt, const void *buf, size_t n, size_t *first)
{
    size_t count = 0, f = SIZE_MAX, sz = kiln_dtype_size(dt);
    unsigned char pat[8];
    if (sz == 0 || sz > sizeof pat)
        n = 0;
    else
        poison_bits(dt, pat);
    for (size_t i = 0; i < n; i++) {
        if (is_poison_at(pat, sz, buf, i)) {
            if (count++ == 0)
                f = i;
        }
    }
    if (first)
        *first = f;
    return count;
}

/* ---- guards -------------------------------------------------------------- */

/* splitmix64: cheap, and every seed (including 0) gives a full-looking
 * pattern, so a stray zero-fill or copy is always detected. */
static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Byte i of the pattern, generated 8 bytes at a time. */
static unsigned char guard_byte(uint64_t *state, uint64_t *word, size_t i)
{
    if (i % 8 == 0)
        *word = splitmix64(state);
    return (unsigned char)(*word >> (8 * (i % 8)));
}

void kiln_guard_fill(void *buf, size_t bytes, uint64_t seed)
{
    unsigned char *p = buf;
    uint64_t state = seed, word = 0;
    for (size_t i = 0; i < bytes; i++)
        p[i] = guard_byte(&state, &word, i);
}

int kiln_guard_check(const void *buf, size_t bytes, uint64_t seed, size_t *first_bad)
{
    const unsigned char *p = buf;
    uint64_t state = seed, word = 0;
    for (size_t i = 0; i < bytes; i++) {
        if (p[i] != guard_byte(&state, &word, i)) {
            if (first_bad)
                *first_bad = i;
            return 0;
        }
    }
    if (first_bad)
        *first_bad = SIZE_MAX;
    return 1;
}

/* ---- comparison ---------------------------------------------------------- */

HOT_LOOP double max_abs_finite(const double *gold, size_t n)
{
    double m = 0.0;
    for (size_t i = 0; i < n; i++)
        if (isfinite(gold[i]) && fabs(gold[i]) > m)
            m = fabs(gold[i]);
    return m;
}

/* Candidate matches a non-finite gold: NaN for NaN, same-signed Inf. */
HOT int nonfinite_matches(double c, double g)
{
    if (isnan(g))
        return isnan(c);
    return c == g;
}

/* Running state of one comparison. */
typedef struct cmp_acc {
    size_t first_hard;  /* first unwritten / non-finite element */
    size_t argmax;
    double max_err;
    double diff2, gold2; /* scaled sums of squares for rel_l2 */
} cmp_acc;

HOT void note_error(cmp_acc *a, size_t i, double err)
{
    if (a->argmax == SIZE_MAX || err > a->max_err) {
        a->max_err = err;
        a->argmax = i;
    }
}

HOT void note_hard(cmp_acc *a, size_t i)
{
    if (a->first_hard == SIZE_MAX)
        a->first_hard = i;
}

/* What a comparison holds fixed: the dtype, its size and poison pattern,
 * the budget and the scales. */
typedef struct cmp_fixed {
    kiln_dtype dt;
    size_t sz;
    unsigned char pat[8];
    double budget, floor_abs, inv_scale;
} cmp_fixed;

/* A non-finite gold or candidate value, folded in; 0 if both are finite. */
HOT int fold_nonfinite(const cmp_fixed *k, double c, double g, size_t i, cmp_acc *a,
                          kiln_compare_result *out)
{
    if (!isfinite(g)) {
        /* Gold's own NaN/Inf must be reproduced; anything else is wrong. */
        double err = nonfinite_matches(c, g) ? 0.0 : INFINITY;
        if (err > k->budget)
            out->over_budget++;
        note_error(a, i, err);
        return 1;
    }
    if (!isfinite(c)) {
        out->nonfinite++;
        note_hard(a, i);
        note_error(a, i, INFINITY);
        return 1;
    }
    return 0;
}

/* A finite element's error (in ULPs of max(|g|, floor)), folded in. */
HOT void fold_error(const cmp_fixed *k, double c, double g, double err, size_t i,
                       cmp_acc *a, kiln_compare_result *out)
{
    if (err > k->budget)
        out->over_budget++;
    note_error(a, i, err);
    double d = (c - g) * k->inv_scale, gs = g * k->inv_scale;
    a->diff2 += d * d;
    a->gold2 += gs * gs;
}

/* Classify element i and fold it into acc and out. */
static void compare_one(const cmp_fixed *k, const void *cand, double g, size_t i, cmp_acc *a,
                        kiln_compare_result *out)
{
    if (is_poison_at(k->pat, k->sz, cand, i)) {
        out->unwritten++;
        note_hard(a, i);
        return;
    }
    double c = kiln_load_as_double(k->dt, cand, i);
    if (fold_nonfinite(k, c, g, i, a, out))
        return;
    double ref = fabs(g) > k->floor_abs ? fabs(g) : k->floor_abs;
    fold_error(k, c, g, fabs(c - g) / kiln_ulp(k->dt, ref), i, a, out);
}

/* 1 / kiln_ulp(dt, ref) for ref >= 0, dt a float type of p significand
 * bits and exponents emin..emax: a power of two, so multiplying by it gives
 * the very bits that dividing by the ULP does. */
HOT double inv_ulp(double ref, int p, int emin, int emax)
{
    int field = (int)(f64_bits(ref) >> 52);
    int e = field == 0 ? emin : field - 1023;   /* 0 and f64 subnormals: emin */
    e = e < emin ? emin : e > emax ? emax : e;
    return pow2(p - 1 - e);
}

/* Element i of a float output of size sz (4: f32; 2: bf16 if bf16, else
 * f16) as its bits and its value. */
HOT double load_small(const unsigned char *p, size_t sz, int bf16, size_t i,
                      uint32_t *bits)
{
    if (sz == 4) {
        *bits = *(const u32_any *)(p + 4 * i);
        return f32_from_bits(*bits);
    }
    uint16_t h = *(const u16_any *)(p + 2 * i);
    *bits = h;
    return bf16 ? kiln_bf16_to_f32(h) : kiln_f16_to_f32(h);
}

/* compare_one for every element of an f32, bf16 or f16 output, without the
 * per-element dispatch on the dtype: the CPU backend's every checked call
 * ends here. Each call site below passes constants, so each compiles to a
 * loop of its own. */
HOT void compare_small(const cmp_fixed *k, const void *cand, const double *gold,
                                 size_t n, size_t sz, int bf16, int p, int emin, int emax,
                                 cmp_acc *a, kiln_compare_result *out)
{
    uint32_t poison;
    if (sz == 4) {
        memcpy(&poison, k->pat, 4);
    } else {
        uint16_t h;
        memcpy(&h, k->pat, 2);
        poison = h;
    }
    /* Local copies, so the running sums stay in registers: through the
     * pointers every element would load and store them (and a sanitizer
     * build check each access). */
    cmp_fixed kk = *k;
    cmp_acc acc = *a;
    kiln_compare_result o = *out;
    for (size_t i = 0; i < n; i++) {
        uint32_t bits;
        double c = load_small(cand, sz, bf16, i, &bits), g = gold[i];
        if (bits == poison) {
            o.unwritten++;
            note_hard(&acc, i);
            continue;
        }
        if (fold_nonfinite(&kk, c, g, i, &acc, &o))
            continue;
        double ref = fabs(g) > kk.floor_abs ? fabs(g) : kk.floor_abs;
        fold_error(&kk, c, g, fabs(c - g) * inv_ulp(ref, p, emin, emax), i, &acc, &o);
    }
    *a = acc;
    *out = o;
}

/* The fast loops; 0 for a dtype that has none. */
HOT_LOOP int compare_fast(const cmp_fixed *k, const void *cand, const double *gold, size_t n,
                        cmp_acc *a, kiln_compare_result *out)
{
    switch (k->dt) {
    case KILN_DT_F32: compare_small(k, cand, gold, n, 4, 0, 24, -126, 127, a, out); return 1;
    case KILN_DT_BF16: compare_small(k, cand, gold, n, 2, 1, 8, -126, 127, a, out); return 1;
    case KILN_DT_F16: compare_small(k, cand, gold, n, 2, 0, 11, -14, 15, a, out); return 1;
    default: return 0;
    }
}

static double rel_l2_of(const cmp_acc *a, size_t nonfinite)
{
    if (nonfinite)
        return INFINITY;
    if (a->gold2 == 0.0)
        return a->diff2 == 0.0 ? 0.0 : INFINITY;
    return sqrt(a->diff2) / sqrt(a->gold2);
}

static void compare(kiln_dtype dt, const void *cand, const double *gold, size_t n,
                    const kiln_tolerance *tol, int general, kiln_compare_result *out)
{
    double budget = tol ? tol->budget_ulps : 0.0;
    double floor_rel = tol ? tol->floor_rel : 0.0, floor_abs = tol ? tol->floor_abs : 0.0;
    kiln_hot_region(gold, n * sizeof *gold);
    double gmax = max_abs_finite(gold, n);
    /* Sums of squares are taken relative to max|g| (its power of two, so
     * scaling is a multiplication and exact) so they cannot overflow or
     * underflow for gold of any magnitude. */
    int ge = 0;
    if (gmax > 0.0)
        frexp(gmax, &ge);
    ge = ge < -1022 ? -1022 : ge > 1022 ? 1022 : ge;   /* 2^-ge stays a normal double */
    double inv_scale = ldexp(1.0, -ge);
    cmp_acc a = {SIZE_MAX, SIZE_MAX, 0.0, 0.0, 0.0};

    cmp_fixed k = {dt, kiln_dtype_size(dt), {0}, budget, fmax(floor_rel * gmax, floor_abs),
                   inv_scale};
    memset(out, 0, sizeof *out);
    out->n = n;
    if (k.sz == 0 || k.sz > sizeof k.pat)
        n = 0;
    else
        poison_bits(dt, k.pat);
    kiln_hot_region(cand, n * k.sz);
    if (general || !compare_fast(&k, cand, gold, n, &a, out))
        for (size_t i = 0; i < n; i++)
            compare_one(&k, cand, gold[i], i, &a, out);

    out->max_err_ulps = a.max_err;
    out->worst_index = a.first_hard != SIZE_MAX ? a.first_hard : a.argmax;
    if (out->worst_index != SIZE_MAX) {
        out->worst_candidate = kiln_load_as_double(dt, cand, out->worst_index);
        out->worst_gold = gold[out->worst_index];
    }
    out->rel_l2 = rel_l2_of(&a, out->nonfinite);
    out->pass = out->unwritten == 0 && out->nonfinite == 0 &&
                out->max_err_ulps <= budget;
}

void kiln_compare(kiln_dtype dt, const void *cand, const double *gold, size_t n,
                  const kiln_tolerance *tol, kiln_compare_result *out)
{
    compare(dt, cand, gold, n, tol, 0, out);
}

void kiln_compare_general(kiln_dtype dt, const void *cand, const double *gold, size_t n,
                          const kiln_tolerance *tol, kiln_compare_result *out)
{
    compare(dt, cand, gold, n, tol, 1, out);
}

double kiln_reduction_budget(double base_ulps, double per_sqrt, int64_t reduction_len)
{
    if (reduction_len < 1)
        reduction_len = 1;
    return base_ulps + per_sqrt * sqrt((double)reduction_len);
}
