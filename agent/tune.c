/* tune.c - knob substitution and the offline tuner (see tune.h); the knobs
 * are parsed by verifier/knobs.c.
 *
 * The tuner never enumerates a whole space: for each kind of move (one knob,
 * two knobs, anything) it walks the moves in a fixed order from a random
 * start, at most n_tried + 2 steps.  The moves are distinct settings and at
 * most n_tried of them (plus the parent) can be taken, so that many steps
 * always reach an untried one if any exists; the cost stays bounded even
 * for a file with many knobs. */
#include "tune.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Which new value each knob the source declares (found[0..nfound)) gets:
 * repl[k] is knobs[i]'s values[i] when knobs[i] is found[k] (same name, same
 * line), else NULL. -1 when one of knobs is not in the source or is given
 * twice, or a value is not a knob value. */
static int match_knobs(const kiln_knob *knobs, int n, const char values[][64],
                       const kiln_knob *found, int nfound, const char **repl)
{
    for (int k = 0; k < nfound; k++)
        repl[k] = NULL;
    for (int i = 0; i < n; i++) {
        int k = 0;
        while (k < nfound && (found[k].line != knobs[i].line ||
                              strcmp(found[k].name, knobs[i].name) != 0))
            k++;
        if (k == nfound || repl[k] || kiln_knob_int(values[i], strnlen(values[i], 64), NULL) < 0)
            return -1;
        repl[k] = values[i];
    }
    return 0;
}

/* source with found[k]'s value replaced by repl[k] where that is not NULL. */
static char *substitute(const char *source, const kiln_knob *found, int nfound,
                        const char **repl)
{
    size_t len = strlen(source), cap = len + 1, from = 0;
    for (int k = 0; k < nfound; k++)
        cap += repl[k] ? strlen(repl[k]) : 0;
    char *out = malloc(cap), *w = out;
    if (!out)
        return NULL;
    for (int k = 0; k < nfound; k++) {   /* in file order */
        if (!repl[k])
            continue;
        memcpy(w, source + from, found[k].value_at - from);
        w += found[k].value_at - from;
        memcpy(w, repl[k], strlen(repl[k]));
        w += strlen(repl[k]);
        from = found[k].value_end;
    }
    memcpy(w, source + from, len - from + 1);
    return out;
}

char *kiln_knobs_apply(const char *source, const kiln_knob *knobs, int n, const char values[][64])
{
    kiln_knob found[KILN_KNOBS_MAX];
    const char *repl[KILN_KNOBS_MAX];
    if (!source || n < 0 || (n > 0 && (!knobs || !values)))
        return NULL;
    int nfound = kiln_knobs_scan(source, strlen(source), found, KILN_KNOBS_MAX, NULL, NULL);
    if (nfound < 0 || match_knobs(knobs, n, values, found, nfound, repl) < 0)
        return NULL;
    return substitute(source, found, nfound, repl);
}

void kiln_knobs_key(const kiln_knob *knobs, int n, const char values[][64], char *buf, size_t len)
{
    if (!buf || len == 0)
        return;
    buf[0] = '\0';
    size_t used = 0;
    for (int i = 0; i < n && used < len; i++) {
        int r = snprintf(buf + used, len - used, "%s%s=%.63s", i ? "," : "", knobs[i].name,
                         values[i]);
        if (r < 0)
            break;
        used += (size_t)r;
    }
}

/* ---- the tuner ------------------------------------------------------------ */

void kiln_tuner_init(kiln_tuner *t, uint64_t seed)
{
    t->rng = seed;
}

