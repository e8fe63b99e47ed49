/* tune.c - knob parsing, substitution and the offline tuner (see tune.h).
 *
 * The tuner never enumerates a whole space: for each kind of move (one knob,
 * two knobs, anything) it walks the moves in a fixed order from a random
 * start, at most n_tried + 2 steps.  The moves are distinct settings and at
 * most n_tried of them (plus the parent) can be taken, so that many steps
 * always reach an untried one if any exists; the cost stays bounded even
 * for a file with many knobs. */
#include "tune.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct span {
    size_t b, e;
} span;

typedef struct tune_line {
    span name, value;
    int nvalues;
    span values[KILN_KNOB_VALUES];
} tune_line;

static int is_ident(int c)
{
    return isalnum((unsigned char)c) || c == '_';
}

static size_t skip_ws(const char *s, size_t i, size_t len)
{
    while (i < len && isspace((unsigned char)s[i]))
        i++;
    return i;
}

/* An integer (optionally negative, any suffix: 0x40, 8u) or an identifier. */
static int valid_token(const char *s, size_t len)
{
    size_t i = (len > 1 && s[0] == '-' && isdigit((unsigned char)s[1])) ? 1 : 0;
    if (len == 0 || len >= 64 || !is_ident(s[i]))
        return 0;
    for (; i < len; i++)
        if (!is_ident(s[i]))
            return 0;
    return 1;
}

static size_t token_end(const char *s, size_t i, size_t len)
{
    while (i < len && !isspace((unsigned char)s[i]) && s[i] != ',')
        i++;
    return i;
}

/* Where "//" ws "@kiln" ws "tune" starts on the line, and where the value
 * list after it begins; 0 if the line has no tune marker. */
static int find_marker(const char *s, size_t len, size_t *at, size_t *list)
{
    for (size_t i = 0; i + 1 < len; i++) {
        if (s[i] != '/' || s[i + 1] != '/')
            continue;
        size_t j = skip_ws(s, i + 2, len);
        if (len - j < 5 || memcmp(s + j, "@kiln", 5) != 0)
            continue;
        size_t k = skip_ws(s, j + 5, len);
        if (k == j + 5 || len - k < 4 || memcmp(s + k, "tune", 4) != 0 ||
            (k + 4 < len && !isspace((unsigned char)s[k + 4])))
            continue;
        *at = i;
        *list = k + 4;
        return 1;
    }
    return 0;
}

/* "#define NAME VALUE" and nothing else in s[0, end). */
static int parse_define(const char *s, size_t end, tune_line *tl)
{
    size_t i = skip_ws(s, 0, end);
    if (i >= end || s[i] != '#')
        return 0;
    i = skip_ws(s, i + 1, end);
    if (end - i < 6 || memcmp(s + i, "define", 6) != 0 || i + 6 >= end ||
        !isspace((unsigned char)s[i + 6]))
        return 0;
    i = skip_ws(s, i + 6, end);
    tl->name.b = i;
    while (i < end && is_ident(s[i]))
        i++;
    tl->name.e = i;
    if (tl->name.e == tl->name.b || isdigit((unsigned char)s[tl->name.b]) ||
        tl->name.e - tl->name.b >= 64 || i >= end || !isspace((unsigned char)s[i]))
        return 0;
    tl->value.b = skip_ws(s, i, end);
    tl->value.e = token_end(s, tl->value.b, end);
    return tl->value.e > tl->value.b && skip_ws(s, tl->value.e, end) == end;
}

static int same(const char *s, span a, span b)
{
    return a.e - a.b == b.e - b.b && memcmp(s + a.b, s + b.b, a.e - a.b) == 0;
}

static int parse_values(const char *s, size_t i, size_t len, tune_line *tl, char *why,
                        size_t wlen)
{
    tl->nvalues = 0;
    for (;;) {
        while (i < len && (isspace((unsigned char)s[i]) || s[i] == ','))
            i++;
        if (i >= len)
            break;
        span v = {i, token_end(s, i, len)};
        i = v.e;
        if (!valid_token(s + v.b, v.e - v.b))
            return snprintf(why, wlen, "value '%.*s' is not an integer or identifier",
                            (int)(v.e - v.b > 64 ? 64 : v.e - v.b), s + v.b), -1;
        if (tl->nvalues == KILN_KNOB_VALUES)
            return snprintf(why, wlen, "more than %d values", KILN_KNOB_VALUES), -1;
        for (int k = 0; k < tl->nvalues; k++)
            if (same(s, tl->values[k], v))
                return snprintf(why, wlen, "value %.*s is listed twice", (int)(v.e - v.b),
                                s + v.b), -1;
        tl->values[tl->nvalues++] = v;
    }
    if (tl->nvalues < 2)
        return snprintf(why, wlen, "lists %d value%s; a knob needs at least 2", tl->nvalues,
                        tl->nvalues == 1 ? "" : "s"), -1;
    return 0;
}

