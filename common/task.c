/* task.c - loading and validating task directories (see task.h).
 *
 * Every error names the file and the JSON path of the field at fault, so a
 * person fixing a task never has to guess. Validation is strict because the
 * verifier's guarantees (hidden shapes beyond visible ones, tolerances per
 * dtype) are only as good as the task that states them. */
#include "task.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "expr.h"
#include "fileutil.h"
#include "suggest.h"
#include "task_load.h"

#define MAX_JSON_BYTES (1 << 20)

/* Where we are while loading, for error messages (task_load.h). */
typedef kiln_task_ctx ctx;

static int bad(ctx *c, const char *path, const char *fmt, const char *detail)
{
    return kiln_task_bad(c, path, fmt, detail);
}

static char *read_file(const char *path, kiln_error *err)
{
    char *buf;
    int rc = kiln_read_file(path, MAX_JSON_BYTES, &buf, NULL, err);
    if (rc == 1) {
        free(buf);
        kiln_fail(err, "%s: too large (limit 1 MiB)", path);
    }
    return rc == 0 ? buf : NULL;
}

static cJSON *parse_json_file(const char *path, kiln_error *err)
{
    char *text = read_file(path, err);
    if (!text)
        return NULL;
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithOpts(text, &end, 1);
    if (!root || !cJSON_IsObject(root)) {
        size_t off = end ? (size_t)(end - text) : 0;
        int line = 1;
        for (size_t i = 0; i < off && text[i]; i++)
            line += text[i] == '\n';
        kiln_fail(err, "%s: %s near line %d", path,
                  root ? "top level must be a JSON object" : "malformed JSON", line);
        cJSON_Delete(root);
        root = NULL;
    }
    free(text);
    return root;
}

static int get_string(ctx *c, const cJSON *obj, const char *key, const char *path,
                      int required, char *buf, size_t len)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
    char p[256];
    snprintf(p, sizeof p, "%s%s%s", path, *path ? "." : "", key);
    if (!it) {
        if (required)
            return bad(c, p, "missing%s", NULL);
        buf[0] = '\0';
        return 0;
    }
    if (!cJSON_IsString(it))
        return bad(c, p, "must be a string%s", NULL);
    if (strlen(it->valuestring) >= len)
        return bad(c, p, "too long%s", NULL);
    strcpy(buf, it->valuestring);
    return 0;
}

static int get_number(ctx *c, const cJSON *obj, const char *key, const char *path,
                      int required, double dflt, double *out)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
    char p[256];
    snprintf(p, sizeof p, "%s%s%s", path, *path ? "." : "", key);
    if (!it) {
        if (required)
            return bad(c, p, "missing%s", NULL);
        *out = dflt;
        return 0;
    }
    if (!cJSON_IsNumber(it))
        return bad(c, p, "must be a number%s", NULL);
    *out = it->valuedouble;
    return 0;
}

