/* task_describe.c - a task as a candidate's author sees it: the signature
 * or kernel arguments, the launch manifest's language, the visible shapes of
 * each group and the error budget. `kiln task show` prints it, and the
 * model's prompt carries it. Hidden shapes, ranges and the reference never
 * appear here. */
#include "task_describe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileutil.h"
#include "manifest.h"

static const char *kind_name(kiln_arg_kind k)
{
    static const char *names[] = {"input", "output", "dim", "scalar"};
    return names[k];
}

/* " [rows, cols]", " [tokens, heads, 2*half_dim]"; nothing for a dim or scalar. */
static void print_shape(FILE *out, const kiln_task *t, const kiln_arg *a)
{
    if (!a->rank)
        return;
    fprintf(out, " [");
    for (int d = 0; d < a->rank; d++) {
        if (a->shape_mul[d] > 1)
            fprintf(out, "%s%d*%s", d ? ", " : "", a->shape_mul[d], t->dims[a->shape[d]]);
        else
            fprintf(out, "%s%s", d ? ", " : "", t->dims[a->shape[d]]);
    }
    fprintf(out, "]");
}

/* What an integer input holds: "integers in [0, vocab - 1]; 10% of them
 * -100 (ignore)"; nothing for other args. */
static void print_values(FILE *out, const kiln_arg *a)
{
    if (!kiln_arg_is_integer(a))
        return;
    fprintf(out, "\n           integers in [%s, %s]", a->int_low, a->int_high);
    if (a->has_ignore)
        fprintf(out, "; about %g%% of them %.0f (the ignore value)", 100 * a->ignore_share,
                a->ignore_value);
}

static void print_args(FILE *out, const kiln_task *t, kiln_dtype dt)
{
    fprintf(out, "\narguments:\n");
    for (int i = 0; i < t->nargs; i++) {
        const kiln_arg *a = &t->args[i];
        fprintf(out, "  %-8s %-6s %-5s", a->name, kind_name(a->kind),
               kiln_dtype_name(kiln_arg_dtype(a, dt)));
        print_shape(out, t, a);
        if (a->kind == KILN_ARG_SCALAR)
            fprintf(out, " = %g", a->value);
        print_values(out, a);
        fprintf(out, "\n");
    }
}

/* The groups of one backend ("cpu" or "cuda"): a task's cuda_groups, when it
 * has them, are CUDA's and its groups the CPU's. */
static void print_groups(FILE *out, const kiln_task *t, const char *backend)
{
    int bit = strcmp(backend, "cuda") == 0 ? KILN_GROUP_CUDA : KILN_GROUP_CPU;
    int dflt = kiln_task_default_group_for(t, backend);
    for (int g = 0; g < t->ngroups; g++) {
        const kiln_group *grp = &t->groups[g];
        if (!(grp->backends & bit))
            continue;
        fprintf(out, "\ngroup %s%s: visible shapes\n", grp->name, g == dflt ? " (default)" : "");
        for (int i = 0; i < grp->nvisible; i++) {
            char dims[128];
            kiln_shape_format(t, &grp->visible[i], dims, sizeof dims);
            fprintf(out, "  v%-3d %s\n", i + 1, dims);
        }
        fprintf(out, "  plus hidden shapes (larger and odder in every dim, named h1, h2, ...)\n");
    }
}

static void print_tolerance_cost(FILE *out, const kiln_task *t, kiln_dtype dt)
{
    const kiln_tolerance_spec *ts = kiln_task_tolerance(t, dt);
    const char *red = t->reduction_dim >= 0 ? t->dims[t->reduction_dim] : "1";
    fprintf(out, "\ntolerance: %g ULPs of %s + %g * sqrt(%s) + %g * %s, at the reference's magnitude\n",
            ts->ulps, kiln_dtype_name(dt), ts->per_sqrt, red, ts->per_n, red);
    if (t->floor_rel > 1e-5)   /* matters where outputs cancel to near zero */
        fprintf(out, "  (or at %g of the largest reference magnitude, whichever is larger)\n",
                t->floor_rel);
    if (t->floor_abs > 0)      /* outputs that are differences of larger terms */
        fprintf(out, "  (and at a magnitude of %g at least)\n", t->floor_abs);
    if (t->cost_split)
        fprintf(out, "cost: bytes read = %s; bytes written = %s; flops = %s\n", t->cost_read,
                t->cost_write, t->cost_flops);
    else
        fprintf(out, "cost: bytes = %s; flops = %s\n", t->cost_bytes, t->cost_flops);
}

void kiln_task_describe(FILE *out, const kiln_task *t, kiln_dtype dt)
{
    char sig[1024];
    kiln_task_cpu_signature(t, dt, sig, sizeof sig);
    fprintf(out, "task %s (dtype %s)\n\n%s\n\ncandidate signature (CPU, C17, one file, may include "
            "\"kiln_cpu.h\"):\n  %s;\n", t->name, kiln_dtype_name(dt), t->description, sig);
    print_args(out, t, dt);
    print_groups(out, t, "cpu");
    print_tolerance_cost(out, t, dt);
}

/* ---- the CUDA candidate ------------------------------------------------ */

static const char *cuda_t_name(kiln_dtype dt)
{
    return dt == KILN_DT_F16 ? "__half" : dt == KILN_DT_BF16 ? "__nv_bfloat16" : "float";
}

static const char *cuda_define(kiln_dtype dt)
{
    return dt == KILN_DT_F16 ? "KILN_DTYPE_F16" : dt == KILN_DT_BF16 ? "KILN_DTYPE_BF16" : "KILN_DTYPE_F32";
}

