/* keep_rule.c - the keep rule and its interval arithmetic (keep_rule.h;
 * docs/search.md, "Keep rule"; the choices in docs/decisions.md). */
#include "keep_rule.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int kiln_keep_parse_percent(const char *flag, const char *text, double *out, kiln_error *err)
{
    char *end;
    double v = strtod(text, &end);
    if (end == text || strcmp(end, "%") != 0 || !isfinite(v) || v < 0 || v >= 100)
        return kiln_fail(err, "%s: '%s' is not a percentage from 0%% to below 100%% "
                         "(write it with %%, as 2%%)", flag, text);
    *out = v / 100;
    return 0;
}

int kiln_keep_check_objective(const char *objective, const kiln_task *t, int g,
                              const char *backend, kiln_error *err)
{
    if (strcmp(objective, "geomean") == 0 || strcmp(objective, "min") == 0 ||
        strcmp(objective, "per-shape") == 0)
        return 0;
    int nv = t->groups[g].nvisible;
    char *end;
    long k = objective[0] == 'v' ? strtol(objective + 1, &end, 10) : 0;
    if (k >= 1 && k <= nv && *end == '\0' && isdigit((unsigned char)objective[1]) &&
        objective[1] != '0')
        return 0;
    return kiln_fail(err, "--objective '%s': expected geomean, min, per-shape or a visible "
                     "shape of %s's %s group %s (v1 to v%d)", objective, t->name, backend, t->groups[g].name, nv);
}

double kiln_shape_noise(const kiln_shape_result *r)
{
    double w2 = 0;
    for (int k = 0; k < 2; k++) {
        const kiln_time_stats *st = k ? &r->base : &r->cand;
        double h = st->median_ns > 0 ? kiln_time_half_spread(st) : 1;
        w2 += h * h;
    }
    return sqrt(w2);
}

/* The half-widths of a speedup's interval in log space, below and above. */
static void log_half_widths(const kiln_interval *x, double *below, double *above)
{
    int ok = x->point > 0 && x->lo > 0 && x->hi > 0;
    *below = ok ? log(x->point / x->lo) : INFINITY;
    *above = ok ? log(x->hi / x->point) : INFINITY;
}

kiln_interval kiln_shape_interval(const kiln_shape_result *r)
{
    kiln_interval x = {.point = isfinite(r->speedup) && r->speedup > 0 ? r->speedup : 0};
    if (r->speedup_lo > 0 && r->speedup_hi >= r->speedup_lo) {
        x.lo = r->speedup_lo;
        x.hi = r->speedup_hi;
        x.measured = 1;
        return x;
    }
    /* No interval from the backend (the CPU's): the half 20-80 spreads of
     * candidate and baseline combined, as the noise of earlier kilns; a
     * shape without timings gets a half-width of 100%, so it decides
     * nothing in its favour. */
    double w = kiln_shape_noise(r);
    x.lo = x.point * exp(-w);
    x.hi = x.point * exp(w);
    return x;
}

static int counted(const kiln_shape_result *r)
{
    return r->visible && r->timed;
}

int kiln_geomean_interval(const kiln_verdict *v, kiln_interval *out)
{
    double logsum = 0, below2 = 0, above2 = 0;
    int n = 0, measured = 1;
    for (int i = 0; i < v->nresults; i++) {
        if (!counted(&v->results[i]))
            continue;
        kiln_interval x = kiln_shape_interval(&v->results[i]);
        double b, a;
        log_half_widths(&x, &b, &a);
        logsum += x.point > 0 ? log(x.point) : -INFINITY;
        below2 += b * b;
        above2 += a * a;
        measured &= x.measured;
        n++;
    }
    *out = (kiln_interval){0};
    if (n == 0)
        return 0;
    /* The verifier's own geomean where it has one: the same shapes and
     * formula, and what its summary and the notes say. The log of the
     * geomean is the mean of n logs: independent errors, each side's
     * half-widths combined in quadrature and divided by n. */
    double g = isfinite(v->geomean_speedup) && v->geomean_speedup > 0 ? v->geomean_speedup
                                                                      : exp(logsum / n);
    double lo = g * exp(-sqrt(below2) / n), hi = g * exp(sqrt(above2) / n);
    *out = (kiln_interval){.point = g, .lo = isfinite(lo) ? lo : 0, .hi = hi, .measured = measured};
    return n;
}

