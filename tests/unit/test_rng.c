/* test_rng.c - unit tests for common/rng.c: the ziggurat's table, the
 * distribution of its normal draws, and kiln_fill_input's fast path against
 * its general one. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rng.h"

#define ZIG_V 9.91256303526217e-3   /* each layer's area (rng.c) */

/* Every layer has the same area and the edges fall to 0: a wrong table
 * (a typo in R or V, a slipped index) breaks one of these. */
static void test_ziggurat_table(void **state)
{
    (void)state;
    kiln_rng r;
    kiln_rng_seed(&r, 1);   /* builds the table */
    const double *x, *f;
    int n;
    kiln_rng_ziggurat(&x, &f, &n);
    assert_int_equal(n, 128);
    assert_true(x[n] == 0.0 && f[n] == 1.0);
    /* the base strip: the rectangle to R and the tail beyond it */
    double tail = sqrt(M_PI / 2) * erfc(x[1] / sqrt(2.0));
    assert_true(fabs(x[1] * f[1] + tail - ZIG_V) < 1e-9);
    assert_true(fabs(x[0] * f[1] - ZIG_V) < 1e-12);
    for (int i = 1; i < n; i++) {
        assert_true(x[i + 1] < x[i]);
        assert_true(fabs(f[i] - exp(-0.5 * x[i] * x[i])) < 1e-15);
        assert_true(fabs(x[i] * (f[i + 1] - f[i]) - ZIG_V) < 1e-9 * (i == n - 1 ? 1000 : 1));
    }
}

static int cmp_double(const void *a, const void *b)
{
    double p = *(const double *)a, q = *(const double *)b;
    return (p > q) - (p < q);
}

/* A million draws against the normal distribution: the largest gap between
 * their empirical CDF and Phi (Kolmogorov-Smirnov; 1.63/sqrt(n) is the 1%
 * level), the moments, and the share beyond the tail's start, both signs. */
static void test_normal_distribution(void **state)
{
    (void)state;
    enum { N = 1000000 };
    double *v = malloc(N * sizeof *v);
    assert_non_null(v);
    kiln_rng r;
    kiln_rng_seed(&r, 20261202);
    double sum = 0, sum2 = 0, sum4 = 0;
    long tail_pos = 0, tail_neg = 0, neg = 0;
    for (int i = 0; i < N; i++) {
        double z = kiln_rng_normal(&r);
        assert_true(isfinite(z));
        v[i] = z;
        sum += z;
        sum2 += z * z;
        sum4 += z * z * z * z;
        tail_pos += z > 3.442619855899;
        tail_neg += z < -3.442619855899;
        neg += z < 0;
    }
    qsort(v, N, sizeof *v, cmp_double);
    double d = 0;
    for (int i = 0; i < N; i++) {
        double phi = 0.5 * erfc(-v[i] / sqrt(2.0));
        double lo = phi - (double)i / N, hi = (double)(i + 1) / N - phi;
        d = fmax(d, fmax(lo, hi));
    }
    free(v);
    assert_true(d < 1.63 / sqrt((double)N));
    assert_true(fabs(sum / N) < 0.005);
    assert_true(fabs(sum2 / N - 1) < 0.01);
    assert_true(fabs(sum4 / N - 3) < 0.05);
    /* beyond R: 2.88e-4 of draws each side, about 288 of a million */
    double expect = 0.5 * erfc(3.442619855899 / sqrt(2.0)) * N;
    assert_true(fabs(tail_pos - expect) < 5 * sqrt(expect));
    assert_true(fabs(tail_neg - expect) < 5 * sqrt(expect));
    assert_true(fabs(neg - N / 2.0) < 5 * sqrt(N / 4.0));
}

/* Beyond R the draws come from a method of their own: their distribution
 * there, against the normal's tail (KS over about 5,800 draws of 10 M). */
static void test_normal_tail(void **state)
{
    (void)state;
    const double R = 3.442619855899;
    enum { N = 10000000, CAP = 20000 };
    double *t = malloc(CAP * sizeof *t);
    assert_non_null(t);
    kiln_rng r;
    kiln_rng_seed(&r, 4242);
    int m = 0;
    for (int i = 0; i < N && m < CAP; i++) {
        double z = fabs(kiln_rng_normal(&r));
        if (z > R)
            t[m++] = z;
    }
    assert_true(m > 5000);
    qsort(t, (size_t)m, sizeof *t, cmp_double);
    double d = 0, tail_r = erfc(R / sqrt(2.0));
    for (int i = 0; i < m; i++) {
        double cdf = 1 - erfc(t[i] / sqrt(2.0)) / tail_r;   /* P(|Z| <= t | |Z| > R) */
        d = fmax(d, fmax(cdf - (double)i / m, (double)(i + 1) / m - cdf));
    }
    free(t);
    assert_true(d < 1.63 / sqrt((double)m));
}

/* The same seed gives the same draws. */
static void test_normal_repeatable(void **state)
{
    (void)state;
    kiln_rng a, b;
    kiln_rng_seed(&a, 7);
    kiln_rng_seed(&b, 7);
    for (int i = 0; i < 10000; i++)
        assert_true(kiln_rng_normal(&a) == kiln_rng_normal(&b));
}

