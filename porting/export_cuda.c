/* export_cuda.c - the files of `kiln export --backend cuda`.
 *
 * Each exported variant (a kept .cu that wins a shape, or the fallback) is
 * written as kiln_T_D_kN.cu and built, with the others, in the one
 * translation unit that includes the generated kiln_T_D.cuh:
 *
 *  - Its kernels (the names its manifest launches) are renamed
 *    kiln_T_D_kN_NAME by rewriting every identifier token equal to one of
 *    them outside comments and literals, and the manifest's "kernel" fields
 *    to match. extern "C" kernels ignore namespaces, so this is what keeps
 *    their symbols apart; the prefix holds task and dtype so that the
 *    exports of several tasks link into one program.
 *  - The .cuh includes the file inside `namespace kiln_T_D_kN { ... }`, so
 *    its __device__ helpers, constants and types cannot clash with another
 *    variant's; its #include lines are included first, outside the
 *    namespace (include guards make the copies inside no-ops), and every
 *    macro it #defines is #undef'd after it.
 *  - Launching follows the manifest: the expressions are translated to C
 *    once (expr_c.h), knobs and #define constants replaced by their values,
 *    and evaluated at the call's dims; the manifest's lets become locals
 *    (const int64_t kiln_l_NAME) computed in order at the top of each
 *    function that evaluates expressions, so a let used by several fields
 *    is computed once and never inlined into an ever longer text, and a let
 *    that fails at some dims fails the call as kiln's resolver fails the
 *    shape; scratch buffers are carved out of one caller-provided
 *    block at 256-byte boundaries; `zero` buffers are cleared with
 *    cudaMemsetAsync; shared memory above 48 KiB is opted into; each launch
 *    goes through cudaLaunchKernelEx (with the cluster attribute when the
 *    manifest gives one, and past 8 blocks a cluster the kernel's
 *    non-portable-size attribute), which returns its own error, not one left over
 *    from an earlier call as cudaGetLastError after <<<>>> could. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "c_lex.h"
#include "expr_c.h"
#include "manifest.h"
#include "paths.h"
#include "review.h"

#define SCRATCH_ALIGN 256
#define MAX_DIRECTIVES 64
#define C_EXPR_MAX 8192

/* One exported variant, ready to print. */
typedef struct variant {
    const ex_kernel *k;
    const ex_meas *m;
    kiln_manifest man;
    char *source;                              /* renamed */
    char includes[MAX_DIRECTIVES][256];
    int nincludes;
    char defines[MAX_DIRECTIVES][128];
    int ndefines;
} variant;

typedef struct render {
    const ex *x;
    char base[KILN_NAME_MAX + 16];             /* kiln_T_D */
    variant *v;
    int nv;
    kiln_error *err;
} render;


void kiln_ex_cuda_base(const ex *x, char *buf, size_t len)
{
    snprintf(buf, len, "kiln_%s_%s", x->task->name, kiln_dtype_name(x->dt));
}

/* "(const kiln_t *x, ..., float eps" without the closing parenthesis. */
static void params_open(const ex *x, char *buf, size_t len)
{
    kiln_task_cuda_params(x->task, buf, len);
    size_t n = strlen(buf);
    if (n && buf[n - 1] == ')')
        buf[n - 1] = '\0';
}

void kiln_ex_cuda_signature(const ex *x, char *buf, size_t len)
{
    char base[KILN_NAME_MAX + 16], params[1024];
    kiln_ex_cuda_base(x, base, sizeof base);
    params_open(x, params, sizeof params);
    snprintf(buf, len, "cudaError_t %s%s, void *scratch, cudaStream_t stream)", base, params);
}

/* ---- reading a source: comments, literals, identifiers --------------------- */

/* R"delim( ... )delim" after a raw-string prefix (R, LR, uR, UR, u8R). */
static size_t raw_string_end(const char *s, size_t n, size_t quote)
{
    char close[24] = ")";
    size_t d = quote + 1, k = 1;
    while (d < n && s[d] != '(' && k < sizeof close - 2)
        close[k++] = s[d++];
    close[k++] = '"';
    close[k] = '\0';
    for (size_t i = d; i + k <= n; i++)
        if (memcmp(s + i, close, k) == 0)
            return i + k;
    return n;
}

static int is_raw_prefix(const char *s, size_t len)
{
    static const char *const p[] = {"R", "LR", "uR", "UR", "u8R"};
    for (size_t i = 0; i < sizeof p / sizeof *p; i++)
        if (strlen(p[i]) == len && memcmp(p[i], s, len) == 0)
            return 1;
    return 0;
}

/* A preprocessing number (1.5f, 0x1fULL, 1e-3): its letters are no names. */
static size_t number_end(const char *s, size_t n, size_t i)
{
    for (i++; i < n; i++) {
        char c = s[i];
        if ((c == '+' || c == '-') && strchr("eEpP", s[i - 1]))
            continue;
        if (!kiln_is_ident_char(c) && c != '.')
            break;
    }
    return i;
}

static size_t skip_ws(const char *s, size_t n, size_t i)
{
    while (i < n && strchr(" \t\r\n", s[i]))
        i++;
    return i;
}

/* Does "# include" start at i, the first thing on its line? */
static int include_at(const char *s, size_t n, size_t i)
{
    size_t b = i;
    while (b > 0 && (s[b - 1] == ' ' || s[b - 1] == '\t'))
        b--;
    if (b > 0 && s[b - 1] != '\n')
        return 0;
    i++;
    while (i < n && (s[i] == ' ' || s[i] == '\t'))
        i++;
    return n - i >= 7 && memcmp(s + i, "include", 7) == 0;
}

/* Is s[0..len) a kernel of the manifest? */
static int is_kernel(const kiln_manifest *m, const char *s, size_t len)
{
    for (int l = 0; l < m->nlaunches; l++) {
        char base[KILN_KERNEL_NAME_MAX];
        kiln_manifest_kernel_base(m->launches[l].kernel, base, sizeof base);
        if (strlen(base) == len && memcmp(base, s, len) == 0)
            return 1;
    }
    return 0;
}

