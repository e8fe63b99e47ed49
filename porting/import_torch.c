/* import_torch.c - PyTorch-style host code and the headers import drops
 * (import_torch.h).
 *
 * A check's conjuncts are translated with the host's locals in place (a
 * precondition names dims, not lets) and sorted: DIM % N == 0 is kept as
 * kiln's "require"; a constant true (is_contiguous(), stride(-1) == 1, a
 * buffer's alignment to 16 bytes) holds for every buffer kiln passes; one
 * over knobs only is evaluated at every value the knob takes. The shim
 * looks at the candidate's own tokens, so it names only what the device
 * code uses. */
#include "import_torch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "expr.h"
#include "precond.h"

/* ---- dispatch macros -------------------------------------------------------------- */

static int dispatch_word(const char *w, size_t n, const imp_lines *known)
{
    if (((n > 12 && strncmp(w, "AT_DISPATCH_", 12) == 0) ||
         (n > 14 && strncmp(w, "VLLM_DISPATCH_", 14) == 0)) &&
        (memmem(w, n, "TYPES", 5) || memmem(w, n, "SWITCH", 6)))
        return 1;
    for (int k = 0; k < known->n; k++)
        if (strlen(known->v[k]) == n && memcmp(known->v[k], w, n) == 0)
            return 1;
    return 0;
}

/* Does the body of #define p (in s) name a dispatch? */
static int body_dispatches(const imp_src *s, const imp_pp *p, const imp_lines *known)
{
    const char *b = s->text + p->body_at;
    for (size_t i = 0; i < p->body_len;) {
        size_t j = i;
        while (j < p->body_len && (b[j] == '_' || (b[j] >= 'A' && b[j] <= 'Z') ||
                                   (b[j] >= 'a' && b[j] <= 'z') || (b[j] >= '0' && b[j] <= '9')))
            j++;
        if (j > i && dispatch_word(b + i, j - i, known))
            return 1;
        i = j > i ? j : i + 1;
    }
    return 0;
}

static void scan_macros(const imp_src *s, const imp_file *f, imp_lines *out, int *added)
{
    for (int i = 0; i < f->npp; i++) {
        const imp_pp *p = &f->pp[i];
        if (!p->define || !p->function_like || dispatch_word(p->name, strlen(p->name), out) ||
            !body_dispatches(s, p, out) || memmem(s->text + p->body_at, p->body_len, "<<<", 3))
            continue;
        imp_addf(out, "%s", p->name);
        ++*added;
    }
}

void imp_dispatch_macros(const imp_src *s, const imp_file *f, const imp_units *us,
                         imp_lines *out)
{
    for (int round = 0; round < 4; round++) {   /* a macro made of another */
        int added = 0;
        scan_macros(s, f, out, &added);
        for (int k = 0; us && k < us->n; k++)
            scan_macros(&us->u[k].s, &us->u[k].f, out, &added);
        if (!added)
            break;
    }
}

/* ---- checks ------------------------------------------------------------------------ */

typedef struct knob_env {
    const imp_ctx *c;
    const imp_knob *k;
    long long value;
} knob_env;

static int knob_lookup(void *p, const char *name, size_t len, kiln_value *out)
{
    knob_env *ke = p;
    long long v;
    char n[64], one[80];
    snprintf(n, sizeof n, "%.*s", (int)(len < 63 ? len : 63), name);
    if (ke->k && strcmp(n, ke->k->name) == 0) {
        *out = (kiln_value){0, ke->value, 0.0};
        return 0;
    }
    snprintf(one, sizeof one, "%s", n);
    if (imp_const_value(ke->c, one, &v) < 0)
        return -1;
    *out = (kiln_value){0, v, 0.0};
    return 0;
}

/* A condition over knobs and constants only: at every value of each new
 * knob it names. 1 holds everywhere, 0 some value breaks it (named in
 * bad), -1 it names something else. */
static int knob_check(const imp_ctx *c, const char *e, char *bad, size_t cap)
{
    char names[16][64];
    kiln_error xe;
    int n = kiln_expr_names(e, names, 16, &xe);
    const imp_knob *kb = NULL;
    if (n < 0)
        return -1;
    for (int i = 0; i < n; i++) {
        if (kiln_task_dim(c->t, names[i]) >= 0)
            return -1;
        for (int k = 0; k < c->nknob; k++)
            if (strcmp(c->knob[k].name, names[i]) == 0)
                kb = &c->knob[k];
    }
    for (int v = 0; v < (kb ? kb->nvals : 1); v++) {
        knob_env ke = {c, kb, kb ? kb->vals[v] : 0};
        kiln_expr_env env = {knob_lookup, NULL, &ke};
        kiln_value r;
        if (kiln_expr_eval(e, &env, &r, &xe) < 0)
            return -1;
        if (r.is_float ? r.f == 0.0 : r.i == 0) {
            if (kb)
                snprintf(bad, cap, "%s = %lld", kb->name, kb->vals[v]);
            else
                snprintf(bad, cap, "the constants' values");
            return 0;
        }
    }
    return 1;
}