/* 1: a well-formed tune line; 0: no tune marker; -1: malformed (why says). */
static int parse_tune_line(const char *s, size_t len, tune_line *tl, char *why, size_t wlen)
{
    size_t at, list;
    if (!find_marker(s, len, &at, &list))
        return 0;
    if (!parse_define(s, at, tl))
        return snprintf(why, wlen, "a tune line must read '#define NAME VALUE //@kiln tune "
                                   "V1 V2 ...'"), -1;
    if (!valid_token(s + tl->value.b, tl->value.e - tl->value.b))
        return snprintf(why, wlen, "the value of %.*s is not an integer or identifier",
                        (int)(tl->name.e - tl->name.b), s + tl->name.b), -1;
    char what[128];
    if (parse_values(s, list, len, tl, what, sizeof what) < 0)
        return snprintf(why, wlen, "knob %.*s: %s", (int)(tl->name.e - tl->name.b),
                        s + tl->name.b, what), -1;
    return 1;
}

static void copy_span(char dst[64], const char *s, span sp)
{
    memcpy(dst, s + sp.b, sp.e - sp.b);
    dst[sp.e - sp.b] = '\0';
}

static int add_knob(const char *s, const tune_line *tl, int line, kiln_knob *knobs, int n,
                    int cap, kiln_error *err)
{
    kiln_knob k = {.nvalues = tl->nvalues, .line = line};
    copy_span(k.name, s, tl->name);
    copy_span(k.value, s, tl->value);
    for (int i = 0; i < tl->nvalues; i++)
        copy_span(k.values[i], s, tl->values[i]);
    for (int i = 0; i < n; i++)
        if (strcmp(knobs[i].name, k.name) == 0)
            return kiln_fail(err, "line %d: knob %s is already declared on line %d", line,
                             k.name, knobs[i].line);
    if (n >= cap)
        return kiln_fail(err, "line %d: more than %d tune knobs", line, cap);
    knobs[n] = k;
    return 0;
}

int kiln_knobs_parse(const char *source, kiln_knob *knobs, int cap, kiln_error *err)
{
    if (!source || (!knobs && cap > 0))
        return kiln_fail(err, "kiln_knobs_parse: no source");
    int n = 0, line = 1;
    for (const char *p = source; *p; line++) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        tune_line tl;
        char why[256];
        int r = parse_tune_line(p, len, &tl, why, sizeof why);
        if (r < 0)
            return kiln_fail(err, "line %d: %s", line, why);
        if (r > 0 && add_knob(p, &tl, line, knobs, n++, cap, err) < 0)
            return -1;
        p += len + (nl != NULL);
    }
    return n;
}

static int knob_on_line(const kiln_knob *knobs, int n, int line)
{
    for (int i = 0; i < n; i++)
        if (knobs[i].line == line)
            return i;
    return -1;
}

char *kiln_knobs_apply(const char *source, const kiln_knob *knobs, int n, const char values[][64])
{
    if (!source || n < 0 || (n > 0 && (!knobs || !values)))
        return NULL;
    size_t cap = strlen(source) + 1;
    for (int i = 0; i < n; i++) {
        size_t vl = strnlen(values[i], 64);
        if (!valid_token(values[i], vl))
            return NULL;
        cap += vl;
    }
    char *out = malloc(cap), *w = out;
    if (!out)
        return NULL;
    int line = 1, done = 0;
    for (const char *p = source; *p; line++) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) + 1 : strlen(p);
        int k = knob_on_line(knobs, n, line);
        tune_line tl;
        char why[256];
        if (k >= 0 && parse_tune_line(p, len, &tl, why, sizeof why) == 1 &&
            tl.name.e - tl.name.b == strlen(knobs[k].name) &&
            memcmp(p + tl.name.b, knobs[k].name, tl.name.e - tl.name.b) == 0) {
            size_t vl = strlen(values[k]);
            memcpy(w, p, tl.value.b);
            memcpy(w + tl.value.b, values[k], vl);
            memcpy(w + tl.value.b + vl, p + tl.value.e, len - tl.value.e);
            w += tl.value.b + vl + (len - tl.value.e);
            done++;
        } else {
            memcpy(w, p, len);
            w += len;
        }
        p += len;
    }
    *w = '\0';
    if (done != n) {   /* a knob whose line is not where it says: another source */
        free(out);
        return NULL;
    }
    return out;
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
