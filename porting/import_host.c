/* import_host.c - one host function's parameters, locals, launches and
 * other statements (import_host.h).
 *
 * Statements are walked recursively (blocks, if/else, loops, switch,
 * do-while), each launch remembering the outermost control statement
 * around it. A simple statement is a launch, a declaration (type words,
 * then declarators with `= init`, `(args)` or `{args}`), or something
 * else: a call of a CUDA API (dropped with a note when kiln does it
 * itself, a problem when it is host work), a call of another launching
 * function (a problem), or a check or message (a note). After the walk,
 * every later assignment, increment or address-taking of a variable is
 * found, so a value used in a launch is known to be its initializer. */
#include "import_host.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct walk {
    imp_host *h;
    int ctl;           /* the outermost loop or switch around, -1 */
    int nifs;          /* the ifs around, outermost first */
    int ifs[IMP_MAX_IFS], if_else[IMP_MAX_IFS];
    int dispatch;      /* the type dispatch around, -1 */
    int scope_end;     /* where the current block ends */
} walk;

static int stmt(walk *w, int i, int to);

static int line(const imp_host *h, int tok)
{
    return h->s->tok[tok < h->s->ntok ? tok : h->s->ntok - 1].line;
}

static int is_ident(const imp_src *s, int i)
{
    return i >= 0 && i < s->ntok && s->tok[i].kind == IMP_IDENT;
}

static imp_var *new_var(imp_host *h)
{
    if (imp_grow((void **)&h->var, h->nvar, &h->capvar, sizeof *h->var) < 0)
        return NULL;
    imp_var *v = &h->var[h->nvar++];
    *v = (imp_var){.init_from = -1, .init_to = -1, .changed = -1};
    return v;
}

/* ---- parameters ----------------------------------------------------------- */

int imp_params(const imp_src *s, int open, int *type_from, int *type_to, int *name, int cap)
{
    int pf[64], pt[64], close = s->tok[open].match;
    int n = imp_split(s, open + 1, close, 1, pf, pt, 64);
    if (n == 1 && pt[0] - pf[0] == 1 && imp_is(s, pf[0], "void"))
        return 0;
    if (n < 0 || n > cap)
        return -1;
    for (int k = 0; k < n; k++) {
        int end = imp_find(s, pf[k], pt[k], "=");
        if (end > pf[k] && imp_is(s, end - 1, "]"))
            end = s->tok[end - 1].match;
        int named = end - 1 > pf[k] && is_ident(s, end - 1);
        name[k] = named ? end - 1 : -1;
        type_from[k] = pf[k];
        type_to[k] = named ? end - 1 : end;
    }
    return n;
}

static int read_params(imp_host *h)
{
    int tf[IMP_MAX_ARGS * 2], tt[IMP_MAX_ARGS * 2], nm[IMP_MAX_ARGS * 2];
    int n = imp_params(h->s, h->fn->params, tf, tt, nm, IMP_MAX_ARGS * 2);
    if (n < 0) {
        imp_addf(&h->problems, "%s:%d: cannot translate the parameters of this function: more "
                 "than %d", h->file, line(h, h->fn->params), IMP_MAX_ARGS * 2);
        return 0;
    }
    for (int k = 0; k < n; k++) {
        if (nm[k] < 0)
            continue;
        imp_var *v = new_var(h);
        if (!v)
            return -1;
        v->name = nm[k];
        v->type_from = tf[k];
        v->type_to = tt[k];
        v->cls = imp_type_class(h->s, tf[k], tt[k], v->elem, sizeof v->elem);
        v->is_param = 1;
        v->visible_from = h->fn->body;
        v->scope_end = h->fn->last;
        v->stmt_from = tf[k];
        v->stmt_to = nm[k] + 1;
    }
    return 0;
}

/* ---- launches ------------------------------------------------------------- */