static void add_require(imp_ctx *c, const char *e)
{
    for (int i = 0; i < c->nrequire; i++)
        if (strcmp(c->require[i], e) == 0)
            return;
    if (c->nrequire < KILN_PRECOND_MAX)
        snprintf(c->require[c->nrequire++], KILN_EXPR_MAX, "%s", e);
}

/* One conjunct [from, to) of the check at tok. */
static void conjunct(imp_ctx *c, int tok, int from, int to)
{
    char text[160], name[32], bad[96];
    imp_xval v;
    imp_why why = {0};
    kiln_precond pc;
    kiln_error e;
    int ln = imp_line(c, tok), nlets = c->nlets;
    imp_text(c->s, from, to, text, sizeof text);
    imp_word(c->s, tok, name, sizeof name);
    c->inline_locals = 1;
    int rc = imp_xlate(c, from, to, 1, &v, &why);
    c->inline_locals = 0;
    c->nlets = nlets;   /* a check's constants need no lets */
    if (rc < 0 && (strstr(text, "scalar_type") || strstr(text, "dtype"))) {
        imp_addf(&c->notes, "line %d: %s(%s): a check of dtypes; kiln passes every buffer in "
                 "the task's dtype", ln, name, text);
        return;
    }
    if (rc < 0) {
        imp_addf(&c->notes, "line %d: %s(%s): not translated (%s), so shapes that break it may "
                 "be run", ln, name, text, why.msg);
        return;
    }
    if (strcmp(v.s, "1") == 0) {
        imp_addf(&c->notes, "line %d: %s(%s) holds for every buffer kiln passes (contiguous, "
                 "on its device, %d-byte aligned)", ln, name, text, IMP_BUFFER_ALIGN);
    } else if (strcmp(v.s, "0") == 0) {
        imp_addf(&c->problems, "%s:%d: cannot translate the check %s(%s): it never holds for "
                 "the buffers kiln passes", c->o->file, ln, name, text);
    } else if (kiln_precond_parse(c->t, v.s, "require", &pc, &e) == 0) {
        add_require(c, v.s);
        imp_addf(&c->notes, "line %d: %s(%s) is the precondition \"%s\": kiln verifies and "
                 "times only shapes where it holds", ln, name, text, v.s);
    } else {
        int k = knob_check(c, v.s, bad, sizeof bad);
        if (k == 1)
            imp_addf(&c->notes, "line %d: %s(%s) holds at every value of the knobs it names",
                     ln, name, text);
        else if (k == 0)
            imp_addf(&c->problems, "%s:%d: cannot translate the check %s(%s): it fails at %s; "
                     "leave that value out (--map P=NAME:V1,V2,...)", c->o->file, ln, name,
                     text, bad);
        else
            imp_addf(&c->notes, "line %d: %s(%s) is not kept ('%s': kiln's preconditions are "
                     "DIM %% N == 0 only), so shapes that break it may be run", ln, name, text,
                     v.s);
    }
}

void imp_checks(imp_ctx *c)
{
    for (int i = 0; i < c->h.ncheck; i++) {
        const imp_check *k = &c->h.check[i];
        int start = k->from;
        for (int j = k->from; j <= k->to; j++) {
            if (j < k->to && c->s->tok[j].match > j) {
                j = c->s->tok[j].match;
                continue;
            }
            if (j < k->to && !imp_is(c->s, j, "&&"))
                continue;
            if (j > start)
                conjunct(c, k->tok, start, j);
            start = j + 1;
        }
    }
}

/* ---- the shim ------------------------------------------------------------------------ */

/* std:: names libcu++ gives, by header, and the host header that gives
 * them under nvcc (an export), where libcu++'s would clash with it. */
