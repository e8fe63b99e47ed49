/* test_cpu_agree.c - the CPU backend's time and timer check (verifier
 * cpu_agree.h): the time is the CPU the kernel charged a worker less the
 * overhead of the trusted reference's calls of no library, whatever a
 * worker reports; a report far enough below it is flagged, waiting for a
 * core is not; a candidate's worker that runs between its calls is; what
 * an honest report is seen to leave out beside it widens the allowance. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "cpu_agree.h"

#define N 40
#define US 1e3
#define OVERHEAD (4 * US)

typedef struct pairs {
    double cand_cpu[N], base_cpu[N], null_cpu[N], prep_cpu[N], cand[N];
    double base[N];   /* the baseline's report (timers_beside) */
} pairs;

/* Honest pairs: calls of `call` ns each, a round trip costing a worker
 * about 4 us of CPU besides, with a little noise that differs between
 * pairs and between the workers. */
static void honest(pairs *p, double call)
{
    for (int i = 0; i < N; i++) {
        double noise = ((i * 7) % 11 - 5) * 0.02 * US;
        p->null_cpu[i] = OVERHEAD + noise;
        p->prep_cpu[i] = 0;
        p->cand_cpu[i] = call + OVERHEAD - noise;
        p->base_cpu[i] = call + OVERHEAD + 2 * noise;
        p->cand[i] = call + 3 * noise;
    }
}

static kiln_cpu_timers timers(const pairs *p, double between)
{
    kiln_cpu_timers t = {.cand_cpu = p->cand_cpu, .base_cpu = p->base_cpu,
                         .null_cpu = p->null_cpu, .prep_cpu = p->prep_cpu,
                         .cand = p->cand, .n = N,
                         .cand_between_ns = between};
    return t;
}

/* The same with what the check sees beside the candidate: the baseline's
 * reports. */
static kiln_cpu_timers timers_beside(const pairs *p)
{
    kiln_cpu_timers t = timers(p, 0);
    t.base = p->base;
    return t;
}

static void agree(const pairs *p, double between, char *why)
{
    kiln_cpu_timers t = timers(p, between);
    kiln_cpu_timers_agree(&t, why, 300);
}

/* The mean of the figures, candidate's and baseline's (honest() keeps
 * the noise symmetric, so it is the median too). */
static void means(const pairs *p, double *cand, double *base)
{
    double c[N], b[N];
    kiln_cpu_timers t = timers(p, 0);
    kiln_cpu_figures(&t, c, b);
    double sc = 0, sb = 0;
    for (int i = 0; i < N; i++)
        sc += c[i], sb += b[i];
    *cand = sc / N;
    *base = sb / N;
}

static void test_honest(void **state)
{
    (void)state;
    pairs p;
    char why[300];
    double cand, base;
    double calls[] = {1.5 * US, 22 * US, 2000 * US};
    for (size_t k = 0; k < sizeof calls / sizeof calls[0]; k++) {
        honest(&p, calls[k]);
        agree(&p, 2 * US * N, why);
        assert_string_equal(why, "");
        kiln_cpu_timers t = timers(&p, 0);
        assert_true(kiln_cpu_overhead(&t) > 3.9 * US && kiln_cpu_overhead(&t) < 4.1 * US);
        means(&p, &cand, &base);
        assert_true(cand > 0.9 * calls[k] && cand < 1.1 * calls[k]);
        assert_true(base > 0.9 * calls[k] && base < 1.1 * calls[k]);
    }
}

/* What a worker reports is no part of the time: a worker whose clock was
 * turned back (the GOT's clock_gettime, the vDSO, the reading on its
 * stack) gets the same time as one that tells the truth. */
static void test_report_is_not_the_time(void **state)
{
    (void)state;
    pairs p;
    double c0[N], b0[N], c1[N], b1[N];
    honest(&p, 1.5 * US);
    kiln_cpu_timers t = timers(&p, 0);
    kiln_cpu_figures(&t, c0, b0);
    for (int i = 0; i < N; i++)
        p.cand[i] *= 0.2;
    t = timers(&p, 0);
    kiln_cpu_figures(&t, c1, b1);
    assert_memory_equal(c0, c1, sizeof c0);
    assert_memory_equal(b0, b1, sizeof b0);
}