static int bad_launch(walk *w, int from, const char *why)
{
    imp_addf(&w->h->problems, "%s:%d: cannot translate the launch: %s", w->h->file,
             line(w->h, from), why);
    return 0;
}

/* kernel[<targs>]<<<cfg>>>(args); in [from, end), "<<<" at open. */
static int launch(walk *w, int from, int end, int open)
{
    const imp_src *s = w->h->s;
    imp_launch L = {.from = from, .to = end, .targ_from = -1, .targ_to = -1, .ctl = w->ctl,
                    .nifs = w->nifs, .dispatch = w->dispatch};
    memcpy(L.ifs, w->ifs, sizeof L.ifs);
    memcpy(L.if_else, w->if_else, sizeof L.if_else);
    int k = open - 1;
    if (imp_is(s, k, ">")) {          /* kernel<...> */
        int depth = 0;
        for (; k > from; k--) {
            depth += imp_is(s, k, ">") - imp_is(s, k, "<");
            if (depth == 0)
                break;
        }
        L.targ_from = k + 1;
        L.targ_to = open - 1;
        k--;
    }
    L.kernel = k;
    while (k - 2 >= from && imp_is(s, k - 1, "::") && is_ident(s, k - 2))
        k -= 2;
    L.qual = k;
    int close = imp_find(s, open + 1, end, ">>>");
    int paren = close + 1;
    if (!is_ident(s, L.kernel) || k != from || close >= end || !imp_is(s, paren, "(") ||
        s->tok[paren].match != end - 1)
        return bad_launch(w, from, "import reads launches written as a statement "
                          "'kernel<<<grid, block[, smem[, stream]]>>>(args);'");
    L.ncfg = imp_split(s, open + 1, close, 0, L.cfg_from, L.cfg_to, 4);
    L.nargs = imp_split(s, paren + 1, end - 1, 0, L.arg_from, L.arg_to, IMP_MAX_ARGS);
    if (L.ncfg < 2)
        return bad_launch(w, from, "the launch has fewer than grid and block");
    if (L.nargs < 0)
        return bad_launch(w, from, "the kernel takes more arguments than kiln passes");
    if (imp_grow((void **)&w->h->launch, w->h->nlaunch, &w->h->caplaunch, sizeof L) < 0)
        return -1;
    w->h->launch[w->h->nlaunch++] = L;
    return 0;
}

/* ---- declarations --------------------------------------------------------- */

/* Does [from, end) start as a declaration "TYPE... NAME"? The index of the
 * first declarator's name, or -1. */
static int decl_name(const imp_src *s, int from, int end)
{
    static const char *const not_types[] = {"return", "throw", "delete", "goto", "else",
                                            "case", "default", "using", "typedef"};
    int idents = 0, i = from;
    for (size_t k = 0; k < sizeof not_types / sizeof not_types[0]; k++)
        if (imp_is(s, from, not_types[k]))
            return -1;
    for (; i < end; i++) {
        if (imp_is(s, i, "=") || imp_is(s, i, "(") || imp_is(s, i, "{") || imp_is(s, i, ",") ||
            imp_is(s, i, "[") || imp_is(s, i, ";"))
            break;
        if (imp_is(s, i, "<")) {              /* std::array<int, 3> and the like */
            int depth = 0;
            for (; i < end; i++) {
                depth += imp_is(s, i, "<") - imp_is(s, i, ">");
                if (depth == 0)
                    break;
            }
            continue;
        }
        if (is_ident(s, i))
            idents++;
        else if (!imp_is(s, i, "::") && !imp_is(s, i, "*") && !imp_is(s, i, "&"))
            return -1;
    }
    return idents >= 2 && is_ident(s, i - 1) ? i - 1 : -1;
}