static int valid_name(const char *s)
{
    if (!*s || !(s[0] == '_' || (s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z')))
        return 0;
    for (; *s; s++)
        if (!(*s == '_' || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
              (*s >= '0' && *s <= '9')))
            return 0;
    return 1;
}

/* KILN_GROUP_CPU or KILN_GROUP_CUDA for "cpu" or "cuda", else 0. */
static int backend_bit(const char *backend)
{
    if (backend && strcmp(backend, "cpu") == 0)
        return KILN_GROUP_CPU;
    if (backend && strcmp(backend, "cuda") == 0)
        return KILN_GROUP_CUDA;
    return 0;
}

/* The first group named `name` that serves a backend of `bits`. */
static int group_in(const kiln_task *t, int bits, const char *name)
{
    for (int i = 0; name && i < t->ngroups; i++)
        if ((t->groups[i].backends & bits) && strcmp(t->groups[i].name, name) == 0)
            return i;
    return -1;
}

int kiln_task_group_for(const kiln_task *t, const char *backend, const char *name)
{
    int bit = backend_bit(backend);
    return bit ? group_in(t, bit, name) : -1;
}

int kiln_task_default_group_for(const kiln_task *t, const char *backend)
{
    int bit = backend_bit(backend);
    return bit == KILN_GROUP_CPU ? t->default_group : bit == KILN_GROUP_CUDA ? t->cuda_default_group : -1;
}

int kiln_task_group(const kiln_task *t, const char *name)
{
    return kiln_task_group_for(t, "cpu", name);
}

/* Did the group come from task.json's "cuda_groups" (not "groups")? Those
 * serve CUDA alone; "groups" always serve the CPU. */
static int from_cuda_section(const kiln_group *g)
{
    return !(g->backends & KILN_GROUP_CPU);
}

static const char *section_name(int cuda)
{
    return cuda ? "cuda_groups" : "groups";
}

static int find_arg(const kiln_task *t, const char *name)
{
    for (int i = 0; i < t->nargs; i++)
        if (strcmp(t->args[i].name, name) == 0)
            return i;
    return -1;
}

static int load_dims(ctx *c, const cJSON *root, kiln_task *t)
{
    const cJSON *dims = cJSON_GetObjectItemCaseSensitive(root, "dims");
    if (!cJSON_IsArray(dims) || cJSON_GetArraySize(dims) == 0)
        return bad(c, "dims", "must be a non-empty array of names%s", NULL);
    if (cJSON_GetArraySize(dims) > KILN_MAX_DIMS)
        return bad(c, "dims", "too many dims (limit 8)%s", NULL);
    const cJSON *d;
    cJSON_ArrayForEach(d, dims) {
        char p[64];
        snprintf(p, sizeof p, "dims[%d]", t->ndims);
        if (!cJSON_IsString(d) || !valid_name(d->valuestring) ||
            strlen(d->valuestring) >= KILN_NAME_MAX)
            return bad(c, p, "must be an identifier%s", NULL);
        if (kiln_task_dim(t, d->valuestring) >= 0)
            return bad(c, p, "duplicate dim '%s'", d->valuestring);
        strcpy(t->dims[t->ndims++], d->valuestring);
    }
    return 0;
}

static int parse_kind(const char *s, kiln_arg_kind *k)
{
    static const char *names[] = {"input", "output", "dim", "scalar"};
    for (int i = 0; i < 4; i++)
        if (strcmp(s, names[i]) == 0) {
            *k = (kiln_arg_kind)i;
            return 0;
        }
    return -1;
}

static int load_dtype(ctx *c, const cJSON *a, const char *p, kiln_arg *arg, const char *dflt)
{
    char dt[KILN_NAME_MAX];
    if (get_string(c, a, "dtype", p, dflt == NULL, dt, sizeof dt) < 0)
        return -1;
    if (!dt[0])
        strcpy(dt, dflt);
    if (strcmp(dt, "T") == 0) {
        if (arg->kind == KILN_ARG_DIM || arg->kind == KILN_ARG_SCALAR)
            return bad(c, p, "dims and scalars need a concrete dtype, not 'T'%s", NULL);
        arg->dtype_is_var = 1;
        return 0;
    }
    arg->dtype = kiln_dtype_parse(dt);
    if (arg->dtype == KILN_DT_INVALID)
        return bad(c, p, "unknown dtype '%s' (f32 f16 bf16 f64 i32 i64 i8 or T)", dt);
    if (arg->kind == KILN_ARG_DIM && arg->dtype != KILN_DT_I32 && arg->dtype != KILN_DT_I64)
        return bad(c, p, "a dim is passed as i32 or i64%s", NULL);
    return 0;
}

static int load_init(ctx *c, const cJSON *a, const char *p, const kiln_task *t, kiln_arg *arg)
{
    const cJSON *init = cJSON_GetObjectItemCaseSensitive(a, "init");
    char ip[128], dist[KILN_NAME_MAX];
    snprintf(ip, sizeof ip, "%s.init", p);
    if (!cJSON_IsObject(init))
        return bad(c, ip, "an input needs an object {\"dist\": \"normal\"|\"uniform\"|"
                   "\"integers\", ...}%s", NULL);
    if (get_string(c, init, "dist", ip, 1, dist, sizeof dist) < 0)
        return -1;
    if (strcmp(dist, "integers") == 0)
        return kiln_task_load_integers(c, init, ip, t, arg);
    if (!arg->dtype_is_var && !kiln_dtype_is_float(arg->dtype) &&
        (strcmp(dist, "normal") == 0 || strcmp(dist, "uniform") == 0))
        return bad(c, ip, "an input of dtype %s draws {\"dist\": \"integers\", \"low\", "
                   "\"high\"}", kiln_dtype_name(arg->dtype));
    if (strcmp(dist, "normal") == 0) {
        arg->dist = KILN_DIST_NORMAL;
        if (get_number(c, init, "mean", ip, 0, 0.0, &arg->dist_a) < 0 ||
            get_number(c, init, "std", ip, 0, 1.0, &arg->dist_b) < 0)
            return -1;
        if (!(arg->dist_b > 0))
            return bad(c, ip, "std must be positive%s", NULL);
    } else if (strcmp(dist, "uniform") == 0) {
        arg->dist = KILN_DIST_UNIFORM;
        if (get_number(c, init, "low", ip, 1, 0, &arg->dist_a) < 0 ||
            get_number(c, init, "high", ip, 1, 0, &arg->dist_b) < 0)
            return -1;
        if (!(arg->dist_b > arg->dist_a))
            return bad(c, ip, "high must be greater than low%s", NULL);
    } else {
        return bad(c, ip, "unknown dist '%s' (normal, uniform, integers)", dist);
    }
    return 0;
}

/* A shape entry: a dim name, or "K*name" (K an integer from 1 to 1024) for a
 * size that is a fixed multiple of a dim, e.g. rope's "2*half_dim": a head of
 * 2*half_dim elements. Returns the dim index and sets *mul, or -1. */
static int parse_shape_entry(const kiln_task *t, const char *s, int *mul)
{
    *mul = 1;
    const char *star = strchr(s, '*');
    if (!star)
        return kiln_task_dim(t, s);
    char *end;
    errno = 0;
    long k = strtol(s, &end, 10);
    while (*end == ' ')
        end++;
    if (errno || end != star || k < 1 || k > 1024 || !(*s >= '0' && *s <= '9'))
        return -1;
    const char *name = star + 1;
    while (*name == ' ')
        name++;
    *mul = (int)k;
    return kiln_task_dim(t, name);
}

static int load_shape(ctx *c, const cJSON *a, const char *p, kiln_task *t, kiln_arg *arg)
{
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(a, "shape");
    char sp[128];
    snprintf(sp, sizeof sp, "%s.shape", p);
    if (!cJSON_IsArray(shape) || cJSON_GetArraySize(shape) == 0 ||
        cJSON_GetArraySize(shape) > KILN_MAX_DIMS)
        return bad(c, sp, "must be a non-empty array of dim names%s", NULL);
    const cJSON *d;
    cJSON_ArrayForEach(d, shape) {
        int mul = 1;
        int k = cJSON_IsString(d) ? parse_shape_entry(t, d->valuestring, &mul) : -1;
        if (k < 0 && cJSON_IsString(d) && strchr(d->valuestring, '*'))
            return bad(c, sp, "'%s' is not a dim or K*dim (K an integer from 1 to 1024)",
                       d->valuestring);
        if (k < 0)
            return bad(c, sp, "unknown dim '%s'", cJSON_IsString(d) ? d->valuestring : "?");
        arg->shape_mul[arg->rank] = mul;
        arg->shape[arg->rank++] = k;
    }
    return 0;
}

static int load_arg(ctx *c, const cJSON *a, int i, kiln_task *t)
{
    kiln_arg *arg = &t->args[i];
    char p[64], kind[KILN_NAME_MAX];
    snprintf(p, sizeof p, "args[%d]", i);
    if (!cJSON_IsObject(a))
        return bad(c, p, "must be an object%s", NULL);
    if (get_string(c, a, "name", p, 1, arg->name, sizeof arg->name) < 0 ||
        get_string(c, a, "kind", p, 1, kind, sizeof kind) < 0)
        return -1;
    if (!valid_name(arg->name))
        return bad(c, p, "name '%s' is not an identifier", arg->name);
    if (find_arg(t, arg->name) >= 0 && find_arg(t, arg->name) < i)
        return bad(c, p, "duplicate arg '%s'", arg->name);
    if (parse_kind(kind, &arg->kind) < 0)
        return bad(c, p, "unknown kind '%s' (input, output, dim, scalar)", kind);
    switch (arg->kind) {
    case KILN_ARG_DIM:
        if (kiln_task_dim(t, arg->name) < 0)
            return bad(c, p, "dim arg '%s' is not one of the task's dims", arg->name);
        return load_dtype(c, a, p, arg, "i32");
    case KILN_ARG_SCALAR:
        if (load_dtype(c, a, p, arg, NULL) < 0)
            return -1;
        return get_number(c, a, "value", p, 1, 0, &arg->value);
    case KILN_ARG_INPUT:
        if (load_dtype(c, a, p, arg, NULL) < 0 || load_shape(c, a, p, t, arg) < 0)
            return -1;
        return load_init(c, a, p, t, arg);
    case KILN_ARG_OUTPUT:
        if (load_dtype(c, a, p, arg, NULL) < 0)
            return -1;
        return load_shape(c, a, p, t, arg);
    }
    return 0;
}

static int load_args(ctx *c, const cJSON *root, kiln_task *t)
{
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(root, "args");
    if (!cJSON_IsArray(args) || cJSON_GetArraySize(args) == 0)
        return bad(c, "args", "must be a non-empty array%s", NULL);
    if (cJSON_GetArraySize(args) > KILN_MAX_ARGS)
        return bad(c, "args", "too many args (limit 16)%s", NULL);
    const cJSON *a;
    int nout = 0;
    cJSON_ArrayForEach(a, args) {
        t->nargs++;
        if (load_arg(c, a, t->nargs - 1, t) < 0)
            return -1;
        nout += t->args[t->nargs - 1].kind == KILN_ARG_OUTPUT;
    }
    if (nout == 0)
        return bad(c, "args", "the task has no output%s", NULL);
    return 0;
}

/* One backend's dtype list, e.g. "dtypes.cuda": ["f32", "f16", "bf16"]. */
static int load_backend_dtypes(ctx *c, const cJSON *list, const char *backend, int cuda,
                               kiln_dtype *out, int *n)
{
    char p[64];
    snprintf(p, sizeof p, "dtypes.%s", backend);
    if (!cJSON_IsArray(list) || cJSON_GetArraySize(list) == 0 ||
        cJSON_GetArraySize(list) > KILN_MAX_DTYPES)
        return bad(c, p, "must be an array of 1 to 4 dtypes%s", NULL);
    const cJSON *d;
    cJSON_ArrayForEach(d, list) {
        const char *name = cJSON_IsString(d) ? d->valuestring : "?";
        kiln_dtype dt = kiln_dtype_parse(cJSON_IsString(d) ? d->valuestring : NULL);
        if (!kiln_dtype_is_float(dt))
            return bad(c, p, "'%s' is not a float dtype", name);
        /* kiln_cuda.h defines kiln_t for these three only */
        if (cuda && dt != KILN_DT_F32 && dt != KILN_DT_F16 && dt != KILN_DT_BF16)
            return bad(c, p, "'%s' is not a CUDA dtype (f32, f16, bf16)", name);
        for (int i = 0; i < *n; i++)
            if (out[i] == dt)
                return bad(c, p, "duplicate dtype '%s'", name);
        out[(*n)++] = dt;
    }
    return 0;
}

static int load_dtypes(ctx *c, const cJSON *root, kiln_task *t)
{
    const cJSON *dts = cJSON_GetObjectItemCaseSensitive(root, "dtypes");
    if (!cJSON_IsObject(dts))
        return bad(c, "dtypes", "must be an object {\"cpu\": [dtypes], \"cuda\": [dtypes]}%s", NULL);
    const cJSON *b;
    cJSON_ArrayForEach(b, dts) {
        int rc;
        if (strcmp(b->string, "cpu") == 0)
            rc = load_backend_dtypes(c, b, "cpu", 0, t->cpu_dtypes, &t->ncpu_dtypes);
        else if (strcmp(b->string, "cuda") == 0)
            rc = load_backend_dtypes(c, b, "cuda", 1, t->cuda_dtypes, &t->ncuda_dtypes);
        else {
            char p[96];
            snprintf(p, sizeof p, "dtypes.%.60s", b->string);
            rc = bad(c, p, "unknown backend '%s' (cpu, cuda)", b->string);
        }
        if (rc < 0)
            return -1;
    }
    if (t->ncpu_dtypes == 0 && t->ncuda_dtypes == 0)
        return bad(c, "dtypes", "no backend: give \"cpu\" and/or \"cuda\" dtypes%s", NULL);
    return 0;
}

/* Every dtype the backends in `backends` (KILN_GROUP_* bits) run, each
 * once: dts[0..return). */
static int backend_dtypes(const kiln_task *t, int backends, kiln_dtype dts[2 * KILN_MAX_DTYPES])
{
    int n = 0;
    for (int i = 0; i < t->ncpu_dtypes + t->ncuda_dtypes; i++) {
        int cpu = i < t->ncpu_dtypes;
        kiln_dtype dt = cpu ? t->cpu_dtypes[i] : t->cuda_dtypes[i - t->ncpu_dtypes];
        if (!(backends & (cpu ? KILN_GROUP_CPU : KILN_GROUP_CUDA)))
            continue;
        int seen = 0;
        for (int k = 0; k < n; k++)
            seen |= dts[k] == dt;
        if (!seen)
            dts[n++] = dt;
    }
    return n;
}

static int all_dtypes(const kiln_task *t, kiln_dtype dts[2 * KILN_MAX_DTYPES])
{
    return backend_dtypes(t, KILN_GROUP_CPU | KILN_GROUP_CUDA, dts);
}

static int parse_pattern(const char *s, kiln_pattern *p)
{
    static const char *names[] = {"", "constant-rows", "mixed-magnitudes", "tiny", "extremes"};
    for (int i = 0; i < 5; i++)
        if (strcmp(s, names[i]) == 0) {
            *p = (kiln_pattern)i;
            return 0;
        }
    return -1;
}

static int load_variant(ctx *c, const cJSON *v, int i, kiln_task *t)
{
    kiln_variant *var = &t->variants[i];
    char p[64], input[KILN_NAME_MAX], pat[KILN_NAME_MAX];
    snprintf(p, sizeof p, "stability[%d]", i);
    if (!cJSON_IsObject(v))
        return bad(c, p, "must be an object%s", NULL);
    if (get_string(c, v, "name", p, 1, var->name, sizeof var->name) < 0 ||
        get_string(c, v, "input", p, 1, input, sizeof input) < 0 ||
        get_string(c, v, "pattern", p, 0, pat, sizeof pat) < 0 ||
        get_number(c, v, "scale", p, 0, 1.0, &var->scale) < 0 ||
        get_number(c, v, "offset", p, 0, 0.0, &var->offset) < 0)
        return -1;
    var->arg = find_arg(t, input);
    var->ignore_share = -1;
    if (var->arg < 0 || t->args[var->arg].kind != KILN_ARG_INPUT)
        return bad(c, p, "input '%s' is not an input arg", input);
    if (parse_pattern(pat, &var->pattern) < 0)
        return bad(c, p, "unknown pattern '%s' (constant-rows, mixed-magnitudes, tiny; extremes "
                   "for integer inputs)", pat);
    if (kiln_arg_is_integer(&t->args[var->arg]))
        return kiln_task_load_int_variant(c, v, p, t, var);
    if (var->pattern == KILN_PAT_EXTREMES)
        return bad(c, p, "pattern 'extremes' is for integer inputs; '%s' is a float input", input);
    if (cJSON_GetObjectItemCaseSensitive(v, "value") || cJSON_GetObjectItemCaseSensitive(v, "ignore_share"))
        return bad(c, p, "value and ignore_share are for integer inputs; '%s' is a float input "
                   "(scale, offset, pattern)", input);
    if (var->scale == 1.0 && var->offset == 0.0 && var->pattern == KILN_PAT_NONE)
        return bad(c, p, "changes nothing: give scale, offset or pattern%s", NULL);
    return 0;
}

static int load_stability(ctx *c, const cJSON *root, kiln_task *t)
{
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(root, "stability");
    if (!st)
        return 0;
    if (!cJSON_IsArray(st) || cJSON_GetArraySize(st) > KILN_MAX_VARIANTS)
        return bad(c, "stability", "must be an array of at most 16 variants%s", NULL);
    const cJSON *v;
    cJSON_ArrayForEach(v, st) {
        t->nvariants++;
        if (load_variant(c, v, t->nvariants - 1, t) < 0)
            return -1;
    }
    return 0;
}

/* A shape object {"rows": 64, "cols": 4096} naming every dim once. */
static int load_shape_obj(ctx *c, const cJSON *s, const char *p, const kiln_task *t,
                          kiln_shape *out)
{
    if (!cJSON_IsObject(s))
        return bad(c, p, "must be an object of dim sizes%s", NULL);
    for (int i = 0; i < t->ndims; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(s, t->dims[i]);
        if (!cJSON_IsNumber(v))
            return bad(c, p, "missing or non-numeric size of dim '%s'", t->dims[i]);
        if (v->valuedouble < 1 || v->valuedouble > (1 << 30) || v->valuedouble != (double)(int64_t)v->valuedouble)
            return bad(c, p, "size of dim '%s' must be an integer from 1 to 2^30", t->dims[i]);
        out->d[i] = (int64_t)v->valuedouble;
    }
    const cJSON *v;
    cJSON_ArrayForEach(v, s) {
        if (kiln_task_dim(t, v->string) < 0)
            return bad(c, p, "unknown dim '%s'", v->string);
    }
    return 0;
}

static int load_shape_list(ctx *c, const cJSON *arr, const char *p, const kiln_task *t,
                           kiln_shape *out, int *n)
{
    if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) == 0 ||
        cJSON_GetArraySize(arr) > KILN_MAX_SHAPES)
        return bad(c, p, "must be an array of 1 to 48 shapes%s", NULL);
    const cJSON *s;
    *n = 0;
    cJSON_ArrayForEach(s, arr) {
        char sp[160];
        snprintf(sp, sizeof sp, "%s[%d]", p, *n);
        if (load_shape_obj(c, s, sp, t, &out[*n]) < 0)
            return -1;
        (*n)++;
    }
    return 0;
}

/* One section of task.json's groups ("groups" or "cuda_groups"), appended
 * to t->groups with the backends they serve. */
static int load_group_section(ctx *c, const cJSON *groups, int cuda, int backends, kiln_task *t)
{
    const char *key = section_name(cuda);
    if (!cJSON_IsObject(groups) || !groups->child)
        return bad(c, key, "must be an object of named shape groups%s", NULL);
    const cJSON *g;
    int n = 0;
    cJSON_ArrayForEach(g, groups) {
        if (n++ == KILN_MAX_SECTION_GROUPS)
            return bad(c, key, "too many groups (limit 8)%s", NULL);
        kiln_group *grp = &t->groups[t->ngroups];
        char p[96];
        snprintf(p, sizeof p, "%s.%.60s", key, g->string);
        if (!valid_name(g->string) || strlen(g->string) >= KILN_NAME_MAX)
            return bad(c, p, "group name must be an identifier%s", NULL);
        if (group_in(t, backends, g->string) >= 0)
            return bad(c, p, "duplicate group '%s'", g->string);
        strcpy(grp->name, g->string);
        grp->backends = backends;
        t->ngroups++;
        strcat(p, ".visible");
        if (load_shape_list(c, cJSON_GetObjectItemCaseSensitive(g, "visible"), p, t,
                            grp->visible, &grp->nvisible) < 0)
            return -1;
    }
    return 0;
}

/* A section's default group: "default_group" or "cuda_default_group",
 * required with the section and refused without it. */
static int load_default_group(ctx *c, const cJSON *root, const cJSON *section, int cuda,
                              const kiln_task *t, int *out)
{
    const char *key = cuda ? "cuda_default_group" : "default_group";
    *out = -1;
    if (!section) {
        if (cJSON_GetObjectItemCaseSensitive(root, key))
            return bad(c, key, "given, but there are no %s", section_name(cuda));
        return 0;
    }
    char dg[KILN_NAME_MAX];
    if (get_string(c, root, key, "", 1, dg, sizeof dg) < 0)
        return -1;
    *out = group_in(t, cuda ? KILN_GROUP_CUDA : KILN_GROUP_CPU, dg);
    if (*out < 0)
        return bad(c, key, cuda ? "no cuda group named '%s'" : "no group named '%s'", dg);
    return 0;
}

/* "groups" serve both backends, unless there are "cuda_groups": then
 * "groups" serve the CPU and "cuda_groups" CUDA. A task without CPU dtypes
 * may give cuda_groups alone. */
static int load_groups(ctx *c, const cJSON *root, kiln_task *t)
{
    const cJSON *groups = cJSON_GetObjectItemCaseSensitive(root, "groups");
    const cJSON *cuda = cJSON_GetObjectItemCaseSensitive(root, "cuda_groups");
    t->has_cuda_groups = cuda != NULL;
    if (cuda && t->ncuda_dtypes == 0)
        return bad(c, "cuda_groups", "given, but dtypes.cuda lists no dtypes%s", NULL);
    if (!groups && cuda && t->ncpu_dtypes > 0)
        return bad(c, "groups", "missing: the CPU backend needs groups (cuda_groups serve "
                   "CUDA only)%s", NULL);
    if (groups && cuda && t->ncpu_dtypes == 0)
        return bad(c, "groups", "the task has no CPU backend and cuda_groups serve CUDA, so "
                   "these groups would serve nothing: leave them out%s", NULL);
    if ((groups || !cuda) &&
        load_group_section(c, groups, 0, cuda ? KILN_GROUP_CPU : KILN_GROUP_CPU | KILN_GROUP_CUDA,
                           t) < 0)
        return -1;
    if (cuda && load_group_section(c, cuda, 1, KILN_GROUP_CUDA, t) < 0)
        return -1;
    if (load_default_group(c, root, groups, 0, t, &t->default_group) < 0 ||
        load_default_group(c, root, cuda, 1, t, &t->cuda_default_group) < 0)
        return -1;
    if (!cuda)
        t->cuda_default_group = t->default_group;
    return 0;
}

static int load_expr(ctx *c, const cJSON *obj, const char *key, const char *p,
                     const kiln_task *t, char *buf)
{
    if (get_string(c, obj, key, p, 1, buf, KILN_EXPR_MAX) < 0)
        return -1;
    char names[16][64], fp[96];
    kiln_error e;
    snprintf(fp, sizeof fp, "%s.%s", p, key);
    int n = kiln_expr_names(buf, names, 16, &e);
    if (n < 0)
        return bad(c, fp, "%.400s", e.msg);
    for (int i = 0; i < n; i++)
        if (kiln_task_dim(t, names[i]) < 0)
            return bad(c, fp, "unknown name '%.64s' (only dims and sizeof(T) may appear)", names[i]);
    /* names are not everything: sizeof(float) or a division by zero only
     * shows on evaluation, so evaluate where the verifier will */
    for (int g = 0; g < t->ngroups; g++) {
        kiln_dtype dts[2 * KILN_MAX_DTYPES];
        int ndts = backend_dtypes(t, t->groups[g].backends, dts);   /* where it runs */
        for (int s = 0; s < t->groups[g].nvisible; s++)
            for (int d = 0; d < ndts; d++) {
                double v;
                if (kiln_task_cost(t, buf, &t->groups[g].visible[s], dts[d], &v, &e) < 0)
                    return bad(c, fp, "%.400s", e.msg);
            }
    }
    return 0;
}

/* "cost": {"bytes": E, "flops": E}, or read_bytes and write_bytes in place
 * of bytes for a task whose floor should weigh reads and writes apart
 * (a read-dominated task beats a floor taken from copy bandwidth). */
static int load_cost(ctx *c, const cJSON *cost, kiln_task *t)
{
    if (!cJSON_IsObject(cost))
        return bad(c, "cost", "must be an object {\"bytes\": expr, \"flops\": expr}%s", NULL);
    int has_bytes = cJSON_GetObjectItemCaseSensitive(cost, "bytes") != NULL;
    int has_r = cJSON_GetObjectItemCaseSensitive(cost, "read_bytes") != NULL;
    int has_w = cJSON_GetObjectItemCaseSensitive(cost, "write_bytes") != NULL;
    if (has_bytes && (has_r || has_w))
        return bad(c, "cost", "give bytes, or read_bytes and write_bytes, not both%s", NULL);
    if (has_r != has_w)
        return bad(c, has_r ? "cost.write_bytes" : "cost.read_bytes",
                   "missing (read_bytes and write_bytes go together)%s", NULL);
    t->cost_split = has_r;
    if (has_r) {
        if (load_expr(c, cost, "read_bytes", "cost", t, t->cost_read) < 0 ||
            load_expr(c, cost, "write_bytes", "cost", t, t->cost_write) < 0)
            return -1;
        snprintf(t->cost_bytes, sizeof t->cost_bytes, "(%s) + (%s)", t->cost_read, t->cost_write);
    } else if (load_expr(c, cost, "bytes", "cost", t, t->cost_bytes) < 0) {
        return -1;
    }
    return load_expr(c, cost, "flops", "cost", t, t->cost_flops);
}

static int load_tolerance(ctx *c, const cJSON *root, kiln_task *t)
{
    const cJSON *tol = cJSON_GetObjectItemCaseSensitive(root, "tolerance");
    if (!cJSON_IsObject(tol))
        return bad(c, "tolerance", "missing or not an object%s", NULL);
    char red[KILN_NAME_MAX];
    if (get_string(c, tol, "reduction", "tolerance", 0, red, sizeof red) < 0 ||
        get_number(c, tol, "floor_rel", "tolerance", 0, 1e-6, &t->floor_rel) < 0 ||
        get_number(c, tol, "floor_abs", "tolerance", 0, 0, &t->floor_abs) < 0)
        return -1;
    t->reduction_dim = red[0] ? kiln_task_dim(t, red) : -1;
    if (red[0] && t->reduction_dim < 0)
        return bad(c, "tolerance.reduction", "unknown dim '%s'", red);
    if (!(t->floor_rel >= 0 && t->floor_rel < 1))
        return bad(c, "tolerance.floor_rel", "must be in [0, 1)%s", NULL);
    if (!(t->floor_abs >= 0 && t->floor_abs < 1e6))
        return bad(c, "tolerance.floor_abs", "must be in [0, 1e6)%s", NULL);
    const cJSON *dts = cJSON_GetObjectItemCaseSensitive(tol, "dtypes");
    if (!cJSON_IsObject(dts) || !dts->child)
        return bad(c, "tolerance.dtypes", "must map each dtype to {\"ulps\", \"per_sqrt\"}%s", NULL);
    const cJSON *d;
    cJSON_ArrayForEach(d, dts) {
        char p[96];
        snprintf(p, sizeof p, "tolerance.dtypes.%s", d->string);
        if (t->ntolerances == KILN_MAX_DTYPES)
            return bad(c, p, "too many dtypes%s", NULL);
        kiln_tolerance_spec *ts = &t->tolerances[t->ntolerances++];
        ts->dtype = kiln_dtype_parse(d->string);
        if (!kiln_dtype_is_float(ts->dtype))
            return bad(c, p, "'%s' is not a float dtype", d->string);
        if (get_number(c, d, "ulps", p, 1, 0, &ts->ulps) < 0 ||
            get_number(c, d, "per_sqrt", p, 0, 0, &ts->per_sqrt) < 0 ||
            get_number(c, d, "per_n", p, 0, 0, &ts->per_n) < 0 ||
            get_number(c, d, "per_n_variants", p, 0, 0, &ts->per_n_variants) < 0 ||
            get_number(c, d, "ulps_variants", p, 0, 0, &ts->ulps_variants) < 0)
            return -1;
        if (!(ts->ulps >= 0.5 && ts->ulps <= 1e6) || !(ts->per_sqrt >= 0 && ts->per_sqrt <= 1e4) ||
            !(ts->per_n >= 0 && ts->per_n <= 16) ||
            !(ts->per_n_variants >= 0 && ts->per_n_variants <= 16) ||
            !(ts->ulps_variants >= 0 && ts->ulps_variants <= 1e6))
            return bad(c, p, "ulps must be in [0.5, 1e6], per_sqrt in [0, 1e4], per_n and "
                       "per_n_variants in [0, 16], ulps_variants in [0, 1e6]%s", NULL);
    }
    kiln_dtype run[2 * KILN_MAX_DTYPES];
    int nrun = all_dtypes(t, run);
    for (int i = 0; i < nrun; i++)
        if (!kiln_task_tolerance(t, run[i]))
            return bad(c, "tolerance.dtypes", "no tolerance for dtype %s", kiln_dtype_name(run[i]));
    return 0;
}

/* obj.key, an absolute path or one relative to the task directory, made
 * absolute (and real) in out and checked to be a regular file. */
static int resolve_path(ctx *c, const cJSON *obj, const char *field, const char *key,
                        const kiln_task *t, char *out)
{
    char rel[PATH_MAX], p[64];
    snprintf(p, sizeof p, "%s", field);
    if (get_string(c, obj, key, p, 1, rel, sizeof rel) < 0)
        return -1;
    char joined[PATH_MAX * 2];
    if (rel[0] == '/')
        snprintf(joined, sizeof joined, "%s", rel);
    else
        snprintf(joined, sizeof joined, "%s/%s", t->dir, rel);
    snprintf(p, sizeof p, "%s.%s", field, key);
    if (!realpath(joined, out))
        return bad(c, p, "file '%.300s' not found", rel);
    struct stat st;
    if (stat(out, &st) != 0 || !S_ISREG(st.st_mode))
        return bad(c, p, "'%.300s' is not a regular file", rel);
    return 0;
}

/* "reference": {"cpu": "reference.c", "cuda": "reference.cu"}: the trusted
 * double-precision reference. The C one gives gold for every backend; a
 * CUDA one (for work too large for the CPU, such as gemm) replaces it for
 * the CUDA backend. At least one, and a task with a CPU backend needs C. */
static int load_reference(ctx *c, const cJSON *root, kiln_task *t)
{
    const cJSON *obj = cJSON_GetObjectItemCaseSensitive(root, "reference");
    if (!cJSON_IsObject(obj))
        return bad(c, "reference", "must be an object {\"cpu\": \"file.c\"}%s", NULL);
    const cJSON *cpu = cJSON_GetObjectItemCaseSensitive(obj, "cpu");
    const cJSON *cu = cJSON_GetObjectItemCaseSensitive(obj, "cuda");
    const cJSON *it;
    cJSON_ArrayForEach(it, obj) {
        if (strcmp(it->string, "cpu") != 0 && strcmp(it->string, "cuda") != 0) {
            char p[96];
            snprintf(p, sizeof p, "reference.%.60s", it->string);
            return bad(c, p, "unknown backend '%s' (cpu, cuda)", it->string);
        }
    }
    if (!cpu && (t->ncpu_dtypes > 0 || !cu))
        return bad(c, "reference.cpu", "missing (a C reference is needed%s)",
                   t->ncpu_dtypes > 0 ? " for the CPU backend" : " unless there is a CUDA one");
    if (cu && t->ncuda_dtypes == 0)
        return bad(c, "reference.cuda", "a CUDA reference, but dtypes.cuda lists no dtypes%s", NULL);
    if (cpu && resolve_path(c, obj, "reference", "cpu", t, t->reference_cpu) < 0)
        return -1;
    return cu ? resolve_path(c, obj, "reference", "cuda", t, t->reference_cuda) : 0;
}

/* The built-in baseline's promise about the task's arguments. */
static int check_builtin(ctx *c, const kiln_task *t)
{
    static const kiln_arg_kind want[] = {KILN_ARG_INPUT, KILN_ARG_INPUT, KILN_ARG_OUTPUT,
                                         KILN_ARG_DIM, KILN_ARG_DIM, KILN_ARG_DIM};
    int ok = t->nargs == 6;
    for (int i = 0; ok && i < 6; i++)
        ok = t->args[i].kind == want[i] &&
             (i >= 3 || (t->args[i].dtype_is_var && t->args[i].rank == 2));
    for (int i = 0; ok && i < t->ncuda_dtypes; i++)
        ok = t->cuda_dtypes[i] == KILN_DT_BF16;
    if (!ok)
        return bad(c, "baseline.cuda", "\"cublas\" needs args (a, b, c, M, N, K): two 2-d T "
                   "inputs, a 2-d T output and three dims, with dtypes.cuda [\"bf16\"]%s", NULL);
    return 0;
}

/* "starter": {"cuda": "...cu"}: where a CUDA search starts when the
 * baseline is built in (optional otherwise; the baseline is the start). */
static int load_starter(ctx *c, const cJSON *root, kiln_task *t)
{
    const cJSON *obj = cJSON_GetObjectItemCaseSensitive(root, "starter");
    if (obj && !cJSON_IsObject(obj))
        return bad(c, "starter", "must be an object {\"cuda\": \"file.cu\"}%s", NULL);
    if (obj && cJSON_GetObjectItemCaseSensitive(obj, "cuda")) {
        if (resolve_path(c, obj, "starter", "cuda", t, t->starter_cuda) < 0)
            return -1;
    } else if (t->baseline_cuda_builtin[0]) {
        return bad(c, "starter.cuda", "missing (the CUDA baseline is built in, so a search "
                   "needs a starter kernel)%s", NULL);
    } else {
        snprintf(t->starter_cuda, sizeof t->starter_cuda, "%s", t->baseline_cuda);
    }
    return 0;
}

/* "baseline": {"cpu": "...c", "cuda": "...cu"}: one for each backend that
 * has dtypes, and none for a backend that has not. */
static int load_baselines(ctx *c, const cJSON *root, kiln_task *t)
{
    const cJSON *obj = cJSON_GetObjectItemCaseSensitive(root, "baseline");
    if (!cJSON_IsObject(obj))
        return bad(c, "baseline", "must be an object {\"cpu\": \"file.c\", \"cuda\": \"file.cu\"}%s",
                   NULL);
    static const char *names[] = {"cpu", "cuda"};
    int have[] = {t->ncpu_dtypes > 0, t->ncuda_dtypes > 0};
    char *out[] = {t->baseline_cpu, t->baseline_cuda};
    for (int i = 0; i < 2; i++) {
        char p[64];
        snprintf(p, sizeof p, "baseline.%s", names[i]);
        const cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, names[i]);
        if (have[i] && !it)
            return bad(c, p, "missing (dtypes.%s lists dtypes)", names[i]);
        if (!have[i] && it)
            return bad(c, p, "a baseline, but dtypes.%s lists no dtypes", names[i]);
        if (have[i] && i == 1 && cJSON_IsString(it) &&
            strcmp(it->valuestring, KILN_BUILTIN_CUBLAS) == 0) {
            snprintf(t->baseline_cuda_builtin, sizeof t->baseline_cuda_builtin, "%s",
                     KILN_BUILTIN_CUBLAS);
            if (check_builtin(c, t) < 0)
                return -1;
            continue;
        }
        if (have[i] && resolve_path(c, obj, "baseline", names[i], t, out[i]) < 0)
            return -1;
    }
    const cJSON *it;
    cJSON_ArrayForEach(it, obj) {
        if (strcmp(it->string, "cpu") != 0 && strcmp(it->string, "cuda") != 0) {
            char p[96];
            snprintf(p, sizeof p, "baseline.%.60s", it->string);
            return bad(c, p, "unknown backend '%s' (cpu, cuda)", it->string);
        }
    }
    return 0;
}

