/* import_scan.c - file-scope items of a CUDA source (import_scan.h).
 *
 * An item runs to its ';' at bracket depth 0, or to the '}' of a body:
 * a body follows a parameter list (a function definition) unless an '='
 * or struct/class/union/enum came first (an initializer or a type, which
 * then run to their ';'). namespace { } and extern "C" { } are walked
 * into. Attributes with parentheses (__launch_bounds__, __attribute__)
 * are not taken for the parameter list. */
#include "import_scan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "c_lex.h"
#include "import_expr.h"

static int is_ident(const imp_src *s, int i)
{
    return i >= 0 && i < s->ntok && s->tok[i].kind == IMP_IDENT;
}

/* ---- preprocessor lines ----------------------------------------------- */

static size_t skip_blank(const char *t, size_t i, size_t end)
{
    while (i < end && (t[i] == ' ' || t[i] == '\t' || t[i] == '\\' || t[i] == '\n' ||
                       t[i] == '\r'))
        i++;
    return i;
}

static size_t word_end(const char *t, size_t i, size_t end)
{
    while (i < end && kiln_is_ident_char(t[i]))
        i++;
    return i;
}

static void read_include(imp_pp *p, const char *t, size_t i, size_t end)
{
    i = skip_blank(t, i, end);
    if (i >= end || (t[i] != '<' && t[i] != '"'))
        return;
    char close = t[i] == '<' ? '>' : '"';
    size_t e = i + 1;
    while (e < end && t[e] != close && t[e] != '\n')
        e++;
    p->include = 1;
    p->system = close == '>';
    snprintf(p->header, sizeof p->header, "%.*s", (int)(e - i - 1), t + i + 1);
}

static void read_define(imp_pp *p, const char *t, size_t i, size_t end)
{
    i = skip_blank(t, i, end);
    size_t ne = word_end(t, i, end);
    if (ne == i || ne - i >= sizeof p->name)
        return;
    snprintf(p->name, sizeof p->name, "%.*s", (int)(ne - i), t + i);
    if (p->undef)
        return;
    p->define = 1;
    size_t b = ne;
    if (ne < end && t[ne] == '(') {
        size_t close = ne;
        while (close < end && t[close] != ')')
            close++;
        p->function_like = 1;
        p->params_at = ne + 1;
        p->params_len = close - ne - 1;
        b = close < end ? close + 1 : end;
    }
    p->body_at = b;
    p->body_len = end - b;
}

/* One preprocessor line; *depth counts the #if blocks open. */
static int record_pp(const imp_src *s, imp_file *f, int tok, int *depth)
{
    const char *t = s->text;
    size_t at = s->tok[tok].at, end = at + s->tok[tok].len;
    size_t w = skip_blank(t, at + 1, end), we = word_end(t, w, end);
    char word[16];
    snprintf(word, sizeof word, "%.*s", (int)(we - w < 15 ? we - w : 15), t + w);
    if (strncmp(word, "if", 2) == 0)
        ++*depth;
    else if (strcmp(word, "endif") == 0 && *depth > 0)
        --*depth;
    if (imp_grow((void **)&f->pp, f->npp, &f->cappp, sizeof *f->pp) < 0)
        return -1;
    imp_pp *p = &f->pp[f->npp++];
    int own = strncmp(word, "if", 2) == 0;
    *p = (imp_pp){.tok = tok, .conditional = *depth > 0 && !own, .depth = *depth - own};
    if (strcmp(word, "include") == 0)
        read_include(p, t, we, end);
    else if (strcmp(word, "define") == 0 || strcmp(word, "undef") == 0)
        p->undef = word[0] == 'u', read_define(p, t, we, end);
    else if (strcmp(word, "pragma") == 0) {
        size_t o = skip_blank(t, we, end), oe = word_end(t, o, end);
        p->pragma_once = oe - o == 4 && memcmp(t + o, "once", 4) == 0;
    }
    return 0;
}

/* ---- items -------------------------------------------------------------- */

static int is_attribute(const imp_src *s, int i)
{
    static const char *const attrs[] = {"__launch_bounds__", "__attribute__", "__declspec",
                                        "alignas", "__align__", "decltype", "__maxnreg__"};
    for (size_t k = 0; k < sizeof attrs / sizeof attrs[0]; k++)
        if (imp_is(s, i, attrs[k]))
            return 1;
    return 0;
}

/* The '>' closing the '<' at open (template<...>), or -1. */
static int angle_close(const imp_src *s, int open, int to)
{
    int depth = 0;
    for (int i = open; i < to; i++) {
        if (s->tok[i].match > i) {
            i = s->tok[i].match;
            continue;
        }
        depth += imp_is(s, i, "<") - imp_is(s, i, ">") - 2 * imp_is(s, i, ">>");
        if (depth <= 0 && i > open)
            return i;
    }
    return -1;
}

