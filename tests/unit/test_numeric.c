/* test_numeric.c - unit tests for common/numeric.c: 16-bit conversions,
 * double load/store, ULPs, poison, guards and output comparison. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <float.h>
#include <math.h>
#include <string.h>

#include "numeric.h"
/* kiln_round_bits, as C references get it (kiln_cpu.h, for a reference build) */
#define KILN_RUN_DTYPE_BF16 1
#include "kiln_cpu.h"

/* ---- helpers ------------------------------------------------------------- */

static uint32_t fbits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* cmocka 1.1 has no assert_double_equal. */
#define assert_near(a, b, eps) assert_true(fabs((double)(a) - (double)(b)) <= (eps))

static float ffrom(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static int f16_is_nan(uint16_t h) { return (h & 0x7C00) == 0x7C00 && (h & 0x3FF); }
static int bf16_is_nan(uint16_t b) { return (b & 0x7F80) == 0x7F80 && (b & 0x7F); }

static uint16_t store_f16(double v)
{
    uint16_t h;
    kiln_store_from_double(KILN_DT_F16, &h, 0, v);
    return h;
}

static uint16_t store_bf16(double v)
{
    uint16_t b;
    kiln_store_from_double(KILN_DT_BF16, &b, 0, v);
    return b;
}

/* ---- conversions ----------------------------------------------------------- */

static void test_f16_roundtrip_all(void **state)
{
    (void)state;
    for (uint32_t u = 0; u <= 0xFFFF; u++) {
        uint16_t h = (uint16_t)u;
        float f = kiln_f16_to_f32(h);
        uint16_t back = kiln_f32_to_f16(f);
        if (f16_is_nan(h)) {
            assert_true(isnan(f));
            assert_true(fbits(f) & 0x00400000u); /* quiet */
            assert_true(f16_is_nan(back));
            assert_true(back & 0x0200); /* quiet */
            assert_int_equal(back & 0x8000, h & 0x8000);
        } else {
            assert_int_equal(back, h);
            assert_false(isnan(f));
            /* The double path must agree bit for bit. */
            assert_int_equal(store_f16(kiln_load_as_double(KILN_DT_F16, &h, 0)), h);
        }
    }
}

static void test_bf16_roundtrip_all(void **state)
{
    (void)state;
    for (uint32_t u = 0; u <= 0xFFFF; u++) {
        uint16_t b = (uint16_t)u;
        float f = kiln_bf16_to_f32(b);
        uint16_t back = kiln_f32_to_bf16(f);
        if (bf16_is_nan(b)) {
            assert_true(isnan(f));
            assert_true(fbits(f) & 0x00400000u);
            assert_true(bf16_is_nan(back));
            assert_true(back & 0x0040);
        } else {
            assert_int_equal(back, b);
            assert_int_equal(fbits(f), (uint32_t)b << 16);
        }
    }
}

/* Classic integer rounding for bf16, valid for non-NaN inputs. */
static uint16_t bf16_reference(uint32_t u)
{
    return (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

static void test_bf16_matches_reference_sampled(void **state)
{
    (void)state;
    for (uint64_t u = 0; u <= 0xFFFFFFFFull; u += 997) {
        float f = ffrom((uint32_t)u);
        uint16_t got = kiln_f32_to_bf16(f);
        if (isnan(f))
            assert_true(bf16_is_nan(got));
        else
            assert_int_equal(got, bf16_reference((uint32_t)u));
    }
}

#ifdef __FLT16_MAX__
/* Where the compiler has _Float16, its (libgcc) conversions are an
 * independent correctly rounded reference. */
static void test_f16_matches_compiler_sampled(void **state)
{
    (void)state;
    for (uint64_t u = 0; u <= 0xFFFFFFFFull; u += 1009) {
        float f = ffrom((uint32_t)u);
        if (isnan(f))
            continue;
        _Float16 r = (_Float16)f;
        uint16_t want;
        memcpy(&want, &r, sizeof want);
        assert_int_equal(kiln_f32_to_f16(f), want);
        double d = (double)f * (1.0 + 0x1p-30); /* off the float grid */
        _Float16 rd = (_Float16)d;
        memcpy(&want, &rd, sizeof want);
        assert_int_equal(store_f16(d), want);
    }
}
#endif

static void test_f16_ties_to_even(void **state)
{
    (void)state;
    /* 1 + 2^-11 is halfway between 1 (even) and 1 + 2^-10 (odd). */
    assert_int_equal(kiln_f32_to_f16(1.0f + 0x1p-11f), 0x3C00);
    /* 1 + 3*2^-11 is halfway between 1+2^-10 (odd) and 1+2^-9 (even). */
    assert_int_equal(kiln_f32_to_f16(1.0f + 3 * 0x1p-11f), 0x3C02);
    assert_float_equal(kiln_f16_to_f32(0x3C02), 1.0f + 0x1p-9f, 0.0f);
    /* Just above a tie rounds up. */
    assert_int_equal(kiln_f32_to_f16(1.0f + 0x1p-11f + 0x1p-20f), 0x3C01);
    assert_int_equal(kiln_f32_to_f16(-1.0f - 0x1p-11f), 0xBC00);
    assert_int_equal(kiln_f32_to_f16(1.0f), 0x3C00);
    assert_int_equal(kiln_f32_to_f16(-2.0f), 0xC000);
}

static void test_f16_overflow_and_specials(void **state)
{
    (void)state;
    assert_int_equal(kiln_f32_to_f16(65504.0f), 0x7BFF);
    assert_int_equal(kiln_f32_to_f16(65519.0f), 0x7BFF);
    assert_int_equal(kiln_f32_to_f16(65520.0f), 0x7C00);
    assert_int_equal(kiln_f32_to_f16(-65520.0f), 0xFC00);
    assert_int_equal(kiln_f32_to_f16(1e10f), 0x7C00);
    assert_int_equal(store_f16(1e300), 0x7C00);
    assert_int_equal(store_f16(65519.99), 0x7BFF);
    assert_int_equal(kiln_f32_to_f16(INFINITY), 0x7C00);
    assert_int_equal(kiln_f32_to_f16(-INFINITY), 0xFC00);
    assert_true(f16_is_nan(kiln_f32_to_f16(NAN)));
    assert_true(f16_is_nan(kiln_f32_to_f16(ffrom(0x7F800001u)))); /* sNaN, tiny payload */
    assert_true(isinf(kiln_f16_to_f32(0x7C00)) && kiln_f16_to_f32(0x7C00) > 0);
    assert_int_equal(kiln_f32_to_f16(0.0f), 0x0000);
    assert_int_equal(kiln_f32_to_f16(-0.0f), 0x8000);
    assert_true(signbit(kiln_f16_to_f32(0x8000)));
    assert_int_equal(store_f16(-0.0), 0x8000);
    assert_int_equal(store_f16(-1e-300), 0x8000);
}

static void test_f16_subnormals(void **state)
{
    (void)state;
    assert_int_equal(kiln_f32_to_f16(0x1p-24f), 0x0001);
    assert_float_equal(kiln_f16_to_f32(0x0001), 0x1p-24f, 0.0f);
    assert_int_equal(kiln_f32_to_f16(0x1p-25f), 0x0000);          /* tie -> even 0 */
    assert_int_equal(kiln_f32_to_f16(0x1p-25f + 0x1p-40f), 0x0001);
    assert_int_equal(kiln_f32_to_f16(3 * 0x1p-25f), 0x0002);      /* 1.5 -> 2 */
    assert_int_equal(kiln_f32_to_f16(-0x1p-24f), 0x8001);
    assert_int_equal(kiln_f32_to_f16(0x1p-14f), 0x0400);          /* min normal */
    assert_int_equal(kiln_f32_to_f16(0x1p-14f - 0x1p-25f), 0x0400); /* tie, rounds into normal */
    assert_int_equal(kiln_f32_to_f16(0x3FFp-24f), 0x03FF);        /* max subnormal */
    assert_float_equal(kiln_f16_to_f32(0x03FF), 0x3FFp-24f, 0.0f);
    assert_int_equal(store_f16(0x1p-1074), 0x0000);               /* f64 subnormal */
}

static void test_double_to_f16_no_double_rounding(void **state)
{
    (void)state;
    /* v is just above the f16 tie 1 + 2^-11. double->float rounds it onto
     * the tie, and float->f16 then rounds the tie to even (1.0). The single
     * correct rounding goes up to 1 + 2^-10. */
    double v = 1.0 + 0x1p-11 + 0x1p-40;
    assert_int_equal(kiln_f32_to_f16((float)v), 0x3C00);
    assert_int_equal(store_f16(v), 0x3C01);
    /* Same for bf16: just above the tie 1 + 2^-8. */
    double w = 1.0 + 0x1p-8 + 0x1p-40;
    assert_int_equal(kiln_f32_to_bf16((float)w), 0x3F80);
    assert_int_equal(store_bf16(w), 0x3F81);
}

static void test_bf16_values(void **state)
{
    (void)state;
    /* 1/3 = 0x3EAAAAAB in f32; the dropped half 0xAAAB > 0x8000 rounds up. */
    assert_int_equal(kiln_f32_to_bf16(1.0f / 3.0f), 0x3EAB);
    assert_int_equal(store_bf16(1.0 / 3.0), 0x3EAB);
    assert_int_equal(kiln_f32_to_bf16(-1.0f / 3.0f), 0xBEAB);
    assert_int_equal(kiln_f32_to_bf16(1.0f + 0x1p-8f), 0x3F80);            /* tie -> even */
    assert_int_equal(kiln_f32_to_bf16(1.0f + 3 * 0x1p-8f), 0x3F82);        /* tie -> even */
    assert_int_equal(kiln_f32_to_bf16(FLT_MAX), 0x7F80);                   /* overflow */
    assert_int_equal(kiln_f32_to_bf16(0x1p-133f), 0x0001);                 /* min subnormal */
    assert_int_equal(kiln_f32_to_bf16(-0.0f), 0x8000);
    assert_true(bf16_is_nan(kiln_f32_to_bf16(ffrom(0x7F800001u))));
    assert_true(bf16_is_nan(store_bf16(NAN)));
    assert_int_equal(store_bf16(1e300), 0x7F80);
}

static void test_load_store_ints_and_floats(void **state)
{
    (void)state;
    int32_t i32[3];
    kiln_store_from_double(KILN_DT_I32, i32, 0, 2.5);
    kiln_store_from_double(KILN_DT_I32, i32, 1, -1e20);
    kiln_store_from_double(KILN_DT_I32, i32, 2, NAN);
    assert_int_equal(i32[0], 2);
    assert_int_equal(i32[1], INT32_MIN);
    assert_int_equal(i32[2], 0);
    assert_true(kiln_load_as_double(KILN_DT_I32, i32, 1) == (double)INT32_MIN);
    int8_t i8[2];
    kiln_store_from_double(KILN_DT_I8, i8, 0, 300.0);
    kiln_store_from_double(KILN_DT_I8, i8, 1, -3.5);
    assert_int_equal(i8[0], 127);
    assert_int_equal(i8[1], -4);
    int64_t i64;
    kiln_store_from_double(KILN_DT_I64, &i64, 0, 1e19);
    assert_true(i64 == INT64_MAX);
    kiln_store_from_double(KILN_DT_I64, &i64, 0, -0x1p63);
    assert_true(i64 == INT64_MIN);
    float f32[2];
    kiln_store_from_double(KILN_DT_F32, f32, 1, 0.1);
    assert_true(f32[1] == 0.1f);
    assert_true(kiln_load_as_double(KILN_DT_F32, f32, 1) == (double)0.1f);
    double f64;
    kiln_store_from_double(KILN_DT_F64, &f64, 0, 0.1);
    assert_true(kiln_load_as_double(KILN_DT_F64, &f64, 0) == 0.1);
}

/* ---- ULPs ----------------------------------------------------------------- */

static void test_ulp(void **state)
{
    (void)state;
    assert_true(kiln_ulp(KILN_DT_F32, 1.0) == 0x1p-23);
    assert_true(kiln_ulp(KILN_DT_F16, 1.0) == 0x1p-10);
    assert_true(kiln_ulp(KILN_DT_BF16, 1.0) == 0x1p-7);
    assert_true(kiln_ulp(KILN_DT_F64, 1.0) == 0x1p-52);
    assert_true(kiln_ulp(KILN_DT_F32, 3.0) == 0x1p-22);
    assert_true(kiln_ulp(KILN_DT_F16, -3.0) == 0x1p-9);
    assert_true(kiln_ulp(KILN_DT_BF16, 3.0) == 0x1p-6);
    assert_true(kiln_ulp(KILN_DT_F64, 3.0) == 0x1p-51);
    assert_true(kiln_ulp(KILN_DT_F32, 1e-40) == 0x1p-149);
    assert_true(kiln_ulp(KILN_DT_F16, 1e-40) == 0x1p-24);
    assert_true(kiln_ulp(KILN_DT_BF16, 1e-40) == 0x1p-133);
    assert_true(kiln_ulp(KILN_DT_F64, 1e-40) == 0x1p-185); /* normal in f64 */
    assert_true(kiln_ulp(KILN_DT_F32, 0.0) == 0x1p-149);
    assert_true(kiln_ulp(KILN_DT_F16, 65504.0) == 32.0);
    assert_true(kiln_ulp(KILN_DT_I32, 12345.0) == 1.0);
    assert_true(kiln_ulp(KILN_DT_I64, 1e-40) == 1.0);
    assert_true(kiln_ulp(KILN_DT_I8, 3.0) == 1.0);
}

/* ---- poison and guards ------------------------------------------------------ */

static void test_poison(void **state)
{
    (void)state;
    static const kiln_dtype all[] = {KILN_DT_F32, KILN_DT_F16, KILN_DT_BF16, KILN_DT_F64,
                                     KILN_DT_I32, KILN_DT_I64, KILN_DT_I8};
    for (size_t t = 0; t < sizeof all / sizeof all[0]; t++) {
        kiln_dtype dt = all[t];
        unsigned char buf[8 * 10];
        size_t first = 0;
        kiln_poison_fill(dt, buf, 10);
        assert_int_equal(kiln_poison_count(dt, buf, 10, &first), 10);
        assert_int_equal(first, 0);
        kiln_store_from_double(dt, buf, 0, 1.0);
        kiln_store_from_double(dt, buf, 3, 0.0);
        assert_int_equal(kiln_poison_count(dt, buf, 10, &first), 8);
        assert_int_equal(first, 1);
        for (size_t i = 0; i < 10; i++)
            kiln_store_from_double(dt, buf, i, 2.0);
        assert_int_equal(kiln_poison_count(dt, buf, 10, &first), 0);
        assert_true(first == SIZE_MAX);
        if (kiln_dtype_is_float(dt)) {
            kiln_poison_fill(dt, buf, 1);
            assert_true(isnan(kiln_load_as_double(dt, buf, 0)));
        }
    }
    uint32_t u;
    kiln_poison_fill(KILN_DT_F32, &u, 1);
    assert_true(u == 0x7FA5A5A5u);
    uint16_t h;
    kiln_poison_fill(KILN_DT_F16, &h, 1);
    assert_int_equal(h, 0x7D5A);
    kiln_poison_fill(KILN_DT_BF16, &h, 1);
    assert_int_equal(h, 0x7FA5);
    uint64_t d;
    kiln_poison_fill(KILN_DT_F64, &d, 1);
    assert_true(d == 0x7FF4A5A5A5A5A5A5ull);
    /* A quiet NaN produced by arithmetic is not poison. */
    float q = NAN;
    assert_int_equal(kiln_poison_count(KILN_DT_F32, &q, 1, NULL), 0);
}

static void test_guards(void **state)
{
    (void)state;
    unsigned char a[257], b[257];
    size_t bad = 0;
    kiln_guard_fill(a, sizeof a, 42);
    kiln_guard_fill(b, sizeof b, 43);
    assert_true(memcmp(a, b, sizeof a) != 0);
    assert_int_equal(kiln_guard_check(a, sizeof a, 42, &bad), 1);
    assert_true(bad == SIZE_MAX);
    assert_int_equal(kiln_guard_check(a, sizeof a, 43, &bad), 0);
    for (size_t i = 0; i < sizeof a; i += 37) {
        a[i] ^= 0x01;
        assert_int_equal(kiln_guard_check(a, sizeof a, 42, &bad), 0);
        assert_int_equal(bad, i);
        a[i] ^= 0x01;
    }
    a[sizeof a - 1] ^= 0x80;
    assert_int_equal(kiln_guard_check(a, sizeof a, 42, &bad), 0);
    assert_int_equal(bad, sizeof a - 1);
    assert_int_equal(kiln_guard_check(a, 0, 42, NULL), 1);
    /* Seed 0 still gives a non-zero pattern. */
    kiln_guard_fill(b, sizeof b, 0);
    size_t zeros = 0;
    for (size_t i = 0; i < sizeof b; i++)
        zeros += b[i] == 0;
    assert_true(zeros < 16);
}

/* ---- comparison -------------------------------------------------------------- */

static void test_compare_exact(void **state)
{
    (void)state;
    double gold[4] = {1.0, -2.5, 0.0, 1024.0};
    float cand[4] = {1.0f, -2.5f, 0.0f, 1024.0f};
    kiln_tolerance tol = {0.0, 0.0, 0.0};
    kiln_compare_result r;
    kiln_compare(KILN_DT_F32, cand, gold, 4, &tol, &r);
    assert_int_equal(r.pass, 1);
    assert_int_equal(r.n, 4);
    assert_int_equal(r.nonfinite + r.unwritten + r.over_budget, 0);
    assert_true(r.max_err_ulps == 0.0);
    assert_true(r.rel_l2 == 0.0);
}

static void test_compare_k_ulps(void **state)
{
    (void)state;
    double gold[3] = {1.5, 3.0, -1.0};
    float cand[3] = {1.5f, 3.0f, -1.0f};
    cand[1] = 3.0f + 5 * 0x1p-22f; /* 5 ulps at 3.0 */
    kiln_compare_result r;
    kiln_tolerance tol = {5.0, 0.0, 0.0};
    kiln_compare(KILN_DT_F32, cand, gold, 3, &tol, &r);
    assert_true(r.max_err_ulps == 5.0);
    assert_int_equal(r.worst_index, 1);
    assert_true(r.worst_candidate == (double)cand[1]);
    assert_true(r.worst_gold == 3.0);
    assert_int_equal(r.pass, 1);
    tol.budget_ulps = 4.0;
    kiln_compare(KILN_DT_F32, cand, gold, 3, &tol, &r);
    assert_int_equal(r.pass, 0);
    assert_int_equal(r.over_budget, 1);
    /* Gold off the float grid: error measured against the exact value. */
    double g2 = 1.0 + 0x1p-25;
    float c2 = 1.0f + 0x1p-23f;
    kiln_compare(KILN_DT_F32, &c2, &g2, 1, &tol, &r);
    assert_true(r.max_err_ulps == 0.75);
    /* f16 too. */
    double g3 = 2.0;
    uint16_t c3 = 0x4003; /* 2 + 3*2^-9 */
    kiln_compare(KILN_DT_F16, &c3, &g3, 1, &tol, &r);
    assert_true(r.max_err_ulps == 3.0);
}

static void test_compare_floor_rel(void **state)
{
    (void)state;
    double gold[2] = {1.0, 1e-10};
    float cand[2] = {1.0f, 0.0f};
    kiln_tolerance tol = {1.0, 0.0, 0.0};
    kiln_compare_result r;
    kiln_compare(KILN_DT_F32, cand, gold, 2, &tol, &r);
    assert_int_equal(r.pass, 0);
    assert_true(r.max_err_ulps > 1e6);
    assert_int_equal(r.worst_index, 1);
    /* Near-zero gold is measured in ulps of 1e-3 * max|g| = 2^-33 here. */
    tol.floor_rel = 1e-3;
    kiln_compare(KILN_DT_F32, cand, gold, 2, &tol, &r);
    assert_int_equal(r.pass, 1);
    assert_near(r.max_err_ulps, 1e-10 / 0x1p-33, 1e-12);
}

/* floor_abs: every error measured at that magnitude at least, however
 * small the whole output (a cross-entropy row of 3 logits whose loss
 * cancels to 0.005: the error of lse - x[t] is an ulp of lse, not of the
 * loss). */
static void test_compare_floor_abs(void **state)
{
    (void)state;
    double gold[2] = {0.005, 0.002};
    float cand[2] = {0.005f + 2.4e-7f, 0.002f};
    kiln_tolerance tol = {16.0, 0.0625, 0.0};
    kiln_compare_result r;
    kiln_compare(KILN_DT_F32, cand, gold, 2, &tol, &r);
    assert_int_equal(r.pass, 0);   /* about 500 ulps of 0.005 */
    tol.floor_abs = 1.0;
    kiln_compare(KILN_DT_F32, cand, gold, 2, &tol, &r);
    assert_int_equal(r.pass, 1);   /* about 2 ulps of 1.0 */
    assert_true(r.max_err_ulps > 1.5 && r.max_err_ulps < 2.5);
    /* a gold above the floor is measured at its own magnitude */
    double big[1] = {4.0};
    float off[1] = {4.0f + 4.8e-7f};
    kiln_compare(KILN_DT_F32, off, big, 1, &tol, &r);
    assert_true(r.max_err_ulps > 0.9 && r.max_err_ulps < 1.1);
}

static void test_compare_nonfinite_candidate(void **state)
{
    (void)state;
    double gold[3] = {1.0, 2.0, 3.0};
    float cand[3] = {1.0f, NAN, 3.0f};
    kiln_tolerance tol = {1e9, 0.0, 0.0};
    kiln_compare_result r;
    kiln_compare(KILN_DT_F32, cand, gold, 3, &tol, &r);
    assert_int_equal(r.pass, 0);
    assert_int_equal(r.nonfinite, 1);
    assert_int_equal(r.unwritten, 0);
    assert_true(isinf(r.max_err_ulps));
    assert_int_equal(r.worst_index, 1);
    assert_true(isnan(r.worst_candidate));

    cand[1] = 2.0f;
    cand[2] = -INFINITY;
    kiln_compare(KILN_DT_F32, cand, gold, 3, &tol, &r);
    assert_int_equal(r.pass, 0);
    assert_int_equal(r.nonfinite, 1);
    assert_int_equal(r.worst_index, 2);
    assert_true(isinf(r.rel_l2));
}

static void test_compare_nonfinite_gold(void **state)
{
    (void)state;
    double gold[3] = {NAN, INFINITY, 1.0};
    float cand[3] = {NAN, INFINITY, 1.0f};
    kiln_tolerance tol = {1.0, 0.0, 0.0};
    kiln_compare_result r;
    kiln_compare(KILN_DT_F32, cand, gold, 3, &tol, &r);
    assert_int_equal(r.pass, 1);
    assert_int_equal(r.nonfinite, 0);
    assert_true(r.max_err_ulps == 0.0);
    cand[1] = -INFINITY; /* wrong infinity */
    kiln_compare(KILN_DT_F32, cand, gold, 3, &tol, &r);
    assert_int_equal(r.pass, 0);
    assert_int_equal(r.over_budget, 1);
    assert_int_equal(r.nonfinite, 0);
    assert_int_equal(r.worst_index, 1);
    cand[1] = INFINITY;
    cand[0] = 0.0f; /* finite where gold is NaN */
    kiln_compare(KILN_DT_F32, cand, gold, 3, &tol, &r);
    assert_int_equal(r.pass, 0);
    assert_int_equal(r.over_budget, 1);
}

static void test_compare_unwritten(void **state)
{
    (void)state;
    double gold[6] = {1, 2, 3, 4, 5, 6};
    uint16_t cand[6];
    kiln_poison_fill(KILN_DT_BF16, cand, 6);
    for (size_t i = 0; i < 6; i++)
        if (i != 2 && i != 4)
            kiln_store_from_double(KILN_DT_BF16, cand, i, gold[i]);
    kiln_tolerance tol = {1.0, 0.0, 0.0};
    kiln_compare_result r;
    kiln_compare(KILN_DT_BF16, cand, gold, 6, &tol, &r);
    assert_int_equal(r.pass, 0);
    assert_int_equal(r.unwritten, 2);
    assert_int_equal(r.nonfinite, 0);
    assert_int_equal(r.over_budget, 0);
    assert_int_equal(r.worst_index, 2);
    assert_true(r.max_err_ulps == 0.0);
}

static void test_compare_bf16_vs_f32_budget(void **state)
{
    (void)state;
    enum { N = 64 };
    double gold[N];
    float good[N], bad[N];
    for (size_t i = 0; i < N; i++) {
        gold[i] = (double)(i + 1) / 3.0 - 7.1;
        good[i] = (float)gold[i];
        bad[i] = kiln_bf16_to_f32(kiln_f32_to_bf16(good[i]));
    }
    kiln_tolerance tol = {64.0, 0.0, 0.0};
    kiln_compare_result r;
    kiln_compare(KILN_DT_F32, good, gold, N, &tol, &r);
    assert_int_equal(r.pass, 1);
    assert_true(r.max_err_ulps <= 0.5);
    kiln_compare(KILN_DT_F32, bad, gold, N, &tol, &r);
    assert_int_equal(r.pass, 0);
    assert_true(r.max_err_ulps > 1000.0);
    assert_true(r.over_budget > N / 2);
}

static void test_compare_rel_l2(void **state)
{
    (void)state;
    double gold[2] = {3.0, 4.0};
    double cand[2] = {3.0, 4.5};
    kiln_compare_result r;
    kiln_compare(KILN_DT_F64, cand, gold, 2, NULL, &r);
    assert_near(r.rel_l2, 0.1, 1e-15);
    assert_int_equal(r.pass, 0); /* NULL tolerance: zero budget */
    double z[2] = {0.0, -0.0};
    kiln_compare(KILN_DT_F64, z, z, 2, NULL, &r);
    assert_true(r.rel_l2 == 0.0);
    assert_int_equal(r.pass, 1);
    /* Large magnitudes must not overflow the sums of squares. */
    double big_g[2] = {3e300, 4e300};
    double big_c[2] = {3e300, 4.5e300};
    kiln_compare(KILN_DT_F64, big_c, big_g, 2, NULL, &r);
    assert_near(r.rel_l2, 0.1, 1e-12);
}

static void test_compare_empty(void **state)
{
    (void)state;
    kiln_compare_result r;
    kiln_compare(KILN_DT_F32, NULL, NULL, 0, NULL, &r);
    assert_int_equal(r.n, 0);
    assert_int_equal(r.pass, 1);
    assert_true(r.worst_index == SIZE_MAX);
}

static void test_reduction_budget(void **state)
{
    (void)state;
    assert_near(kiln_reduction_budget(2.0, 0.5, 100), 7.0, 0.0);
    assert_near(kiln_reduction_budget(2.0, 0.5, 1), 2.5, 0.0);
    assert_near(kiln_reduction_budget(2.0, 0.5, 0), 2.5, 0.0);
    assert_near(kiln_reduction_budget(2.0, 0.5, -7), 2.5, 0.0);
    assert_near(kiln_reduction_budget(1.0, 1.0, 4096), 65.0, 0.0);
}

/* kiln_compare's f32, bf16 and f16 paths against the general per-element
 * one, on outputs with every kind of element: within budget, over it,
 * unwritten (poison), NaN and Inf where gold is finite, gold's own NaN and
 * Inf matched and missed, zeros and subnormals under a relative floor.
 * Every field must agree to the bit. */
enum { FAST_N = 4096 };

static void agree_fields(kiln_dtype dt, const unsigned char *c, const double *g, size_t n,
                         const kiln_tolerance *tol)
{
    kiln_compare_result fast, slow;
    kiln_compare(dt, c, g, n, tol, &fast);
    kiln_compare_general(dt, c, g, n, tol, &slow);
    assert_int_equal(fast.n, slow.n);
    assert_int_equal(fast.nonfinite, slow.nonfinite);
    assert_int_equal(fast.unwritten, slow.unwritten);
    assert_int_equal(fast.over_budget, slow.over_budget);
    assert_int_equal(fast.worst_index, slow.worst_index);
    assert_int_equal(fast.pass, slow.pass);
    assert_memory_equal(&fast.max_err_ulps, &slow.max_err_ulps, sizeof(double));
    assert_memory_equal(&fast.rel_l2, &slow.rel_l2, sizeof(double));
    if (fast.worst_index != SIZE_MAX) {
        assert_memory_equal(&fast.worst_candidate, &slow.worst_candidate, sizeof(double));
        assert_memory_equal(&fast.worst_gold, &slow.worst_gold, sizeof(double));
    }
}

static uint64_t lcg(uint64_t *x)
{
    return *x = *x * 6364136223846793005u + 1442695040888963407u;
}

/* Every kind of element, in dt; emin_at: an exponent near dt's smallest normal. */
static void mixed_data(kiln_dtype dt, int emin_at, unsigned char *c, double *g)
{
    uint64_t x = 12345;
    size_t sz = kiln_dtype_size(dt);
    for (int i = 0; i < FAST_N; i++) {
        lcg(&x);
        double gi = ldexp((double)(x >> 40) / (1u << 24) - 0.5, (int)(x >> 20 & 31) - 16);
        double ci = gi;
        int poison = 0;
        switch (x >> 8 & 15) {
        case 0: ci = gi * (1 + 0x1p-22); break;
        case 1: ci = gi * 1.01; break;                            /* over budget */
        case 2: poison = 1; break;                                /* unwritten */
        case 3: if (i % 7 == 0) ci = NAN; break;
        case 4: if (i % 5 == 0) ci = INFINITY; break;
        case 5: gi = 0; ci = (i % 3) ? 0.0 : ldexp(1, emin_at - 3); break;   /* a subnormal */
        case 6: if (i % 11 == 0) { gi = NAN; ci = (i % 2) ? NAN : 1.0; } break;
        case 7: if (i % 13 == 0) { gi = -INFINITY; ci = (i % 2) ? -INFINITY : INFINITY; } break;
        case 8: gi = ldexp(gi, emin_at); ci = gi * 1.02; break;   /* near the smallest normal */
        default: break;
        }
        kiln_store_from_double(dt, c, (size_t)i, ci);
        if (poison)
            kiln_poison_fill(dt, c + (size_t)i * sz, 1);
        g[i] = gi;
    }
}

static void test_compare_fast_paths(void **state)
{
    (void)state;
    static unsigned char c[FAST_N * 4];
    static double g[FAST_N];
    kiln_dtype dts[] = {KILN_DT_F32, KILN_DT_BF16, KILN_DT_F16};
    int emins[] = {-126, -126, -14};
    kiln_tolerance tols[] = {{4, 0, 0}, {2, 1e-6, 0}, {1e9, 1e-3, 0}, {0, 0, 0}};
    size_t lens[] = {FAST_N, FAST_N / 2, 1, 0, 37};
    for (int d = 0; d < 3; d++) {
        size_t sz = kiln_dtype_size(dts[d]);
        mixed_data(dts[d], emins[d], c, g);
        for (size_t t = 0; t < sizeof tols / sizeof tols[0]; t++)
            for (size_t l = 0; l < sizeof lens / sizeof lens[0]; l++)
                for (size_t off = 0; off < 2; off++) {
                    size_t n = lens[l] - (off && lens[l] ? 1 : 0);
                    agree_fields(dts[d], c + off * sz, g + off, n, &tols[t]);
                }
        /* the data does reach every kind */
        kiln_compare_result all;
        kiln_tolerance t4 = {4, 0, 0};
        kiln_compare(dts[d], c, g, FAST_N, &t4, &all);
        assert_true(all.unwritten > 0 && all.nonfinite > 0 && all.over_budget > all.nonfinite);
        /* Finite values alone, near and under the smallest normal, where
         * the ULP stops shrinking: here the worst error itself must agree. */
        uint64_t x = 777;
        for (int i = 0; i < FAST_N; i++) {
            lcg(&x);
            g[i] = ldexp((double)(x >> 40) / (1u << 24), emins[d] + 8 - (int)(x >> 20 & 15));
            kiln_store_from_double(dts[d], c, (size_t)i,
                                   g[i] * (1 + 1e-2 * ((double)(x >> 8 & 255) / 255 - 0.5)));
        }
        for (size_t t = 0; t < 2; t++) {
            kiln_compare_result r;
            kiln_compare(dts[d], c, g, FAST_N, &tols[t], &r);
            assert_true(isfinite(r.max_err_ulps) && r.max_err_ulps > 0);
            agree_fields(dts[d], c, g, FAST_N, &tols[t]);
        }
    }
}

/* rel_l2 is scaled by a power of two near max|g|: gold near the top and the
 * bottom of the double range gives the same ratio as gold near 1. */
static void test_compare_rel_l2_extreme_scales(void **state)
{
    (void)state;
    double scales[] = {0x1p1000, 0x1p-1060, 1.0};
    double want = -1;
    for (int s = 0; s < 3; s++) {
        double g[4], c[4];
        for (int i = 0; i < 4; i++) {
            g[i] = (i + 1) * scales[s];
            c[i] = g[i] * (i == 2 ? 1.5 : 1.0);
        }
        kiln_compare_result r;
        kiln_tolerance tol = {1e300, 0.0, 0.0};
        kiln_compare(KILN_DT_F64, c, g, 4, &tol, &r);
        assert_true(isfinite(r.rel_l2) && r.rel_l2 > 0);
        if (want < 0)
            want = r.rel_l2;
        assert_near(r.rel_l2, want, 1e-12);
    }
}

/* kiln_cpu.h's rounding for references agrees with the verifier's own
 * store (kiln_store_from_double, rounding a double once) for f32, f16 and
 * bf16: normal values, ties, subnormals, overflow to infinity. */
static void test_reference_rounding(void **state)
{
    (void)state;
    static const struct { kiln_dtype dt; int p, emin, emax; } f[] = {
        {KILN_DT_F32, 24, -126, 127}, {KILN_DT_F16, 11, -14, 15}, {KILN_DT_BF16, 8, -126, 127}};
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (size_t k = 0; k < 3; k++)
        for (int i = 0; i < 200000; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            /* magnitudes across the format's whole range and beyond it, and
             * ties (a double with few bits below the format's last one) */
            double m = (double)(x >> 11) * 0x1p-53 + 0.5;
            if (i % 4 == 0)
                m = nearbyint(m * 4096) / 4096;
            int e = (int)(x % (unsigned)(f[k].emax - f[k].emin + 40)) + f[k].emin - 30;
            double v = ldexp(x & 1 ? -m : m, e);
            uint64_t cell = 0;
            kiln_store_from_double(f[k].dt, &cell, 0, v);
            double want = kiln_load_as_double(f[k].dt, &cell, 0);
            double got = kiln_round_bits(v, f[k].p, f[k].emin, f[k].emax);
            if (!(got == want || (isnan(got) && isnan(want))) || signbit(got) != signbit(want))
                fail_msg("%s: %a rounds to %a, the verifier's store gives %a",
                         kiln_dtype_name(f[k].dt), v, got, want);
        }
    /* bf16 here (8 bits): ties go to the even neighbour */
    assert_true(kiln_round_to_run(1.0 + 0x1p-8) == 1.0);
    assert_true(kiln_round_to_run(1.0 + 3 * 0x1p-8) == 1.0 + 0x1p-6);
    assert_true(kiln_round_to_run(1.0 + 0x1p-8 + 0x1p-20) == 1.0 + 0x1p-7);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_f16_roundtrip_all),
        cmocka_unit_test(test_reference_rounding),
        cmocka_unit_test(test_bf16_roundtrip_all),
        cmocka_unit_test(test_bf16_matches_reference_sampled),
#ifdef __FLT16_MAX__
        cmocka_unit_test(test_f16_matches_compiler_sampled),
#endif
        cmocka_unit_test(test_f16_ties_to_even),
        cmocka_unit_test(test_f16_overflow_and_specials),
        cmocka_unit_test(test_f16_subnormals),
        cmocka_unit_test(test_double_to_f16_no_double_rounding),
        cmocka_unit_test(test_bf16_values),
        cmocka_unit_test(test_load_store_ints_and_floats),
        cmocka_unit_test(test_ulp),
        cmocka_unit_test(test_poison),
        cmocka_unit_test(test_guards),
        cmocka_unit_test(test_compare_exact),
        cmocka_unit_test(test_compare_k_ulps),
        cmocka_unit_test(test_compare_floor_rel),
        cmocka_unit_test(test_compare_floor_abs),
        cmocka_unit_test(test_compare_nonfinite_candidate),
        cmocka_unit_test(test_compare_nonfinite_gold),
        cmocka_unit_test(test_compare_unwritten),
        cmocka_unit_test(test_compare_bf16_vs_f32_budget),
        cmocka_unit_test(test_compare_rel_l2),
        cmocka_unit_test(test_compare_empty),
        cmocka_unit_test(test_compare_fast_paths),
        cmocka_unit_test(test_compare_rel_l2_extreme_scales),
        cmocka_unit_test(test_reduction_budget),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