/* Names the verifier's wrapper gives its own symbols: a candidate defining
 * one of them would clash with (or be) the wrapper. */
static int reserved_function(const char *s)
{
    return strcmp(s, "kiln_entry") == 0 || strcmp(s, "kiln_reference") == 0 ||
           strcmp(s, "main") == 0;
}

/* "function": the C function a candidate defines; the task's name when
 * absent, so that a copy under a new name keeps the old one and every
 * kernel of the original still builds against it. */
static int load_function(ctx *c, const cJSON *root, kiln_task *t)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(root, "function");
    if (!it) {
        snprintf(t->function, sizeof t->function, "%s", t->name);
        return 0;
    }
    if (!cJSON_IsString(it))
        return bad(c, "function", "must be a string (the C function a candidate defines)%s", NULL);
    if (!valid_name(it->valuestring) || strlen(it->valuestring) >= sizeof t->function)
        return bad(c, "function", "'%s' is not a C identifier (letters, digits and _, not "
                   "starting with a digit, at most 31 characters)", it->valuestring);
    if (reserved_function(it->valuestring))
        return bad(c, "function", "'%s' is a name kiln's wrapper uses itself", it->valuestring);
    snprintf(t->function, sizeof t->function, "%s", it->valuestring);
    return 0;
}

static int load_task_json(ctx *c, const cJSON *root, kiln_task *t)
{
    if (get_string(c, root, "name", "", 1, t->name, sizeof t->name) < 0 ||
        get_string(c, root, "description", "", 1, t->description, sizeof t->description) < 0)
        return -1;
    if (!valid_name(t->name))
        return bad(c, "name", "'%s' is not an identifier", t->name);
    if (load_function(c, root, t) < 0)
        return -1;
    const cJSON *det = cJSON_GetObjectItemCaseSensitive(root, "deterministic");
    if (det && !cJSON_IsBool(det))
        return bad(c, "deterministic", "must be true or false%s", NULL);
    t->deterministic = det ? cJSON_IsTrue(det) : 1;
    const cJSON *cost = cJSON_GetObjectItemCaseSensitive(root, "cost");
    if (load_dims(c, root, t) < 0 || load_args(c, root, t) < 0 || load_dtypes(c, root, t) < 0 ||
        load_stability(c, root, t) < 0 || load_groups(c, root, t) < 0 ||
        load_tolerance(c, root, t) < 0)
        return -1;
    if (load_cost(c, cost, t) < 0)
        return -1;
    return load_reference(c, root, t) < 0 || load_baselines(c, root, t) < 0 ||
           load_starter(c, root, t) < 0 ? -1 : 0;
}

