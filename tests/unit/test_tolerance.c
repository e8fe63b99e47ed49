/* test_tolerance.c - the reduction tasks' error budgets against honest and
 * dishonest arithmetic (docs/verdict.md, "Budgets"). For rmsnorm, softmax
 * and layernorm, at widths up to 65,536, every honest order of summation in
 * float (one serial accumulator, pairwise, Kahan, sixteen vector lanes; for
 * rmsnorm x*w before the scale; for layernorm the output as one scale and
 * shift per column, and on the task's own inputs a one-pass variance) must
 * pass the task's budget in every output dtype, and f32 outputs that keep
 * only 12 significant bits must fail it. cross_entropy's fp32 loss, at
 * vocabularies to 262,144 from f32, f16 and bf16 logits, the same for its
 * honest forms (torch's lse - x[t], an online softmax). Inputs come from the
 * task's own generator; budgets and the comparison are the verifier's. */
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

typedef enum row_kind { RMSNORM, SOFTMAX, LAYERNORM } row_kind;

typedef struct row_task {
    const char *name;
    row_kind kind;
    int forms;      /* honest ways to form the output, beyond the order of summation */
} row_task;

/* Honest float layernorm of one row. form 0: two passes, the second
 * correcting the mean (the starters); 1: the same, the output as x*scale +
 * shift per column; 2: a one-pass variance, E[x^2] - mean^2 (honest on
 * centred inputs, weak far from zero: the stability variants may fail it);
 * 3: two passes without the correction. */
static void layernorm_row(const float *x, const float *w, const float *b, float *y, int n,
                          order o, int form, float *tmp)
{
    float mean = fsum(x, n, o) / (float)n, var;
    if (form == 3) {   /* two passes, the mean not corrected */
        for (int i = 0; i < n; i++)
            tmp[i] = (x[i] - mean) * (x[i] - mean);
        var = fsum(tmp, n, o) / (float)n;
    } else if (form == 2) {
        for (int i = 0; i < n; i++)
            tmp[i] = x[i] * x[i];
        var = fsum(tmp, n, o) / (float)n - mean * mean;
    } else {
        for (int i = 0; i < n; i++)
            tmp[i] = x[i] - mean;
        float dm = fsum(tmp, n, o) / (float)n;
        for (int i = 0; i < n; i++)
            tmp[i] *= tmp[i];
        var = fsum(tmp, n, o) / (float)n - dm * dm;
        mean += dm;
    }
    float inv = 1.0f / sqrtf((var > 0 ? var : 0) + 1e-5f);
    for (int i = 0; i < n; i++) {
        float scale = inv * w[i];
        y[i] = form == 1 ? x[i] * scale + (b[i] - mean * scale) : (x[i] - mean) * inv * w[i] + b[i];
    }
}