/* The smallest speedup over the visible timed shapes: its lower end is the
 * smallest lower end, its upper end the smallest upper end. */
static int min_interval(const kiln_verdict *v, kiln_interval *out)
{
    int n = 0;
    for (int i = 0; i < v->nresults; i++) {
        if (!counted(&v->results[i]))
            continue;
        kiln_interval x = kiln_shape_interval(&v->results[i]);
        if (n++ == 0) {
            *out = x;
            continue;
        }
        out->point = fmin(out->point, x.point);
        out->lo = fmin(out->lo, x.lo);
        out->hi = fmin(out->hi, x.hi);
        out->measured &= x.measured;
    }
    return n;
}

int kiln_objective_interval(const kiln_verdict *v, const char *objective, kiln_interval *out,
                            char *why, size_t len)
{
    *out = (kiln_interval){0};
    int n = 0;
    if (strcmp(objective, "geomean") == 0)
        n = kiln_geomean_interval(v, out);
    else if (strcmp(objective, "min") == 0)
        n = min_interval(v, out);
    else
        for (int i = 0; i < v->nresults && !n; i++)
            if (counted(&v->results[i]) && strcmp(v->results[i].id, objective) == 0) {
                *out = kiln_shape_interval(&v->results[i]);
                n = 1;
            }
    if (n > 0)
        return 0;
    snprintf(why, len, "the objective %s has no timed visible shape in the verdict", objective);
    return -1;
}

/* The shapes that surely regress: the upper end of their interval below
 * 1 - max_regression (docs/decisions.md says why not the point), as
 * "v3 0.950x [0.930, 0.960]", or only "v3" when !detail; returns how many. */
static int regressions(const kiln_verdict *v, double max_regression, int detail, char *buf,
                       size_t len)
{
    int n = 0;
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < v->nresults; i++) {
        const kiln_shape_result *r = &v->results[i];
        if (!counted(r))
            continue;
        kiln_interval x = kiln_shape_interval(r);
        if (!(x.hi < 1 - max_regression))
            continue;
        if (used < len && detail)
            used += (size_t)snprintf(buf + used, len - used, "%s%s %.3fx [%.3f, %.3f]",
                                     n ? ", " : "", r->id, x.point, x.lo, x.hi);
        else if (used < len)
            used += (size_t)snprintf(buf + used, len - used, "%s%s", n ? ", " : "", r->id);
        n++;
    }
    return n;
}

int kiln_keep_rule(const kiln_verdict *v, const kiln_keep_opts *k, char *why, size_t len)
{
    if (strcmp(v->status, "pass") != 0)
        return snprintf(why, len, "reverted: %s at %s (%s)", v->status, v->stage, v->code), 0;
    kiln_interval x;
    char what[160];
    if (kiln_objective_interval(v, k->objective, &x, what, sizeof what) < 0)
        return snprintf(why, len, "reverted: %s", what), 0;
    char iv[96], regs[256];
    snprintf(iv, sizeof iv, "%s %.3fx [%.3f, %.3f]", k->objective, x.point, x.lo, x.hi);
    /* A kernel that is not faster is reverted for that, whatever else is
     * true of it: the margin is named first, and the shapes that surely
     * regress after it, by name. On a noisy machine a kernel as fast as its
     * parent can show one shape surely slower; "not faster" still decides. */
    if (!(x.lo > 1 + k->margin)) {
        int nr = regressions(v, k->max_regression, 0, regs, sizeof regs);
        int w = snprintf(why, len, "reverted: %s does not clear %.3g%%", iv, 100 * k->margin);
        if (nr > 0 && w >= 0 && (size_t)w < len)
            snprintf(why + w, len - (size_t)w, " (and %s %s surely below %.3fx)", regs,
                     nr > 1 ? "are" : "is", 1 - k->max_regression);
        return 0;
    }
    int nr = regressions(v, k->max_regression, 1, regs, sizeof regs);
    if (nr > 0)
        return snprintf(why, len, "reverted: %s %s by more than %.3g%% (%s)", regs,
                        nr > 1 ? "regress" : "regresses", 100 * k->max_regression, iv), 0;
    snprintf(why, len, "kept: %s clears %.3g%%, no shape surely below %.3fx", iv,
             100 * k->margin, 1 - k->max_regression);
    return 1;
}