/* Only the trusted calls of no library set the overhead: a baseline (a
 * search's parent) or a candidate that spends 3 us more per round trip in
 * its own worker only adds to its own time. */
static void test_overhead_from_trusted_calls(void **state)
{
    (void)state;
    pairs p;
    double cand, base;
    honest(&p, 1.5 * US);
    for (int i = 0; i < N; i++)
        p.base_cpu[i] += 3 * US, p.cand_cpu[i] += 3 * US;
    kiln_cpu_timers t = timers(&p, 0);
    assert_true(kiln_cpu_overhead(&t) < 4.1 * US);
    means(&p, &cand, &base);
    assert_true(cand > 4.4 * US && base > 4.4 * US);
}

/* A call shorter than the overhead's own spread is read as that long on
 * either side: below the time's resolution no ratio means anything. */
static void test_resolution(void **state)
{
    (void)state;
    pairs p;
    double cand[N], base[N];
    honest(&p, 0);   /* the overhead's spread is about 90 ns here */
    for (int i = 0; i < N; i++)
        p.cand_cpu[i] = OVERHEAD - 0.3 * US;   /* below the overhead: noise */
    kiln_cpu_timers t = timers(&p, 0);
    kiln_cpu_figures(&t, cand, base);
    int at_floor = 0;
    for (int i = 0; i < N; i++) {
        assert_true(cand[i] > 50 && cand[i] < 150);
        assert_true(base[i] >= cand[i] - 1e-9);
        at_floor += base[i] < cand[i] + 1e-9;
    }
    assert_true(at_floor > N / 2);   /* so the medians, and the ratio is 1 */
}

/* Waiting for a core inside a call stretches the report, not the CPU: no
 * flag, and the time stays the call's. */
static void test_waits(void **state)
{
    (void)state;
    pairs p;
    char why[300];
    double cand, base;
    honest(&p, 100 * US);
    for (int i = 0; i < N; i++)
        if (i % 10 < 9)
            p.cand[i] += 9700 * US;
    agree(&p, 0, why);
    assert_string_equal(why, "");
    means(&p, &cand, &base);
    assert_true(cand > 90 * US && cand < 110 * US);
}

/* A report below the time is flagged once it is beyond a quarter of the
 * time, four standard errors and half a microsecond: relative at short
 * calls, where the absolute 5 us once allowed let a 4 us lie through. A
 * call shorter than the round trip's overhead is not judged by it: there
 * the shortfall is within the overhead's noise. */
static void test_under_report(void **state)
{
    (void)state;
    pairs p;
    char why[300];
    double excess, allowed;
    honest(&p, 1.5 * US);   /* four fifths of a 1.5 us call, in a 4 us round trip */
    for (int i = 0; i < N; i++)
        p.cand[i] -= 1.2 * US;
    agree(&p, 0, why);
    assert_string_equal(why, "");
    honest(&p, 4.5 * US);   /* two thirds of a 4.5 us call */
    for (int i = 0; i < N; i++)
        p.cand[i] -= 3 * US;
    agree(&p, 0, why);
    assert_non_null(strstr(why, "less per candidate call than the CPU"));
    honest(&p, 8 * US);     /* 4 us of an 8 us call */
    for (int i = 0; i < N; i++)
        p.cand[i] -= 4 * US;
    agree(&p, 0, why);
    assert_non_null(strstr(why, "less per candidate call than the CPU"));
    kiln_cpu_timers t = timers(&p, 0);
    kiln_cpu_excess(&t, &excess, &allowed);
    assert_true(excess > 3.8 * US && excess < 4.2 * US);
    assert_true(allowed > 1.9 * US && allowed < 2.1 * US);
    honest(&p, 2000 * US);  /* 40% of a 2 ms call */
    for (int i = 0; i < N; i++)
        p.cand[i] *= 0.6;
    agree(&p, 0, why);
    assert_non_null(strstr(why, "less per candidate call than the CPU"));
}

/* A lie of 15% is within the quarter allowed: the check's stated
 * resolution, no finer (and the lie is no part of the time). */