/* A dim3's components from "dim3(a, b)", "dim3{a, b}", "{a, b}" in [f, t). */
static int dim3_ctor(const imp_src *s, int f, int t, imp_var *v)
{
    int open = imp_is(s, f, "dim3") ? f + 1 : f;
    if ((!imp_is(s, open, "(") && !imp_is(s, open, "{")) || s->tok[open].match != t - 1)
        return 0;
    v->ncomp = imp_split(s, open + 1, t - 1, 0, v->comp_from, v->comp_to, 3);
    v->cls = IMP_C_DIM3;
    return 1;
}

/* One declarator [ds, de) whose name is at name; the type is v's. */
static void declarator(const imp_src *s, int name, int de, imp_var *v)
{
    int after = name + 1;
    v->name = name;
    if (after >= de)
        return;
    if (imp_is(s, after, "=")) {
        if ((v->cls == IMP_C_DIM3 || v->cls == IMP_C_AUTO) && dim3_ctor(s, after + 1, de, v))
            return;
        v->init_from = after + 1;
        v->init_to = de;
        if (v->cls == IMP_C_DIM3) {      /* dim3 g = rows; */
            v->ncomp = 1;
            v->comp_from[0] = after + 1;
            v->comp_to[0] = de;
        }
    } else if (imp_is(s, after, "(") || imp_is(s, after, "{")) {
        if (v->cls == IMP_C_DIM3) {
            dim3_ctor(s, after, de, v);
        } else if (s->tok[after].match == de - 1) {
            v->init_from = after + 1;
            v->init_to = de - 1;
        }
    }
}

/* A declaration in [from, end) whose first name is at name: each
 * declarator becomes a local. */
static int declaration(walk *w, int from, int end, int name)
{
    const imp_src *s = w->h->s;
    int df[16], dt[16];
    int n = imp_split(s, name, end, 0, df, dt, 16);
    for (int k = 0; k < n; k++) {
        int nm = df[k];
        while (nm < dt[k] && (imp_is(s, nm, "*") || imp_is(s, nm, "&")))
            nm++;
        if (!is_ident(s, nm))
            continue;
        imp_var *v = new_var(w->h);
        if (!v)
            return -1;
        v->type_from = from;
        v->type_to = name;
        v->cls = imp_type_class(s, from, name, v->elem, sizeof v->elem);
        if (nm > df[k] && imp_is(s, df[k], "*"))
            v->cls = IMP_C_PTR;
        v->visible_from = dt[k];
        v->scope_end = w->scope_end;
        v->stmt_from = from;
        v->stmt_to = end + 1;
        declarator(s, nm, dt[k], v);
    }
    return 0;
}

/* ---- other statements ---------------------------------------------------- */

static int in_list(const imp_src *s, int i, const char *const *list, size_t n)
{
    for (size_t k = 0; k < n; k++)
        if (imp_is(s, i, list[k]))
            return 1;
    return 0;
}

static const char *const host_work[] = {
    "cudaMalloc", "cudaMallocAsync", "cudaMallocManaged", "cudaMemset", "cudaMemsetAsync",
    "cudaMemcpy", "cudaMemcpyAsync", "cudaMemcpyToSymbol", "cudaMemcpyToSymbolAsync",
    "cudaFree", "cudaFreeAsync", "cudaStreamCreate", "cudaStreamCreateWithFlags",
    "cudaEventCreate", "cudaEventRecord", "cudaStreamWaitEvent", "cudaLaunchKernel",
    "cudaLaunchKernelEx", "cudaLaunchCooperativeKernel", "cudaGraphLaunch",
    "cudaStreamBeginCapture", "cublasGemmEx", "cublasSgemm", "cuLaunchKernel",
};
static const char *const kiln_checks[] = {
    "cudaGetLastError", "cudaPeekAtLastError", "C10_CUDA_KERNEL_LAUNCH_CHECK",
    "cudaDeviceSynchronize", "cudaStreamSynchronize",
};
static const char *const kiln_sets[] = {
    "cudaFuncSetAttribute", "cudaFuncSetCacheConfig", "cudaFuncSetSharedMemConfig",
};
static const char *const queries[] = {
    "cudaGetDeviceProperties", "cudaDeviceGetAttribute", "cudaGetDevice",
    "cudaOccupancyMaxActiveBlocksPerMultiprocessor", "cudaOccupancyMaxPotentialBlockSize",
    "cudaFuncGetAttributes", "cudaGetDeviceCount", "getCurrentDeviceProperties",
};
#define N(a) (sizeof a / sizeof a[0])