static const struct { const char *header, *host; const char *const names[48]; } libcu[] = {
    {"cuda/std/type_traits", "type_traits",
     {"enable_if", "enable_if_t", "is_same", "is_same_v", "conditional", "conditional_t",
      "integral_constant", "bool_constant", "true_type", "false_type", "is_pod", "is_pod_v",
      "is_trivially_copyable", "is_trivially_copyable_v", "is_integral", "is_integral_v",
      "is_floating_point", "is_floating_point_v", "is_signed", "is_signed_v", "is_unsigned",
      "is_unsigned_v", "is_arithmetic", "is_arithmetic_v", "is_const", "is_const_v",
      "is_pointer", "is_pointer_v", "remove_cv", "remove_cv_t", "remove_const",
      "remove_const_t", "remove_reference", "remove_reference_t", "remove_pointer",
      "remove_pointer_t", "decay", "decay_t", "common_type", "common_type_t", "is_void",
      "is_void_v", "void_t", "is_convertible", "is_convertible_v", "is_base_of",
      "is_base_of_v", "underlying_type_t"}},
    {"cuda/std/utility", "utility",
     {"forward", "move", "declval", "swap", "pair", "make_pair", "integer_sequence",
      "index_sequence", "make_index_sequence"}},
    {"cuda/std/cstdint", "cstdint",
     {"int8_t", "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t", "uint32_t",
      "uint64_t", "intptr_t", "uintptr_t"}},
    {"cuda/std/cstddef", "cstddef", {"size_t", "ptrdiff_t", "nullptr_t"}},
    {"cuda/std/array", "array", {"array"}},
    {"cuda/std/tuple", "tuple", {"tuple", "make_tuple", "tuple_size", "get"}},
    {"cuda/std/limits", "limits", {"numeric_limits"}},
};
#define NLIBCU (sizeof libcu / sizeof libcu[0])

typedef struct uses {
    int half, bf16;              /* c10::Half / at::Half, c10::BFloat16 / at::BFloat16 */
    int headeronly;              /* torch::headeronly::Half or BFloat16 (newer torch) */
    int cuda_version;            /* CUDA_VERSION named and never #defined */
    int kiln_t;
    int rtc_std;                 /* includes one of kiln's std headers */
    char std_have[NLIBCU][48];   /* per header, names used (1) */
    char other[4][64];           /* std:: names neither gives */
    int nother;
    int other_line[4];
} uses;

static int is_tok(const imp_src *s, int i, const char *w)
{
    return i >= 0 && i < s->ntok && imp_is(s, i, w);
}

static void std_name(uses *u, const imp_src *s, int i)
{
    char w[64];
    imp_word(s, i, w, sizeof w);
    for (size_t h = 0; h < NLIBCU; h++)
        for (int k = 0; k < 48 && libcu[h].names[k]; k++)
            if (strcmp(libcu[h].names[k], w) == 0) {
                u->std_have[h][k] = 1;
                return;
            }
    for (int k = 0; k < u->nother; k++)
        if (strcmp(u->other[k], w) == 0)
            return;
    if (u->nother < 4) {
        u->other_line[u->nother] = s->tok[i].line;
        snprintf(u->other[u->nother++], 64, "%s", w);
    }
}

static void pp_uses(uses *u, const imp_src *s, int i)
{
    static const char *const rtc[] = {"cmath", "math.h", "limits", "cstdint", "stdint.h",
                                      "cstddef", "stddef.h", "cfloat", "climits"};
    const char *t = s->text + s->tok[i].at;
    size_t n = s->tok[i].len;
    if (memmem(t, n, "CUDA_VERSION", 12)) {
        size_t w = 1;
        while (w < n && (t[w] == ' ' || t[w] == '\t'))
            w++;
        int def = n - w > 6 && memcmp(t + w, "define", 6) == 0 && (t[w + 6] == ' ' || t[w + 6] == '\t');
        if (def && memmem(t + w + 6, n - w - 6, "CUDA_VERSION", 12) &&
            strspn(t + w + 6, " \t") + w + 6 == (size_t)((const char *)memmem(t + w + 6, n - w - 6, "CUDA_VERSION", 12) - t))
            u->cuda_version = -1;   /* the code defines it */
        else if (u->cuda_version == 0)
            u->cuda_version = 1;
    }
    if (memmem(t, n, "kiln_cuda.h", 11))
        u->kiln_t = -1;
    for (size_t k = 0; k < sizeof rtc / sizeof rtc[0]; k++) {
        char inc[32];
        snprintf(inc, sizeof inc, "<%s>", rtc[k]);
        if (memmem(t, n, inc, strlen(inc)))
            u->rtc_std = 1;
    }
}

static void find_uses(uses *u, const imp_src *s)
{
    for (int i = 0; i < s->ntok; i++) {
        if (s->tok[i].kind == IMP_PP) {
            pp_uses(u, s, i);
            continue;
        }
        if ((is_tok(s, i, "c10") || is_tok(s, i, "at")) && is_tok(s, i + 1, "::")) {
            u->half |= is_tok(s, i + 2, "Half");
            u->bf16 |= is_tok(s, i + 2, "BFloat16");
        }
        if (is_tok(s, i, "torch") && is_tok(s, i + 1, "::") && is_tok(s, i + 2, "headeronly") &&
            is_tok(s, i + 3, "::") && (is_tok(s, i + 4, "Half") || is_tok(s, i + 4, "BFloat16"))) {
            u->headeronly = 1;
            u->half |= is_tok(s, i + 4, "Half");
            u->bf16 |= is_tok(s, i + 4, "BFloat16");
        }
        if (is_tok(s, i, "std") && is_tok(s, i + 1, "::") && s->tok[i + 2].kind == IMP_IDENT &&
            !is_tok(s, i - 1, "::"))
            std_name(u, s, i + 2);
        if (is_tok(s, i, "kiln_t") && u->kiln_t == 0)
            u->kiln_t = 1;
    }
}

