/* test_tolerance.c - the reduction tasks' error budgets against honest and
 * dishonest arithmetic (docs/verdict.md, "Budgets"). For rmsnorm and
 * softmax, at widths up to 65,536, every honest order of summation in float
 * (one serial accumulator, pairwise, Kahan, sixteen vector lanes, and for
 * rmsnorm x*w before the scale) must pass the task's budget in every output
 * dtype, and f32 outputs that keep only 12 significant bits must fail it.
 * Inputs come from the task's own generator; budgets and the comparison are
 * the verifier's. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "numeric.h"
#include "rng.h"
#include "task.h"

#define ROWS 6

typedef enum order { SERIAL, PAIRWISE, KAHAN, LANES16, NORDERS } order;
static const char *const order_name[] = {"serial", "pairwise", "Kahan", "16 lanes"};

static float sum_pairwise(const float *v, int n)
{
    if (n <= 8) {
        float s = 0.0f;
        for (int i = 0; i < n; i++)
            s += v[i];
        return s;
    }
    return sum_pairwise(v, n / 2) + sum_pairwise(v + n / 2, n - n / 2);
}

/* The sum of n floats in the given order, in float. */
static float fsum(const float *v, int n, order o)
{
    float s = 0.0f, c = 0.0f, lane[16] = {0};
    switch (o) {
    case SERIAL:
        for (int i = 0; i < n; i++)
            s += v[i];
        return s;
    case PAIRWISE:
        return sum_pairwise(v, n);
    case KAHAN:
        for (int i = 0; i < n; i++) {
            float y = v[i] - c, t = s + y;
            c = (t - s) - y;
            s = t;
        }
        return s;
    default:   /* sixteen lanes, then a tree over the lanes (an AVX-512 loop) */
        for (int i = 0; i < n; i++)
            lane[i % 16] += v[i];
        for (int w = 8; w > 0; w /= 2)
            for (int i = 0; i < w; i++)
                lane[i] += lane[i + w];
        return lane[0];
    }
}

typedef struct row_task {
    const char *name;
    int softmax;
} row_task;

/* Honest float output of one row (xw_first: rmsnorm as (x*w)*inv). */
static void honest_row(const row_task *rt, const float *x, const float *w, float *y, int n,
                       order o, int xw_first, float *tmp)
{
    if (rt->softmax) {
        float m = x[0];
        for (int i = 1; i < n; i++)
            m = x[i] > m ? x[i] : m;
        for (int i = 0; i < n; i++)
            tmp[i] = expf(x[i] - m);
        float inv = 1.0f / fsum(tmp, n, o);
        for (int i = 0; i < n; i++)
            y[i] = tmp[i] * inv;
        return;
    }
    for (int i = 0; i < n; i++)
        tmp[i] = x[i] * x[i];
    float inv = 1.0f / sqrtf(fsum(tmp, n, o) / (float)n + 1e-6f);
    for (int i = 0; i < n; i++)
        y[i] = xw_first ? x[i] * w[i] * inv : x[i] * inv * w[i];
}

static void gold_row(const row_task *rt, const double *x, const double *w, double *g, int n)
{
    double s = 0, m = x[0];
    if (rt->softmax) {
        for (int i = 1; i < n; i++)
            m = x[i] > m ? x[i] : m;
        for (int i = 0; i < n; i++)
            s += exp(x[i] - m);
        for (int i = 0; i < n; i++)
            g[i] = exp(x[i] - m) / s;
        return;
    }
    for (int i = 0; i < n; i++)
        s += x[i] * x[i];
    double inv = 1.0 / sqrt(s / n + (double)1e-6f);
    for (int i = 0; i < n; i++)
        g[i] = x[i] * inv * w[i];
}

/* Keep 12 significant bits of a float (round to nearest). */
static float twelve_bits(float v)
{
    int e;
    double m = frexp((double)v, &e);
    return (float)ldexp(nearbyint(ldexp(m, 12)) / 4096.0, e);
}

typedef struct case_data {
    kiln_task *t;
    double *x, *w, *g;
    float *xf, *wf, *yf, *tmp;
    unsigned char *out;
    const kiln_variant *variant;   /* drawn with this stability variant, or NULL */
} case_data;

/* The verifier's verdict on n*ROWS outputs in dt: 1 pass, 0 fail (the
 * budget as call.c makes it, with the allowance of stability variants). */
static int judged(const case_data *c, kiln_dtype dt, size_t total, int64_t n, double *frac)
{
    const kiln_tolerance_spec *ts = kiln_task_tolerance(c->t, dt);
    assert_non_null(ts);
    kiln_tolerance tol = {kiln_reduction_budget(ts->ulps, ts->per_sqrt, n) + ts->per_n * (double)n +
                              (c->variant ? ts->per_n_variants * (double)n : 0),
                          c->t->floor_rel};
    for (size_t i = 0; i < total; i++)
        kiln_store_from_double(dt, c->out, i, (double)c->yf[i]);
    kiln_compare_result cr;
    kiln_compare(dt, c->out, c->g, total, &tol, &cr);
    *frac = cr.max_err_ulps / tol.budget_ulps;
    return cr.pass;
}