/* The template parameters between tpl_open and tpl_close: names, defaults. */
static void read_tparams(const imp_src *s, imp_fn *fn)
{
    int pf[IMP_MAX_TPARAMS], pt[IMP_MAX_TPARAMS];
    int n = imp_split(s, fn->tpl_open + 1, fn->tpl_close, 1, pf, pt, IMP_MAX_TPARAMS);
    fn->ntparams = n < 0 ? -1 : 0;
    for (int k = 0; k < n; k++) {
        int eq = imp_find(s, pf[k], pt[k], "=");
        int name = eq - 1;
        if (!is_ident(s, name) || name < pf[k] + 1) {
            fn->ntparams = -1;   /* unnamed or unreadable: no instance can be made */
            return;
        }
        fn->tparam[k] = name;
        fn->tdefault[k] = eq < pt[k] ? eq + 1 : -1;
        fn->tdefault_end[k] = pt[k];
        fn->ntparams++;
    }
}

static imp_fkind kind_of(const imp_src *s, int from, int to)
{
    int global = 0, device = 0;
    for (int i = from; i < to; i++) {
        global |= imp_is(s, i, "__global__");
        device |= imp_is(s, i, "__device__");
    }
    return global ? IMP_F_KERNEL : device ? IMP_F_DEVICE : IMP_F_HOST;
}

/* Is the '(' at i a parameter list: after a name, not an attribute's? */
static int is_params(const imp_src *s, int i, int decl)
{
    return i - 1 >= decl && is_ident(s, i - 1) && !is_attribute(s, i - 1);
}

static int add_function(const imp_src *s, imp_file *f, imp_fn *fn, int in_extern_c)
{
    int stop = fn->params;
    fn->name = fn->params - 1;
    fn->kind = kind_of(s, fn->decl, stop);
    fn->extern_c_direct = imp_is(s, fn->decl, "extern") && s->tok[fn->decl + 1].kind == IMP_STRING;
    fn->extern_c = in_extern_c || fn->extern_c_direct;
    if (fn->tpl_open >= 0)
        read_tparams(s, fn);
    if (imp_grow((void **)&f->fn, f->nfn, &f->capfn, sizeof *f->fn) < 0)
        return -1;
    f->fn[f->nfn++] = *fn;
    return 0;
}

/* [static] const|constexpr INTEGER-TYPE NAME = LITERAL ; in [from, semi). */
static int add_constant(const imp_src *s, imp_file *f, int from, int semi)
{
    int eq = imp_find(s, from, semi, "="), isconst = 0, isint = 0;
    long long v;
    if (eq != semi - 2 || !is_ident(s, eq - 1) || imp_int_literal(s, eq + 1, &v) < 0)
        return 0;
    for (int i = from; i < eq - 1; i++) {
        char w[32];
        imp_word(s, i, w, sizeof w);
        isconst |= strcmp(w, "const") == 0 || strcmp(w, "constexpr") == 0;
        isint |= imp_int_type(w) && strcmp(w, "const") != 0;
    }
    if (!isconst || !isint)
        return 0;
    if (imp_grow((void **)&f->cst, f->ncst, &f->capcst, sizeof *f->cst) < 0)
        return -1;
    f->cst[f->ncst++] = (imp_const){eq - 1, v};
    return 0;
}

/* A declaration [from, semi) of something else than a function or a type:
 * a host variable unless it is a device one, a constant, or no variable
 * (using, typedef, static_assert, a namespace alias, a template). */
static int add_gvar(const imp_src *s, imp_file *f, int from, int semi)
{
    static const char *const not_vars[] = {"using", "typedef", "static_assert", "namespace",
                                           "template", "friend", "asm", "__asm__"};
    static const char *const keep[] = {"__device__", "__constant__", "__shared__",
                                       "__managed__", "constexpr", "const", "__grid_constant__"};
    int eq = imp_find(s, from, semi, "="), name = eq - 1;
    for (size_t k = 0; k < sizeof not_vars / sizeof not_vars[0]; k++)
        if (imp_is(s, from, not_vars[k]))
            return 0;
    for (int i = from; i < eq; i++)
        for (size_t k = 0; k < sizeof keep / sizeof keep[0]; k++)
            if (imp_is(s, i, keep[k]))
                return 0;
    while (name > from && imp_is(s, name, "]"))
        name = s->tok[name].match - 1;
    if (name <= from || !is_ident(s, name) || imp_find(s, from, eq, "(") < eq)
        return 0;
    if (imp_grow((void **)&f->gvar, f->ngvar, &f->capgvar, sizeof *f->gvar) < 0)
        return -1;
    f->gvar[f->ngvar++] = (imp_gvar){from, semi, name};
    return 0;
}