static void print_cuda_args(FILE *out, const kiln_task *t, kiln_dtype dt)
{
    fprintf(out, "\narguments (a launch passes the args it names, in its order; a kernel's\n"
            "parameters are those args, in that order, with these CUDA types):\n");
    for (int i = 0; i < t->nargs; i++) {
        const kiln_arg *a = &t->args[i];
        const char *dn = kiln_dtype_name(kiln_arg_dtype(a, dt));
        fprintf(out, "  %-8s %-16s %-6s ", a->name, kiln_arg_cuda_type(a), kind_name(a->kind));
        if (a->rank)
            fprintf(out, "%-5s", dn);
        else
            fputs(dn, out);
        print_shape(out, t, a);
        if (a->kind == KILN_ARG_SCALAR)
            fprintf(out, " = %g", a->value);
        print_values(out, a);
        fprintf(out, "\n");
    }
    char params[1024];
    kiln_task_cuda_params(t, params, sizeof params);
    fprintf(out, "  e.g. extern \"C\" __global__ void %s_fwd%s\n", t->name, params);
}

/* The knob lines and the manifest block of the task's CUDA starter, as an
 * example of the syntax; nothing when it cannot be read. */
static void print_starter_manifest(FILE *out, const kiln_task *t)
{
    char *src;
    kiln_error err;
    if (kiln_read_file(t->starter_cuda, 1 << 16, &src, NULL, &err) < 0)
        return;
    const char *slash = strrchr(t->starter_cuda, '/');
    fprintf(out, "\nexample: the starter (%s), its knob and manifest:\n", slash ? slash + 1 : t->starter_cuda);
    for (const char *line = src; *line;) {
        const char *eol = strchr(line, '\n');
        size_t len = eol ? (size_t)(eol - line) : strlen(line);
        const char *tune = strstr(line, "//@kiln tune");
        if (tune && tune < line + len)
            fprintf(out, "  %.*s\n", (int)len, line);
        line += len + (eol != NULL);
    }
    kiln_manifest_span sp = {0};
    const char *end = kiln_manifest_locate(src, strlen(src), &sp) ? src + sp.block_end : src;
    for (const char *line = src + sp.block_at; line < end;) {
        const char *eol = strchr(line, '\n');
        size_t len = eol && eol < end ? (size_t)(eol - line) : (size_t)(end - line);
        fprintf(out, "  %.*s\n", (int)len, line);
        line += len + 1;
    }
    free(src);
}

void kiln_task_describe_cuda(FILE *out, const kiln_task *t, kiln_dtype dt)
{
    fprintf(out, "task %s (backend cuda, dtype %s)\n\n%s\n", t->name, kiln_dtype_name(dt), t->description);
    fprintf(out, "\ncandidate (CUDA): one .cu file of extern \"C\" __global__ kernels (and\n"
            "__device__ helpers) plus a launch manifest; no host code. kiln compiles it with\n"
            "NVRTC for the device's exact sm_XX, once per dtype, with -D%s here.\n"
            "#include \"kiln_cuda.h\" gives kiln_t (the task's type T, %s here) and\n"
            "float kiln_to_float(kiln_t), kiln_t kiln_from_float(float), so one source\n"
            "serves every dtype; CUDA's own device headers are reachable, nothing else.\n",
            cuda_define(dt), cuda_t_name(dt));
    print_cuda_args(out, t, dt);
    fprintf(out, "\nlaunch manifest: exactly one block comment in the file:\n"
            "  /*@kiln launch\n"
            "  {\"launches\": [{\"kernel\": \"NAME\", \"grid\": [X, Y, Z], \"block\": [X, Y, Z],\n"
            "                 \"smem\": BYTES, \"cluster\": [X, Y, Z], \"args\": [\"ARG\", ...]}, ...],\n"
            "   \"scratch\": [{\"name\": \"NAME\", \"bytes\": BYTES, \"init\": \"zero\" | \"none\"}, ...]}\n"
            "  @*/\n"
            "- launches run in order on kiln's stream; grid and block take 1 to 3 entries,\n"
            "  smem (dynamic shared memory, default 0) and cluster (Hopper clusters) are optional;\n"
            "  kiln raises the dynamic shared memory limit when a launch asks for more.\n"
            "- every grid, block, cluster, smem and bytes entry is an integer or an expression\n"
            "  string over the dims (");
    for (int i = 0; i < t->ndims; i++)
        fprintf(out, "%s%s", i ? ", " : "", t->dims[i]);
    fprintf(out, "), the file's knobs, plain '#define NAME INTEGER' constants,\n"
            "  earlier \"let\" values and sizeof(T), with C's integer operators and precedence:\n"
            "  + - * / %% ( ) < <= > >= == != && || ! c ? a : b, and min max cdiv gcd lcm.\n"
            "- \"let\": {\"NAME\": \"EXPR\", ...} names intermediate values (up to 16, in order).\n"
            "- args name task args (buffers become device pointers, dims are passed as int,\n"
            "  scalars by their dtype) or scratch buffers (device memory kiln allocates:\n"
            "  \"zero\" is cleared on the stream inside the timed region, \"none\" holds NaN bytes).\n"
            "\nknobs: a line '#define NAME VALUE //@kiln tune V1 V2 ...' (integers) declares a\n"
            "knob the tuner may set to any of V1 V2 ...; the manifest may use NAME.\n");
    print_starter_manifest(out, t);
    print_groups(out, t, "cuda");
    print_tolerance_cost(out, t, dt);
    if (t->baseline_cuda_builtin[0])
        fprintf(out, "baseline: cuBLAS (cublasGemmEx, fp32 accumulation, default algorithm), timed "
                "exactly like a candidate\n");
}