/* Is s[0..len) a launch's "kernel" value, as written? */
static int is_launched(const kiln_manifest *m, const char *s, size_t len)
{
    for (int l = 0; l < m->nlaunches; l++)
        if (strlen(m->launches[l].kernel) == len && memcmp(m->launches[l].kernel, s, len) == 0)
            return 1;
    return 0;
}

/* The manifest comment with its "kernel": "NAME" values renamed. */
static void put_manifest(FILE *out, const char *s, size_t n, const kiln_manifest *m,
                         const char *prefix)
{
    static const char key[] = "\"kernel\"";
    size_t i = 0;
    while (i < n) {
        const char *hit = memmem(s + i, n - i, key, sizeof key - 1);
        if (!hit)
            break;
        size_t j = skip_ws(s, n, (size_t)(hit - s) + sizeof key - 1);
        if (j < n && s[j] == ':')
            j = skip_ws(s, n, j + 1);
        size_t e = j < n && s[j] == '"' ? j + 1 : n;
        while (e < n && s[e] != '"')
            e++;
        if (e >= n || !is_launched(m, s + j + 1, e - j - 1)) {
            fwrite(s + i, 1, (size_t)(hit - s) + sizeof key - 1 - i, out);
            i = (size_t)(hit - s) + sizeof key - 1;
            continue;
        }
        fwrite(s + i, 1, j + 1 - i, out);
        fprintf(out, "%s_%.*s", prefix, (int)(e - j - 1), s + j + 1);
        i = e;
    }
    fwrite(s + i, 1, n - i, out);
}

/* Comments as they are (blank = 0) or as spaces with their newlines (1). */
static void put_comment(FILE *out, const char *s, size_t n, int blank)
{
    for (size_t i = 0; i < n; i++)
        fputc(!blank || s[i] == '\n' ? s[i] : ' ', out);
}

/* Copy src to out. rename: the manifest's kernels become prefix_NAME in
 * the code and the manifest; else comments are blanked (for scanning
 * directives). Literals are copied as they are either way. */
static void walk(FILE *out, const char *src, size_t n, const kiln_manifest *m, const char *prefix,
                 int rename)
{
    size_t i = 0;
    while (i < n) {
        char c = src[i], next = i + 1 < n ? src[i + 1] : 0;
        size_t j = i + 1;
        if (c == '/' && (next == '*' || next == '/')) {
            j = next == '*' ? kiln_lex_block_comment_end(src, n, i, NULL)
                            : kiln_lex_line_comment_end(src, n, i);
            if (rename && next == '*' && j - i > 14 && memcmp(src + i, "/*@kiln launch", 14) == 0)
                put_manifest(out, src + i, j - i, m, prefix);
            else
                put_comment(out, src + i, j - i, !rename);
            i = j;
            continue;
        }
        if (c == '#' && include_at(src, n, i))
            j = kiln_lex_line_comment_end(src, n, i);   /* an #include's path is no code */
        else if (c == '"' || c == '\'')
            j = kiln_lex_literal_end(src, n, i);
        else if (c >= '0' && c <= '9')
            j = number_end(src, n, i);
        else if (kiln_is_ident_start(c)) {
            while (j < n && kiln_is_ident_char(src[j]))
                j++;
            if (j < n && src[j] == '"' && is_raw_prefix(src + i, j - i))
                j = raw_string_end(src, n, j);
            else if (rename && is_kernel(m, src + i, j - i))
                fprintf(out, "%s_", prefix);
        }
        fwrite(src + i, 1, j - i, out);
        i = j;
    }
}

static char *walk_text(const char *src, const kiln_manifest *m, const char *prefix, int rename)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return NULL;
    walk(f, src, strlen(src), m, prefix, rename);
    if (fclose(f) != 0) {
        free(text);
        return NULL;
    }
    return text;
}

/* ---- directives: what is hoisted out of the namespace, what is #undef'd --- */

/* Add name (len bytes) to list unless it is there; -1 when it is full. */
static int add_unique(char *list, size_t width, int *n, const char *name, size_t len)
{
    for (int i = 0; i < *n; i++)
        if (strlen(list + (size_t)i * width) == len && memcmp(list + (size_t)i * width, name, len) == 0)
            return 0;
    if (*n >= MAX_DIRECTIVES || len >= width)
        return -1;
    snprintf(list + (size_t)(*n)++ * width, width, "%.*s", (int)len, name);
    return 0;
}

/* "#include X": X is included before the namespace (kiln_cuda.h already is). */
static int on_include(variant *v, const char *s, size_t n)
{
    while (n > 0 && strchr(" \t\r\\", s[n - 1]))
        n--;
    if (memmem(s, n, "kiln_cuda.h", 11))
        return 0;
    return add_unique(&v->includes[0][0], sizeof v->includes[0], &v->nincludes, s, n);
}

/* "#define NAME...": NAME is #undef'd after the kernel, except kiln's own
 * (KILN_DTYPE_*, the header's guard), which later kernels need as they are. */
static int on_define(variant *v, const char *s, size_t n)
{
    size_t e = 0;
    while (e < n && kiln_is_ident_char(s[e]))
        e++;
    if (e == 0 || (e > 11 && strncmp(s, "KILN_DTYPE_", 11) == 0) ||
        (e == 11 && memcmp(s, "KILN_CUDA_H", 11) == 0))
        return 0;
    return add_unique(&v->defines[0][0], sizeof v->defines[0], &v->ndefines, s, e);
}

/* The #include and #define lines of a source whose comments are blanked. */
static int scan_directives(variant *v, const char *blanked)
{
    for (const char *line = blanked; *line;) {
        const char *eol = strchr(line, '\n');
        size_t n = eol ? (size_t)(eol - line) : strlen(line);
        size_t i = skip_ws(line, n, 0), w = i < n && line[i] == '#' ? skip_ws(line, n, i + 1) : n;
        size_t we = w;
        while (we < n && kiln_is_ident_char(line[we]))
            we++;
        size_t a = skip_ws(line, n, we);
        int rc = 0;
        if (we - w == 7 && memcmp(line + w, "include", 7) == 0)
            rc = on_include(v, line + a, n - a);
        else if (we - w == 6 && memcmp(line + w, "define", 6) == 0)
            rc = on_define(v, line + a, n - a);
        if (rc < 0)
            return -1;
        line += n + (eol != NULL);
    }
    return 0;
}

