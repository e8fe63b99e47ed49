/* precond.c - parse a candidate's preconditions ("cols % 8 == 0") and pick
 * the shapes they admit: the visible ones kept, and hidden ones drawn to
 * satisfy them (see precond.h).
 *
 * An entry is parsed with the one expression grammar (common/expr.c) and
 * then held to a single tree shape, NAME % INT == 0, so nothing the grammar
 * adds later (comparisons, ?:, gcd) can slip in: a comparison or equality
 * on a dim would let a candidate pin the visible shapes or bisect a hidden
 * dim over many jobs, while divisibility only says which widths the kernel
 * handles. The hidden shapes keep their number: a precondition may move a
 * hidden dim to a multiple but never drops a shape, and every new value
 * comes from the job's secret seed. */
#include "precond.h"

#include <stdio.h>
#include <string.h>

#include "c_lex.h"
#include "expr.h"
#include "rng.h"

#define BLOCK_OPEN "/*@kiln"
#define FORM "allowed: \"DIM % N == 0\", a task dim and an integer N from 1 to 1048576"

/* ---- one entry ---------------------------------------------------------- */

static int task_dim(const kiln_task *t, const char *name, size_t len)
{
    for (int d = 0; d < t->ndims; d++)
        if (strlen(t->dims[d]) == len && strncmp(t->dims[d], name, len) == 0)
            return d;
    return -1;
}

static const kiln_expr_node *node(const kiln_expr *e, int i)
{
    return i >= 0 && i < e->n ? &e->nodes[i] : NULL;
}

/* The tree must be NAME % INT == 0; *why says what else it is. */
static int check_form(const kiln_task *t, const kiln_expr *e, kiln_precond *out, const char **why)
{
    const kiln_expr_node *eq = node(e, e->root);
    const kiln_expr_node *mod = eq ? node(e, eq->a) : NULL, *zero = eq ? node(e, eq->b) : NULL;
    *why = "not of the form DIM % N == 0";
    if (!eq || eq->kind != KILN_EXPR_BINARY || eq->op != KILN_EXPR_EQ || !mod ||
        mod->kind != KILN_EXPR_BINARY || mod->op != KILN_EXPR_MOD)
        return -1;
    if (!zero || zero->kind != KILN_EXPR_INT || zero->value.i != 0)
        return *why = "the right-hand side must be the literal 0", -1;
    const kiln_expr_node *dim = node(e, mod->a), *div = node(e, mod->b);
    if (!dim || dim->kind != KILN_EXPR_NAME)
        return *why = "the left operand of % must be a task dim", -1;
    if ((out->dim = task_dim(t, e->src + dim->at, dim->len)) < 0)
        return *why = "the left operand of % is not one of the task's dims", -1;
    if (!div || div->kind != KILN_EXPR_INT)
        return *why = "N must be an integer literal (no names, floats or expressions)", -1;
    if (div->value.i < 1 || div->value.i > KILN_PRECOND_MAX_DIVISOR)
        return *why = "N must be from 1 to 1048576", -1;
    out->divisor = div->value.i;
    return 0;
}

int kiln_precond_parse(const kiln_task *t, const char *text, const char *path, kiln_precond *out,
                       kiln_error *err)
{
    kiln_expr e = {0};
    kiln_error perr;
    const char *why = "";
    int rc = kiln_expr_parse(text, &e, &perr);
    if (rc < 0)
        rc = kiln_fail(err, "%s: '%.80s': %s (%s)", path, text, perr.msg, FORM);
    else if (check_form(t, &e, out, &why) < 0)
        rc = kiln_fail(err, "%s: '%.80s': %s (%s)", path, text, why, FORM);
    kiln_expr_free(&e);
    return rc;
}

int kiln_precond_parse_json(const kiln_task *t, const cJSON *arr, const char *field,
                            kiln_preconds *out, kiln_error *err)
{
    memset(out, 0, sizeof *out);
    if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) > KILN_PRECOND_MAX)
        return kiln_fail(err, "%s: must be an array of at most %d strings such as "
                         "\"cols %% 8 == 0\"", field, KILN_PRECOND_MAX);
    const cJSON *it;
    cJSON_ArrayForEach(it, arr) {
        char path[64];
        snprintf(path, sizeof path, "%s[%d]", field, out->n);
        if (!cJSON_IsString(it))
            return kiln_fail(err, "%s: must be a string such as \"cols %% 8 == 0\"", path);
        if (kiln_precond_parse(t, it->valuestring, path, &out->p[out->n], err) < 0)
            return -1;
        out->n++;
    }
    return 0;
}

/* ---- the C candidate's block ---------------------------------------------- */

static int line_of(const char *src, size_t off)
{
    int line = 1;
    for (size_t i = 0; i < off; i++)
        line += src[i] == '\n';
    return line;
}

