/* task_int.c - integer inputs of a task (i32 and i8 buffers, such as
 * cross-entropy's targets or quantised weights): their init, their
 * stability variants, the checks that need every shape, and their bounds
 * resolved at a shape (see task_load.h and task.h).
 *
 * A bound is an integer expression over the dims ("vocab - 1"), so one task
 * file serves every vocabulary size; the loader evaluates it at every shape
 * the task names, so a task whose bounds go wrong somewhere is refused up
 * front, with the field and the shape named. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "expr.h"
#include "task_load.h"

#define MAX_EXACT 9007199254740992.0   /* 2^53: integers a double holds exactly */

int kiln_arg_is_integer(const kiln_arg *arg)
{
    return arg->kind == KILN_ARG_INPUT && arg->dist == KILN_DIST_INTEGERS;
}

/* The values an integer dtype holds. */
static void int_range(kiln_dtype dt, double *lo, double *hi)
{
    *lo = dt == KILN_DT_I8 ? -128.0 : -2147483648.0;
    *hi = dt == KILN_DT_I8 ? 127.0 : 2147483647.0;
}

/* Does any key of obj fall outside keys[0..n)? Its name, or NULL. */
static const char *unknown_key(const cJSON *obj, const char *const keys[], int n)
{
    const cJSON *it;
    cJSON_ArrayForEach(it, obj) {
        int known = 0;
        for (int i = 0; i < n; i++)
            known |= strcmp(it->string, keys[i]) == 0;
        if (!known)
            return it->string;
    }
    return NULL;
}

/* obj.key: an integer, or a string expression whose names are dims, into
 * buf (an integer written out as its digits). */
static int load_int_expr(kiln_task_ctx *c, const cJSON *obj, const char *key, const char *p,
                         const kiln_task *t, char *buf)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
    char fp[192];
    snprintf(fp, sizeof fp, "%s.%s", p, key);
    if (!it)
        return kiln_task_bad(c, fp, "missing%s", NULL);
    if (cJSON_IsNumber(it)) {
        double v = it->valuedouble;
        if (v != floor(v) || fabs(v) > MAX_EXACT)
            return kiln_task_bad(c, fp, "must be an integer or an expression over the dims%s", NULL);
        snprintf(buf, KILN_EXPR_MAX, "%.0f", v);
        return 0;
    }
    if (!cJSON_IsString(it))
        return kiln_task_bad(c, fp, "must be an integer or a string expression over the dims%s",
                             NULL);
    if (strlen(it->valuestring) >= KILN_EXPR_MAX)
        return kiln_task_bad(c, fp, "too long%s", NULL);
    char names[16][64];
    kiln_error e;
    int n = kiln_expr_names(it->valuestring, names, 16, &e);
    if (n < 0)
        return kiln_task_bad(c, fp, "%.400s", e.msg);
    for (int i = 0; i < n; i++)
        if (kiln_task_dim(t, names[i]) < 0)
            return kiln_task_bad(c, fp, "unknown name '%.64s' (only dims may appear)", names[i]);
    strcpy(buf, it->valuestring);
    return 0;
}

/* "ignore": {"value": -100, "share": 0.1}: the ignore value (an integer of
 * the dtype; that it lies outside [low, high] is checked per shape) and the
 * share of elements drawn at it. */
static int load_ignore(kiln_task_ctx *c, const cJSON *ig, const char *ip, kiln_arg *arg)
{
    static const char *const keys[] = {"value", "share"};
    char p[160], fp[192];
    snprintf(p, sizeof p, "%s.ignore", ip);
    if (!cJSON_IsObject(ig))
        return kiln_task_bad(c, p, "must be an object {\"value\": INTEGER, \"share\": 0..1}%s", NULL);
    const char *extra = unknown_key(ig, keys, 2);
    if (extra)
        return kiln_task_bad(c, p, "unknown field '%s' (value, share)", extra);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(ig, "value");
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(ig, "share");
    double lo, hi;
    int_range(arg->dtype, &lo, &hi);
    snprintf(fp, sizeof fp, "%s.value", p);
    if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || v->valuedouble < lo ||
        v->valuedouble > hi)
        return kiln_task_bad(c, fp, "must be an integer that %s holds", kiln_dtype_name(arg->dtype));
    snprintf(fp, sizeof fp, "%s.share", p);
    if (!cJSON_IsNumber(s) || !(s->valuedouble >= 0 && s->valuedouble <= 1))
        return kiln_task_bad(c, fp, "must be a number from 0 to 1 (the share of elements at the "
                             "ignore value)%s", NULL);
    arg->has_ignore = 1;
    arg->ignore_value = v->valuedouble;
    arg->ignore_share = s->valuedouble;
    return 0;
}