/* ---- expressions --------------------------------------------------------------- */

typedef struct names_ctx {
    const ex *x;
    const kiln_manifest *m;
} names_ctx;

static int same(const char *a, const char *name, size_t len)
{
    return strlen(a) == len && memcmp(a, name, len) == 0;
}

/* A knob's or #define constant's value among n of them, parenthesized when
 * negative; 0, or -1 when name is none of them. */
static int c_const(const kiln_manifest_knob *c, int n, const char *name, size_t len, char *buf,
                   size_t buflen)
{
    for (int k = 0; k < n; k++)
        if (same(c[k].name, name, len))
            return snprintf(buf, buflen, c[k].value[0] == '-' ? "(%s)" : "%s", c[k].value), 0;
    return -1;
}

/* A dim is its argument of the dispatch; a knob or #define constant its
 * value; a let its local (print_lets), in the order the resolver looks. */
static int c_name(void *p, const char *name, size_t len, char *buf, size_t buflen)
{
    const names_ctx *nc = p;
    for (int a = 0; a < nc->x->task->nargs; a++) {
        const kiln_arg *arg = &nc->x->task->args[a];
        if (arg->kind == KILN_ARG_DIM && same(arg->name, name, len))
            return snprintf(buf, buflen, "%s", arg->name), 0;
    }
    if (c_const(nc->m->knobs, nc->m->nknobs, name, len, buf, buflen) == 0)
        return 0;
    for (int l = 0; l < nc->m->nlets; l++)
        if (same(nc->m->lets[l].name, name, len))
            return snprintf(buf, buflen, "kiln_l_%s", nc->m->lets[l].name), 0;
    return c_const(nc->m->defines, nc->m->ndefines, name, len, buf, buflen);
}

static int c_sizeof(void *p, const char *type, size_t len, char *buf, size_t buflen)
{
    (void)p;
    char name[16];
    if (len >= sizeof name)
        return -1;
    snprintf(name, sizeof name, "%.*s", (int)len, type);
    if (strcmp(name, "T") == 0)
        return snprintf(buf, buflen, "(int64_t)sizeof(kiln_t)"), 0;
    kiln_dtype dt = kiln_dtype_parse(name);
    if (dt == KILN_DT_INVALID)
        return -1;
    return snprintf(buf, buflen, "%zu", kiln_dtype_size(dt)), 0;
}

/* Translate expr (field path names it in errors) for variant v, the
 * helpers' error flag being flag. */
static int to_c_flag(render *r, const variant *v, const char *path, const char *expr,
                     const char *flag, char *out, size_t len)
{
    names_ctx nc = {r->x, &v->man};
    kiln_expr_c_env env = {c_name, c_sizeof, &nc, flag};
    kiln_error xe;
    if (kiln_expr_to_c(expr, &env, out, len, &xe) == 0)
        return 0;
    return kiln_fail(r->err, "%s (run %s, candidate %d): manifest %s: %s", v->k->name, v->m->run,
                     v->m->n, path, xe.msg);
}

static int to_c(render *r, const variant *v, const char *path, const char *expr, char *out,
                size_t len)
{
    return to_c_flag(r, v, path, expr, "&kiln_bad", out, len);
}

/* The lets as locals, in order (each uses only those before it), their
 * failures flagged through flag ("&kiln_bad", or "kiln_badp" in
 * V_scratch); (void) because a let may be used by no field. */
static int print_lets(render *r, const variant *v, const char *flag, FILE *f)
{
    char *e = malloc(C_EXPR_MAX), path[64];
    if (!e)
        return kiln_fail(r->err, "out of memory");
    int rc = 0;
    for (int l = 0; l < v->man.nlets && rc == 0; l++) {
        const kiln_manifest_let *lt = &v->man.lets[l];
        snprintf(path, sizeof path, "let.%s", lt->name);
        rc = to_c_flag(r, v, path, lt->expr, flag, e, C_EXPR_MAX);
        if (rc == 0)
            fprintf(f, "    const int64_t kiln_l_%s = %s; /* %s */\n    (void)kiln_l_%s;\n",
                    lt->name, e, lt->expr, lt->name);
    }
    free(e);
    return rc;
}

/* ---- the variants ------------------------------------------------------------------ */

/* The generated code's own names: scratch, stream and kiln_*. */
static int check_names(render *r)
{
    for (int a = 0; a < r->x->task->nargs; a++) {
        const char *name = r->x->task->args[a].name;
        if (strcmp(name, "scratch") == 0 || strcmp(name, "stream") == 0 ||
            strncmp(name, "kiln_", 5) == 0)
            return kiln_fail(r->err, "task %s has an argument named '%s', a name the CUDA "
                             "dispatch keeps for its own", r->x->task->name, name);
    }
    return 0;
}

static int load_variant(render *r, const ex_kernel *k, variant *v)
{
    memset(v, 0, sizeof *v);
    v->k = k;
    v->m = &r->x->m[k->first];
    kiln_error me;
    if (kiln_manifest_parse(k->source, strlen(k->source), r->x->task, &v->man, &me) < 0)
        return kiln_fail(r->err, "%s (run %s, candidate %d): %s", k->name, v->m->run, v->m->n,
                         me.msg);
    char *blanked = walk_text(k->source, &v->man, k->name, 0);
    v->source = walk_text(k->source, &v->man, k->name, 1);
    if (!blanked || !v->source) {
        free(blanked);
        return kiln_fail(r->err, "out of memory");
    }
    int rc = scan_directives(v, blanked);
    free(blanked);
    if (rc < 0)
        return kiln_fail(r->err, "%s (run %s, candidate %d): more than %d #include or #define "
                         "names, or one longer than the export keeps", k->name, v->m->run,
                         v->m->n, MAX_DIRECTIVES);
    return 0;
}