/* The block comment [at, after) if it is "/ *@kiln require ... @* /". */
static int on_block(const char *src, size_t at, size_t after, int closed, int *seen,
                    const kiln_task *t, kiln_preconds *out, kiln_error *err)
{
    size_t open = strlen(BLOCK_OPEN), w = at + open;
    if (after - at < open || strncmp(src + at, BLOCK_OPEN, open) != 0)
        return 0;
    while (w < after && (src[w] == ' ' || src[w] == '\t'))
        w++;
    if (after - w < 7 || strncmp(src + w, "require", 7) != 0 || kiln_is_ident_char(src[w + 7]))
        return 0;   /* another kiln block: not this reader's */
    int line = line_of(src, at);
    if (!closed || after - at < open + 9 || src[after - 3] != '@')
        return kiln_fail(err, "require (line %d): the /*@kiln require block must end with @*/",
                         line);
    if ((*seen)++)
        return kiln_fail(err, "require (line %d): a second /*@kiln require block; there must "
                         "be at most one", line);
    const char *json = src + w + 7;
    size_t n = (size_t)(src + after - 3 - json);
    cJSON *arr = cJSON_ParseWithLength(json, n);
    if (!arr)
        return kiln_fail(err, "require (line %d): malformed JSON: expected an array such as "
                         "[\"cols %% 8 == 0\"]", line);
    int rc = kiln_precond_parse_json(t, arr, "require", out, err);
    cJSON_Delete(arr);
    return rc;
}

int kiln_precond_scan(const char *src, size_t len, const kiln_task *t, kiln_preconds *out,
                      kiln_error *err)
{
    int seen = 0;
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < len;) {
        char c = src[i], next = i + 1 < len ? src[i + 1] : 0;
        if (c == '/' && next == '*') {
            int closed;
            size_t after = kiln_lex_block_comment_end(src, len, i, &closed);
            if (on_block(src, i, after, closed, &seen, t, out, err) < 0)
                return -1;
            i = after;
        } else if (c == '/' && next == '/') {
            i = kiln_lex_line_comment_end(src, len, i);
        } else if (c == '"' || c == '\'') {
            i = kiln_lex_literal_end(src, len, i);
        } else {
            i++;
        }
    }
    return 0;
}

/* ---- shapes ------------------------------------------------------------- */

int kiln_precond_holds(const kiln_preconds *p, const kiln_shape *s)
{
    for (int i = 0; i < p->n; i++)
        if (s->d[p->p[i].dim] % p->p[i].divisor != 0)
            return 0;
    return 1;
}

void kiln_precond_text(const kiln_precond *p, const kiln_task *t, char *buf, size_t len)
{
    snprintf(buf, len, "%s %% %lld == 0", t->dims[p->dim], (long long)p->divisor);
}

void kiln_precond_format(const kiln_preconds *p, const kiln_task *t, char *buf, size_t len)
{
    size_t u = 0;
    buf[0] = '\0';
    for (int i = 0; i < p->n && u < len; i++) {
        char one[96];
        kiln_precond_text(&p->p[i], t, one, sizeof one);
        u += (size_t)snprintf(buf + u, len - u, "%s%s", i ? " && " : "", one);
    }
}

int kiln_precond_keep(const kiln_preconds *p, const kiln_group *g, int *kept)
{
    int n = 0;
    for (int i = 0; i < g->nvisible; i++)
        if (kiln_precond_holds(p, &g->visible[i]))
            kept[n++] = i;
    return n;
}

static int64_t gcd64(int64_t a, int64_t b)
{
    while (b) {
        int64_t r = a % b;
        a = b;
        b = r;
    }
    return a;
}

/* Every dim must be a multiple of this (the lcm of its divisors; capped,
 * since no shape can satisfy more than the largest dim anyway). */
static int64_t step_of(const kiln_preconds *p, int dim)
{
    int64_t m = 1;
    for (int i = 0; i < p->n; i++)
        if (p->p[i].dim == dim) {
            int64_t d = p->p[i].divisor;
            m = m / gcd64(m, d) * d;
            if (m > ((int64_t)1 << 40))
                m = (int64_t)1 << 40;
        }
    return m;
}

/* A multiple of m in [lo, hi] drawn uniformly; the smallest one at or
 * above lo when there is none (it exceeds hi by less than m). */
static int64_t draw_multiple(kiln_rng *r, int64_t lo, int64_t hi, int64_t m)
{
    int64_t klo = (lo + m - 1) / m, khi = hi / m;
    if (klo < 1)
        klo = 1;
    if (khi < klo)
        return klo * m;
    return kiln_rng_range(r, klo, khi) * m;
}

/* A fixed hidden shape that fails: each failing dim moves to a multiple
 * drawn among the ones next to its value (at most one step away). */
static void replace(const kiln_preconds *p, const kiln_task *t, kiln_rng *r, kiln_shape *s)
{
    for (int d = 0; d < t->ndims; d++) {
        int64_t m = step_of(p, d), v = s->d[d];
        if (v % m == 0)
            continue;
        s->d[d] = draw_multiple(r, v - m, v + m, m);
    }
}

int kiln_precond_hidden(const kiln_preconds *p, const kiln_task *t, const kiln_group *g,
                        uint64_t seed, kiln_shape *out)
{
    kiln_rng r, rr;
    kiln_rng_seed(&r, seed);                            /* the random shapes, as ever */
    kiln_rng_seed(&rr, seed ^ 0x9e3779b97f4a7c15ull);   /* replacements: a stream of their own */
    int n = 0;
    for (int i = 0; i < g->nhidden; i++) {
        out[n] = g->hidden[i];
        if (!kiln_precond_holds(p, &out[n]))
            replace(p, t, &rr, &out[n]);
        n++;
    }
    for (int i = 0; i < g->nrandom; i++) {
        kiln_shape *s = &out[n++];
        memset(s, 0, sizeof *s);
        for (int d = 0; d < t->ndims; d++) {
            int64_t m = step_of(p, d);
            s->d[d] = m == 1 ? kiln_rng_range(&r, g->range_lo[d], g->range_hi[d])
                             : draw_multiple(&r, g->range_lo[d], g->range_hi[d], m);
        }
    }
    return n;
}