static int header_used(const uses *u, size_t h)
{
    for (int k = 0; k < 48; k++)
        if (u->std_have[h][k])
            return 1;
    return 0;
}

static void shim_std(const uses *u, kiln_strbuf *b, imp_lines *notes)
{
    kiln_strbuf names = {0};
    int any = 0;
    for (size_t h = 0; h < NLIBCU; h++)
        any |= header_used(u, h);
    if (!any)
        return;
    kiln_sb_printf(b, "// kiln import: the C++ library names the dropped host headers gave\n"
                   "#ifdef __CUDACC_RTC__\n");
    for (size_t h = 0; h < NLIBCU; h++)
        if (header_used(u, h))
            kiln_sb_printf(b, "#include <%s>\n", libcu[h].header);
    kiln_sb_printf(b, "namespace std {\n");
    for (size_t h = 0; h < NLIBCU; h++)
        for (int k = 0; k < 48; k++)
            if (u->std_have[h][k]) {
                kiln_sb_printf(b, "using ::cuda::std::%s;\n", libcu[h].names[k]);
                kiln_sb_printf(&names, "%sstd::%s", names.len ? ", " : "", libcu[h].names[k]);
            }
    kiln_sb_printf(b, "}\n#else\n");
    for (size_t h = 0; h < NLIBCU; h++)
        if (header_used(u, h))
            kiln_sb_printf(b, "#include <%s>\n", libcu[h].host);
    kiln_sb_printf(b, "#endif\n");
    imp_addf(notes, "the device code uses %s, which the dropped host headers gave: the "
             "candidate takes them from libcu++ under NVRTC (which has no C++ standard "
             "library), from the C++ library's headers under nvcc", names.p ? names.p : "");
    free(names.p);
}

char *imp_shim(const char *cand, size_t len, int kiln_h, imp_lines *notes)
{
    imp_src s;
    kiln_error e;
    uses u = {0};
    kiln_strbuf b = {0};
    if (imp_lex(&s, cand, len, &e) < 0)
        return strdup("");
    find_uses(&u, &s);
    imp_src_free(&s);
    if ((u.kiln_t > 0 || kiln_h) && u.kiln_t >= 0)
        kiln_sb_printf(&b, "#include \"kiln_cuda.h\"   // kiln import: kiln_t, the run's dtype\n");
    if (u.half || u.bf16) {
        kiln_sb_printf(&b, "// kiln import: torch's scalar types, which its dropped host headers "
                       "gave, as CUDA's\n#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n"
                       "namespace c10 {%s%s }\nnamespace at {%s%s }\n",
                       u.half ? " using Half = __half;" : "",
                       u.bf16 ? " using BFloat16 = __nv_bfloat16;" : "",
                       u.half ? " using c10::Half;" : "", u.bf16 ? " using c10::BFloat16;" : "");
        if (u.headeronly)
            kiln_sb_printf(&b, "namespace torch { namespace headeronly {%s%s } }\n",
                           u.half ? " using c10::Half;" : "", u.bf16 ? " using c10::BFloat16;" : "");
        imp_addf(notes, "the device code uses torch's %s%s%s: the candidate makes %s CUDA's "
                 "%s%s%s (the same bits; kiln_t is the one of the run's dtype)",
                 u.half ? "c10::Half" : "", u.half && u.bf16 ? " and " : "",
                 u.bf16 ? "c10::BFloat16" : "", u.half && u.bf16 ? "them" : "it",
                 u.half ? "__half" : "", u.half && u.bf16 ? " and " : "",
                 u.bf16 ? "__nv_bfloat16" : "");
    }
    if (u.cuda_version > 0) {
        kiln_sb_printf(&b, "#ifndef CUDA_VERSION   // kiln import: cuda.h's (a host header), from "
                       "the compiler's version\n#define CUDA_VERSION (__CUDACC_VER_MAJOR__ * "
                       "1000 + __CUDACC_VER_MINOR__ * 10)\n#endif\n");
        imp_addf(notes, "the code tests CUDA_VERSION, which cuda.h (a host header) defines: the "
                 "candidate defines it from the compiler's version");
    }
    shim_std(&u, &b, notes);
    for (int k = 0; k < u.nother && !u.rtc_std; k++)
        imp_addf(notes, "line %d of the candidate: std::%s is C++ library code NVRTC does not "
                 "have (kiln gives <cmath>, <limits>, <cstdint> and the few docs/cuda.md lists); "
                 "it will not compile there", u.other_line[k], u.other[k]);
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    return b.p ? b.p : strdup("");
}