/* The item from i; *next is the token after it. Records functions,
 * constants and host variables. */
static int item(const imp_src *s, imp_file *f, int i, int to, int in_extern_c, int *next)
{
    imp_fn fn = {.first = i, .decl = i, .tpl_open = -1, .tpl_close = -1, .body = -1};
    if (imp_is(s, i, "template") && imp_is(s, i + 1, "<")) {
        fn.tpl_open = i + 1;
        fn.tpl_close = angle_close(s, i + 1, to);
        fn.decl = fn.tpl_close > 0 ? fn.tpl_close + 1 : i + 1;
    }
    int eq = 0, typekw = 0, params = -1, j = fn.decl;
    for (; j < to; j++) {
        if (imp_is(s, j, ";"))
            break;
        eq |= imp_is(s, j, "=");
        if (params < 0 && (imp_is(s, j, "struct") || imp_is(s, j, "class") ||
                           imp_is(s, j, "union") || imp_is(s, j, "enum")))
            typekw = 1;
        if (imp_is(s, j, "(") && params < 0 && !eq && !typekw && is_params(s, j, fn.decl))
            params = j;
        if (imp_is(s, j, "{") && params >= 0 && !eq && !typekw) {
            fn.params = params;
            fn.body = j;
            fn.last = s->tok[j].match;
            *next = fn.last + 1;
            return add_function(s, f, &fn, in_extern_c);
        }
        if (s->tok[j].match > j)
            j = s->tok[j].match;
    }
    *next = j < to ? j + 1 : to;
    if (params >= 0 && !eq && !typekw) {   /* a declaration: void f(int); */
        fn.params = params;
        fn.last = j < to ? j : to - 1;
        return add_function(s, f, &fn, in_extern_c);
    }
    if (j >= to || typekw)
        return 0;
    int n = f->ncst;
    if (add_constant(s, f, fn.decl, j) < 0)
        return -1;
    return f->ncst > n || fn.tpl_open >= 0 ? 0 : add_gvar(s, f, fn.decl, j);
}

static int scan_range(const imp_src *s, imp_file *f, int from, int to, int in_extern_c,
                      int *depth)
{
    for (int i = from; i < to;) {
        int open;
        if (s->tok[i].kind == IMP_PP) {
            if (record_pp(s, f, i++, depth) < 0)
                return -1;
        } else if (imp_is(s, i, ";")) {
            i++;
        } else if (imp_is(s, i, "namespace") &&
                   (open = imp_find(s, i, to, "{")) < imp_find(s, i, to, ";")) {
            if (scan_range(s, f, open + 1, s->tok[open].match, in_extern_c, depth) < 0)
                return -1;
            i = s->tok[open].match + 1;
        } else if (imp_is(s, i, "extern") && s->tok[i + 1].kind == IMP_STRING &&
                   imp_is(s, i + 2, "{")) {
            if (scan_range(s, f, i + 3, s->tok[i + 2].match, 1, depth) < 0)
                return -1;
            i = s->tok[i + 2].match + 1;
        } else if (item(s, f, i, to, in_extern_c, &i) < 0) {
            return -1;
        }
    }
    return 0;
}

/* The word after '#' of preprocessor line i, and the one after that. */
static void pp_words(const imp_src *s, int i, char *w1, char *w2, size_t cap)
{
    const char *t = s->text;
    size_t at = s->tok[i].at, end = at + s->tok[i].len;
    size_t a = skip_blank(t, at + 1, end), ae = word_end(t, a, end);
    size_t b = skip_blank(t, ae, end), be = word_end(t, b, end);
    snprintf(w1, cap, "%.*s", (int)(ae - a), t + a);
    snprintf(w2, cap, "%.*s", (int)(be - b), t + b);
}

/* #ifndef X / #define X first and #endif last, around every token: an
 * include guard. Its #if does not make what it holds conditional. */
static void find_guard(const imp_src *s, imp_file *f)
{
    char a1[64], a2[64], b1[64], b2[64], e1[64], e2[64];
    if (f->npp < 3 || f->pp[0].tok != 0 || f->pp[f->npp - 1].tok != s->ntok - 1)
        return;
    pp_words(s, f->pp[0].tok, a1, a2, sizeof a1);
    pp_words(s, f->pp[1].tok, b1, b2, sizeof b1);
    pp_words(s, f->pp[f->npp - 1].tok, e1, e2, sizeof e1);
    if (strcmp(a1, "ifndef") != 0 || strcmp(b1, "define") != 0 || strcmp(a2, b2) != 0 ||
        !a2[0] || strcmp(e1, "endif") != 0 || f->pp[1].tok != 1)
        return;
    for (int i = 1; i < f->npp - 1; i++)
        if (f->pp[i].depth == 0)
            return;   /* the #endif closes an earlier block: no guard */
    f->guard = 1;
    for (int i = 1; i < f->npp - 1; i++)
        f->pp[i].conditional = f->pp[i].depth > 1;
}