static void render_free(render *r)
{
    for (int i = 0; i < r->nv; i++)
        free(r->v[i].source);
    free(r->v);
}

static int load_variants(render *r)
{
    r->v = calloc((size_t)r->x->nk + 1, sizeof *r->v);
    if (!r->v)
        return kiln_fail(r->err, "out of memory");
    for (int k = 0; k < r->x->nk; k++)
        if (r->x->k[k].name[0] && load_variant(r, &r->x->k[k], &r->v[r->nv++]) < 0)
            return -1;
    return 0;
}

static void print_variant_file(const render *r, const variant *v, FILE *f)
{
    fprintf(f, "/* %s.cu - exported by kiln export (task %s, cuda, %s): run %s,\n"
               " * candidate %d, commit %s.\n"
               " * The source as verified, except that its kernels are renamed so that\n"
               " * several exported kernels build in one translation unit:\n",
            v->k->name, r->x->task->name, kiln_dtype_name(r->x->dt), v->m->run, v->m->n,
            v->m->commit);
    for (int l = 0; l < v->man.nlaunches; l++) {
        int seen = 0;
        for (int p = 0; p < l; p++)
            seen |= strcmp(v->man.launches[p].kernel, v->man.launches[l].kernel) == 0;
        if (!seen)
            fprintf(f, " *   %s -> %s_%s\n", v->man.launches[l].kernel, v->k->name,
                    v->man.launches[l].kernel);
    }
    fprintf(f, " * (in the code and the manifest; comments and strings are left alone).\n"
               " * %s.cuh includes this file inside namespace %s. */\n%s", r->base, v->k->name,
            v->source);
}

/* ---- the header: preamble -------------------------------------------------------------- */

static void upper(const char *s, char *buf, size_t len)
{
    size_t i = 0;
    for (; s[i] && i + 1 < len; i++)
        buf[i] = (char)(s[i] >= 'a' && s[i] <= 'z' ? s[i] - 'a' + 'A' : s[i]);
    buf[i] = '\0';
}

static const char *dtype_macro(kiln_dtype dt)
{
    return dt == KILN_DT_F16 ? "KILN_DTYPE_F16" : dt == KILN_DT_BF16 ? "KILN_DTYPE_BF16"
                                                                     : "KILN_DTYPE_F32";
}

/* "int rows, int cols": the dims, as the dispatch takes them. */
static void dim_params(const ex *x, char *buf, size_t len)
{
    size_t u = 0;
    buf[0] = '\0';
    for (int a = 0; a < x->task->nargs && u < len; a++)
        if (x->task->args[a].kind == KILN_ARG_DIM)
            u += (size_t)snprintf(buf + u, len - u, "%s%s %s", u ? ", " : "",
                                  kiln_arg_cuda_type(&x->task->args[a]), x->task->args[a].name);
}

/* "rows, cols" or, with all = 1, every task arg: "x, w, y, rows, cols, eps". */
static void arg_names(const ex *x, int all, char *buf, size_t len)
{
    size_t u = 0;
    buf[0] = '\0';
    for (int a = 0; a < x->task->nargs && u < len; a++)
        if (all || x->task->args[a].kind == KILN_ARG_DIM)
            u += (size_t)snprintf(buf + u, len - u, "%s%s", u ? ", " : "", x->task->args[a].name);
}

static void print_usage(const render *r, FILE *f, const char *guard)
{
    fprintf(f, "/* %s.cuh - generated by kiln export (task %s, cuda, %s, %s).\n"
               " * The kept kernels that win a shape, and %s(), which picks one by\n"
               " * dims (exact dims of a visible shape: the fastest there; other dims: the\n"
               " * best geomean) and launches it as its manifest says. decisions.json says\n"
               " * why each was chosen.\n *\n"
               " * Build: include this header in ONE .cu file of your program and compile\n"
               " * that file with nvcc for the GPU the kernels were verified on, e.g.\n"
               " *     nvcc -std=c++17 -O3 -arch=sm_90a -I DIR -c my_kernels.cu\n"
               " * (kiln compiles candidates with NVRTC, -default-device: with nvcc a\n"
               " * helper without __device__ is host code and fails to build; add it).\n"
               " * Other files get the prototypes alone with\n"
               " *     #define %s_DECLARE_ONLY\n"
               " *     #include \"%s.cuh\"\n"
               " * kiln_t is %s here (%s): one dtype per translation unit.\n"
               " * scratch: a device block of at least %s_scratch_bytes(dims) bytes\n"
               " * (NULL when that is 0), used by the call on stream and free after it. */\n"
               "#ifndef %s_CUH\n#define %s_CUH\n\n",
            r->base, r->x->task->name, kiln_dtype_name(r->x->dt), r->x->date, r->base, guard, r->base,
            r->x->dt == KILN_DT_BF16 ? "__nv_bfloat16" : r->x->dt == KILN_DT_F16 ? "__half" : "float",
            dtype_macro(r->x->dt), r->base, guard, guard);
}

static void print_preamble(const render *r, FILE *f, const char *guard)
{
    const char *mine = dtype_macro(r->x->dt);
    static const char *const all[] = {"KILN_DTYPE_F32", "KILN_DTYPE_F16", "KILN_DTYPE_BF16"};
    print_usage(r, f, guard);
    fprintf(f, "#include <limits.h>\n#include <stddef.h>\n#include <stdint.h>\n\n"
               "#include <cuda_runtime.h>\n\n");
    for (size_t i = 0; i < 3; i++)
        if (strcmp(all[i], mine) != 0)
            fprintf(f, "#ifdef %s\n#error \"%s.cuh: kiln_t is %s's here, but this export is "
                       "%s\"\n#endif\n", all[i], r->base, all[i], kiln_dtype_name(r->x->dt));
    char sig[1200], dims[512];
    kiln_ex_cuda_signature(r->x, sig, sizeof sig);
    dim_params(r->x, dims, sizeof dims);
    fprintf(f, "#ifndef %s\n#define %s\n#endif\n#include \"kiln_cuda.h\"\n\n"
               "/* Bytes of scratch the call needs at these dims (the most any variant\n"
               " * needs; 0: pass NULL). */\n"
               "size_t %s_scratch_bytes(%s);\n\n"
               "/* Runs %s on stream, asynchronously. Returns the first error:\n"
               " * cudaErrorInvalidValue when a launch cannot be made at these dims (an\n"
               " * expression overflows, divides by zero or gives a zero-sized grid; no\n"
               " * scratch where some is needed), else the CUDA runtime's. */\n%s;\n\n"
               "#ifndef %s_DECLARE_ONLY\n\n",
            mine, mine, r->base, dims, r->x->task->name, sig, guard);
}