static int load_random(ctx *c, const cJSON *r, const char *p, const kiln_task *t, kiln_group *g)
{
    char rp[128];
    snprintf(rp, sizeof rp, "%s.random", p);
    if (!cJSON_IsObject(r))
        return bad(c, rp, "must be an object {\"count\", \"ranges\"}%s", NULL);
    double count;
    if (get_number(c, r, "count", rp, 1, 0, &count) < 0)
        return -1;
    if (count < 0 || count > 16 || count != (int)count)
        return bad(c, rp, "count must be an integer from 0 to 16%s", NULL);
    g->nrandom = (int)count;
    const cJSON *ranges = cJSON_GetObjectItemCaseSensitive(r, "ranges");
    for (int i = 0; i < t->ndims; i++) {
        const cJSON *rg = ranges ? cJSON_GetObjectItemCaseSensitive(ranges, t->dims[i]) : NULL;
        if (!cJSON_IsArray(rg) || cJSON_GetArraySize(rg) != 2 ||
            !cJSON_IsNumber(cJSON_GetArrayItem(rg, 0)) || !cJSON_IsNumber(cJSON_GetArrayItem(rg, 1)))
            return bad(c, rp, "ranges needs [low, high] for dim '%s'", t->dims[i]);
        double lo = cJSON_GetArrayItem(rg, 0)->valuedouble, hi = cJSON_GetArrayItem(rg, 1)->valuedouble;
        if (!(lo >= 1 && hi >= lo && hi <= (1 << 30)) || lo != (double)(int64_t)lo ||
            hi != (double)(int64_t)hi)
            return bad(c, rp, "range of dim '%s' must satisfy 1 <= low <= high <= 2^30 (integers)",
                       t->dims[i]);
        g->range_lo[i] = (int64_t)lo;
        g->range_hi[i] = (int64_t)hi;
    }
    return 0;
}