/* Host work, a call of another launching function, or a call kiln makes
 * unnecessary, in [from, end): a problem or a note. 1 when one was told. */
static int calls(walk *w, int from, int end)
{
    imp_host *h = w->h;
    const imp_src *s = h->s;
    char text[160], name[64];
    imp_text(s, from, end, text, sizeof text);
    for (int i = from; i < end; i++) {
        if (!is_ident(s, i) || !imp_is(s, i + 1, "("))
            continue;
        imp_word(s, i, name, sizeof name);
        int other = imp_fn_find(h->f, s, name, IMP_F_HOST, 0);
        const imp_fn *o = other >= 0 ? &h->f->fn[other] : NULL;
        if (in_list(s, i, host_work, N(host_work)))
            imp_addf(&h->problems, "%s:%d: cannot translate '%s': host-side work (memory, "
                     "copies, events, streams, other launch APIs) has no manifest form; a "
                     "manifest has launches and scratch buffers, zeroed or not", h->file,
                     line(h, i), text);
        else if (o && o != h->fn && o->body >= 0 && imp_has_launch(s, o->body, o->last))
            imp_addf(&h->problems, "%s:%d: cannot translate the call of %s: it launches "
                     "kernels itself (line %d); import reads one function's launches, chosen "
                     "with --function", h->file, line(h, i), name, line(h, o->name));
        else if (in_list(s, i, kiln_checks, N(kiln_checks)))
            imp_addf(&h->notes, "line %d: dropped '%s': kiln checks every launch and waits "
                     "for it itself", line(h, i), text);
        else if (in_list(s, i, kiln_sets, N(kiln_sets)))
            imp_addf(&h->notes, "line %d: dropped '%s': kiln raises a kernel's dynamic shared "
                     "memory limit to what its launch asks for", line(h, i), text);
        else if (in_list(s, i, queries, N(queries)))
            imp_addf(&h->notes, "line %d: '%s' is a runtime query; a launch that uses what it "
                     "sets cannot be translated", line(h, i), text);
        else
            continue;
        return 1;
    }
    return 0;
}

/* A statement that is no launch, declaration or known call. */
static void other(walk *w, int from, int end)
{
    char text[160];
    imp_text(w->h->s, from, end, text, sizeof text);
    imp_addf(&w->h->notes, "line %d: not translated: '%s' (host checks and messages have no "
             "manifest form)", line(w->h, from), text);
}

/* ---- the framework's idioms ------------------------------------------------ */

static int block(walk *w, int from, int to);

static int is_dispatch_name(const imp_host *h, int i)
{
    char n[64];
    imp_word(h->s, i, n, sizeof n);
    if ((strncmp(n, "AT_DISPATCH_", 12) == 0 || strncmp(n, "VLLM_DISPATCH_", 14) == 0) &&
        (strstr(n, "TYPES") || strstr(n, "SWITCH")))   /* not VLLM_DISPATCH_BOOL */
        return 1;
    for (int k = 0; h->dispatch && k < h->dispatch->n; k++)
        if (strcmp(h->dispatch->v[k], n) == 0)
            return 1;
    return 0;
}