static void print_helpers(FILE *f)
{
    fprintf(f, "%s\n", kiln_expr_c_helpers);
    fputs("#ifndef KILN_EXPORT_CUDA_HELPERS\n"
          "#define KILN_EXPORT_CUDA_HELPERS\n"
          "/* A device pointer that converts to whatever pointer type the kernel's\n"
          " * parameter has, as kiln passed it (a device address) when verifying. */\n"
          "struct kiln_x_ptr {\n"
          "    void *p;\n"
          "    template <class P> operator P *() const { return static_cast<P *>(p); }\n"
          "};\n"
          "static inline kiln_x_ptr kiln_x_arg(const void *p)\n"
          "{\n"
          "    kiln_x_ptr a = {const_cast<void *>(p)};\n"
          "    return a;\n"
          "}\n"
          "/* Every grid, block and cluster dim in 1..UINT32_MAX, smem in 0..INT_MAX. */\n"
          "static inline int kiln_x_dims_ok(const int64_t *d, int n)\n"
          "{\n"
          "    for (int i = 0; i < n; i++)\n"
          "        if (d[i] < 1 || d[i] > (int64_t)UINT32_MAX)\n"
          "            return 0;\n"
          "    return 1;\n"
          "}\n"
          "static inline cudaLaunchConfig_t kiln_x_config(const int64_t *g, const int64_t *b,\n"
          "                                               int64_t smem, cudaStream_t stream)\n"
          "{\n"
          "    cudaLaunchConfig_t c = {};\n"
          "    c.gridDim = dim3((unsigned)g[0], (unsigned)g[1], (unsigned)g[2]);\n"
          "    c.blockDim = dim3((unsigned)b[0], (unsigned)b[1], (unsigned)b[2]);\n"
          "    c.dynamicSmemBytes = (size_t)smem;\n"
          "    c.stream = stream;\n"
          "    return c;\n"
          "}\n"
          "#endif\n\n", f);
}

/* The variant's file inside its namespace: its includes first, outside. */
static void print_include(const variant *v, FILE *f)
{
    fprintf(f, "/* %s: run %s, candidate %d */\n", v->k->name, v->m->run, v->m->n);
    for (int i = 0; i < v->nincludes; i++)
        fprintf(f, "#include %s\n", v->includes[i]);
    fprintf(f, "namespace %s {\n#include \"%s.cu\"\n}\n", v->k->name, v->k->name);
    for (int i = 0; i < v->ndefines; i++)
        fprintf(f, "#undef %s\n", v->defines[i]);
    fputc('\n', f);
}

/* ---- the header: per variant ---------------------------------------------------------- */

/* static int64_t V_scratch(dims, off, size, bad): the block's total. */
static int print_scratch_fn(render *r, const variant *v, FILE *f)
{
    char dims[512], e[C_EXPR_MAX], path[48];
    dim_params(r->x, dims, sizeof dims);
    fprintf(f, "static int64_t %s_scratch(%s%sint64_t *kiln_off, int64_t *kiln_size, int *kiln_badp)\n"
               "{\n    int64_t kiln_total = 0, kiln_n;\n    (void)kiln_n;\n", v->k->name, dims,
            dims[0] ? ", " : "");
    for (int a = 0; a < r->x->task->nargs; a++)
        if (r->x->task->args[a].kind == KILN_ARG_DIM)
            fprintf(f, "    (void)%s;\n", r->x->task->args[a].name);
    if (print_lets(r, v, "kiln_badp", f) < 0)
        return -1;
    for (int s = 0; s < v->man.nscratch; s++) {
        const kiln_scratch_spec *sc = &v->man.scratch[s];
        snprintf(path, sizeof path, "scratch[%d].bytes", s);
        /* the translation's flag is kiln_bad, passed on to *kiln_badp */
        if (to_c(r, v, path, sc->bytes, e, sizeof e) < 0)
            return -1;
        fprintf(f, "    {\n        int kiln_bad = 0;\n        /* %s: %s bytes, init %s */\n"
                   "        kiln_n = %s;\n        if (kiln_bad || kiln_n < 1)\n            *kiln_badp = 1;\n"
                   "        if (kiln_off)\n            kiln_off[%d] = kiln_total;\n"
                   "        if (kiln_size)\n            kiln_size[%d] = kiln_n;\n"
                   "        kiln_total = kiln_x_add(kiln_total, kiln_x_mul(kiln_x_cdiv(kiln_n, %d, "
                   "kiln_badp), %d, kiln_badp), kiln_badp);\n    }\n",
                sc->name, sc->bytes, sc->zero ? "zero" : "none", e, s, s, SCRATCH_ALIGN,
                SCRATCH_ALIGN);
    }
    fprintf(f, "    (void)kiln_off;\n    (void)kiln_size;\n    (void)kiln_badp;\n"
               "    return kiln_total;\n}\n\n");
    return 0;
}