/* The promises hidden shapes make: beyond every visible size in every dim,
 * and not all multiples of 4 (vector widths), so tails are exercised. */
static int check_hidden_cover(ctx *c, const char *p, const kiln_task *t, const kiln_group *g)
{
    for (int d = 0; d < t->ndims; d++) {
        int64_t vmax = 0, hmax = 0;
        int odd = 0;
        for (int i = 0; i < g->nvisible; i++)
            vmax = g->visible[i].d[d] > vmax ? g->visible[i].d[d] : vmax;
        for (int i = 0; i < g->nhidden; i++) {
            hmax = g->hidden[i].d[d] > hmax ? g->hidden[i].d[d] : hmax;
            odd |= g->hidden[i].d[d] % 4 != 0;
        }
        if (hmax <= vmax)
            return bad(c, p, "no hidden size of dim '%s' exceeds the largest visible one", t->dims[d]);
        if (!odd)
            return bad(c, p, "every hidden size of dim '%s' is a multiple of 4; add odd sizes", t->dims[d]);
    }
    return 0;
}

/* hidden.json's "groups" or "cuda_groups": an entry for every group of the
 * same section of task.json, and none for another. */
static int load_hidden_section(ctx *c, const cJSON *root, int cuda, kiln_task *t)
{
    const char *key = section_name(cuda);
    const cJSON *groups = cJSON_GetObjectItemCaseSensitive(root, key);
    int want = 0;
    for (int i = 0; i < t->ngroups; i++)
        want |= from_cuda_section(&t->groups[i]) == cuda;
    if (!want) {
        if (groups)
            return bad(c, key, "task.json has no %s", key);
        return 0;
    }
    if (!cJSON_IsObject(groups))
        return bad(c, key, "must be an object keyed by group name%s", NULL);
    for (int i = 0; i < t->ngroups; i++) {
        kiln_group *g = &t->groups[i];
        if (from_cuda_section(g) != cuda)
            continue;
        char p[96], sp[128];
        snprintf(p, sizeof p, "%s.%s", key, g->name);
        const cJSON *hg = cJSON_GetObjectItemCaseSensitive(groups, g->name);
        if (!cJSON_IsObject(hg))
            return bad(c, p, cuda ? "missing: every cuda group needs hidden shapes%s"
                                  : "missing: every group needs hidden shapes%s", NULL);
        snprintf(sp, sizeof sp, "%s.shapes", p);
        if (load_shape_list(c, cJSON_GetObjectItemCaseSensitive(hg, "shapes"), sp, t, g->hidden,
                            &g->nhidden) < 0)
            return -1;
        const cJSON *r = cJSON_GetObjectItemCaseSensitive(hg, "random");
        if (r && load_random(c, r, p, t, g) < 0)
            return -1;
        if (check_hidden_cover(c, p, t, g) < 0)
            return -1;
    }
    const cJSON *g;
    cJSON_ArrayForEach(g, groups) {
        if (group_in(t, cuda ? KILN_GROUP_CUDA : KILN_GROUP_CPU, g->string) < 0)
            return bad(c, key, cuda ? "'%s' is not a cuda group of task.json"
                                    : "'%s' is not a group of task.json", g->string);
    }
    return 0;
}

