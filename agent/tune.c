/* tune.c - knob substitution and the offline tuner (see tune.h); the knobs
 * are parsed by common/knobs.c.
 *
 * The tuner keeps almost no state: which phase it is in follows from the
 * tried settings (exploration lasts while one of its seed-fixed samples is
 * untried), so a resumed run carries on where it stopped.  Only the random
 * draws and the coordinate-descent cursor live in kiln_tuner.  No phase
 * enumerates a whole space: exploration looks at its few samples, the
 * descent at one knob's values at a time, and the last resort walks at most
 * n_tried + 2 consecutive settings from a random start, which always reaches
 * an untried one if any exists (at most n_tried of them, plus the parent,
 * are taken).  Tried keys are sorted once per call and searched by
 * bisection. */
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

#define RANDOM_TRIES 64   /* random draws before the exhaustive walk */

void kiln_tuner_init(kiln_tuner *t, uint64_t seed)
{
    t->rng = seed;
    t->seed = seed;
    t->cursor = 0;
}

/* splitmix64: tiny, well mixed, and the same sequence on every platform. */
static uint64_t mix(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint64_t next_u64(kiln_tuner *t)
{
    return mix(&t->rng);
}

typedef struct search {
    const kiln_knob *knobs;
    int n;
    const char **tried;              /* sorted, no NULLs */
    int n_tried;
    int parent[KILN_KNOBS_MAX];      /* index of each knob's current value, -1 if not listed */
    int idx[KILN_KNOBS_MAX];         /* the setting being looked at */
    char (*vals)[64];
    char key[KILN_KNOBS_MAX * 130 + 1];
} search;

static int cmp_key(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Is the setting in s->idx new: not the parent's and not tried?  Leaves its
 * values in s->vals. */
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
    kiln_knobs_key(s->knobs, s->n, (const char (*)[64])s->vals, s->key, sizeof s->key);
    const char *key = s->key;
    return !bsearch(&key, s->tried, (size_t)s->n_tried, sizeof *s->tried, cmp_key);
}

static void reset(search *s)
{
    memcpy(s->idx, s->parent, (size_t)s->n * sizeof *s->idx);
}

static int longest_list(const kiln_knob *knobs, int n)
{
    int m = 0;
    for (int i = 0; i < n; i++)
        m = knobs[i].nvalues > m ? knobs[i].nvalues : m;
    return m;
}

/* The number of combinations of list values, capped at 2^62 (it only needs
 * to exceed n_tried + 2). */
static uint64_t space_size(const kiln_knob *knobs, int n)
{
    const uint64_t cap = UINT64_C(1) << 62;
    uint64_t total = 1;
    for (int i = 0; i < n; i++)
        total = total > cap / KILN_KNOB_VALUES ? cap : total * (uint64_t)knobs[i].nvalues;
    return total;
}

int kiln_tuner_explore_count(const kiln_knob *knobs, int n)
{
    if (!knobs || n <= 0)
        return 0;
    uint64_t half = (space_size(knobs, n) - 1) / 2;
    uint64_t e = 2 * (uint64_t)longest_list(knobs, n);
    return (int)(e < half ? e : half);
}

/* ---- 1. exploration: Latin-hypercube sweeps fixed by the seed ---- */

/* Sample j: sweep j / m shuffles 0..m-1 afresh for each knob (m the longest
 * list); knob i takes its shuffled slot j % m, modulo its list's length, so
 * in a sweep every value of every knob comes up and the pairings are random. */
static void explore_sample(uint64_t seed, search *s, int j, int m)
{
    uint64_t sweep = (uint64_t)(j / m);
    for (int i = 0; i < s->n; i++) {
        uint64_t st = seed ^ (0xD1B54A32D192ED03ull * (uint64_t)(i + 1)) ^
                      (0xABC98388FB8FAC03ull * (sweep + 1));
        int perm[KILN_KNOB_VALUES];
        for (int k = 0; k < m; k++)
            perm[k] = k;
        for (int k = m - 1; k > 0; k--) {
            int q = (int)(mix(&st) % (uint64_t)(k + 1)), v = perm[k];
            perm[k] = perm[q];
            perm[q] = v;
        }
        s->idx[i] = perm[j % m] % s->knobs[i].nvalues;
    }
}

static int explore(kiln_tuner *t, search *s)
{
    int e = kiln_tuner_explore_count(s->knobs, s->n), m = longest_list(s->knobs, s->n);
    for (int j = 0; j < e; j++) {
        explore_sample(t->seed, s, j, m);
        if (untried(s))
            return 1;
    }
    return 0;
}

/* ---- 2. coordinate descent around the parent ---- */

/* Knob i moved d places from the parent's value, the direction drawn; a
 * value outside the list has its list values as moves 1, 2, ... */
static int try_move(kiln_tuner *t, search *s, int i, int d)
{
    int p = s->parent[i], nv = s->knobs[i].nvalues;
    int up = (int)(next_u64(t) & 1);   /* drawn even when unused: same sequence */
    int to[2] = {p < 0 ? d - 1 : p + (up ? d : -d), p < 0 ? -1 : p + (up ? -d : d)};
    for (int k = 0; k < 2; k++) {
        if (to[k] < 0 || to[k] >= nv)
            continue;
        reset(s);
        s->idx[i] = to[k];
        if (untried(s))
            return 1;
    }
    return 0;
}

static int descend(kiln_tuner *t, search *s)
{
    int maxd = longest_list(s->knobs, s->n);
    int start = t->cursor >= 0 ? t->cursor % s->n : 0;
    for (int d = 1; d <= maxd; d++)
        for (int k = 0; k < s->n; k++) {
            int i = (start + k) % s->n;
            if (try_move(t, s, i, d)) {
                t->cursor = i;
                return 1;
            }
        }
    return 0;
}

/* ---- 3. random untried settings ---- */

static int random_setting(kiln_tuner *t, search *s)
{
    for (int r = 0; r < RANDOM_TRIES; r++) {
        for (int i = 0; i < s->n; i++)
            s->idx[i] = (int)(next_u64(t) % (uint64_t)s->knobs[i].nvalues);
        if (untried(s))
            return 1;
    }
    return 0;
}

/* Setting m of the space, knob 0 the fastest-turning digit. */
static void decode_any(search *s, uint64_t m)
{
    for (int i = 0; i < s->n; i++) {
        s->idx[i] = (int)(m % (uint64_t)s->knobs[i].nvalues);
        m /= (uint64_t)s->knobs[i].nvalues;
    }
}

/* n_tried + 2 consecutive settings from a random start: one is untried if
 * any is. */
static int walk(kiln_tuner *t, search *s)
{
    uint64_t total = space_size(s->knobs, s->n), start = next_u64(t) % total;
    uint64_t steps = (uint64_t)s->n_tried + 2;
    if (steps > total)
        steps = total;
    for (uint64_t k = 0; k < steps; k++) {
        decode_any(s, (start + k) % total);
        if (untried(s))
            return 1;
    }
    return 0;
}

/* ---- proposing ---- */

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

static int valid_knobs(const kiln_knob *knobs, int n)
{
    if (!knobs || n <= 0 || n > KILN_KNOBS_MAX)
        return 0;
    for (int i = 0; i < n; i++)
        if (knobs[i].nvalues < 1 || knobs[i].nvalues > KILN_KNOB_VALUES)
            return 0;
    return 1;
}

/* The tried keys without NULLs, sorted; NULL when out of memory. */
static const char **sorted_keys(const char *const *tried, int n_tried, int *n)
{
    const char **keys = malloc(((size_t)n_tried + 1) * sizeof *keys);
    *n = 0;
    for (int i = 0; keys && tried && i < n_tried; i++)
        if (tried[i])
            keys[(*n)++] = tried[i];
    if (keys)
        qsort(keys, (size_t)*n, sizeof *keys, cmp_key);
    return keys;
}

static void find_parent(search *s)
{
    for (int i = 0; i < s->n; i++) {
        s->parent[i] = -1;
        for (int j = 0; j < s->knobs[i].nvalues; j++)
            if (strcmp(s->knobs[i].values[j], s->knobs[i].value) == 0)
                s->parent[i] = j;
    }
}

int kiln_tuner_propose(kiln_tuner *t, const kiln_knob *knobs, int n, const char *const *tried,
                       int n_tried, char out_values[][64], char *hypothesis, size_t hlen)
{
    if (!t || !out_values || !valid_knobs(knobs, n))
        return -1;
    search s = {.knobs = knobs, .n = n, .vals = out_values};
    s.tried = sorted_keys(tried, n_tried, &s.n_tried);
    int rc = -1;
    if (s.tried) {
        find_parent(&s);
        rc = explore(t, &s) || descend(t, &s) || random_setting(t, &s) || walk(t, &s);
    }
    if (rc == 1 && hypothesis && hlen)
        describe(&s, hypothesis, hlen);
    for (int i = 0; rc != 1 && i < n; i++)   /* nothing new: leave the parent's */
        snprintf(out_values[i], 64, "%s", knobs[i].value);
    if (rc != 1 && hypothesis && hlen)
        hypothesis[0] = '\0';
    free(s.tried);
    return rc;
}