/* "kiln_x_arg(x), kiln_x_arg(w), kiln_x_arg(y), cols, eps" for launch l. */
static void launch_args(const render *r, const kiln_launch_spec *ls, char *buf, size_t len)
{
    size_t u = 0;
    buf[0] = '\0';
    for (int a = 0; a < ls->nargs && u < len; a++) {
        const char *sep = a ? ", " : "";
        int ix = ls->arg[a];
        if (ix >= KILN_WIRE_ARG_IMM) {   /* a computed value, kiln_i<j> (print_imms) */
            static const char *const ct[] = {"", "int", "int64_t", "float", "double"};
            int j = ix - KILN_WIRE_ARG_IMM, k = ls->imm[j].kind;
            u += (size_t)snprintf(buf + u, len - u, "%s(%s)kiln_i%d", sep,
                                  k >= 1 && k <= 4 ? ct[k] : "int", j);
            continue;
        }
        if (ix < 0) {
            u += (size_t)snprintf(buf + u, len - u, "%skiln_x_arg(kiln_s%d)", sep, -ix - 1);
            continue;
        }
        const kiln_arg *arg = &r->x->task->args[ix];
        int buffer = arg->kind == KILN_ARG_INPUT || arg->kind == KILN_ARG_OUTPUT;
        u += (size_t)snprintf(buf + u, len - u, buffer ? "%skiln_x_arg(%s)" : "%s%s", sep, arg->name);
    }
}

/* A launch's computed arguments as locals kiln_i<j>, an i32 one out of
 * range flagging kiln_bad (the static stage's check at each shape). */
static int print_imms(render *r, const variant *v, const kiln_launch_spec *ls, const char *path,
                      FILE *f)
{
    char e[C_EXPR_MAX], p[64];
    for (int j = 0; j < ls->nimm; j++) {
        const kiln_imm_spec *im = &ls->imm[j];
        int real = im->kind == KILN_WIRE_F32 || im->kind == KILN_WIRE_F64;
        snprintf(p, sizeof p, "%s.args (computed %d)", path, j);
        if (to_c(r, v, p, im->expr, e, sizeof e) < 0)
            return -1;
        fprintf(f, "        const %s kiln_i%d = %s; /* %s */\n", real ? "double" : "int64_t", j, e,
                im->expr);
        if (im->kind == KILN_WIRE_I32)
            fprintf(f, "        if (kiln_i%d < INT_MIN || kiln_i%d > INT_MAX)\n"
                       "            kiln_bad = 1;\n", j, j);
    }
    return 0;
}

/* "{e0, e1, 1}" from n expressions of a grid, block or cluster. */
static int dims3(render *r, const variant *v, const char *path, const char (*ex)[KILN_EXPR_MAX],
                 int n, char *out, size_t len)
{
    char e[3][C_EXPR_MAX], p[64];
    for (int d = 0; d < 3; d++) {
        snprintf(p, sizeof p, "%s[%d]", path, d);
        if (d >= n)
            snprintf(e[d], sizeof e[d], "1");
        else if (to_c(r, v, p, ex[d], e[d], sizeof e[d]) < 0)
            return -1;
    }
    if (strlen(e[0]) + strlen(e[1]) + strlen(e[2]) + 8 > len)
        return kiln_fail(r->err, "%s: %s: expressions too long", v->k->name, path);
    snprintf(out, len, "{%s, %s, %s}", e[0], e[1], e[2]);
    return 0;
}

static int print_launch(render *r, const variant *v, int l, FILE *f)
{
    const kiln_launch_spec *ls = &v->man.launches[l];
    char path[32], p[48], args[2048], smem[C_EXPR_MAX];
    char *g = malloc(3 * C_EXPR_MAX + 16), *b = malloc(3 * C_EXPR_MAX + 16);
    char *c = malloc(3 * C_EXPR_MAX + 16);
    int rc = g && b && c ? 0 : kiln_fail(r->err, "out of memory");
    snprintf(path, sizeof path, "launches[%d]", l);
    snprintf(p, sizeof p, "%s.smem", path);
    if (rc == 0) {
        char pg[48], pb[48], pc[48];
        snprintf(pg, sizeof pg, "%s.grid", path);
        snprintf(pb, sizeof pb, "%s.block", path);
        snprintf(pc, sizeof pc, "%s.cluster", path);
        rc = dims3(r, v, pg, ls->grid, ls->ngrid, g, 3 * C_EXPR_MAX + 16) < 0 ||
             dims3(r, v, pb, ls->block, ls->nblock, b, 3 * C_EXPR_MAX + 16) < 0 ||
             (ls->ncluster && dims3(r, v, pc, ls->cluster, ls->ncluster, c, 3 * C_EXPR_MAX + 16) < 0) ||
             to_c(r, v, p, ls->smem, smem, sizeof smem) < 0 ? -1 : 0;
    }
    char base[KILN_KERNEL_NAME_MAX], when[C_EXPR_MAX] = "";
    kiln_manifest_kernel_base(ls->kernel, base, sizeof base);
    if (rc == 0 && !base[0])
        rc = kiln_fail(r->err, "export: %s.kernel '%s' is a qualified name, which the export "
                       "cannot rename; give the kernel an unqualified name", path, ls->kernel);
    snprintf(p, sizeof p, "%s.when", path);
    if (rc == 0 && ls->when[0] && to_c(r, v, p, ls->when, when, sizeof when) < 0)
        rc = -1;
    if (rc == 0) {
        launch_args(r, ls, args, sizeof args);
        if (when[0])   /* the manifest's "when": this launch only where it holds */
            fprintf(f, "    if (%s)\n", when);
        fprintf(f, "    { /* %s: %s */\n        const int64_t kiln_g[3] = %s;\n"
                   "        const int64_t kiln_b[3] = %s;\n        const int64_t kiln_smem = %s;\n",
                path, ls->kernel, g, b, smem);
        if (print_imms(r, v, ls, path, f) < 0)
            rc = -1;
    }
    if (rc == 0) {
        if (ls->ncluster)
            fprintf(f, "        const int64_t kiln_c[3] = %s;\n", c);
        fprintf(f, "        if (kiln_bad || !kiln_x_dims_ok(kiln_g, 3) || !kiln_x_dims_ok(kiln_b, 3) ||\n"
                   "            %skiln_smem < 0 || kiln_smem > INT_MAX)\n"
                   "            return cudaErrorInvalidValue;\n"
                   "        if (kiln_smem > 48 * 1024 &&\n"
                   "            (kiln_e = cudaFuncSetAttribute(%s::%s_%s, cudaFuncAttributeMaxDynamicSharedMemorySize,\n"
                   "                                           (int)kiln_smem)) != cudaSuccess)\n"
                   "            return kiln_e;\n"
                   "        cudaLaunchConfig_t kiln_cfg = kiln_x_config(kiln_g, kiln_b, kiln_smem, stream);\n",
                ls->ncluster ? "!kiln_x_dims_ok(kiln_c, 3) || " : "", v->k->name, v->k->name, ls->kernel);
        if (ls->ncluster)   /* more than 8 blocks is a size the kernel must opt into */
            fprintf(f, "        if ((kiln_c[0] > 8 || kiln_c[1] > 8 || kiln_c[2] > 8 ||\n"
                       "             kiln_c[0] * kiln_c[1] * kiln_c[2] > 8) &&\n"
                       "            (kiln_e = cudaFuncSetAttribute(%s::%s_%s, cudaFuncAttributeNonPortableClusterSizeAllowed,\n"
                       "                                           1)) != cudaSuccess)\n"
                       "            return kiln_e;\n",
                    v->k->name, v->k->name, ls->kernel);
        if (ls->ncluster)
            fprintf(f, "        cudaLaunchAttribute kiln_at[1];\n"
                       "        kiln_at[0].id = cudaLaunchAttributeClusterDimension;\n"
                       "        kiln_at[0].val.clusterDim.x = (unsigned)kiln_c[0];\n"
                       "        kiln_at[0].val.clusterDim.y = (unsigned)kiln_c[1];\n"
                       "        kiln_at[0].val.clusterDim.z = (unsigned)kiln_c[2];\n"
                       "        kiln_cfg.attrs = kiln_at;\n        kiln_cfg.numAttrs = 1;\n");
        fprintf(f, "        if ((kiln_e = cudaLaunchKernelEx(&kiln_cfg, %s::%s_%s%s%s)) != cudaSuccess)\n"
                   "            return kiln_e;\n    }\n",
                v->k->name, v->k->name, ls->kernel, args[0] ? ", " : "", args);
    }
    free(g);
    free(b);
    free(c);
    return rc;
}