static int load_hidden_json(ctx *c, const cJSON *root, kiln_task *t)
{
    return load_hidden_section(c, root, 0, t) < 0 || load_hidden_section(c, root, 1, t) < 0 ? -1 : 0;
}

/* Bytes of every buffer of a shape, as doubles (the reference's width),
 * without overflow; 0 ok, else -1 with *what naming the buffer. */
static int shape_bytes(const kiln_task *t, const kiln_shape *s, uint64_t *total, const char **what)
{
    *total = 0;
    for (int a = 0; a < t->nargs; a++) {
        const kiln_arg *arg = &t->args[a];
        if (arg->kind != KILN_ARG_INPUT && arg->kind != KILN_ARG_OUTPUT)
            continue;
        uint64_t n = sizeof(double);
        for (int i = 0; i < arg->rank; i++) {
            uint64_t d = (uint64_t)s->d[arg->shape[i]] *
                         (uint64_t)(arg->shape_mul[i] > 1 ? arg->shape_mul[i] : 1);
            if (__builtin_mul_overflow(n, d, &n) || n > KILN_MAX_BUFFER_BYTES) {
                *what = arg->name;
                return -1;
            }
        }
        *total += n;
    }
    return 0;
}

/* Every shape kiln may call (visible, hidden, and the random ranges' upper
 * corner) must fit: a product that wraps around would size a buffer wrong
 * without a word. */