/* f32 and f64 without a variant take a path of their own; a variant that
 * changes nothing takes the general one. Both must give the same bits. */
static void test_fill_fast_path_matches(void **state)
{
    (void)state;
    enum { N = 20000 };
    kiln_arg args[2] = {
        {.kind = KILN_ARG_INPUT, .dist = KILN_DIST_NORMAL, .dist_a = 0.25, .dist_b = 3},
        {.kind = KILN_ARG_INPUT, .dist = KILN_DIST_UNIFORM, .dist_a = -1e-3, .dist_b = 2e5},
    };
    kiln_variant same = {.arg = 0, .scale = 1, .offset = 0, .pattern = KILN_PAT_NONE};
    kiln_dtype dts[2] = {KILN_DT_F32, KILN_DT_F64};
    static double fast[N], slow[N];
    static unsigned char fb[N * 8], sb[N * 8];
    for (int a = 0; a < 2; a++)
        for (int t = 0; t < 2; t++) {
            kiln_rng r1, r2;
            kiln_rng_seed(&r1, 99);
            kiln_rng_seed(&r2, 99);
            kiln_fill_input(&r1, &args[a], NULL, dts[t], 100, fast, fb, N);
            kiln_fill_input(&r2, &args[a], &same, dts[t], 100, slow, sb, N);
            assert_memory_equal(fast, slow, sizeof fast);
            assert_memory_equal(fb, sb, (size_t)N * (t ? 8 : 4));
            /* without bytes, the doubles alone */
            kiln_rng_seed(&r1, 5);
            kiln_rng_seed(&r2, 5);
            kiln_fill_input(&r1, &args[a], NULL, dts[t], 100, fast, NULL, N);
            kiln_fill_input(&r2, &args[a], &same, dts[t], 100, slow, NULL, N);
            assert_memory_equal(fast, slow, sizeof fast);
        }
}

/* Integer inputs (bounds resolved): every value in [a, b] or the ignore
 * value, at about its share; each end of a small range drawn; the extremes
 * pattern gives only the ends; i8 stores them exactly. */
static void test_fill_integers(void **state)
{
    (void)state;
    enum { N = 200000 };
    static double out[N];
    static int32_t b32[N];
    static int8_t b8[N];
    kiln_rng r;
    kiln_rng_seed(&r, 77);
    kiln_arg a = {.kind = KILN_ARG_INPUT, .dtype = KILN_DT_I32, .dist = KILN_DIST_INTEGERS,
                  .dist_a = 0, .dist_b = 9, .has_ignore = 1, .ignore_value = -100,
                  .ignore_share = 0.1};
    kiln_fill_input(&r, &a, NULL, KILN_DT_I32, 1, out, b32, N);
    int ignored = 0, seen[10] = {0};
    for (int i = 0; i < N; i++) {
        assert_true(out[i] == (double)b32[i]);
        if (out[i] == -100) {
            ignored++;
            continue;
        }
        assert_true(out[i] >= 0 && out[i] <= 9 && out[i] == (int)out[i]);
        seen[(int)out[i]]++;
    }
    assert_true(ignored > 0.09 * N && ignored < 0.11 * N);
    for (int k = 0; k < 10; k++)
        assert_true(seen[k] > 0.08 * N && seen[k] < 0.1 * N);
    /* extremes: low or high, never between */
    kiln_variant ends = {.pattern = KILN_PAT_EXTREMES, .scale = 1, .ignore_share = -1};
    a.has_ignore = 0;
    a.dtype = KILN_DT_I8;
    a.dist_a = -128;
    a.dist_b = 127;
    kiln_fill_input(&r, &a, &ends, KILN_DT_I8, 1, out, b8, N);
    int lo = 0;
    for (int i = 0; i < N; i++) {
        assert_true(out[i] == -128 || out[i] == 127);
        assert_true(out[i] == (double)b8[i]);
        lo += out[i] == -128;
    }
    assert_true(lo > 0.45 * N && lo < 0.55 * N);
    /* the full i8 range, its ends included */
    kiln_fill_input(&r, &a, NULL, KILN_DT_I8, 1, out, b8, N);
    int min = 0, max = 0;
    for (int i = 0; i < N; i++) {
        min |= b8[i] == -128;
        max |= b8[i] == 127;
    }
    assert_true(min && max);
    /* every element ignored */
    a.has_ignore = 1;
    a.ignore_share = 1;
    a.ignore_value = -1;
    a.dist_a = 0;
    kiln_fill_input(&r, &a, NULL, KILN_DT_I8, 1, out, NULL, 1000);
    for (int i = 0; i < 1000; i++)
        assert_true(out[i] == -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ziggurat_table),
        cmocka_unit_test(test_normal_distribution),
        cmocka_unit_test(test_normal_tail),
        cmocka_unit_test(test_normal_repeatable),
        cmocka_unit_test(test_fill_fast_path_matches),
        cmocka_unit_test(test_fill_integers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