/* static cudaError_t V_run(task args, scratch, stream). */
static int print_run_fn(render *r, const variant *v, FILE *f)
{
    char params[1024], dims[512];
    params_open(r->x, params, sizeof params);
    arg_names(r->x, 0, dims, sizeof dims);
    int ns = v->man.nscratch > 0 ? v->man.nscratch : 1;
    fprintf(f, "static cudaError_t %s_run%s, void *scratch, cudaStream_t stream)\n{\n"
               "    int kiln_bad = 0;\n    cudaError_t kiln_e;\n"
               "    int64_t kiln_off[%d], kiln_size[%d];\n"
               "    int64_t kiln_total = %s_scratch(%s%skiln_off, kiln_size, &kiln_bad);\n",
            v->k->name, params, ns, ns, v->k->name, dims, dims[0] ? ", " : "");
    for (int a = 0; a < r->x->task->nargs; a++)
        fprintf(f, "    (void)%s;\n", r->x->task->args[a].name);
    if (print_lets(r, v, "&kiln_bad", f) < 0)
        return -1;
    fprintf(f, "    (void)kiln_e;\n    if (kiln_bad || (kiln_total > 0 && !scratch))\n"
               "        return cudaErrorInvalidValue;\n");
    for (int s = 0; s < v->man.nscratch; s++) {
        fprintf(f, "    char *const kiln_s%d = (char *)scratch + kiln_off[%d]; /* %s */\n", s, s,
                v->man.scratch[s].name);
        if (v->man.scratch[s].zero)
            fprintf(f, "    if ((kiln_e = cudaMemsetAsync(kiln_s%d, 0, (size_t)kiln_size[%d], stream)) != "
                       "cudaSuccess)\n        return kiln_e;\n", s, s);
    }
    for (int l = 0; l < v->man.nlaunches; l++)
        if (print_launch(r, v, l, f) < 0)
            return -1;
    fprintf(f, "    return cudaSuccess;\n}\n\n");
    return 0;
}

/* ---- the header: scratch bytes and the dispatch ---------------------------------------- */

static void print_scratch_bytes(const render *r, FILE *f)
{
    char dims[512], names[512];
    dim_params(r->x, dims, sizeof dims);
    arg_names(r->x, 0, names, sizeof names);
    fprintf(f, "size_t %s_scratch_bytes(%s)\n{\n    int64_t kiln_most = 0, kiln_n;\n", r->base, dims);
    for (int i = 0; i < r->nv; i++)
        fprintf(f, "    {\n        int kiln_bad = 0;\n"
                   "        kiln_n = %s_scratch(%s%sNULL, NULL, &kiln_bad);\n"
                   "        if (!kiln_bad && kiln_n > kiln_most)\n            kiln_most = kiln_n;\n    }\n",
                r->v[i].k->name, names, names[0] ? ", " : "");
    fprintf(f, "    (void)kiln_n;\n    return (size_t)kiln_most;\n}\n\n");
}

/* Exact visible dims: the winner there; other dims: the best geomean
 * where its preconditions hold, else the fallback, which requires nothing,
 * so the dispatch is right at every shape. */
static int print_dispatch(const render *r, FILE *f)
{
    const ex *x = r->x;
    char sig[1200], args[1024];
    kiln_ex_cuda_signature(x, sig, sizeof sig);
    arg_names(x, 1, args, sizeof args);
    fprintf(f, "%s\n{\n", sig);
    for (int c = 0; c < x->nc; c++) {
        char cond[512], dims[256];
        const ex_choice *ch = &x->c[c];
        kiln_shape_format(x->task, &ch->shape, dims, sizeof dims);
        if (ch->winner < 0 || !kiln_ex_condition(x, &ch->shape, cond, sizeof cond)) {
            fprintf(f, "    /* %s (%s %s): not measured, the fallback */\n", dims, ch->groups, ch->ids);
            continue;
        }
        fprintf(f, "    if (%s) /* %s %s: %.2fx against the baseline */\n"
                   "        return %s_run(%s, scratch, stream);\n",
                cond, ch->groups, ch->ids, kiln_ex_speedup_at(x, ch->winner, &ch->shape),
                x->k[x->m[ch->winner].kernel].name, args);
    }
    if (x->best != x->fallback) {
        char pre[512];
        if (kiln_ex_precond_c(x, &x->k[x->best].pre, pre, sizeof pre, r->err) < 0)
            return -1;
        fprintf(f, "    if (%s) /* %s's preconditions: the best geomean, %.2fx against the "
                   "task's baseline */\n"
                   "        return %s_run(%s, scratch, stream);\n",
                pre, x->k[x->best].name, x->k[x->best].geomean, x->k[x->best].name, args);
    }
    fprintf(f, "    return %s_run(%s, scratch, stream); /* %s: %.2fx against the task's "
               "baseline */\n}\n\n",
            x->k[x->fallback].name, args,
            x->best != x->fallback ? "requires nothing" : "the best geomean",
            x->k[x->fallback].geomean);
    return 0;
}