static int check_sizes(ctx *c, const kiln_task *t)
{
    for (int g = 0; g < t->ngroups; g++) {
        const kiln_group *gr = &t->groups[g];
        kiln_shape corner = {{0}};
        for (int d = 0; d < t->ndims; d++)
            corner.d[d] = gr->range_hi[d];
        for (int k = 0; k < gr->nvisible + gr->nhidden + (gr->nrandom > 0); k++) {
            const kiln_shape *s = k < gr->nvisible ? &gr->visible[k]
                                : k < gr->nvisible + gr->nhidden ? &gr->hidden[k - gr->nvisible]
                                                                 : &corner;
            const char *what = "";
            uint64_t total;
            if (shape_bytes(t, s, &total, &what) < 0) {
                char dims[160];
                kiln_shape_format(t, s, dims, sizeof dims);
                return kiln_fail(c->err, "%s/%s: group '%s': at %s, buffer '%s' would take more "
                                 "than %llu bytes", t->dir, k < gr->nvisible ? "task.json"
                                 : "hidden.json", gr->name, dims, what,
                                 (unsigned long long)KILN_MAX_BUFFER_BYTES);
            }
        }
    }
    return 0;
}

int kiln_task_load(const char *dir, kiln_task *t, kiln_error *err)
{
    memset(t, 0, sizeof *t);
    if (!realpath(dir, t->dir))
        return kiln_fail(err, "task directory '%s': %s", dir, strerror(errno));
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/task.json", t->dir);
    ctx c = {path, err};
    cJSON *root = parse_json_file(path, err);
    if (!root)
        return -1;
    int rc = load_task_json(&c, root, t);
    cJSON_Delete(root);
    if (rc < 0)
        return -1;
    snprintf(path, sizeof path, "%s/hidden.json", t->dir);
    root = parse_json_file(path, err);
    if (!root)
        return -1;
    rc = load_hidden_json(&c, root, t);
    cJSON_Delete(root);
    if (rc < 0 || check_sizes(&c, t) < 0)
        return -1;
    snprintf(path, sizeof path, "%s/task.json", t->dir);   /* the bounds are task.json's */
    return kiln_task_check_integers(&c, t);
}

int kiln_task_name_ok(const char *s)
{
    return valid_name(s) && strlen(s) < KILN_NAME_MAX;
}

/* The task name in dir closest to name, offered to s ("did you mean"). */
static void offer_tasks(kiln_suggestion *s, const char *dir)
{
    DIR *d = dir && *dir ? opendir(dir) : NULL;
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (e->d_name[0] != '.' && valid_name(e->d_name))
            kiln_suggest_try(s, e->d_name);
    closedir(d);
}

