/* archive.c - MAP-Elites cells, the cell update rule and the seeded choice
 * of parents and inspirations (archive.h; docs/search.md, "Population"). */
#include "archive.h"

#include <stdio.h>
#include <string.h>

#include "knobs.h"

const char *kiln_wins_bucket(int wins, int shapes)
{
    if (shapes <= 0 || wins <= 0)
        return "none";
    if (wins >= shapes)
        return "all";
    return 2 * wins >= shapes ? "most" : "some";
}

void kiln_archive_cell(const kiln_verdict *record, const char *source, char *cell, size_t len)
{
    int wins = 0, shapes = 0;
    for (int i = 0; record && i < record->nresults; i++) {
        const kiln_shape_result *r = &record->results[i];
        if (!r->visible || !r->timed)
            continue;
        shapes++;
        wins += r->speedup > 1.0;
    }
    /* One source descriptor: the first knob's value. Two kernels that set
     * it differently (block size, rows per pass, vector width) differ in
     * how they use the machine, which is the diversity worth keeping. */
    kiln_knob k[KILN_KNOBS_MAX];
    kiln_error e;
    int nk = source ? kiln_knobs_parse(source, k, KILN_KNOBS_MAX, &e) : 0;
    const char *bucket = kiln_wins_bucket(wins, shapes);
    if (nk > 0) {
        snprintf(cell, len, "%s.%.31s%.31s", bucket, k[0].name, k[0].value);
        return;
    }
    /* Without knobs (a model's kernels, mostly), the code's features: else
     * every such kernel of a bucket shares one cell, and the start kernel
     * holds it against every rewrite that is not faster than it. */
    char feats[KILN_CELL_MAX];
    kiln_code_features(source, feats, sizeof feats);
    snprintf(cell, len, "%s.%.50s", bucket, feats[0] ? feats : "noknob");
}

int kiln_archive_offer(kiln_elite *a, int *n, int cap, const kiln_elite *e)
{
    for (int i = 0; i < *n; i++) {
        if (strcmp(a[i].cell, e->cell) != 0)
            continue;
        if (e->speedup <= a[i].speedup)
            return -1;
        a[i] = *e;
        return i;
    }
    if (*n >= cap)
        return -1;
    a[*n] = *e;
    return (*n)++;
}

int kiln_archive_best(const kiln_elite *a, int n)
{
    int best = -1;
    for (int i = 0; i < n; i++)
        if (best < 0 || a[i].speedup > a[best].speedup)
            best = i;
    return best;
}

/* splitmix64: a good 64-bit mix from a counter, so each (seed, iteration)
 * gets its own stream without any state to store for --resume. */
static unsigned long long mix(unsigned long long x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

int kiln_archive_surely_beaten(const kiln_elite *a, int n, int i)
{
    if (i < 0 || i >= n || n < 2 || !(a[i].hi > 0))
        return 0;
    for (int j = 0; j < n; j++)
        if (j != i && !(a[j].lo > a[i].hi))
            return 0;
    return 1;
}

int kiln_archive_pick(const kiln_elite *a, int n, double p_best, unsigned long long seed, int it)
{
    int open = 0;
    for (int i = 0; i < n; i++)
        open += !kiln_archive_surely_beaten(a, n, i);
    if (open <= 0)
        return -1;
    unsigned long long r1 = mix(seed ^ mix((unsigned long long)it));
    unsigned long long r2 = mix(r1);
    double u = (double)(r1 >> 11) / 9007199254740992.0;   /* [0, 1) from 53 bits */
    if (u < p_best)
        return -1;
    /* The k-th elite still open: with none surely beaten, the draw is the
     * one runs before this rule made (same seed, same parents). */
    int k = (int)(r2 % (unsigned long long)open);
    for (int i = 0; i < n; i++)
        if (!kiln_archive_surely_beaten(a, n, i) && k-- == 0)
            return i;
    return -1;
}

int kiln_archive_inspirations(const kiln_elite *a, int n, int parent, int *out, int k)
{
    int m = 0;
    /* Selection by objective, highest first, skipping the parent: at most
     * k passes over at most KILN_ARCHIVE_MAX elites. */
    while (m < k) {
        int pick = -1;
        for (int i = 0; i < n; i++) {
            int taken = i == parent || kiln_archive_surely_beaten(a, n, i);
            for (int j = 0; j < m && !taken; j++)
                taken = out[j] == i;
            if (!taken && (pick < 0 || a[i].speedup > a[pick].speedup))
                pick = i;
        }
        if (pick < 0)
            break;
        out[m++] = pick;
    }
    return m;
}