/* NAME(..., [&] { body }) in [from, end): the '{' of the lambda's body, or -1. */
static int dispatch_body(const imp_host *h, int from, int end)
{
    const imp_src *s = h->s;
    int pf[12], pt[12];
    if (!is_ident(s, from) || !imp_is(s, from + 1, "(") || s->tok[from + 1].match != end - 1 ||
        !is_dispatch_name(h, from))
        return -1;
    int n = imp_split(s, from + 2, end - 1, 0, pf, pt, 12);
    if (n < 1 || !imp_is(s, pf[n - 1], "["))
        return -1;
    int i = s->tok[pf[n - 1]].match + 1;
    if (imp_is(s, i, "("))
        i = s->tok[i].match + 1;
    while (i < pt[n - 1] && !imp_is(s, i, "{"))   /* mutable, -> void */
        i++;
    return i < pt[n - 1] && s->tok[i].match == pt[n - 1] - 1 ? i : -1;
}

static int dispatch(walk *w, int from, int open)
{
    char name[64];
    int saved = w->dispatch;
    imp_word(w->h->s, from, name, sizeof name);
    imp_addf(&w->h->notes, "line %d: %s(...): its lambda is read as the host code, with "
             "scalar_t the run's dtype (kiln_t, from kiln_cuda.h: each of the task's CUDA "
             "dtypes in turn)", line(w->h, from), name);
    w->dispatch = from;
    int rc = block(w, open + 1, w->h->s->tok[open].match);
    w->dispatch = saved;
    return rc;
}

/* TORCH_CHECK(cond, ...), assert(cond): kept for the caller. 1 when one. */
static int check(walk *w, int from, int end)
{
    static const char *const names[] = {"TORCH_CHECK", "TORCH_INTERNAL_ASSERT", "AT_ASSERT",
                                        "assert", "TORCH_CHECK_VALUE"};
    const imp_src *s = w->h->s;
    int pf[8], pt[8], n;
    if (!in_list(s, from, names, N(names)) || !imp_is(s, from + 1, "(") ||
        s->tok[from + 1].match != end - 1 ||
        (n = imp_split(s, from + 2, end - 1, 0, pf, pt, 8)) < 1 || pf[0] == pt[0])
        return 0;
    if (imp_grow((void **)&w->h->check, w->h->ncheck, &w->h->capcheck, sizeof *w->h->check) < 0)
        return -1;
    w->h->check[w->h->ncheck++] = (imp_check){from, pf[0], pt[0]};
    return 1;
}

/* A device guard or the framework's current stream, declared: a note. */
static void framework_decl(walk *w, int from, int end)
{
    static const char *const guards[] = {"OptionalCUDAGuard", "CUDAGuard", "DeviceGuard",
                                         "OptionalDeviceGuard", "CUDAStreamGuard",
                                         "OptionalCUDAStreamGuard"};
    static const char *const streams[] = {"getCurrentCUDAStream", "getCurrentStream",
                                          "getStreamFromPool", "getDefaultCUDAStream"};
    const imp_src *s = w->h->s;
    char text[160];
    int guard = 0, stream = 0;
    for (int i = from; i < end; i++) {
        guard |= in_list(s, i, guards, N(guards));
        stream |= in_list(s, i, streams, N(streams));
    }
    if (!guard && !stream)
        return;
    imp_text(s, from, end, text, sizeof text);
    imp_addf(&w->h->notes, "line %d: dropped '%s': %s", line(w->h, from), text,
             guard ? "a device guard; kiln runs each job on a device and context of its own"
                   : "the framework's current stream; kiln launches on a stream of its own");
}

static int simple(walk *w, int from, int end)
{
    const imp_src *s = w->h->s;
    int open = imp_find(s, from, end, "<<<"), name, body, chk;
    if (open < end)
        return launch(w, from, end, open);
    if ((body = dispatch_body(w->h, from, end)) >= 0)
        return dispatch(w, from, body);
    if ((chk = check(w, from, end)) != 0)
        return chk < 0 ? -1 : 0;
    int told = calls(w, from, end);
    if ((name = decl_name(s, from, end)) >= 0) {
        framework_decl(w, from, end);
        return declaration(w, from, end, name);
    }
    if (!told && !imp_is(s, from, "return"))
        other(w, from, end);
    return 0;
}