int imp_scan(const imp_src *s, imp_file *f, kiln_error *err)
{
    int depth = 0;
    *f = (imp_file){0};
    if (scan_range(s, f, 0, s->ntok, 0, &depth) < 0) {
        imp_file_free(f);
        return kiln_fail(err, "out of memory");
    }
    find_guard(s, f);
    return 0;
}

void imp_file_free(imp_file *f)
{
    free(f->fn);
    free(f->gvar);
    free(f->pp);
    free(f->cst);
    *f = (imp_file){0};
}

int imp_fn_find(const imp_file *f, const imp_src *s, const char *name, int kind, int from)
{
    for (int i = from < 0 ? 0 : from; i < f->nfn; i++)
        if ((kind < 0 || (int)f->fn[i].kind == kind) && imp_is(s, f->fn[i].name, name))
            return i;
    return -1;
}

int imp_has_launch(const imp_src *s, int from, int to)
{
    for (int i = from; i < to; i++)
        if (imp_is(s, i, "<<<"))
            return 1;
    return 0;
}

const imp_pp *imp_define(const imp_file *f, const char *name)
{
    const imp_pp *last = NULL;
    for (int i = 0; i < f->npp; i++)
        if ((f->pp[i].define || f->pp[i].undef) && strcmp(f->pp[i].name, name) == 0)
            last = &f->pp[i];
    return last && last->define ? last : NULL;
}

/* ---- type classes ------------------------------------------------------- */

static imp_cls word_class(const char *w, imp_cls now)
{
    static const struct { const char *w; imp_cls c; } words[] = {
        {"dim3", IMP_C_DIM3}, {"cudaStream_t", IMP_C_STREAM}, {"auto", IMP_C_AUTO},
        {"float", IMP_C_F32}, {"double", IMP_C_F64}, {"int", IMP_C_I32},
        {"unsigned", IMP_C_I32}, {"int32_t", IMP_C_I32}, {"uint32_t", IMP_C_I32},
        {"uint", IMP_C_I32}, {"long", IMP_C_I64}, {"size_t", IMP_C_I64},
        {"int64_t", IMP_C_I64}, {"uint64_t", IMP_C_I64}, {"ptrdiff_t", IMP_C_I64},
        {"bool", IMP_C_I32}, {"uintptr_t", IMP_C_I64}, {"intptr_t", IMP_C_I64},
        {"Tensor", IMP_C_TENSOR},
    };
    static const char *const neutral[] = {"const", "constexpr", "static", "volatile",
                                          "__restrict__", "std", "signed", "register"};
    for (size_t k = 0; k < sizeof neutral / sizeof neutral[0]; k++)
        if (strcmp(w, neutral[k]) == 0)
            return now;
    for (size_t k = 0; k < sizeof words / sizeof words[0]; k++)
        if (strcmp(w, words[k].w) == 0)
            return words[k].c == IMP_C_I32 && now == IMP_C_I64 ? IMP_C_I64 : words[k].c;
    return IMP_C_OTHER;
}

imp_cls imp_type_class(const imp_src *s, int from, int to, char *elem, size_t cap)
{
    int star = -1, isconst = 0;
    imp_cls c = IMP_C_OTHER;
    elem[0] = '\0';
    for (int i = from; i < to && star < 0; i++) {
        char w[64];
        imp_word(s, i, w, sizeof w);
        if (strcmp(w, "*") == 0 || strcmp(w, "[") == 0) {
            star = i;
        } else if (strcmp(w, "const") == 0) {
            isconst = 1;
        } else if (s->tok[i].kind == IMP_IDENT && strcmp(w, "__restrict__") != 0) {
            snprintf(elem, cap, "%s", w);
            c = word_class(w, c);
        }
    }
    if (star >= 0)
        return isconst ? IMP_C_CPTR : IMP_C_PTR;
    elem[0] = '\0';
    return c;
}

const char *imp_cls_name(imp_cls c)
{
    static const char *const names[] = {"other", "pointer", "const pointer", "int", "64-bit int",
                                        "float", "double", "stream", "dim3", "auto",
                                        "tensor"};
    return (unsigned)c < sizeof names / sizeof names[0] ? names[c] : "?";
}