static int print_header(render *r, FILE *f)
{
    char guard[KILN_NAME_MAX + 16];
    upper(r->base, guard, sizeof guard);
    print_preamble(r, f, guard);
    print_helpers(f);
    for (int i = 0; i < r->nv; i++)
        print_include(&r->v[i], f);
    for (int i = 0; i < r->nv; i++)
        if (print_scratch_fn(r, &r->v[i], f) < 0 || print_run_fn(r, &r->v[i], f) < 0)
            return -1;
    print_scratch_bytes(r, f);
    if (print_dispatch(r, f) < 0)
        return -1;
    fprintf(f, "#endif /* %s_DECLARE_ONLY */\n#endif\n", guard);
    return 0;
}

/* ---- files ------------------------------------------------------------------------------ */

static ex_file *add_file(ex_file **files, int *n, const char *name)
{
    ex_file *p = realloc(*files, (size_t)(*n + 1) * sizeof *p);
    if (!p)
        return NULL;
    *files = p;
    memset(&p[*n], 0, sizeof *p);
    snprintf(p[*n].name, sizeof p[*n].name, "%s", name);
    return &p[(*n)++];
}

void kiln_ex_files_free(ex_file *files, int n)
{
    for (int i = 0; i < n; i++)
        free(files[i].text);
    free(files);
}

/* Render one file with print(r, arg, f) into files. */
static int render_file(render *r, ex_file **files, int *n, const char *name,
                       int (*print)(render *, const void *, FILE *), const void *arg)
{
    ex_file *out = add_file(files, n, name);
    FILE *f = out ? open_memstream(&out->text, &out->len) : NULL;
    if (!f)
        return kiln_fail(r->err, "out of memory");
    int rc = print(r, arg, f);
    if (fclose(f) != 0 && rc == 0)
        rc = kiln_fail(r->err, "out of memory");
    return rc;
}

static int print_variant_cb(render *r, const void *v, FILE *f)
{
    print_variant_file(r, v, f);
    return 0;
}

static int print_header_cb(render *r, const void *arg, FILE *f)
{
    (void)arg;
    return print_header(r, f);
}

static int read_kiln_cuda_h(render *r, ex_file **files, int *n)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/kiln_cuda.h", kiln_cuda_include_dir());
    FILE *in = fopen(path, "rb");
    if (!in)
        return kiln_fail(r->err, "%s: %s", path, strerror(errno));
    ex_file *out = add_file(files, n, "kiln_cuda.h");
    FILE *f = out ? open_memstream(&out->text, &out->len) : NULL;
    char buf[8192];
    size_t got;
    while (f && (got = fread(buf, 1, sizeof buf, in)) > 0)
        fwrite(buf, 1, got, f);
    int bad = ferror(in);
    fclose(in);
    if (!f || fclose(f) != 0 || bad)
        return kiln_fail(r->err, "%s: cannot read", path);
    return 0;
}

int kiln_ex_cuda_render(const ex *x, ex_file **files, int *n, kiln_error *err)
{
    render r = {.x = x, .err = err};
    kiln_ex_cuda_base(x, r.base, sizeof r.base);
    *files = NULL;
    *n = 0;
    int rc = check_names(&r) < 0 || load_variants(&r) < 0 ? -1 : 0;
    for (int i = 0; i < r.nv && rc == 0; i++) {
        char name[KILN_NAME_MAX + 48];
        snprintf(name, sizeof name, "%s.cu", r.v[i].k->name);
        rc = render_file(&r, files, n, name, print_variant_cb, &r.v[i]);
    }
    if (rc == 0) {
        char name[KILN_NAME_MAX + 48];
        snprintf(name, sizeof name, "%s.cuh", r.base);
        rc = render_file(&r, files, n, name, print_header_cb, NULL);
    }
    if (rc == 0)
        rc = read_kiln_cuda_h(&r, files, n);
    render_free(&r);
    if (rc < 0) {
        kiln_ex_files_free(*files, *n);
        *files = NULL;
        *n = 0;
    }
    return rc;
}

/* ---- decisions.json ----------------------------------------------------------------------- */

void kiln_ex_cuda_kernel_json(const ex *x, const ex_kernel *k, cJSON *o)
{
    kiln_manifest *m = calloc(1, sizeof *m);
    kiln_error me;
    cJSON_AddStringToObject(o, "namespace", k->name);
    if (!m || kiln_manifest_parse(k->source, strlen(k->source), x->task, m, &me) < 0) {
        free(m);
        return;
    }
    cJSON *ks = cJSON_AddArrayToObject(o, "kernels");
    for (int l = 0; l < m->nlaunches; l++) {
        char exported[KILN_NAME_MAX + 32 + KILN_KERNEL_NAME_MAX];
        snprintf(exported, sizeof exported, "%s_%s", k->name, m->launches[l].kernel);
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "manifest", m->launches[l].kernel);
        cJSON_AddStringToObject(e, "exported", exported);
        cJSON_AddItemToArray(ks, e);
    }
    cJSON *kn = cJSON_AddObjectToObject(o, "knobs");
    for (int i = 0; i < m->nknobs; i++)
        cJSON_AddNumberToObject(kn, m->knobs[i].name, strtod(m->knobs[i].value, NULL));
    free(m);
}
