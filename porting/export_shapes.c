/* export_shapes.c - what the C and the CUDA exports share: a kernel's
 * measurement at a shape, the C condition that picks a shape, and a
 * kernel's preconditions and the C condition that checks them. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "manifest.h"
#include "pooled.h"
#include "review.h"

/* Where the task's dim d sits among the verdict's own dims; -1: absent. */
static int dim_in(const kiln_verdict *v, const char *name)
{
    for (int i = 0; i < v->ndims; i++)
        if (strcmp(v->dims[i], name) == 0)
            return i;
    return -1;
}

/* The verdict's timed visible shape with these dims, or NULL. */
const kiln_shape_result *kiln_ex_measured_at(const ex *x, const kiln_verdict *v,
                                             const kiln_shape *sh)
{
    for (int i = 0; i < v->nresults; i++) {
        const kiln_shape_result *s = &v->results[i];
        if (!s->visible || !s->timed || !(s->speedup > 0))
            continue;
        int same = 1;
        for (int d = 0; d < x->task->ndims && same; d++) {
            int k = dim_in(v, x->task->dims[d]);
            same = k >= 0 && s->shape.d[k] == sh->d[d];
        }
        if (same)
            return s;
    }
    return NULL;
}

#define EX_POOL_MAX 64

double kiln_ex_pooled_at(const ex *x, int mi, const kiln_shape *sh, kiln_interval *iv, int *n)
{
    kiln_interval all[EX_POOL_MAX];
    int k = 0;
    for (int i = 0; i < x->nm; i++) {
        if (x->m[i].kernel != x->m[mi].kernel)
            continue;
        const kiln_verdict *v[2] = {x->m[i].verdict, x->m[i].reverdict};
        for (int j = 0; j < 2 && k < EX_POOL_MAX; j++) {
            const kiln_shape_result *s = v[j] ? kiln_ex_measured_at(x, v[j], sh) : NULL;
            if (s)
                all[k++] = kiln_shape_interval(s);
        }
    }
    kiln_interval p = {0};
    kiln_pool_intervals(all, k, &p);
    if (iv)
        *iv = p;
    if (n)
        *n = k;
    return p.point;
}

double kiln_ex_speedup_at(const ex *x, int mi, const kiln_shape *sh)
{
    return kiln_ex_pooled_at(x, mi, sh, NULL, NULL);
}

int kiln_ex_confirmed_at(const ex *x, int mi, const kiln_shape *sh)
{
    int n;
    kiln_ex_pooled_at(x, mi, sh, NULL, &n);
    return n >= 2;
}

/* "rows == 1 && cols == 1024" over the dims passed as arguments. */
int kiln_ex_condition(const ex *x, const kiln_shape *sh, char *buf, size_t len)
{
    size_t u = 0;
    int terms = 0;
    buf[0] = '\0';
    for (int d = 0; d < x->task->ndims; d++)
        for (int a = 0; a < x->task->nargs; a++) {
            const kiln_arg *arg = &x->task->args[a];
            if (arg->kind != KILN_ARG_DIM || strcmp(arg->name, x->task->dims[d]) != 0 || u >= len)
                continue;
            u += (size_t)snprintf(buf + u, len - u, "%s%s == %lld", terms++ ? " && " : "", arg->name,
                                  (long long)sh->d[d]);
        }
    return terms;
}

int kiln_ex_preconds(const ex *x, const char *source, kiln_preconds *pre, kiln_error *err)
{
    if (!x->cuda)
        return kiln_precond_scan(source, strlen(source), x->task, pre, err);
    kiln_manifest *m = malloc(sizeof *m);
    if (!m)
        return kiln_fail(err, "out of memory");
    int rc = kiln_manifest_parse(source, strlen(source), x->task, m, err);
    *pre = m->require;
    free(m);
    return rc;
}

/* A dim the dispatch can test: one of its arguments. */
static int dim_is_arg(const ex *x, int d)
{
    for (int a = 0; a < x->task->nargs; a++)
        if (x->task->args[a].kind == KILN_ARG_DIM && strcmp(x->task->args[a].name, x->task->dims[d]) == 0)
            return 1;
    return 0;
}

int kiln_ex_precond_c(const ex *x, const kiln_preconds *pre, char *buf, size_t len,
                      kiln_error *err)
{
    for (int i = 0; i < pre->n; i++)
        if (!dim_is_arg(x, pre->p[i].dim))
            return kiln_fail(err, "a precondition on dim '%s', which the dispatch does not take "
                             "as an argument, cannot be checked at run time",
                             x->task->dims[pre->p[i].dim]);
    kiln_precond_format(pre, x->task, buf, len);
    return 0;
}