static void draw(case_data *c, int n, uint64_t seed)
{
    kiln_rng r;
    kiln_rng_seed(&r, seed);
    const kiln_arg *xa = &c->t->args[0], *wa = &c->t->args[1];
    kiln_fill_input(&r, xa, c->variant, KILN_DT_F32, n, c->x, NULL, (size_t)n * ROWS);
    if (strcmp(wa->name, "w") == 0)
        kiln_fill_input(&r, wa, NULL, KILN_DT_F32, n, c->w, NULL, (size_t)n);
    else
        for (int i = 0; i < n; i++)
            c->w[i] = 1.0;
    for (size_t i = 0; i < (size_t)n * ROWS; i++)
        c->xf[i] = (float)c->x[i];
    for (int i = 0; i < n; i++)
        c->wf[i] = (float)c->w[i];
}

static void check_task(const row_task *rt)
{
    static const int widths[] = {1, 2, 7, 64, 1000, 4096, 7500, 16384, 32768, 65536};
    static const kiln_dtype dts[] = {KILN_DT_F32, KILN_DT_F16, KILN_DT_BF16};
    const int max = 65536;
    case_data c = {0};
    c.t = malloc(sizeof *c.t);
    kiln_error err;
    assert_non_null(c.t);
    if (kiln_task_find(rt->name, c.t, &err) != 0)
        fail_msg("%s: %s", rt->name, err.msg);
    c.x = malloc(sizeof(double) * max * ROWS);
    c.g = malloc(sizeof(double) * max * ROWS);
    c.w = malloc(sizeof(double) * max);
    c.xf = malloc(sizeof(float) * max * ROWS);
    c.yf = malloc(sizeof(float) * max * ROWS);
    c.wf = malloc(sizeof(float) * max);
    c.tmp = malloc(sizeof(float) * max);
    c.out = malloc(sizeof(float) * max * ROWS);
    assert_true(c.x && c.g && c.w && c.xf && c.yf && c.wf && c.tmp && c.out);
    double worst = 0, least12 = INFINITY;
    int worst_n = 0, least_n = 0;
    for (size_t k = 0; k < 2 * sizeof widths / sizeof widths[0]; k++) {
        int n = widths[k % (sizeof widths / sizeof widths[0])];
        size_t total = (size_t)n * ROWS;
        /* The second round: the task's variants in turn (they have an
         * allowance of their own, see docs/verdict.md). */
        c.variant = k < sizeof widths / sizeof widths[0] ? NULL : &c.t->variants[k % c.t->nvariants];
        draw(&c, n, 1234 + (uint64_t)n);
        for (int r = 0; r < ROWS; r++)
            gold_row(rt, c.x + (size_t)r * n, c.w, c.g + (size_t)r * n, n);
        double frac;
        for (int o = 0; o < NORDERS; o++)
            for (int xw = 0; xw <= !rt->softmax; xw++) {
                for (int r = 0; r < ROWS; r++)
                    honest_row(rt, c.xf + (size_t)r * n, c.wf, c.yf + (size_t)r * n, n, (order)o,
                               xw, c.tmp);
                for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
                    if (!judged(&c, dts[d], total, n, &frac))
                        fail_msg("%s %s: honest %s%s sum fails at width %d%s%s (%.2f budgets)",
                                 rt->name, kiln_dtype_name(dts[d]), order_name[o],
                                 xw ? ", x*w first," : "", n, c.variant ? ", variant " : "",
                                 c.variant ? c.variant->name : "", frac);
                    if (frac > worst)
                        worst = frac, worst_n = n;
                }
            }
        /* Serial sums rounded to 12 significant bits must fail in f32 (a
         * one-column softmax is exactly 1, which 12 bits hold). */
        if ((rt->softmax && n == 1) || c.variant)
            continue;
        for (int r = 0; r < ROWS; r++)
            honest_row(rt, c.xf + (size_t)r * n, c.wf, c.yf + (size_t)r * n, n, SERIAL, 0, c.tmp);
        for (size_t i = 0; i < total; i++)
            c.yf[i] = twelve_bits(c.yf[i]);
        if (judged(&c, KILN_DT_F32, total, n, &frac))
            fail_msg("%s f32: outputs with 12 significant bits pass at width %d (%.2f budgets)",
                     rt->name, n, frac);
        if (frac < least12)
            least12 = frac, least_n = n;
    }
    print_message("%s: worst honest error %.2f budgets (width %d); 12 bits at least %.1f budgets "
                  "(width %d)\n", rt->name, worst, worst_n, least12, least_n);
    free(c.x), free(c.g), free(c.w), free(c.xf), free(c.yf), free(c.wf), free(c.tmp), free(c.out);
    free(c.t);
}

static void test_rmsnorm(void **state)
{
    (void)state;
    static const row_task rt = {"rmsnorm", 0};
    check_task(&rt);
}

static void test_softmax(void **state)
{
    (void)state;
    static const row_task rt = {"softmax", 1};
    check_task(&rt);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rmsnorm),
        cmocka_unit_test(test_softmax),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