int kiln_task_load_integers(kiln_task_ctx *c, const cJSON *init, const char *ip,
                            const kiln_task *t, kiln_arg *arg)
{
    static const char *const keys[] = {"dist", "low", "high", "ignore"};
    if (arg->dtype_is_var || (arg->dtype != KILN_DT_I32 && arg->dtype != KILN_DT_I8))
        return kiln_task_bad(c, ip, "\"integers\" are drawn for an input of dtype i32 or i8, not "
                             "%s", arg->dtype_is_var ? "T" : kiln_dtype_name(arg->dtype));
    const char *extra = unknown_key(init, keys, 4);
    if (extra)
        return kiln_task_bad(c, ip, "unknown field '%s' for integers (low, high, ignore)", extra);
    arg->dist = KILN_DIST_INTEGERS;
    if (load_int_expr(c, init, "low", ip, t, arg->int_low) < 0 ||
        load_int_expr(c, init, "high", ip, t, arg->int_high) < 0)
        return -1;
    const cJSON *ig = cJSON_GetObjectItemCaseSensitive(init, "ignore");
    return ig ? load_ignore(c, ig, ip, arg) : 0;
}

int kiln_task_load_int_variant(kiln_task_ctx *c, const cJSON *v, const char *p,
                               const kiln_task *t, kiln_variant *var)
{
    const kiln_arg *arg = &t->args[var->arg];
    if (cJSON_GetObjectItemCaseSensitive(v, "scale") || cJSON_GetObjectItemCaseSensitive(v, "offset"))
        return kiln_task_bad(c, p, "'%s' is an integer input: its variants give value, "
                             "ignore_share or pattern \"extremes\", not scale or offset", arg->name);
    if (var->pattern != KILN_PAT_NONE && var->pattern != KILN_PAT_EXTREMES)
        return kiln_task_bad(c, p, "'%s' is an integer input: the only pattern for it is "
                             "\"extremes\"", arg->name);
    var->ignore_share = -1;
    if (cJSON_GetObjectItemCaseSensitive(v, "value")) {
        if (load_int_expr(c, v, "value", p, t, var->value) < 0)
            return -1;
        var->has_value = 1;
    }
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(v, "ignore_share");
    char fp[160];
    snprintf(fp, sizeof fp, "%s.ignore_share", p);
    if (s && !arg->has_ignore)
        return kiln_task_bad(c, fp, "input '%s' has no ignore value", arg->name);
    if (s && (!cJSON_IsNumber(s) || !(s->valuedouble >= 0 && s->valuedouble <= 1)))
        return kiln_task_bad(c, fp, "must be a number from 0 to 1%s", NULL);
    if (s)
        var->ignore_share = s->valuedouble;
    if (var->has_value && var->pattern == KILN_PAT_EXTREMES)
        return kiln_task_bad(c, p, "give value or pattern \"extremes\", not both%s", NULL);
    if (!var->has_value && var->pattern == KILN_PAT_NONE && !s)
        return kiln_task_bad(c, p, "changes nothing: give value, ignore_share or pattern%s", NULL);
    return 0;
}

/* ---- at a shape --------------------------------------------------------- */

typedef struct dims_ctx {
    const kiln_task *t;
    const kiln_shape *shape;
} dims_ctx;

static int dims_lookup(void *p, const char *name, size_t len, kiln_value *out)
{
    dims_ctx *d = p;
    for (int i = 0; i < d->t->ndims; i++)
        if (strlen(d->t->dims[i]) == len && memcmp(d->t->dims[i], name, len) == 0) {
            out->is_float = 0;
            out->i = d->shape->d[i];
            return 0;
        }
    return -1;
}

/* expr at shape as an integer a double holds exactly; no sizeof here. */
static int eval_int(const kiln_task *t, const char *expr, const kiln_shape *shape, double *out,
                    kiln_error *err)
{
    dims_ctx d = {t, shape};
    kiln_expr_env env = {dims_lookup, NULL, &d};
    kiln_value v;
    if (kiln_expr_eval(expr, &env, &v, err) < 0)
        return -1;
    *out = kiln_value_to_double(v);
    if (*out != floor(*out) || fabs(*out) > MAX_EXACT)
        return kiln_fail(err, "'%s' is %g, not an integer", expr, *out);
    return 0;
}

/* Where the bounds of arg (and the variant's value) fail at shape: the
 * field at fault in *field (relative to the arg or the variant) and err's
 * message, or 0 when they hold. */