/* splitmix64: tiny, well mixed, and the same sequence on every platform. */
static uint64_t next_u64(kiln_tuner *t)
{
    uint64_t z = (t->rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

typedef struct search {
    const kiln_knob *knobs;
    int n;
    const char *const *tried;
    int n_tried;
    const int *parent;   /* index of each knob's current value, -1 if not listed */
    int *idx;            /* the setting being looked at; -1 keeps the current value */
    char (*vals)[64];
    char *key;
    size_t keylen;
} search;

/* The j-th value of knob i other than its current one. */
static int other_value(const search *s, int i, uint64_t j)
{
    return (int)j + (s->parent[i] >= 0 && (int)j >= s->parent[i]);
}

static int others(const search *s, int i)
{
    return s->knobs[i].nvalues - (s->parent[i] >= 0);
}

/* Is the setting in s->idx new: not the parent's and not tried? */
static int untried(search *s)
{
    int changed = 0;
    for (int i = 0; i < s->n; i++) {
        const kiln_knob *k = &s->knobs[i];
        changed |= s->idx[i] != s->parent[i];
        snprintf(s->vals[i], 64, "%s", s->idx[i] >= 0 ? k->values[s->idx[i]] : k->value);
    }
    if (!changed)
        return 0;
    kiln_knobs_key(s->knobs, s->n, (const char (*)[64])s->vals, s->key, s->keylen);
    for (int i = 0; i < s->n_tried; i++)
        if (s->tried[i] && strcmp(s->tried[i], s->key) == 0)
            return 0;
    return 1;
}

static void reset(search *s)
{
    memcpy(s->idx, s->parent, (size_t)s->n * sizeof *s->idx);
}

static void decode_one(search *s, uint64_t m)
{
    reset(s);
    for (int i = 0; i < s->n; i++) {
        if (m < (uint64_t)others(s, i)) {
            s->idx[i] = other_value(s, i, m);
            return;
        }
        m -= (uint64_t)others(s, i);
    }
}

static void decode_two(search *s, uint64_t m)
{
    reset(s);
    for (int i = 0; i < s->n; i++)
        for (int k = i + 1; k < s->n; k++) {
            uint64_t a = (uint64_t)others(s, i), b = (uint64_t)others(s, k);
            if (m < a * b) {
                s->idx[i] = other_value(s, i, m / b);
                s->idx[k] = other_value(s, k, m % b);
                return;
            }
            m -= a * b;
        }
}

static void decode_any(search *s, uint64_t m)
{
    for (int i = 0; i < s->n; i++) {
        s->idx[i] = (int)(m % (uint64_t)s->knobs[i].nvalues);
        m /= (uint64_t)s->knobs[i].nvalues;
    }
}

/* Walk `total` moves from a random start; 1 when an untried one is in idx. */
static int walk(kiln_tuner *t, search *s, uint64_t total, void (*decode)(search *, uint64_t))
{
    uint64_t start = next_u64(t);   /* drawn even when unused: same sequence */
    if (total == 0)
        return 0;
    uint64_t steps = (uint64_t)s->n_tried + 2;
    if (steps > total)
        steps = total;
    for (uint64_t k = 0; k < steps; k++) {
        decode(s, (start % total + k) % total);
        if (untried(s))
            return 1;
    }
    return 0;
}

static void move_counts(const search *s, uint64_t *one, uint64_t *two, uint64_t *any)
{
    const uint64_t cap = UINT64_C(1) << 62;   /* only needs to exceed n_tried + 2 */
    *one = *two = 0;
    *any = 1;
    for (int i = 0; i < s->n; i++) {
        *one += (uint64_t)others(s, i);
        for (int k = i + 1; k < s->n && *two < cap; k++)
            *two += (uint64_t)others(s, i) * (uint64_t)others(s, k);
        *any = *any > cap / KILN_KNOB_VALUES ? cap : *any * (uint64_t)s->knobs[i].nvalues;
    }
}

static void describe(const search *s, char *h, size_t hlen)
{
    size_t used = 0;
    h[0] = '\0';
    for (int i = 0; i < s->n && used < hlen; i++) {
        if (s->idx[i] == s->parent[i])
            continue;
        int r = snprintf(h + used, hlen - used, "%s%s %s -> %s", used ? ", " : "",
                         s->knobs[i].name, s->knobs[i].value, s->vals[i]);
        if (r < 0)
            break;
        used += (size_t)r;
    }
}

static int propose(kiln_tuner *t, search *s)
{
    uint64_t one, two, any;
    move_counts(s, &one, &two, &any);
    int pair_first = s->n >= 2 && next_u64(t) % 3 == 0;
    if (pair_first && walk(t, s, two, decode_two))
        return 1;
    if (walk(t, s, one, decode_one))
        return 1;
    if (!pair_first && walk(t, s, two, decode_two))
        return 1;
    return walk(t, s, any, decode_any);
}

int kiln_tuner_propose(kiln_tuner *t, const kiln_knob *knobs, int n, const char *const *tried,
                       int n_tried, char out_values[][64], char *hypothesis, size_t hlen)
{
    if (!t || !knobs || n <= 0 || !out_values)
        return -1;
    for (int i = 0; i < n; i++)
        if (knobs[i].nvalues < 1 || knobs[i].nvalues > KILN_KNOB_VALUES)
            return -1;
    search s = {.knobs = knobs, .n = n, .tried = tried, .n_tried = tried ? n_tried : 0,
                .vals = out_values, .keylen = (size_t)n * 130 + 1};
    int *parent = malloc((size_t)n * sizeof *parent);
    s.idx = malloc((size_t)n * sizeof *s.idx);
    s.key = malloc(s.keylen);
    int rc = -1;
    if (parent && s.idx && s.key) {
        for (int i = 0; i < n; i++) {
            parent[i] = -1;
            for (int j = 0; j < knobs[i].nvalues; j++)
                if (strcmp(knobs[i].values[j], knobs[i].value) == 0)
                    parent[i] = j;
        }
        s.parent = parent;
        rc = propose(t, &s);
        if (rc == 1 && hypothesis && hlen)
            describe(&s, hypothesis, hlen);
        for (int i = 0; rc != 1 && i < n; i++)   /* nothing new: leave the parent's */
            snprintf(out_values[i], 64, "%s", knobs[i].value);
        if (rc != 1 && hypothesis && hlen)
            hypothesis[0] = '\0';
    }
    free(parent);
    free(s.idx);
    free(s.key);
    return rc;
}