static int no_task(const char *name, const char *env, kiln_error *err)
{
    kiln_suggestion s;
    kiln_suggest_init(&s, name);
    offer_tasks(&s, env);
    offer_tasks(&s, KILN_TASKS_DIR);
    const char *near = kiln_suggest_best(&s);
    return kiln_fail(err, "no task named '%s'%s%s%s (looked in %s%s%s; kiln task list shows them)",
                     name, near ? "; did you mean '" : "", near ? near : "", near ? "'?" : "",
                     env && *env ? env : "", env && *env ? " and " : "", KILN_TASKS_DIR);
}

int kiln_task_find(const char *name, kiln_task *t, kiln_error *err)
{
    struct stat st;
    if (strchr(name, '/') || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
        return kiln_task_load(name, t, err);
    if (!valid_name(name))
        return kiln_fail(err, "'%s' is not a task name", name);
    char path[PATH_MAX];
    const char *env = getenv("KILN_TASKS");
    if (env && *env) {
        snprintf(path, sizeof path, "%s/%s", env, name);
        if (stat(path, &st) == 0)
            return kiln_task_load(path, t, err);
    }
    snprintf(path, sizeof path, "%s/%s", KILN_TASKS_DIR, name);
    if (stat(path, &st) != 0)
        return no_task(name, env, err);
    return kiln_task_load(path, t, err);
}

const kiln_tolerance_spec *kiln_task_tolerance(const kiln_task *t, kiln_dtype dt)
{
    for (int i = 0; i < t->ntolerances; i++)
        if (t->tolerances[i].dtype == dt)
            return &t->tolerances[i];
    return NULL;
}

int kiln_task_supports_backend(const kiln_task *t, const char *backend, kiln_dtype dt)
{
    const kiln_dtype *dts;
    int n;
    if (backend && strcmp(backend, "cpu") == 0) {
        dts = t->cpu_dtypes;
        n = t->ncpu_dtypes;
    } else if (backend && strcmp(backend, "cuda") == 0) {
        dts = t->cuda_dtypes;
        n = t->ncuda_dtypes;
    } else {
        return 0;
    }
    for (int i = 0; i < n; i++)
        if (dts[i] == dt)
            return 1;
    return 0;
}

int kiln_task_supports(const kiln_task *t, kiln_dtype dt)
{
    return kiln_task_supports_backend(t, "cpu", dt);
}

kiln_dtype kiln_arg_dtype(const kiln_arg *arg, kiln_dtype dt)
{
    return arg->dtype_is_var ? dt : arg->dtype;
}

int64_t kiln_arg_elems(const kiln_arg *arg, const kiln_shape *shape)
{
    int64_t n = 1;
    for (int i = 0; i < arg->rank; i++)
        n *= shape->d[arg->shape[i]] * (arg->shape_mul[i] > 1 ? arg->shape_mul[i] : 1);
    return n;
}

int kiln_task_cost_rw(const kiln_task *t, const kiln_shape *shape, kiln_dtype dt, double *read,
                      double *write, kiln_error *err)
{
    if (!t->cost_split) {
        double b;
        if (kiln_task_cost(t, t->cost_bytes, shape, dt, &b, err) < 0)
            return -1;
        *read = *write = b / 2;
        return 0;
    }
    return kiln_task_cost(t, t->cost_read, shape, dt, read, err) < 0 ||
           kiln_task_cost(t, t->cost_write, shape, dt, write, err) < 0 ? -1 : 0;
}

typedef struct cost_ctx {
    const kiln_task *t;
    const kiln_shape *shape;
    kiln_dtype dt;
} cost_ctx;

static int cost_lookup(void *p, const char *name, size_t len, kiln_value *out)
{
    cost_ctx *c = p;
    for (int i = 0; i < c->t->ndims; i++)
        if (strlen(c->t->dims[i]) == len && memcmp(c->t->dims[i], name, len) == 0) {
            out->is_float = 0;
            out->i = c->shape->d[i];
            return 0;
        }
    return -1;
}

static int cost_sizeof(void *p, const char *type, size_t len, int64_t *bytes)
{
    cost_ctx *c = p;
    return kiln_dtype_sizeof(type, len, c->dt, bytes);
}

int kiln_task_cost(const kiln_task *t, const char *expr, const kiln_shape *shape,
                   kiln_dtype dt, double *out, kiln_error *err)
{
    cost_ctx c = {t, shape, dt};
    kiln_expr_env env = {cost_lookup, cost_sizeof, &c};
    kiln_value v;
    if (kiln_expr_eval(expr, &env, &v, err) < 0)
        return -1;
    *out = kiln_value_to_double(v);
    return 0;
}

void kiln_task_cpu_signature(const kiln_task *t, kiln_dtype dt, char *buf, size_t len)
{
    size_t used = (size_t)snprintf(buf, len, "void %s(", t->function);
    for (int i = 0; i < t->nargs && used < len; i++) {
        const kiln_arg *a = &t->args[i];
        const char *ct = kiln_dtype_ctype(kiln_arg_dtype(a, dt));
        const char *sep = i ? ", " : "";
        if (a->kind == KILN_ARG_INPUT)
            used += (size_t)snprintf(buf + used, len - used, "%sconst %s *%s", sep, ct, a->name);
        else if (a->kind == KILN_ARG_OUTPUT)
            used += (size_t)snprintf(buf + used, len - used, "%s%s *%s", sep, ct, a->name);
        else
            used += (size_t)snprintf(buf + used, len - used, "%s%s %s", sep, ct, a->name);
    }
    if (used < len)
        snprintf(buf + used, len - used, ")");
}

const char *kiln_arg_cuda_type(const kiln_arg *a)
{
    if (a->kind == KILN_ARG_DIM)
        return a->dtype == KILN_DT_I64 ? "long long" : "int";
    if (a->kind == KILN_ARG_SCALAR) {
        switch (a->dtype) {
        case KILN_DT_F64: return "double";
        case KILN_DT_I32: return "int";
        case KILN_DT_I64: return "long long";
        case KILN_DT_I8: return "signed char";
        case KILN_DT_F16: return "__half";
        case KILN_DT_BF16: return "__nv_bfloat16";
        default: return "float";
        }
    }
    int in = a->kind == KILN_ARG_INPUT;
    if (a->dtype_is_var)
        return in ? "const kiln_t *" : "kiln_t *";
    switch (a->dtype) {
    case KILN_DT_F32: return in ? "const float *" : "float *";
    case KILN_DT_F16: return in ? "const __half *" : "__half *";
    case KILN_DT_BF16: return in ? "const __nv_bfloat16 *" : "__nv_bfloat16 *";
    case KILN_DT_F64: return in ? "const double *" : "double *";
    case KILN_DT_I32: return in ? "const int *" : "int *";
    case KILN_DT_I64: return in ? "const long long *" : "long long *";
    case KILN_DT_I8: return in ? "const signed char *" : "signed char *";
    default: return "void *";
    }
}

void kiln_task_cuda_params(const kiln_task *t, char *buf, size_t len)
{
    size_t used = (size_t)snprintf(buf, len, "(");
    for (int i = 0; i < t->nargs && used < len; i++) {
        const char *ct = kiln_arg_cuda_type(&t->args[i]);
        size_t n = strlen(ct);
        used += (size_t)snprintf(buf + used, len - used, "%s%s%s%s", i ? ", " : "", ct,
                                 n && ct[n - 1] == '*' ? "" : " ", t->args[i].name);
    }
    if (used < len)
        snprintf(buf + used, len - used, ")");
}