static int check_at(const kiln_task *t, const kiln_arg *arg, const kiln_variant *var,
                    const kiln_shape *shape, const char **field, kiln_error *err)
{
    double lo, hi, dlo, dhi, val;
    int_range(arg->dtype, &dlo, &dhi);
    *field = "init.low";
    if (eval_int(t, arg->int_low, shape, &lo, err) < 0)
        return -1;
    *field = "init.high";
    if (eval_int(t, arg->int_high, shape, &hi, err) < 0)
        return -1;
    if (hi < lo)
        return kiln_fail(err, "high %.0f is below low %.0f", hi, lo);
    if (lo < dlo || hi > dhi) {
        *field = lo < dlo ? "init.low" : "init.high";
        return kiln_fail(err, "[%.0f, %.0f] does not fit %s", lo, hi, kiln_dtype_name(arg->dtype));
    }
    *field = "init.ignore.value";
    if (arg->has_ignore && arg->ignore_value >= lo && arg->ignore_value <= hi)
        return kiln_fail(err, "the ignore value %.0f lies inside [%.0f, %.0f]", arg->ignore_value,
                         lo, hi);
    *field = "value";
    if (var && var->has_value && eval_int(t, var->value, shape, &val, err) < 0)
        return -1;
    if (var && var->has_value && (val < lo || val > hi))
        return kiln_fail(err, "%.0f lies outside the input's [%.0f, %.0f]", val, lo, hi);
    return 0;
}

/* Shape k of group g: its visible shapes, its hidden ones, then the low and
 * the high corner of its random ranges. NULL past the end. */
static const kiln_shape *shape_of(const kiln_group *g, int k, kiln_shape *corner, const char **kind)
{
    *kind = "visible";
    if (k < g->nvisible)
        return &g->visible[k];
    k -= g->nvisible;
    *kind = "hidden";
    if (k < g->nhidden)
        return &g->hidden[k];
    k -= g->nhidden;
    if (g->nrandom == 0 || k > 1)
        return NULL;
    *kind = k ? "random (the ranges' high corner)" : "random (the ranges' low corner)";
    for (int d = 0; d < KILN_MAX_DIMS; d++)
        corner->d[d] = k ? g->range_hi[d] : g->range_lo[d];
    return corner;
}

/* The field path of a failure: args[i].init... or stability[v].value. */
static void fault_path(const kiln_task *t, int a, int v, const char *field, char *buf, size_t len)
{
    if (strncmp(field, "init", 4) == 0 || v < 0)
        snprintf(buf, len, "args[%d].%s", a, field);
    else
        snprintf(buf, len, "stability[%d].%s", v, field);
    (void)t;
}

int kiln_task_check_integers(kiln_task_ctx *c, const kiln_task *t)
{
    for (int a = 0; a < t->nargs; a++) {
        if (!kiln_arg_is_integer(&t->args[a]))
            continue;
        for (int v = -1; v < t->nvariants; v++) {
            const kiln_variant *var = v >= 0 ? &t->variants[v] : NULL;
            if (var && var->arg != a)
                continue;
            for (int g = 0; g < t->ngroups; g++) {
                kiln_shape corner = {{0}};
                const char *kind, *field;
                const kiln_shape *s;
                for (int k = 0; (s = shape_of(&t->groups[g], k, &corner, &kind)) != NULL; k++) {
                    kiln_error e = {0};
                    if (check_at(t, &t->args[a], var, s, &field, &e) == 0)
                        continue;
                    char dims[160], path[96], what[600];
                    kiln_shape_format(t, s, dims, sizeof dims);
                    fault_path(t, a, var && strcmp(field, "value") == 0 ? v : -1, field, path,
                               sizeof path);
                    snprintf(what, sizeof what, "at %s (a %s shape of group %s): %.300s", dims,
                             kind, t->groups[g].name, e.msg);
                    return kiln_task_bad(c, path, "%s", what);
                }
            }
        }
    }
    return 0;
}

int kiln_input_resolve(const kiln_task *t, const kiln_arg *arg, const kiln_variant *var,
                       const kiln_shape *shape, kiln_arg *out, kiln_variant *vout, kiln_error *err)
{
    *out = *arg;
    if (var)
        *vout = *var;
    if (!kiln_arg_is_integer(arg))
        return 0;
    const char *field;
    /* No dims in the message: the shape may be hidden, and this reaches a verdict. */
    if (check_at(t, arg, var, shape, &field, err) < 0)
        return kiln_error_prefix(err, "task %s: input '%s' (%s) at one of its shapes", t->name,
                                 arg->name, field);
    eval_int(t, arg->int_low, shape, &out->dist_a, err);
    eval_int(t, arg->int_high, shape, &out->dist_b, err);
    if (var && var->has_value) {   /* every element drawn from [value, value] */
        eval_int(t, var->value, shape, &vout->set, err);
        out->dist_a = out->dist_b = vout->set;
    }
    if (var && var->ignore_share >= 0)
        out->ignore_share = var->ignore_share;
    return 0;
}