/* ---- control statements --------------------------------------------------- */

/* The variables a for statement at i declares before its first ';'. */
static int for_init(walk *w, int i, int paren)
{
    const imp_src *s = w->h->s;
    int close = s->tok[paren].match, semi = imp_find(s, paren + 1, close, ";"), name;
    if (!imp_is(s, i, "for") || semi >= close || (name = decl_name(s, paren + 1, semi)) < 0)
        return 0;
    return declaration(w, paren + 1, semi, name);
}

/* if (c) a [else b], for/while/switch (x) a: the statement's end. */
static int control(walk *w, int i, int to)
{
    const imp_src *s = w->h->s;
    int paren = i + 1;
    if (!imp_is(s, paren, "("))
        return to;
    int saved = w->ctl, body = s->tok[paren].match + 1, first = w->h->nvar, last;
    int is_if = imp_is(s, i, "if"), pushed = is_if && w->nifs < IMP_MAX_IFS;
    if (for_init(w, i, paren) < 0)
        return -1;
    last = w->h->nvar;
    if (pushed) {                 /* a launch in it runs "when" its condition holds */
        w->ifs[w->nifs] = i;
        w->if_else[w->nifs++] = 0;
    } else if (w->ctl < 0) {      /* a loop, a switch, or ifs too deep */
        w->ctl = i;
    }
    int guard = is_if && (imp_is(s, body, "return") || imp_is(s, body, "throw") ||
                          (imp_is(s, body, "{") && imp_is(s, body + 1, "return")));
    int next = stmt(w, body, to);
    if (next >= 0 && is_if && imp_is(s, next, "else")) {
        if (pushed)
            w->if_else[w->nifs - 1] = 1;
        next = stmt(w, next + 1, to);
    }
    w->nifs -= pushed;
    w->ctl = saved;
    for (int k = first; k < last && next >= 0; k++)
        w->h->var[k].scope_end = next;   /* a for's variable: the for alone */
    if (guard && next >= 0 && !imp_has_launch(s, i, next)) {
        char c[120];
        imp_text(s, paren + 1, s->tok[paren].match, c, sizeof c);
        imp_addf(&w->h->notes, "line %d: the function returns early when %s; kiln launches "
                 "at every shape of the task", line(w->h, i), c);
    }
    return next;
}

/* do a while (c); */
static int do_while(walk *w, int i, int to)
{
    int saved = w->ctl;
    if (w->ctl < 0)
        w->ctl = i;
    int next = stmt(w, i + 1, to);
    w->ctl = saved;
    if (next < 0)
        return -1;
    int semi = imp_find(w->h->s, next, to, ";");
    return semi < to ? semi + 1 : to;
}

static int block(walk *w, int from, int to)
{
    int saved = w->scope_end;
    w->scope_end = to;
    for (int i = from; i < to;)
        if ((i = stmt(w, i, to)) < 0)
            return -1;
    w->scope_end = saved;
    return 0;
}

/* One statement from i; the token after it, or -1 when out of memory. */
static int stmt(walk *w, int i, int to)
{
    const imp_src *s = w->h->s;
    if (i >= to)
        return to;
    if (s->tok[i].kind == IMP_PP) {
        imp_addf(&w->h->notes, "line %d: a preprocessor line inside the function; import "
                 "reads the code as written, every #if branch included", line(w->h, i));
        return i + 1;
    }
    if (imp_is(s, i, "{"))
        return block(w, i + 1, s->tok[i].match) < 0 ? -1 : s->tok[i].match + 1;
    if (imp_is(s, i, "if") || imp_is(s, i, "for") || imp_is(s, i, "while") ||
        imp_is(s, i, "switch"))
        return control(w, i, to);
    if (imp_is(s, i, "do"))
        return do_while(w, i, to);
    if (imp_is(s, i, "case") || imp_is(s, i, "default")) {
        int colon = imp_find(s, i, to, ":");
        return colon < to ? colon + 1 : to;
    }
    if (imp_is(s, i, ";"))
        return i + 1;
    int end = imp_find(s, i, to, ";");
    if (simple(w, i, end) < 0)
        return -1;
    return end < to ? end + 1 : to;
}

