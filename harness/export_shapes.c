/* export_shapes.c - what the C and the CUDA exports share: a kernel's
 * measurement at a shape, and the C condition that picks a shape. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "export.h"
#include "review.h"

/* The verdict's timed visible shape with these dims, or NULL. */
const cJSON *kiln_ex_measured_at(const ex *x, const cJSON *v, const kiln_shape *sh)
{
    const cJSON *s;
    cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(v, "shapes")) {
        const cJSON *dims = cJSON_GetObjectItemCaseSensitive(s, "dims");
        if (!kiln_rv_get(s, "time") || !cJSON_IsObject(dims) || kiln_rv_num(s, "speedup") <= 0)
            continue;
        int same = 1;
        for (int d = 0; d < x->task->ndims && same; d++) {
            const cJSON *val = cJSON_GetObjectItemCaseSensitive(dims, x->task->dims[d]);
            same = cJSON_IsNumber(val) && (int64_t)val->valuedouble == sh->d[d];
        }
        if (same)
            return s;
    }
    return NULL;
}

double kiln_ex_speedup_at(const ex *x, int mi, const kiln_shape *sh)
{
    return kiln_rv_num(kiln_ex_measured_at(x, x->m[mi].verdict, sh), "speedup");
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
