/* kiln_cpu.h - the one header a CPU candidate may include from kiln.
 *
 * 16-bit floats are passed as storage types (a struct around the bits) so
 * that a candidate cannot mix them up with integers by accident; the inline
 * helpers convert with round-to-nearest-even. Include as "kiln_cpu.h". */
#ifndef KILN_CPU_H
#define KILN_CPU_H

#include <stdint.h>
#include <string.h>

typedef struct { uint16_t bits; } kiln_f16;
typedef struct { uint16_t bits; } kiln_bf16;

static inline float kiln_bf16_to_float(kiln_bf16 h)
{
    uint32_t u = (uint32_t)h.bits << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline kiln_bf16 kiln_float_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    kiln_bf16 h;
    if ((u & 0x7fffffffu) > 0x7f800000u) {  /* NaN: keep it quiet */
        h.bits = (uint16_t)((u >> 16) | 0x40);
        return h;
    }
    u += 0x7fffu + ((u >> 16) & 1u);        /* round to nearest even */
    h.bits = (uint16_t)(u >> 16);
    return h;
}

static inline float kiln_f16_to_float(kiln_f16 h)
{
    uint32_t sign = (uint32_t)(h.bits & 0x8000u) << 16;
    uint32_t exp = (h.bits >> 10) & 0x1fu, man = h.bits & 0x3ffu, u;
    if (exp == 0x1f) {
        u = sign | 0x7f800000u | (man << 13);
    } else if (exp != 0) {
        u = sign | ((exp + 112u) << 23) | (man << 13);
    } else if (man == 0) {
        u = sign;
    } else {                                 /* subnormal: normalise */
        exp = 113;
        while (!(man & 0x400u)) {
            man <<= 1;
            exp--;
        }
        u = sign | (exp << 23) | ((man & 0x3ffu) << 13);
    }
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline kiln_f16 kiln_float_to_f16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    uint32_t sign = (u >> 16) & 0x8000u, au = u & 0x7fffffffu;
    kiln_f16 h;
    if (au > 0x7f800000u) {
        h.bits = (uint16_t)(sign | 0x7e00u);
    } else if (au >= 0x477ff000u) {          /* rounds to >= 65520: Inf */
        h.bits = (uint16_t)(sign | 0x7c00u);
    } else if (au < 0x38800000u) {           /* f16 subnormal or zero */
        float a;
        memcpy(&a, &au, sizeof a);
        float t = a * 16777216.0f;           /* in units of 2^-24, exact */
        uint32_t m = (uint32_t)t;
        float frac = t - (float)m;
        if (frac > 0.5f || (frac == 0.5f && (m & 1u)))
            m++;                              /* round to nearest even */
        h.bits = (uint16_t)(sign | m);
    } else {
        uint32_t r = au + 0xfffu + ((au >> 13) & 1u);
        h.bits = (uint16_t)(sign | ((r - 0x38000000u) >> 13));
    }
    return h;
}

/* For kiln's C references only: kiln defines KILN_RUN_DTYPE_* (the run's
 * dtype) when it builds one, never for a candidate. v rounded once, to
 * nearest even, to that dtype (subnormals and overflow to infinity as the
 * format has them): for gold that depends on a value the candidate stores
 * in T and uses again, as add_rmsnorm's y depends on r. */
#if defined(KILN_RUN_DTYPE_F32) || defined(KILN_RUN_DTYPE_F16) || defined(KILN_RUN_DTYPE_BF16) || \
    defined(KILN_RUN_DTYPE_F64)
#include <math.h>

/* v to p significant bits, exponents from emin (subnormals below) to emax. */
static inline double kiln_round_bits(double v, int p, int emin, int emax)
{
    if (v == 0 || !isfinite(v))
        return v;
    int e;
    frexp(v, &e);                        /* |v| in [2^(e-1), 2^e) */
    int lead = e - 1 < emin ? emin : e - 1;
    double q = ldexp(1.0, lead - (p - 1));   /* the spacing there */
    double r = nearbyint(v / q) * q;         /* v / q is exact: q is a power of two */
    double max = ldexp(2.0 - ldexp(1.0, 1 - p), emax);
    return fabs(r) > max ? copysign(INFINITY, v) : r;
}

static inline double kiln_round_to_run(double v)
{
#if defined(KILN_RUN_DTYPE_BF16)
    return kiln_round_bits(v, 8, -126, 127);
#elif defined(KILN_RUN_DTYPE_F16)
    return kiln_round_bits(v, 11, -14, 15);
#elif defined(KILN_RUN_DTYPE_F64)
    return v;
#else
    return (double)(float)v;
#endif
}
#endif

#endif