/* Honest float output of one row (form 1 of rmsnorm: (x*w)*inv). */
static void honest_row(const row_task *rt, const float *x, const float *w, const float *b,
                       float *y, int n, order o, int form, float *tmp)
{
    if (rt->kind == LAYERNORM) {
        layernorm_row(x, w, b, y, n, o, form, tmp);
        return;
    }
    int xw_first = form;
    if (rt->kind == SOFTMAX) {
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

static void gold_row(const row_task *rt, const double *x, const double *w, const double *b,
                     double *g, int n)
{
    double s = 0, m = x[0];
    if (rt->kind == LAYERNORM) {   /* as tasks/layernorm/reference.c */
        double d = 0, ss = 0;
        for (int i = 0; i < n; i++)
            s += x[i];
        m = s / n;
        for (int i = 0; i < n; i++)
            d += x[i] - m;
        m += d / n;
        for (int i = 0; i < n; i++)
            ss += (x[i] - m) * (x[i] - m);
        double inv = 1.0 / sqrt(ss / n + (double)1e-5f);
        for (int i = 0; i < n; i++)
            g[i] = (x[i] - m) * inv * w[i] + b[i];
        return;
    }
    if (rt->kind == SOFTMAX) {
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
    double *x, *w, *b, *g;
    float *xf, *wf, *bf, *yf, *tmp;
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
                              (c->variant ? ts->per_n_variants * (double)n + ts->ulps_variants : 0),
                          c->t->floor_rel, c->t->floor_abs};
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
    const kiln_arg *ba = c->t->nargs > 2 ? &c->t->args[2] : NULL;
    if (ba && strcmp(ba->name, "b") == 0)
        kiln_fill_input(&r, ba, NULL, KILN_DT_F32, n, c->b, NULL, (size_t)n);
    else
        for (int i = 0; i < n; i++)
            c->b[i] = 0.0;
    for (size_t i = 0; i < (size_t)n * ROWS; i++)
        c->xf[i] = (float)c->x[i];
    for (int i = 0; i < n; i++) {
        c->wf[i] = (float)c->w[i];
        c->bf[i] = (float)c->b[i];
    }
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
    c.b = malloc(sizeof(double) * max);
    c.bf = malloc(sizeof(float) * max);
    c.xf = malloc(sizeof(float) * max * ROWS);
    c.yf = malloc(sizeof(float) * max * ROWS);
    c.wf = malloc(sizeof(float) * max);
    c.tmp = malloc(sizeof(float) * max);
    c.out = malloc(sizeof(float) * max * ROWS);
    assert_true(c.x && c.g && c.w && c.b && c.xf && c.yf && c.wf && c.bf && c.tmp && c.out);
    double worst = 0, least12 = INFINITY;
    int worst_n = 0, least_n = 0;
    const size_t nw = sizeof widths / sizeof widths[0];
    for (size_t k = 0; k < nw * (size_t)(1 + c.t->nvariants); k++) {
        int n = widths[k % nw];
        size_t total = (size_t)n * ROWS;
        /* After the task's own inputs, every width with each of the task's
         * variants (they have an allowance of their own, docs/verdict.md). */
        c.variant = k < nw ? NULL : &c.t->variants[k / nw - 1];
        draw(&c, n, 1234 + (uint64_t)n);
        for (int r = 0; r < ROWS; r++)
            gold_row(rt, c.x + (size_t)r * n, c.w, c.b, c.g + (size_t)r * n, n);
        double frac;
        for (int o = 0; o < NORDERS; o++)
            for (int xw = 0; xw < rt->forms; xw++) {
                /* Layernorm's forms 1 and 2 are honest only on wide rows of the
                 * task's own inputs: a one-pass variance cancels E[x^2]
                 * against mean^2 (a few values, or values far from zero, lose
                 * all their digits), and scale and shift cancels x*scale
                 * against mean*scale, amplified by 1/sqrt(eps) when a row's
                 * variance is about 0. There it is the formula that fails,
                 * not the order of summation. */
                if (rt->kind == LAYERNORM && (xw == 1 || xw == 2) &&
                    (n < 64 || (xw == 2 && c.variant)))
                    continue;
                for (int r = 0; r < ROWS; r++)
                    honest_row(rt, c.xf + (size_t)r * n, c.wf, c.bf, c.yf + (size_t)r * n, n,
                               (order)o, xw, c.tmp);
                for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
                    if (!judged(&c, dts[d], total, n, &frac))
                        fail_msg("%s %s: honest %s sum (form %d) fails at width %d%s%s (%.2f "
                                 "budgets)", rt->name, kiln_dtype_name(dts[d]), order_name[o], xw,
                                 n, c.variant ? ", variant " : "",
                                 c.variant ? c.variant->name : "", frac);
                    if (frac > worst)
                        worst = frac, worst_n = n;
                }
            }
        /* Serial sums rounded to 12 significant bits must fail in f32 (a
         * one-column softmax is exactly 1, which 12 bits hold). */
        if ((rt->kind != RMSNORM && n == 1) || c.variant)
            continue;   /* a one-column softmax is 1, a one-column layernorm b: 12 bits hold them */
        for (int r = 0; r < ROWS; r++)
            honest_row(rt, c.xf + (size_t)r * n, c.wf, c.bf, c.yf + (size_t)r * n, n, SERIAL, 0,
                       c.tmp);
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
    free(c.x), free(c.g), free(c.w), free(c.b), free(c.xf), free(c.yf), free(c.wf), free(c.bf);
    free(c.tmp), free(c.out);
    free(c.t);
}

static void test_rmsnorm(void **state)
{
    (void)state;
    static const row_task rt = {"rmsnorm", RMSNORM, 2};
    check_task(&rt);
}

static void test_softmax(void **state)
{
    (void)state;
    static const row_task rt = {"softmax", SOFTMAX, 1};
    check_task(&rt);
}

static void test_layernorm(void **state)
{
    (void)state;
    static const row_task rt = {"layernorm", LAYERNORM, 4};
    check_task(&rt);
}

/* ---- cross_entropy: one fp32 loss per row of logits ------------------- */

#define CE_ROWS 48
#define CE_IGNORE -100

/* An honest float loss of one row. form 0: the max, a sum of exp(x - max)
 * in order o, log(sum) + (max - x[t]) (the starters); 1: (max + log(sum))
 * - x[t]; 2: one pass, a running max with the sum rescaled when it grows
 * (online softmax), in o's lanes merged at the end. */
static float ce_row(const float *x, int t, int n, order o, int form, float *tmp)
{
    if (t == CE_IGNORE)
        return 0.0f;
    float m = x[0], s;
    if (form == 2) {
        int lanes = o == LANES16 ? 16 : 1;
        float lm[16], ls[16];
        for (int l = 0; l < lanes; l++)
            lm[l] = -INFINITY, ls[l] = 0.0f;
        for (int i = 0; i < n; i++) {
            int l = i % lanes;
            if (x[i] > lm[l]) {
                ls[l] = ls[l] * expf(lm[l] - x[i]) + 1.0f;
                lm[l] = x[i];
            } else {
                ls[l] += expf(x[i] - lm[l]);
            }
        }
        m = lm[0];
        for (int l = 1; l < lanes; l++)
            m = lm[l] > m ? lm[l] : m;
        s = 0.0f;
        for (int l = 0; l < lanes; l++)
            s += lm[l] == -INFINITY ? 0.0f : ls[l] * expf(lm[l] - m);
    } else {
        for (int i = 1; i < n; i++)
            m = x[i] > m ? x[i] : m;
        for (int i = 0; i < n; i++)
            tmp[i] = expf(x[i] - m);
        s = fsum(tmp, n, o);
    }
    return form == 1 ? (m + logf(s)) - x[t] : logf(s) + (m - x[t]);
}

static double ce_gold(const double *x, int t, int n)
{
    if (t == CE_IGNORE)
        return 0.0;
    double m = x[0], s = 0;
    for (int i = 1; i < n; i++)
        m = x[i] > m ? x[i] : m;
    for (int i = 0; i < n; i++)
        s += exp(x[i] - m);
    return log(s) + (m - x[t]);
}

typedef struct ce_case {
    kiln_task *t;
    double *x, *tg, *g;
    float *xf, *loss, *tmp;
    const kiln_variant *variant;
} ce_case;

/* Logits in dt and targets, for rows x n, as the verifier draws them. */
static void ce_draw(ce_case *c, int n, kiln_dtype dt, uint64_t seed)
{
    kiln_rng r;
    kiln_error err;
    kiln_shape s = {{CE_ROWS, n}};
    kiln_arg la, ta;
    kiln_variant v;
    const kiln_variant *vl = c->variant && c->variant->arg == 0 ? c->variant : NULL;
    const kiln_variant *vt = c->variant && c->variant->arg == 1 ? c->variant : NULL;
    kiln_rng_seed(&r, seed);
    assert_int_equal(kiln_input_resolve(c->t, &c->t->args[0], vl, &s, &la, &v, &err), 0);
    kiln_fill_input(&r, &la, vl ? &v : NULL, dt, n, c->x, NULL, (size_t)n * CE_ROWS);
    if (kiln_input_resolve(c->t, &c->t->args[1], vt, &s, &ta, &v, &err) != 0)
        fail_msg("%s", err.msg);
    kiln_fill_input(&r, &ta, vt ? &v : NULL, KILN_DT_I32, CE_ROWS, c->tg, NULL, CE_ROWS);
    for (size_t i = 0; i < (size_t)n * CE_ROWS; i++)
        c->xf[i] = (float)c->x[i];
}

static int ce_judged(const ce_case *c, kiln_dtype dt, int64_t n, double *frac)
{
    const kiln_tolerance_spec *ts = kiln_task_tolerance(c->t, dt);
    assert_non_null(ts);
    kiln_tolerance tol = {kiln_reduction_budget(ts->ulps, ts->per_sqrt, n) + ts->per_n * (double)n +
                              (c->variant ? ts->per_n_variants * (double)n + ts->ulps_variants : 0),
                          c->t->floor_rel, c->t->floor_abs};
    kiln_compare_result cr;
    kiln_compare(KILN_DT_F32, c->loss, c->g, CE_ROWS, &tol, &cr);   /* the loss is f32 */
    *frac = cr.max_err_ulps / tol.budget_ulps;
    return cr.pass;
}

/* Every honest form and order passes in every logits dtype, on the task's
 * own inputs at vocabularies to 262,144 and on each variant to 4,099;
 * 12-bit losses fail on the task's own inputs. */
static void test_cross_entropy(void **state)
{
    (void)state;
    static const int widths[] = {1, 2, 7, 64, 1000, 4099, 32000, 128256, 262144};
    static const kiln_dtype dts[] = {KILN_DT_F32, KILN_DT_F16, KILN_DT_BF16};
    const int max = 262144, nw = sizeof widths / sizeof widths[0];
    ce_case c = {0};
    kiln_error err;
    c.t = malloc(sizeof *c.t);
    assert_non_null(c.t);
    if (kiln_task_find("cross_entropy", c.t, &err) != 0)
        fail_msg("%s", err.msg);
    c.x = malloc(sizeof(double) * max * CE_ROWS);
    c.xf = malloc(sizeof(float) * max * CE_ROWS);
    c.tg = malloc(sizeof(double) * CE_ROWS);
    c.g = malloc(sizeof(double) * CE_ROWS);
    c.loss = malloc(sizeof(float) * CE_ROWS);
    c.tmp = malloc(sizeof(float) * max);
    assert_true(c.x && c.xf && c.tg && c.g && c.loss && c.tmp);
    double worst = 0, worst_own = 0, least12 = INFINITY;
    int worst_n = 0, own_n = 0, least_n = 0;
    for (int k = 0; k < nw * (1 + c.t->nvariants); k++) {
        int n = widths[k % nw];
        c.variant = k < nw ? NULL : &c.t->variants[k / nw - 1];
        if (c.variant && n > 4099)
            continue;
        for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
            double frac;
            ce_draw(&c, n, dts[d], 99 + (uint64_t)n);
            for (int r = 0; r < CE_ROWS; r++)
                c.g[r] = ce_gold(c.x + (size_t)r * n, (int)c.tg[r], n);
            for (int o = 0; o < NORDERS; o++)
                for (int form = 0; form < 3; form++) {
                    if (form == 2 && o != SERIAL && o != LANES16)
                        continue;
                    for (int r = 0; r < CE_ROWS; r++)
                        c.loss[r] = ce_row(c.xf + (size_t)r * n, (int)c.tg[r], n, (order)o, form,
                                           c.tmp);
                    if (!ce_judged(&c, dts[d], n, &frac))
                        fail_msg("cross_entropy %s: honest %s sum (form %d) fails at vocab %d%s%s "
                                 "(%.2f budgets)", kiln_dtype_name(dts[d]), order_name[o], form, n,
                                 c.variant ? ", variant " : "", c.variant ? c.variant->name : "",
                                 frac);
                    if (frac > worst)
                        worst = frac, worst_n = n;
                    if (!c.variant && frac > worst_own)
                        worst_own = frac, own_n = n;
                }
            if (c.variant || n < 64)   /* a loss over a few logits is small: 12 bits can hold it */
                continue;
            for (int r = 0; r < CE_ROWS; r++)
                c.loss[r] = twelve_bits(ce_row(c.xf + (size_t)r * n, (int)c.tg[r], n, SERIAL, 0,
                                               c.tmp));
            if (ce_judged(&c, dts[d], n, &frac))
                fail_msg("cross_entropy %s: 12-bit losses pass at vocab %d (%.2f budgets)",
                         kiln_dtype_name(dts[d]), n, frac);
            if (frac < least12)
                least12 = frac, least_n = n;
        }
    }
    print_message("cross_entropy: worst honest error %.2f budgets (vocab %d), on the task's own "
                  "inputs %.2f (vocab %d); 12 bits at least %.1f budgets (vocab %d)\n", worst,
                  worst_n, worst_own, own_n, least12, least_n);
    free(c.x), free(c.xf), free(c.tg), free(c.g), free(c.loss), free(c.tmp);
    free(c.t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rmsnorm),
        cmocka_unit_test(test_softmax),
        cmocka_unit_test(test_layernorm),
        cmocka_unit_test(test_cross_entropy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