/* ---- later changes -------------------------------------------------------- */

static int assigns(const imp_src *s, int i)
{
    static const char *const ops[] = {"=", "+=", "-=", "*=", "/=", "%=", "<<=", ">>=", "&=",
                                      "|=", "^=", "++", "--"};
    return in_list(s, i, ops, N(ops));
}

/* Is the use of v's name at i a change: assigned (or a member of it),
 * incremented, or its address taken? */
static int changes(const imp_src *s, int i)
{
    if (assigns(s, i + 1) || imp_is(s, i - 1, "++") || imp_is(s, i - 1, "--"))
        return 1;
    if ((imp_is(s, i + 1, ".") || imp_is(s, i + 1, "->")) && assigns(s, i + 3))
        return 1;
    return imp_is(s, i - 1, "&") && (imp_is(s, i - 2, "(") || imp_is(s, i - 2, ",") ||
                                     imp_is(s, i - 2, "=") || imp_is(s, i - 2, "return"));
}

static int declares(const imp_host *h, int tok)
{
    for (int k = 0; k < h->nvar; k++)
        if (h->var[k].name == tok)
            return 1;
    return 0;
}

static void find_changes(imp_host *h)
{
    const imp_src *s = h->s;
    for (int k = 0; k < h->nvar; k++) {
        imp_var *v = &h->var[k];
        size_t len = s->tok[v->name].len;
        for (int i = v->visible_from; i < v->scope_end && v->changed < 0; i++) {
            if (!is_ident(s, i) || s->tok[i].len != len ||
                memcmp(s->text + s->tok[i].at, s->text + s->tok[v->name].at, len) != 0 ||
                imp_is(s, i - 1, ".") || imp_is(s, i - 1, "->") || imp_is(s, i - 1, "::"))
                continue;
            if (declares(h, i))
                break;   /* shadowed from here on (a new variable of that name) */
            if (changes(s, i))
                v->changed = i;
        }
    }
}

/* ---- the function ----------------------------------------------------------- */

int imp_host_read(imp_host *h, const imp_src *s, const imp_file *f, const imp_fn *fn,
                  const char *file, kiln_error *err)
{
    *h = (imp_host){.s = s, .f = f, .fn = fn, .file = file, .dispatch = h->dispatch};
    walk w = {.h = h, .ctl = -1, .dispatch = -1, .scope_end = fn->last};
    if (read_params(h) < 0 || block(&w, fn->body + 1, fn->last) < 0 || h->notes.oom ||
        h->problems.oom) {
        imp_host_free(h);
        return kiln_fail(err, "out of memory");
    }
    find_changes(h);
    return 0;
}

void imp_host_free(imp_host *h)
{
    free(h->var);
    free(h->launch);
    free(h->check);
    h->check = NULL;
    imp_lines_free(&h->notes);
    imp_lines_free(&h->problems);
    h->var = NULL;
    h->launch = NULL;
}

const imp_var *imp_host_var(const imp_host *h, int tok)
{
    const imp_src *s = h->s;
    const imp_var *best = NULL;
    for (int k = 0; k < h->nvar; k++) {
        const imp_var *v = &h->var[k];
        if (s->tok[v->name].len != s->tok[tok].len ||
            memcmp(s->text + s->tok[v->name].at, s->text + s->tok[tok].at, s->tok[tok].len) != 0)
            continue;
        if (tok >= v->visible_from && tok < v->scope_end && (!best || v->visible_from > best->visible_from))
            best = v;
    }
    return best;
}