static void test_small_lie_allowed(void **state)
{
    (void)state;
    pairs p;
    char why[300];
    double sizes[] = {1.5 * US, 2000 * US};
    for (int k = 0; k < 2; k++) {
        honest(&p, sizes[k]);
        for (int i = 0; i < N; i++)
            p.cand[i] *= 0.85;
        agree(&p, 0, why);
        assert_string_equal(why, "");
    }
}

/* The candidate's worker runs between its calls: half a millisecond a pair
 * beside a 2 ms baseline is flagged; its scribbling round trip and return
 * into a blocking read (microseconds) are not; unknown is not judged. */
static void test_between_calls(void **state)
{
    (void)state;
    pairs p;
    char why[300];
    honest(&p, 2000 * US);
    agree(&p, 500 * US * N, why);
    assert_non_null(strstr(why, "between its calls"));
    agree(&p, 15 * US * N, why);
    assert_string_equal(why, "");
    agree(&p, 90 * US * N, why);   /* 4.5% of the baseline's call */
    assert_string_equal(why, "");
    agree(&p, 120 * US * N, why);   /* 6% */
    assert_non_null(strstr(why, "between its calls"));
    agree(&p, -1, why);
    assert_string_equal(why, "");
    honest(&p, 1.5 * US);           /* a short call: the 20 us floor */
    agree(&p, 19 * US * N, why);
    assert_string_equal(why, "");
    agree(&p, 25 * US * N, why);
    assert_non_null(strstr(why, "between its calls"));
    /* Its scribbling round trip costs what the reference's own did (22 us
     * a call in a sanitizer build): allowed on top, and no more. */
    for (int i = 0; i < N; i++)
        p.prep_cpu[i] = 22 * US;
    agree(&p, 40 * US * N, why);
    assert_string_equal(why, "");
    agree(&p, 45 * US * N, why);
    assert_non_null(strstr(why, "between its calls"));
}

/* What an honest report leaves out, seen beside it, widens the allowance
 * (never the time): a 4.2 us call whose round trip costs 2 us more than
 * the trusted calls of no library, outside what the worker times (a
 * sanitizer build's worker, say). With the baseline falling as short it
 * agrees; alone it is flagged; and a lie beyond that is still flagged. */
static void test_shortfall_seen_beside(void **state)
{
    (void)state;
    pairs p;
    char why[300];
    double c0[N], b0[N], c1[N], b1[N];
    honest(&p, 4.2 * US);
    for (int i = 0; i < N; i++) {
        p.cand_cpu[i] += 2 * US;
        p.base[i] = p.base_cpu[i] - OVERHEAD;   /* the baseline's honest report */
    }
    kiln_cpu_timers t = timers_beside(&p);
    kiln_cpu_figures(&t, c0, b0);
    kiln_cpu_timers_agree(&t, why, sizeof why);
    assert_non_null(strstr(why, "less per candidate call than the CPU"));   /* alone */
    for (int i = 0; i < N; i++)
        p.base_cpu[i] += 2 * US;   /* the baseline's round trip costs as much more */
    t = timers_beside(&p);
    kiln_cpu_timers_agree(&t, why, sizeof why);
    assert_string_equal(why, "");
    kiln_cpu_figures(&t, c1, b1);   /* the time takes off the trusted overhead alone */
    assert_memory_equal(c0, c1, sizeof c0);
    for (int i = 0; i < N; i++)
        p.cand[i] -= 3 * US;        /* and a lie beyond it */
    t = timers_beside(&p);
    kiln_cpu_timers_agree(&t, why, sizeof why);
    assert_non_null(strstr(why, "less per candidate call than the CPU"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_honest),
        cmocka_unit_test(test_report_is_not_the_time),
        cmocka_unit_test(test_overhead_from_trusted_calls),
        cmocka_unit_test(test_resolution),
        cmocka_unit_test(test_waits),
        cmocka_unit_test(test_under_report),
        cmocka_unit_test(test_small_lie_allowed),
        cmocka_unit_test(test_between_calls),
        cmocka_unit_test(test_shortfall_seen_beside),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
