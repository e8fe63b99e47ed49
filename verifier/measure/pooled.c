/* pooled.c - two measurements of a kernel as one claim (pooled.h;
 * docs/search.md, "Pooled measurements"). */
#include "pooled.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

int kiln_pool_intervals(const kiln_interval *x, int n, kiln_interval *out)
{
    *out = (kiln_interval){0};
    if (n <= 0)
        return 0;
    double logsum = 0, lo = x[0].lo, hi = x[0].hi, low_point = x[0].point, top_lo = x[0].lo;
    int measured = 1;
    for (int i = 0; i < n; i++) {
        logsum += x[i].point > 0 ? log(x[i].point) : -INFINITY;
        lo = fmin(lo, x[i].lo);
        hi = fmax(hi, x[i].hi);
        top_lo = fmax(top_lo, x[i].lo);
        low_point = fmin(low_point, x[i].point);
        measured &= x[i].measured;
    }
    double low_hi = x[0].hi;
    for (int i = 1; i < n; i++)
        low_hi = fmin(low_hi, x[i].hi);
    int apart = top_lo > low_hi;
    double g = exp(logsum / n);
    *out = (kiln_interval){.point = apart ? low_point : (isfinite(g) ? g : 0), .lo = lo, .hi = hi,
                           .measured = measured};
    return apart;
}

static const kiln_shape_result *same_shape(const kiln_verdict *v, const char *id)
{
    for (int i = 0; i < v->nresults; i++) {
        const kiln_shape_result *r = &v->results[i];
        if (r->visible && r->timed && r->speedup > 0 && strcmp(r->id, id) == 0)
            return r;
    }
    return NULL;
}

static double gm(double x, double y)
{
    return x > 0 && y > 0 ? sqrt(x * y) : fmax(x, y);
}

static void pool_times(kiln_time_stats *t, const kiln_time_stats *a, const kiln_time_stats *b)
{
    t->median_ns = gm(a->median_ns, b->median_ns);
    t->p20_ns = fmin(a->p20_ns, b->p20_ns);
    t->p80_ns = fmax(a->p80_ns, b->p80_ns);
    t->count = a->count + b->count;
}

/* Shape r (a's) pooled with b's measurement of it, in place; 1 when their
 * intervals did not overlap and the lower was taken. */
static int pool_shape(kiln_shape_result *r, const kiln_shape_result *o)
{
    kiln_interval x[2] = {kiln_shape_interval(r), kiln_shape_interval(o)}, p;
    int apart = kiln_pool_intervals(x, 2, &p);
    if (apart && o->speedup < r->speedup) {
        /* The lower is b's: its timings and roofline too, so the figures agree. */
        r->cand = o->cand;
        r->base = o->base;
        r->roofline_fraction = o->roofline_fraction;
    } else if (!apart) {
        pool_times(&r->cand, &r->cand, &o->cand);
        pool_times(&r->base, &r->base, &o->base);
        r->roofline_fraction = gm(r->roofline_fraction, o->roofline_fraction);
    }
    r->speedup = p.point;
    r->speedup_lo = p.lo;
    r->speedup_hi = isfinite(p.hi) ? p.hi : 0;
    return apart;
}

/* "v2, v4" into list (len bytes) one id at a time. */
static void add_id(char *list, size_t len, const char *id)
{
    size_t used = strlen(list);
    if (used + 1 < len)
        snprintf(list + used, len - used, "%s%s", used ? ", " : "", id);
}

int kiln_pool_verdicts(const kiln_verdict *a, const kiln_verdict *b, kiln_verdict *out,
                       char *why, size_t len)
{
    if (len)
        why[0] = '\0';
    int apass = strcmp(a->status, "pass") == 0, bpass = strcmp(b->status, "pass") == 0;
    memcpy(out, apass && !bpass ? b : a, sizeof *out);
    if (!apass || !bpass)
        return 0;
    int n = 0, apart = 0;
    double logsum = 0, min = 0;
    char apart_ids[160] = "", once_ids[160] = "";
    for (int i = 0; i < out->nresults; i++) {
        kiln_shape_result *r = &out->results[i];
        if (!r->visible || !r->timed || !(r->speedup > 0))
            continue;
        const kiln_shape_result *o = same_shape(b, r->id);
        if (!o) {   /* one measurement is no claim */
            r->timed = 0;
            r->speedup = r->speedup_lo = r->speedup_hi = 0;
            add_id(once_ids, sizeof once_ids, r->id);
            continue;
        }
        if (pool_shape(r, o)) {
            apart++;
            add_id(apart_ids, sizeof apart_ids, r->id);
        }
        logsum += log(r->speedup);
        min = n == 0 ? r->speedup : fmin(min, r->speedup);
        n++;
    }
    size_t used = 0;
    if (apart && len)
        used += (size_t)snprintf(why, len, "%s: %s two intervals do not overlap, the lower taken",
                                 apart_ids, apart > 1 ? "their" : "its");
    if (once_ids[0] && used < len)
        used += (size_t)snprintf(why + used, len - used, "%s%s timed once: left out",
                                 used ? "; " : "", once_ids);
    out->geomean_speedup = n ? exp(logsum / n) : 0;
    out->min_speedup = min;
    out->median_roofline = gm(a->median_roofline, b->median_roofline);
    kiln_interval ga, gb;
    if (n && kiln_geomean_interval(a, &ga) && kiln_geomean_interval(b, &gb) &&
        (ga.lo > gb.hi || gb.lo > ga.hi)) {
        /* The two geomeans disagree beyond their intervals: the lower. */
        out->geomean_speedup = fmin(ga.point, gb.point);
        if (used < len)
            snprintf(why + used, len - used, "%sthe geomeans' intervals [%.3f, %.3f] and [%.3f, "
                     "%.3f] do not overlap, the lower taken", used ? "; " : "", ga.lo, ga.hi,
                     gb.lo, gb.hi);
    }
    return n;
}

void kiln_pool_geomean(const kiln_verdict *pooled, double *point, double *lo, double *hi)
{
    kiln_interval g;
    kiln_geomean_interval(pooled, &g);
    *point = g.point;
    *lo = g.lo;
    *hi = isfinite(g.hi) ? g.hi : 0;
}
