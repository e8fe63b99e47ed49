/* incumbents.c - every visible shape's incumbent (see incumbents.h). */
#include "incumbents.h"

#include <stdio.h>
#include <string.h>

static int counted(const kiln_shape_result *r)
{
    return r->visible && r->timed && r->speedup > 0;
}

const kiln_incumbent *kiln_incumbent_at(const kiln_incumbents *in, const char *id)
{
    for (int i = 0; i < in->n; i++)
        if (strcmp(in->s[i].id, id) == 0)
            return &in->s[i];
    return NULL;
}

/* Surely faster: the intervals do not overlap. */
static int beats(const kiln_interval *c, const kiln_interval *inc)
{
    return c->lo > inc->hi;
}

int kiln_incumbents_offer(kiln_incumbents *in, int n, const kiln_verdict *pooled)
{
    int took = 0;
    for (int i = 0; pooled && i < pooled->nresults; i++) {
        const kiln_shape_result *r = &pooled->results[i];
        if (!counted(r))
            continue;
        kiln_interval iv = kiln_shape_interval(r);
        kiln_incumbent *at = (kiln_incumbent *)kiln_incumbent_at(in, r->id);
        if (!at && in->n < KILN_MAX_RESULTS) {
            at = &in->s[in->n++];
            snprintf(at->id, sizeof at->id, "%s", r->id);
        } else if (!at || !(iv.point > at->iv.point)) {
            continue;   /* the export's choice there stands */
        }
        at->n = n;
        at->commit[0] = '\0';
        at->iv = iv;
        at->roofline = r->roofline_fraction;
        took++;
    }
    return took;
}

/* "v2 1.310x [1.290, 1.330] over #4's 1.200x [1.180, 1.220]" */
static int shape_text(char *out, size_t len, const char *id, const kiln_interval *c,
                      const kiln_incumbent *inc)
{
    if (!inc)
        return snprintf(out, len, "%s %.3fx [%.3f, %.3f], no incumbent", id, c->point, c->lo,
                        c->hi);
    return snprintf(out, len, "%s %.3fx [%.3f, %.3f] over #%d's %.3fx [%.3f, %.3f]", id,
                    c->point, c->lo, c->hi, inc->n, inc->iv.point, inc->iv.lo, inc->iv.hi);
}

/* Appends one shape's text to why (at most three shapes, then a count). */
static void list_shape(char *why, size_t len, int k, const char *id, const kiln_interval *c,
                       const kiln_incumbent *inc)
{
    size_t used = strlen(why);
    if (used + 1 >= len)
        return;
    if (k == 3) {
        snprintf(why + used, len - used, "; ...");
        return;
    }
    if (k > 3)
        return;
    if (k > 0)
        used += (size_t)snprintf(why + used, len - used, "; ");
    if (used < len)
        shape_text(why + used, len - used, id, c, inc);
}

int kiln_incumbents_wins(const kiln_incumbents *in, const kiln_verdict *pooled, char *why,
                         size_t len)
{
    int wins = 0;
    double closest = -1;
    char near[240] = "";
    why[0] = '\0';
    for (int i = 0; pooled && i < pooled->nresults; i++) {
        const kiln_shape_result *r = &pooled->results[i];
        if (!counted(r))
            continue;
        kiln_interval iv = kiln_shape_interval(r);
        const kiln_incumbent *inc = kiln_incumbent_at(in, r->id);
        if (!inc || beats(&iv, &inc->iv)) {
            list_shape(why, len, wins++, r->id, &iv, inc);
            continue;
        }
        double gap = inc->iv.hi > 0 ? iv.lo / inc->iv.hi : 0;   /* 1 or more: a win */
        if (gap > closest) {
            closest = gap;
            shape_text(near, sizeof near, r->id, &iv, inc);
        }
    }
    if (wins == 0)
        snprintf(why, len, "%s", near[0] ? near : "no timed visible shape");
    return wins;
}

/* The parent's pooled speedup against the baseline at shape id (0: none). */
static double parent_at(const kiln_verdict *parent, const char *id)
{
    for (int i = 0; parent && i < parent->nresults; i++)
        if (counted(&parent->results[i]) && strcmp(parent->results[i].id, id) == 0)
            return parent->results[i].speedup;
    return 0;
}

int kiln_incumbents_may_win(const kiln_incumbents *in, const kiln_verdict *vs_parent,
                            const kiln_verdict *parent_pooled, double margin, char *why,
                            size_t len)
{
    int may = 0;
    double best = -1;
    char near[160] = "";
    why[0] = '\0';
    for (int i = 0; vs_parent && i < vs_parent->nresults; i++) {
        const kiln_shape_result *r = &vs_parent->results[i];
        if (!counted(r))
            continue;
        const kiln_incumbent *inc = kiln_incumbent_at(in, r->id);
        double p = parent_at(parent_pooled, r->id);
        /* the estimate against the baseline, as a ratio to what it must beat */
        double ratio = p > 0 && inc && inc->iv.point > 0 ? r->speedup * p / inc->iv.point
                                                         : r->speedup;
        int counts = (p > 0 && !inc) || ratio > 1 + margin;
        if (counts) {
            size_t used = strlen(why);
            if (may < 3 && used + 1 < len)
                snprintf(why + used, len - used, "%s%s est. %.3fx of its incumbent", may ? "; " : "",
                         r->id, ratio);
            may++;
        } else if (ratio > best) {
            best = ratio;
            snprintf(near, sizeof near, "at best %s, est. %.3fx of its incumbent", r->id, ratio);
        }
    }
    if (may == 0)
        snprintf(why, len, "%s", near[0] ? near : "no timed visible shape");
    return may;
}

const kiln_incumbent *kiln_incumbents_worst(const kiln_incumbents *in)
{
    const kiln_incumbent *w = NULL;
    for (int i = 0; i < in->n; i++)
        if (in->s[i].roofline > 0 && (!w || in->s[i].roofline < w->roofline))
            w = &in->s[i];
    return w;
}
