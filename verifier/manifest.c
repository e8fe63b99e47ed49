/* manifest.c - parse, check and resolve a CUDA candidate's launch manifest
 * and tuning knobs (see manifest.h).
 *
 * The knobs come from common/knobs.c, the parser the tuner uses too. One
 * pass over the source blanks its comments (keeping newlines, so line
 * numbers survive) and, on the way, picks up the single `/ *@kiln launch ...
 * @* /` block. The JSON is then checked
 * field by field against the task; kernels are looked up in the blanked code
 * so a kernel only mentioned in a comment does not count, and so are the
 * #define lines whose integer constants the expressions may use. The "let"
 * field's names are checked and stored first, in order, so every later
 * expression (the next lets, scratch, launches) may use them; since a let
 * sees only the lets before it, there are no cycles to detect. Resolving
 * evaluates the lets, then the stored expressions, at one shape and checks
 * them against the device.
 * Messages at a shape never print values derived from its dims, because
 * hidden shapes must not be reported. */
#include "manifest.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "c_lex.h"
#include "expr.h"
#include "knobs.h"

#define BLOCK_OPEN "/*@kiln"
#define MAX_EXPR_NAMES 32

/* ---- small text helpers ---------------------------------------------- */

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}


static size_t skip_space(const char *s, size_t n, size_t i)
{
    while (i < n && is_space(s[i]))
        i++;
    return i;
}

static size_t ident_end(const char *s, size_t n, size_t i)
{
    if (i >= n || !kiln_is_ident_start(s[i]))
        return i;
    while (i < n && kiln_is_ident_char(s[i]))
        i++;
    return i;
}

static int word_is(const char *s, size_t len, const char *w)
{
    return strlen(w) == len && memcmp(s, w, len) == 0;
}

static int starts_with(const char *s, size_t n, size_t i, const char *w)
{
    size_t wl = strlen(w);
    return i + wl <= n && memcmp(s + i, w, wl) == 0;
}

/* A kernel as an NVRTC name expression: a qualified name (a::b), with an
 * optional template argument list whose characters are those of type
 * names and integer constants: "rms_norm_kernel<__nv_bfloat16, 8>". No
 * quotes, braces, semicolons or slashes: it names, it does not program. */
static int valid_name_expr(const char *s, char *base, size_t blen)
{
    const char *p = s, *last = s;
    while (1) {
        if (!kiln_is_ident_start(*p))
            return 0;
        last = p;
        while (kiln_is_ident_char(*p))
            p++;
        if (p[0] != ':' || p[1] != ':')
            break;
        p += 2;
    }
    snprintf(base, blen, "%.*s", (int)(p - last), last);
    if (*p == '\0')
        return 1;
    if (*p != '<' || s[strlen(s) - 1] != '>')
        return 0;
    int depth = 0;
    for (; *p; p++) {
        depth += *p == '<' ? 1 : *p == '>' ? -1 : 0;
        if (depth < 0 || (!kiln_is_ident_char(*p) && !strchr("<>:, *&()+-", *p)))
            return 0;
    }
    return depth == 0;
}

static int valid_ident(const char *s)
{
    if (!kiln_is_ident_start(*s))
        return 0;
    while (*s && kiln_is_ident_char(*s))
        s++;
    return *s == '\0';
}

/* ---- parse context ----------------------------------------------------- */

/* A #define or #undef line of the source. */
typedef struct define_line {
    size_t at, len;        /* NAME in the source */
    int line;
    int undef;             /* #undef NAME */
    int conditional;       /* inside #if, #ifdef or #ifndef ... #endif */
    int integer;           /* #define NAME INTEGER: value */
    long long value;
} define_line;

typedef struct parse_ctx {
    const char *src;
    size_t len;
    char *code;            /* src with comments blanked, newlines kept */
    const kiln_task *t;
    kiln_manifest *m;
    kiln_error *err;
    int nblocks;
    size_t block_at;       /* offset where the first block starts */
    size_t json_at, json_end;
    int knob_line[KILN_MAX_KNOBS];
    define_line *defs;     /* every #define and #undef, in source order */
    int ndefs, capdefs;
    const cJSON *lets;     /* the "let" object, while its names are parsed */
    const char *let_name;  /* the let whose expression is being checked */
} parse_ctx;

static int line_of(const parse_ctx *pc, size_t off)
{
    int line = 1;
    for (size_t i = 0; i < off && i < pc->len; i++)
        line += pc->src[i] == '\n';
    return line;
}

static int task_dim(const kiln_task *t, const char *name, size_t len)
{
    for (int i = 0; i < t->ndims; i++)
        if (word_is(name, len, t->dims[i]))
            return i;
    return -1;
}

static int task_arg(const kiln_task *t, const char *name)
{
    for (int i = 0; i < t->nargs; i++)
        if (strcmp(t->args[i].name, name) == 0)
            return i;
    return -1;
}

static int find_knob(const kiln_manifest *m, const char *name, size_t len)
{
    for (int i = 0; i < m->nknobs; i++)
        if (word_is(name, len, m->knobs[i].name))
            return i;
    return -1;
}

static int find_let(const kiln_manifest *m, const char *name, size_t len)
{
    for (int i = 0; i < m->nlets; i++)
        if (word_is(name, len, m->lets[i].name))
            return i;
    return -1;
}

static int find_define(const kiln_manifest *m, const char *name, size_t len)
{
    for (int i = 0; i < m->ndefines; i++)
        if (word_is(name, len, m->defines[i].name))
            return i;
    return -1;
}

/* ---- knob lines ------------------------------------------------------- */

_Static_assert(KILN_KNOB_NAME_MAX < KILN_NAME_MAX, "a knob name fits kiln_manifest_knob");

/* The file's knobs (common/knobs.c, the parser the tuner uses), none
 * named as a task dim, into pc->m->knobs. */
static int parse_knobs(parse_ctx *pc)
{
    kiln_knob *k = malloc(KILN_MAX_KNOBS * sizeof *k);
    kiln_error ke;
    int line = 0, n = k ? kiln_knobs_scan(pc->src, pc->len, k, KILN_MAX_KNOBS, &line, &ke) : -1;
    int rc = n < 0 ? -1 : 0;
    if (!k)
        kiln_fail(pc->err, "manifest: out of memory");
    else if (n < 0)
        kiln_fail(pc->err, "manifest (line %d): %s", line, ke.msg);
    for (int i = 0; i < n && rc == 0; i++) {
        if (task_dim(pc->t, k[i].name, strlen(k[i].name)) >= 0)
            rc = kiln_fail(pc->err, "manifest (line %d): knob '%s' has the name of a task dim",
                           k[i].line, k[i].name);
        /* common/knobs.c refused a longer name; the precision says so to gcc */
        snprintf(pc->m->knobs[i].name, sizeof pc->m->knobs[i].name, "%.*s",
                 (int)sizeof pc->m->knobs[i].name - 1, k[i].name);
        snprintf(pc->m->knobs[i].value, sizeof pc->m->knobs[i].value, "%s", k[i].value);
        pc->knob_line[i] = k[i].line;
    }
    pc->m->nknobs = rc == 0 ? n : 0;
    free(k);
    return rc;
}

/* ---- the launch block ------------------------------------------------- */

/* A block comment from at; close is the offset of its "* /", or len when
 * it is unterminated. "/ *@kiln launch ... @* /" is the manifest. */
static int on_block_comment(parse_ctx *pc, size_t at, size_t close)
{
    if (!starts_with(pc->src, pc->len, at, BLOCK_OPEN))
        return 0;
    int line = line_of(pc, at);
    size_t w = skip_space(pc->src, close, at + strlen(BLOCK_OPEN));
    size_t we = ident_end(pc->src, close, w);
    if (!word_is(pc->src + w, we - w, "launch"))
        return kiln_fail(pc->err, "manifest (line %d): unknown block '/*@kiln %.*s' "
                         "(expected '/*@kiln launch')", line, (int)(we - w > 40 ? 40 : we - w),
                         pc->src + w);
    if (close >= pc->len)
        return kiln_fail(pc->err, "manifest (line %d): unterminated /*@kiln launch block "
                         "(no closing @*/)", line);
    if (close <= we || pc->src[close - 1] != '@')
        return kiln_fail(pc->err, "manifest (line %d): the /*@kiln launch block must end with @*/",
                         line_of(pc, close));
    if (++pc->nblocks > 1)
        return kiln_fail(pc->err, "manifest (line %d): a second /*@kiln launch block "
                         "(the first is on line %d); there must be exactly one",
                         line, line_of(pc, pc->block_at));
    pc->block_at = at;
    pc->json_at = we;
    pc->json_end = close - 1;
    return 0;
}

static void blank(parse_ctx *pc, size_t from, size_t to)
{
    for (size_t i = from; i < to && i < pc->len; i++)
        pc->code[i] = pc->src[i] == '\n' ? '\n' : ' ';
}

/* Blank comments into pc->code and find the launch block. */
static int scan_source(parse_ctx *pc)
{
    size_t i = 0;
    while (i < pc->len) {
        char c = pc->src[i], next = i + 1 < pc->len ? pc->src[i + 1] : 0;
        if (c == '/' && next == '*') {
            int closed;
            size_t after = kiln_lex_block_comment_end(pc->src, pc->len, i, &closed);
            if (on_block_comment(pc, i, closed ? after - 2 : pc->len) < 0)
                return -1;
            blank(pc, i, after);
            i = after;
        } else if (c == '/' && next == '/') {
            size_t eol = kiln_lex_line_comment_end(pc->src, pc->len, i);
            blank(pc, i, eol);
            i = eol;
        } else if (c == '"' || c == '\'') {   /* literals are code, kept as they are */
            size_t end = kiln_lex_literal_end(pc->src, pc->len, i);
            memcpy(pc->code + i, pc->src + i, end - i);
            i = end;
        } else {
            pc->code[i++] = c;
        }
    }
    if (pc->nblocks == 0)
        return kiln_fail(pc->err, "manifest: no /*@kiln launch {...} @*/ block in the source");
    return 0;
}

/* The one way to find the manifest without parsing it: the first complete
 * "/ *@kiln launch ... @* /" block comment, found as the parser finds it
 * (comments and literals lexed, so a string that looks like one is not). */
int kiln_manifest_locate(const char *src, size_t len, kiln_manifest_span *sp)
{
    size_t i = 0;
    while (i < len) {
        char c = src[i], next = i + 1 < len ? src[i + 1] : 0;
        if (c == '/' && next == '*') {
            int closed;
            size_t after = kiln_lex_block_comment_end(src, len, i, &closed);
            if (closed && starts_with(src, len, i, BLOCK_OPEN)) {
                size_t close = after - 2;
                size_t w = skip_space(src, close, i + strlen(BLOCK_OPEN));
                size_t we = ident_end(src, close, w);
                if (word_is(src + w, we - w, "launch") && close > we && src[close - 1] == '@') {
                    *sp = (kiln_manifest_span){.block_at = i, .json_at = we,
                                               .json_end = close - 1, .block_end = after};
                    return 1;
                }
            }
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

/* ---- #define constants ---------------------------------------------------
 *
 * A line `#define NAME INTEGER` (a decimal integer as knobs.h reads one) is
 * a constant the expressions may use, so a kernel's tile sizes need not be
 * knobs to size its launch. kiln does not run the preprocessor, so only a
 * value it can know for sure counts: the one #define of NAME in the file,
 * outside every #if/#ifdef/#ifndef block (whose branch depends on macros
 * such as KILN_DTYPE_*), with NAME never #undef'd. Every other #define
 * (function-like, an expression, hex, a suffix, a continued line) is
 * ignored; an expression that uses its name is told why. */

static int push_define(parse_ctx *pc, const define_line *d)
{
    if (pc->ndefs == pc->capdefs) {
        int cap = pc->capdefs ? 2 * pc->capdefs : 16;
        define_line *p = realloc(pc->defs, (size_t)cap * sizeof *p);
        if (!p)
            return kiln_fail(pc->err, "manifest: out of memory");
        pc->defs = p;
        pc->capdefs = cap;
    }
    pc->defs[pc->ndefs++] = *d;
    return 0;
}

/* Is the rest of a #define, from name_end to le, a decimal integer alone? */
static int define_integer(const char *s, size_t name_end, size_t le, long long *value)
{
    if (name_end < le && s[name_end] == '(')   /* a function-like macro */
        return 0;
    size_t v = skip_space(s, le, name_end), ve = v;
    while (ve < le && !is_space(s[ve]))
        ve++;
    return ve > v && skip_space(s, le, ve) == le && kiln_knob_int(s + v, ve - v, value) == 0;
}

/* The directive in the logical line [ls, le) of pc->code, if any (line: its
 * first line; continued: it spans lines). *depth counts open #if blocks. */
static int on_directive(parse_ctx *pc, size_t ls, size_t le, int line, int continued,
                        int *depth)
{
    const char *s = pc->code;
    size_t i = skip_space(s, le, ls);
    if (i >= le || s[i] != '#')
        return 0;
    size_t w = skip_space(s, le, i + 1), we = ident_end(s, le, w);
    if (word_is(s + w, we - w, "if") || word_is(s + w, we - w, "ifdef") ||
        word_is(s + w, we - w, "ifndef"))
        ++*depth;
    else if (word_is(s + w, we - w, "endif") && *depth > 0)
        --*depth;
    int undef = word_is(s + w, we - w, "undef");
    if (!undef && !word_is(s + w, we - w, "define"))
        return 0;
    size_t name = skip_space(s, le, we), name_end = ident_end(s, le, name);
    if (name == name_end)
        return 0;   /* no name: the compiler says so */
    define_line d = {.at = name, .len = name_end - name, .line = line, .undef = undef,
                     .conditional = *depth > 0};
    d.integer = !undef && !continued && define_integer(s, name_end, le, &d.value);
    return push_define(pc, &d);
}

/* Every #define and #undef of the blanked source into pc->defs. A line
 * ending in a backslash continues, as the preprocessor joins it. */
static int scan_defines(parse_ctx *pc)
{
    const char *s = pc->code;
    int depth = 0, line = 1;
    for (size_t ls = 0; ls < pc->len;) {
        size_t le = ls;
        int continued = 0, lines = 1;
        for (; le < pc->len; le++) {
            if (s[le] != '\n')
                continue;
            size_t b = le > ls && s[le - 1] == '\r' ? le - 1 : le;
            if (b == ls || s[b - 1] != '\\')
                break;
            continued = 1;
            lines++;
        }
        if (on_directive(pc, ls, le, line, continued, &depth) < 0)
            return -1;
        line += lines;
        ls = le + 1;
    }
    return 0;
}

/* The #define and #undef lines of name: how many; *first and *second the
 * first two (NULL when there are fewer). */
static int define_lines(const parse_ctx *pc, const char *name, size_t len,
                        const define_line **first, const define_line **second)
{
    int n = 0;
    *first = *second = NULL;
    for (int i = 0; i < pc->ndefs; i++) {
        const define_line *d = &pc->defs[i];
        if (d->len != len || memcmp(pc->src + d->at, name, len) != 0)
            continue;
        if (n == 0)
            *first = d;
        else if (n == 1)
            *second = d;
        n++;
    }
    return n;
}

/* A knob's line is the only #define of its name: the tuner rewrites that
 * line's value, so another #define or an #undef would make the value that
 * runs differ from the one the manifest computes with. */
static int check_knob_defines(parse_ctx *pc)
{
    for (int k = 0; k < pc->m->nknobs; k++) {
        const char *name = pc->m->knobs[k].name;
        for (int i = 0; i < pc->ndefs; i++) {
            const define_line *d = &pc->defs[i];
            if (d->line == pc->knob_line[k] || !word_is(pc->src + d->at, d->len, name))
                continue;
            return kiln_fail(pc->err, "manifest (line %d): '%s' is a knob (line %d) and is %s "
                             "here; a knob must be the only #define of its name", d->line, name,
                             pc->knob_line[k], d->undef ? "#undef'd" : "#defined again");
        }
    }
    return 0;
}

/* name is no dim, knob or let: a #define constant, recorded in m->defines
 * for resolving and exporting, or an error saying why it cannot be used. */
static int use_define(parse_ctx *pc, const char *path, const char *name)
{
    size_t len = strlen(name);
    const define_line *d, *d2;
    int n = define_lines(pc, name, len, &d, &d2);
    if (find_define(pc->m, name, len) >= 0)
        return 0;
    if (n == 0 || (n == 1 && d->undef))
        return kiln_fail(pc->err, "manifest: %s: unknown name '%s' (expressions may use the "
                         "task's dims, the file's knobs and integer #defines, the lets before "
                         "them and sizeof(T))", path, name);
    if (n > 1)
        return kiln_fail(pc->err, "manifest: %s: '%s' is #defined or #undef'd more than once "
                         "(lines %d and %d), so its value is not known; expressions use only a "
                         "name #defined once", path, name, d->line, d2->line);
    if (d->conditional)
        return kiln_fail(pc->err, "manifest: %s: '%s' is #defined inside #if/#ifdef/#ifndef "
                         "(line %d), so its value is not known; expressions use only #defines "
                         "outside them", path, name, d->line);
    if (!d->integer)
        return kiln_fail(pc->err, "manifest: %s: '%s' (line %d) is not #defined as a decimal "
                         "integer; expressions use only #define NAME INTEGER", path, name, d->line);
    if (len >= sizeof pc->m->defines[0].name)
        return kiln_fail(pc->err, "manifest: %s: the #define constant '%.40s' has a name longer "
                         "than %d characters", path, name, (int)sizeof pc->m->defines[0].name - 1);
    if (pc->m->ndefines >= KILN_MANIFEST_MAX_DEFINES)
        return kiln_fail(pc->err, "manifest: %s: the expressions use more than %d #define "
                         "constants", path, KILN_MANIFEST_MAX_DEFINES);
    kiln_manifest_knob *c = &pc->m->defines[pc->m->ndefines++];
    snprintf(c->name, sizeof c->name, "%s", name);
    snprintf(c->value, sizeof c->value, "%lld", d->value);
    return 0;
}

/* ---- kernels ---------------------------------------------------------- */

/* Expect word w at *i (after whitespace); advances past it. */
static int expect_word(const char *s, size_t n, size_t *i, const char *w)
{
    size_t a = skip_space(s, n, *i), e = ident_end(s, n, a);
    if (!word_is(s + a, e - a, w))
        return 0;
    *i = e;
    return 1;
}

/* Skip any number of __launch_bounds__(...) at *i. */
static void skip_launch_bounds(const char *s, size_t n, size_t *i)
{
    while (expect_word(s, n, i, "__launch_bounds__")) {
        size_t j = skip_space(s, n, *i);
        if (j >= n || s[j] != '(')
            return;
        int depth = 0;
        for (; j < n; j++) {
            depth += (s[j] == '(') - (s[j] == ')');
            if (depth == 0)
                break;
        }
        *i = j < n ? j + 1 : n;
    }
}

/* Does `extern "C" __global__ void NAME(` follow at i (which starts "extern")? */
static int kernel_at(const char *s, size_t n, size_t i, const char *name)
{
    if (!expect_word(s, n, &i, "extern"))
        return 0;
    i = skip_space(s, n, i);
    if (!starts_with(s, n, i, "\"C\""))
        return 0;
    i += 3;
    skip_launch_bounds(s, n, &i);
    if (!expect_word(s, n, &i, "__global__"))
        return 0;
    skip_launch_bounds(s, n, &i);
    if (!expect_word(s, n, &i, "void"))
        return 0;
    skip_launch_bounds(s, n, &i);
    if (!expect_word(s, n, &i, name))
        return 0;
    i = skip_space(s, n, i);
    return i < n && s[i] == '(';
}

/* Does the blanked code use name as a whole word? */
static int ident_used(const parse_ctx *pc, const char *name)
{
    size_t nl = strlen(name);
    for (const char *p = pc->code; (p = strstr(p, name)) != NULL; p += nl) {
        int before = p > pc->code && kiln_is_ident_char(p[-1]);
        if (!before && !kiln_is_ident_char(p[nl]))
            return 1;
    }
    return 0;
}

static int kernel_defined(const parse_ctx *pc, const char *name)
{
    const char *s = pc->code;
    size_t n = pc->len;
    for (size_t i = 0; i + 6 <= n; i++)
        if (s[i] == 'e' && (i == 0 || !kiln_is_ident_char(s[i - 1])) && kernel_at(s, n, i, name))
            return 1;
    return 0;
}

/* ---- JSON fields -------------------------------------------------------- */

/* Reject fields other than allowed[] and fields given twice. */
static int check_fields(parse_ctx *pc, const cJSON *obj, const char *path,
                        const char *const *allowed, int nallowed, const char *list)
{
    for (const cJSON *it = obj->child; it; it = it->next) {
        int ok = 0;
        for (int k = 0; k < nallowed && !ok; k++)
            ok = strcmp(it->string, allowed[k]) == 0;
        if (!ok)
            return kiln_fail(pc->err, "manifest: %s%sunknown field '%.64s' (allowed: %s)", path,
                             *path ? ": " : "", it->string, list);
        for (const cJSON *p = obj->child; p != it; p = p->next)
            if (strcmp(p->string, it->string) == 0)
                return kiln_fail(pc->err, "manifest: %s%sfield '%s' given twice", path,
                                 *path ? ": " : "", it->string);
    }
    return 0;
}

/* sizeof(TYPE) in an expression must name T or a dtype. */
static int check_sizeof_types(parse_ctx *pc, const char *path, const char *e)
{
    size_t n = strlen(e);
    for (size_t i = 0; i < n;) {
        if (!kiln_is_ident_char(e[i])) {
            i++;
            continue;
        }
        size_t end = i;
        while (end < n && kiln_is_ident_char(e[end]))
            end++;
        if (kiln_is_ident_start(e[i]) && word_is(e + i, end - i, "sizeof")) {
            size_t a = skip_space(e, n, end);
            a = a < n && e[a] == '(' ? skip_space(e, n, a + 1) : a;
            size_t b = ident_end(e, n, a);
            char type[16];
            snprintf(type, sizeof type, "%.*s", (int)(b - a), e + a);
            if (b - a >= sizeof type ||
                (strcmp(type, "T") != 0 && kiln_dtype_parse(type) == KILN_DT_INVALID))
                return kiln_fail(pc->err, "manifest: %s: unknown type '%.*s' in sizeof() "
                                 "(use sizeof(T) or a dtype such as f32)", path,
                                 (int)(b - a > 40 ? 40 : b - a), e + a);
        }
        i = end;
    }
    return 0;
}

/* A name an expression uses: a dim, a knob, a let stored before this
 * expression, or a #define constant. While the lets are parsed, a later
 * let's name (or the let's own) is refused by name: that is what keeps
 * their order free of cycles. */
static int check_name(parse_ctx *pc, const char *path, const char *name)
{
    size_t len = strlen(name);
    if (task_dim(pc->t, name, len) >= 0 || find_knob(pc->m, name, len) >= 0 ||
        find_let(pc->m, name, len) >= 0)
        return 0;
    if (pc->let_name && strcmp(pc->let_name, name) == 0)
        return kiln_fail(pc->err, "manifest: %s: a let cannot use itself", path);
    if (pc->lets && cJSON_GetObjectItemCaseSensitive(pc->lets, name))
        return kiln_fail(pc->err, "manifest: %s: '%s' is a later let; a let may use only the "
                         "lets before it", path, name);
    return use_define(pc, path, name);
}

/* The expression parses and names only what check_name allows. */
static int check_expr(parse_ctx *pc, const char *path, const char *e)
{
    char names[MAX_EXPR_NAMES][64];
    kiln_error xe;
    int n = kiln_expr_names(e, names, MAX_EXPR_NAMES, &xe);
    if (n < 0)
        return kiln_fail(pc->err, "manifest: %s: %s", path, xe.msg);
    for (int k = 0; k < n; k++)
        if (check_name(pc, path, names[k]) < 0)
            return -1;
    return check_sizeof_types(pc, path, e);
}

/* An integer or an expression string, stored as expression text. */
static int get_expr(parse_ctx *pc, const cJSON *v, const char *path, char out[KILN_EXPR_MAX])
{
    if (cJSON_IsNumber(v)) {
        double d = v->valuedouble;
        if (!(d >= 0 && d <= 9007199254740992.0) || d != floor(d))
            return kiln_fail(pc->err, "manifest: %s: %g is not a non-negative integer", path, d);
        snprintf(out, KILN_EXPR_MAX, "%lld", (long long)d);
        return 0;
    }
    if (!cJSON_IsString(v))
        return kiln_fail(pc->err, "manifest: %s: must be an integer or an expression string", path);
    if (strlen(v->valuestring) >= KILN_EXPR_MAX)
        return kiln_fail(pc->err, "manifest: %s: expression longer than %d characters", path,
                         KILN_EXPR_MAX - 1);
    snprintf(out, KILN_EXPR_MAX, "%s", v->valuestring);
    return check_expr(pc, path, out);
}

/* "grid", "block", "cluster": an array of 1..3 integers or expressions. */
static int get_dims(parse_ctx *pc, const cJSON *obj, const char *key, const char *path,
                    int required, char out[3][KILN_EXPR_MAX], int *n)
{
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(obj, key);
    char p[96];
    snprintf(p, sizeof p, "%s.%s", path, key);
    *n = 0;
    if (!arr && !required)
        return 0;
    if (!arr)
        return kiln_fail(pc->err, "manifest: %s: missing field '%s'", path, key);
    int count = cJSON_IsArray(arr) ? cJSON_GetArraySize(arr) : 0;
    if (count < 1 || count > 3)
        return kiln_fail(pc->err, "manifest: %s: must be an array of 1 to 3 integers or "
                         "expressions", p);
    const cJSON *it;
    cJSON_ArrayForEach(it, arr) {
        char ip[112];
        snprintf(ip, sizeof ip, "%s[%d]", p, *n);
        if (get_expr(pc, it, ip, out[*n]) < 0)
            return -1;
        ++*n;
    }
    return 0;
}

static int find_scratch(const kiln_manifest *m, const char *name)
{
    for (int i = 0; i < m->nscratch; i++)
        if (strcmp(m->scratch[i].name, name) == 0)
            return i;
    return -1;
}

/* "i64(EXPR)" and the like: the wire kind of the cast and, in inner, the
 * expression it wraps; an expression with no cast is an i32. */
static int imm_cast(const char *e, char *inner, size_t cap)
{
    static const struct { const char *w; int kind; } casts[] = {
        {"i32", KILN_WIRE_I32}, {"i64", KILN_WIRE_I64}, {"f32", KILN_WIRE_F32},
        {"f64", KILN_WIRE_F64},
    };
    size_t n = strlen(e), a = skip_space(e, n, 0);
    for (size_t k = 0; k < sizeof casts / sizeof casts[0]; k++) {
        size_t at = a + 3;
        if (!starts_with(e, n, a, casts[k].w) || (at = skip_space(e, n, at)) >= n || e[at] != '(')
            continue;
        int depth = 0;
        size_t close = at;
        for (; close < n; close++) {
            depth += (e[close] == '(') - (e[close] == ')');
            if (depth == 0)
                break;
        }
        if (close < n && skip_space(e, n, close + 1) == n) {
            snprintf(inner, cap, "%.*s", (int)(close - at - 1), e + at + 1);
            return casts[k].kind;
        }
    }
    snprintf(inner, cap, "%s", e);
    return KILN_WIRE_I32;
}

/* A launch argument that is no task arg or scratch buffer: an expression
 * passed by value, ls->imm[ls->nimm]. */
static int get_imm(parse_ctx *pc, const cJSON *it, const char *path, int k, kiln_launch_spec *ls)
{
    char p[96], e[KILN_EXPR_MAX];
    snprintf(p, sizeof p, "%s.args[%d]", path, k);
    if (ls->nimm == KILN_WORKER_MAX_IMMS)
        return kiln_fail(pc->err, "manifest: %s: more than %d computed arguments in one launch",
                         p, KILN_WORKER_MAX_IMMS);
    if (cJSON_IsString(it) && valid_ident(it->valuestring) &&
        task_dim(pc->t, it->valuestring, strlen(it->valuestring)) < 0 &&
        find_knob(pc->m, it->valuestring, strlen(it->valuestring)) < 0 &&
        find_let(pc->m, it->valuestring, strlen(it->valuestring)) < 0) {
        const define_line *d, *d2;
        if (define_lines(pc, it->valuestring, strlen(it->valuestring), &d, &d2) == 0)
            return kiln_fail(pc->err, "manifest: %s: unknown name '%.64s' (not an arg of task "
                             "%s, a scratch buffer, a dim, knob, let or #define constant)", p,
                             it->valuestring, pc->t->name);
    }
    if (cJSON_IsString(it) && strlen(it->valuestring) >= KILN_EXPR_MAX)
        return kiln_fail(pc->err, "manifest: %s: expression longer than %d characters", p,
                         KILN_EXPR_MAX - 1);
    kiln_imm_spec *im = &ls->imm[ls->nimm];
    cJSON tmp = *it;
    if (cJSON_IsString(it)) {
        im->kind = imm_cast(it->valuestring, e, sizeof e);
        tmp.valuestring = e;
    } else {
        im->kind = KILN_WIRE_I32;
    }
    if (get_expr(pc, &tmp, p, im->expr) < 0)
        return -1;
    ls->arg[ls->nargs++] = KILN_WIRE_ARG_IMM + ls->nimm++;
    return 0;
}

static int get_args(parse_ctx *pc, const cJSON *obj, const char *path, kiln_launch_spec *ls)
{
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(obj, "args");
    if (!arr)
        return kiln_fail(pc->err, "manifest: %s: missing field 'args'", path);
    if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) > KILN_WORKER_MAX_LAUNCH_ARGS)
        return kiln_fail(pc->err, "manifest: %s.args: must be an array of at most %d names "
                         "or expressions", path, KILN_WORKER_MAX_LAUNCH_ARGS);
    const cJSON *it;
    cJSON_ArrayForEach(it, arr) {
        int k = ls->nargs;
        if (!cJSON_IsString(it) && !cJSON_IsNumber(it))
            return kiln_fail(pc->err, "manifest: %s.args[%d]: must be a name or an expression",
                             path, k);
        int a = cJSON_IsString(it) ? task_arg(pc->t, it->valuestring) : -1;
        int sc = cJSON_IsString(it) ? find_scratch(pc->m, it->valuestring) : -1;
        if (a >= 0 || sc >= 0)
            ls->arg[ls->nargs++] = a >= 0 ? a : -(sc + 1);
        else if (get_imm(pc, it, path, k, ls) < 0)
            return -1;
    }
    return 0;
}

static int get_kernel(parse_ctx *pc, const cJSON *obj, const char *path, kiln_launch_spec *ls)
{
    const cJSON *k = cJSON_GetObjectItemCaseSensitive(obj, "kernel");
    if (!k)
        return kiln_fail(pc->err, "manifest: %s: missing field 'kernel'", path);
    char base[KILN_KERNEL_NAME_MAX];
    if (!cJSON_IsString(k) || strlen(k->valuestring) >= KILN_KERNEL_NAME_MAX ||
        !valid_name_expr(k->valuestring, base, sizeof base))
        return kiln_fail(pc->err, "manifest: %s.kernel: must be a kernel's name or a template "
                         "instance (k<float, 4>) of at most %d characters", path,
                         KILN_KERNEL_NAME_MAX - 1);
    /* The plain spelling is looked up by name; anything else (a template
     * instance, a kernel in an extern "C" block, one a macro makes, a C++
     * name) through NVRTC after compiling, and its name must be in the code. */
    ls->by_name_expr = !(valid_ident(k->valuestring) && kernel_defined(pc, k->valuestring));
    if (ls->by_name_expr && !ident_used(pc, base))
        return kiln_fail(pc->err, "manifest: %s.kernel: '%s' does not occur in the source's "
                         "code", path, base);
    snprintf(ls->kernel, sizeof ls->kernel, "%s", k->valuestring);
    return 0;
}

static int parse_launch(parse_ctx *pc, const cJSON *obj, int i)
{
    static const char *const fields[] = {"kernel", "grid", "block", "cluster", "smem", "args",
                                         "when"};
    char path[32];
    snprintf(path, sizeof path, "launches[%d]", i);
    if (!cJSON_IsObject(obj))
        return kiln_fail(pc->err, "manifest: %s: must be an object", path);
    if (check_fields(pc, obj, path, fields, 7, "kernel, grid, block, cluster, smem, args, when") < 0)
        return -1;
    kiln_launch_spec *ls = &pc->m->launches[i];
    if (get_kernel(pc, obj, path, ls) < 0 ||
        get_dims(pc, obj, "grid", path, 1, ls->grid, &ls->ngrid) < 0 ||
        get_dims(pc, obj, "block", path, 1, ls->block, &ls->nblock) < 0 ||
        get_dims(pc, obj, "cluster", path, 0, ls->cluster, &ls->ncluster) < 0)
        return -1;
    const cJSON *smem = cJSON_GetObjectItemCaseSensitive(obj, "smem");
    char sp[48];
    snprintf(sp, sizeof sp, "%s.smem", path);
    snprintf(ls->smem, sizeof ls->smem, "0");
    if (smem && get_expr(pc, smem, sp, ls->smem) < 0)
        return -1;
    const cJSON *when = cJSON_GetObjectItemCaseSensitive(obj, "when");
    snprintf(sp, sizeof sp, "%s.when", path);
    ls->when[0] = '\0';
    if (when && get_expr(pc, when, sp, ls->when) < 0)
        return -1;
    return get_args(pc, obj, path, ls);
}

static int parse_scratch_one(parse_ctx *pc, const cJSON *obj, int i)
{
    static const char *const fields[] = {"name", "bytes", "init"};
    char path[32], p[48];
    snprintf(path, sizeof path, "scratch[%d]", i);
    if (!cJSON_IsObject(obj))
        return kiln_fail(pc->err, "manifest: %s: must be an object", path);
    if (check_fields(pc, obj, path, fields, 3, "name, bytes, init") < 0)
        return -1;
    kiln_scratch_spec *sc = &pc->m->scratch[i];
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(obj, "name");
    const cJSON *bytes = cJSON_GetObjectItemCaseSensitive(obj, "bytes");
    const cJSON *init = cJSON_GetObjectItemCaseSensitive(obj, "init");
    if (!name || !bytes || !init)
        return kiln_fail(pc->err, "manifest: %s: missing field '%s'", path,
                         !name ? "name" : !bytes ? "bytes" : "init");
    if (!cJSON_IsString(name) || !valid_ident(name->valuestring) ||
        strlen(name->valuestring) >= KILN_NAME_MAX)
        return kiln_fail(pc->err, "manifest: %s.name: must be an identifier of at most %d "
                         "characters", path, KILN_NAME_MAX - 1);
    if (find_scratch(pc->m, name->valuestring) >= 0)
        return kiln_fail(pc->err, "manifest: %s.name: scratch buffer '%s' is declared twice",
                         path, name->valuestring);
    if (task_arg(pc->t, name->valuestring) >= 0)
        return kiln_fail(pc->err, "manifest: %s.name: '%s' is already an arg of task %s", path,
                         name->valuestring, pc->t->name);
    if (!cJSON_IsString(init) || (strcmp(init->valuestring, "zero") != 0 &&
                                  strcmp(init->valuestring, "none") != 0))
        return kiln_fail(pc->err, "manifest: %s.init: must be \"zero\" or \"none\"", path);
    snprintf(p, sizeof p, "%s.bytes", path);
    if (get_expr(pc, bytes, p, sc->bytes) < 0)
        return -1;
    snprintf(sc->name, sizeof sc->name, "%s", name->valuestring);
    sc->zero = strcmp(init->valuestring, "zero") == 0;
    pc->m->nscratch++;
    return 0;
}

/* ---- lets --------------------------------------------------------------- */

/* A let's name is an identifier that no expression could mean otherwise:
 * not a dim, knob, function, #defined name (constant or not) or earlier
 * let, so reading an expression never needs to know which one wins. */
static int check_let_name(parse_ctx *pc, const char *path, const char *name)
{
    size_t len = strlen(name);
    const define_line *d, *d2;
    if (!valid_ident(name) || len >= KILN_NAME_MAX)
        return kiln_fail(pc->err, "manifest: %s: a let's name must be an identifier of at most "
                         "%d characters", path, KILN_NAME_MAX - 1);
    if (find_let(pc->m, name, len) >= 0)
        return kiln_fail(pc->err, "manifest: %s: '%s' is defined twice", path, name);
    if (task_dim(pc->t, name, len) >= 0)
        return kiln_fail(pc->err, "manifest: %s: '%s' is a dim of task %s; a let may not shadow "
                         "it", path, name, pc->t->name);
    int k = find_knob(pc->m, name, len);
    if (k >= 0)
        return kiln_fail(pc->err, "manifest: %s: '%s' is a knob (line %d); a let may not shadow "
                         "it", path, name, pc->knob_line[k]);
    if (kiln_expr_is_function(name, len))
        return kiln_fail(pc->err, "manifest: %s: '%s' is a function; a let may not shadow it",
                         path, name);
    if (define_lines(pc, name, len, &d, &d2) > 0)
        return kiln_fail(pc->err, "manifest: %s: '%s' is #defined in the source (line %d); a let "
                         "may not shadow it", path, name, d->line);
    return 0;
}

/* "let": {"NAME": integer or expression, ...}, stored in the order written
 * (cJSON keeps it), each checked against the lets before it. */
static int parse_lets(parse_ctx *pc, const cJSON *lets)
{
    if (!lets)
        return 0;
    if (!cJSON_IsObject(lets))
        return kiln_fail(pc->err, "manifest: let: must be an object of names and expressions, "
                         "e.g. {\"vec\": \"gcd(cols, 8)\"}");
    if (cJSON_GetArraySize(lets) > KILN_MANIFEST_MAX_LETS)
        return kiln_fail(pc->err, "manifest: let: more than %d names", KILN_MANIFEST_MAX_LETS);
    pc->lets = lets;
    for (const cJSON *it = lets->child; it; it = it->next) {
        char path[64];
        kiln_manifest_let *l = &pc->m->lets[pc->m->nlets];
        snprintf(path, sizeof path, "let.%.40s", it->string);
        pc->let_name = it->string;
        if (check_let_name(pc, path, it->string) < 0 || get_expr(pc, it, path, l->expr) < 0)
            return -1;
        snprintf(l->name, sizeof l->name, "%s", it->string);
        pc->m->nlets++;
    }
    pc->lets = NULL;
    pc->let_name = NULL;
    return 0;
}

/* ---- the root ------------------------------------------------------------ */

static int parse_root(parse_ctx *pc, const cJSON *root)
{
    static const char *const fields[] = {"launches", "scratch", "let", "require"};
    if (!cJSON_IsObject(root))
        return kiln_fail(pc->err, "manifest: the block must hold one JSON object");
    if (check_fields(pc, root, "", fields, 4, "launches, scratch, let, require") < 0 ||
        parse_lets(pc, cJSON_GetObjectItemCaseSensitive(root, "let")) < 0)
        return -1;
    /* Preconditions (precond.h): only DIM % N == 0, checked by the one
     * parser that the C candidate's require block uses too. */
    const cJSON *req = cJSON_GetObjectItemCaseSensitive(root, "require");
    if (req && kiln_precond_parse_json(pc->t, req, "require", &pc->m->require, pc->err) < 0)
        return kiln_error_prefix(pc->err, "manifest");
    const cJSON *scratch = cJSON_GetObjectItemCaseSensitive(root, "scratch");
    if (scratch && (!cJSON_IsArray(scratch) ||
                    cJSON_GetArraySize(scratch) > KILN_WORKER_MAX_SCRATCH))
        return kiln_fail(pc->err, "manifest: scratch: must be an array of at most %d buffers",
                         KILN_WORKER_MAX_SCRATCH);
    const cJSON *it;
    int i = 0;
    cJSON_ArrayForEach(it, scratch) {
        if (parse_scratch_one(pc, it, i++) < 0)
            return -1;
    }
    const cJSON *launches = cJSON_GetObjectItemCaseSensitive(root, "launches");
    if (!launches)
        return kiln_fail(pc->err, "manifest: missing field 'launches'");
    int n = cJSON_IsArray(launches) ? cJSON_GetArraySize(launches) : 0;
    if (n < 1 || n > KILN_WORKER_MAX_LAUNCHES)
        return kiln_fail(pc->err, "manifest: launches: must be an array of 1 to %d launches",
                         KILN_WORKER_MAX_LAUNCHES);
    i = 0;
    cJSON_ArrayForEach(it, launches) {
        if (parse_launch(pc, it, i++) < 0)
            return -1;
    }
    pc->m->nlaunches = n;
    return 0;
}

static int parse_json(parse_ctx *pc)
{
    const char *text = pc->src + pc->json_at, *end = NULL;
    size_t n = pc->json_end - pc->json_at;
    cJSON *root = cJSON_ParseWithLengthOpts(text, n, &end, 0);
    if (!root) {
        size_t off = end && end >= text && end <= text + n ? (size_t)(end - text) : 0;
        size_t show = 0;
        while (off + show < n && show < 24 && text[off + show] != '\n')
            show++;
        return kiln_fail(pc->err, "manifest (line %d): malformed JSON near '%.*s'",
                         line_of(pc, pc->json_at + off), (int)show, text + off);
    }
    size_t rest = end ? (size_t)(end - text) : n;
    rest = skip_space(text, n, rest);
    int rc;
    if (rest < n)
        rc = kiln_fail(pc->err, "manifest (line %d): unexpected text after the JSON object",
                       line_of(pc, pc->json_at + rest));
    else
        rc = parse_root(pc, root);
    cJSON_Delete(root);
    return rc;
}

int kiln_manifest_parse(const char *src, size_t len, const kiln_task *t, kiln_manifest *m,
                        kiln_error *err)
{
    memset(m, 0, sizeof *m);
    parse_ctx pc = {.src = src, .len = len, .code = malloc(len + 1), .t = t, .m = m,
                    .err = err};
    if (!pc.code)
        return kiln_fail(err, "manifest: out of memory");
    pc.code[len] = '\0';
    int rc = parse_knobs(&pc);
    if (rc == 0)
        rc = scan_source(&pc);
    if (rc == 0)
        rc = scan_defines(&pc);
    if (rc == 0)
        rc = check_knob_defines(&pc);
    if (rc == 0)
        rc = parse_json(&pc);
    free(pc.code);
    free(pc.defs);
    if (rc < 0)
        memset(m, 0, sizeof *m);
    return rc;
}

/* ---- resolving at a shape --------------------------------------------- */

void kiln_device_limits_default(kiln_device_limits *lim)
{
    lim->max_threads_per_block = 1024;
    lim->max_block[0] = 1024;
    lim->max_block[1] = 1024;
    lim->max_block[2] = 64;
    lim->max_grid[0] = 2147483647;
    lim->max_grid[1] = 65535;
    lim->max_grid[2] = 65535;
    lim->max_smem_optin = 232448;
    lim->max_cluster = 16;
    lim->max_scratch_bytes = (int64_t)4 << 30;
}

typedef struct resolve_ctx {
    const kiln_manifest *m;
    const kiln_task *t;
    kiln_dtype dt;
    const kiln_shape *s;
    const kiln_device_limits *lim;
    kiln_error *err;
    int nlets;                                /* lets evaluated so far: visible */
    int64_t let[KILN_MANIFEST_MAX_LETS];
} resolve_ctx;

/* A knob's or #define constant's value text as an integer value. */
static int const_value(const kiln_manifest_knob *c, kiln_value *out)
{
    long long v;
    if (kiln_knob_int(c->value, strlen(c->value), &v) < 0)
        return -1;
    out->i = v;
    return 0;
}

/* Dims, knobs, the lets evaluated so far, #define constants: the order
 * parsing checked them in (a let cannot take a dim's or knob's name). */
static int resolve_lookup(void *p, const char *name, size_t len, kiln_value *out)
{
    resolve_ctx *rc = p;
    int d = task_dim(rc->t, name, len), k = find_knob(rc->m, name, len);
    int l = find_let(rc->m, name, len), c = find_define(rc->m, name, len);
    *out = (kiln_value){0, 0, 0.0};
    if (d >= 0)
        out->i = rc->s->d[d];
    else if (k >= 0)
        return const_value(&rc->m->knobs[k], out);
    else if (l >= 0 && l < rc->nlets)
        out->i = rc->let[l];
    else if (c >= 0)
        return const_value(&rc->m->defines[c], out);
    else
        return -1;
    return 0;
}

static int resolve_sizeof(void *p, const char *type, size_t len, int64_t *bytes)
{
    resolve_ctx *rc = p;
    return kiln_dtype_sizeof(type, len, rc->dt, bytes);
}

/* Evaluate expr at the shape into an integer; path names the field. */
static int eval_value(resolve_ctx *rc, const char *expr, const char *path, int64_t *out)
{
    kiln_expr_env env = {resolve_lookup, resolve_sizeof, rc};
    kiln_value v;
    kiln_error xe;
    if (kiln_expr_eval(expr, &env, &v, &xe) < 0)
        return kiln_fail(rc->err, "manifest: %s: %s", path, xe.msg);
    if (v.is_float) {
        if (!(v.f == floor(v.f) && fabs(v.f) < 9.2e18))
            return kiln_fail(rc->err, "manifest: %s is not an integer at this shape", path);
        v.i = (int64_t)v.f;
    }
    *out = v.i;
    return 0;
}

/* The lets, in order, each seeing those before it. Their values are not
 * bounded: only the fields that use them are checked. */
static int resolve_lets(resolve_ctx *rc)
{
    for (rc->nlets = 0; rc->nlets < rc->m->nlets; rc->nlets++) {
        char p[64];
        snprintf(p, sizeof p, "let.%s", rc->m->lets[rc->nlets].name);
        if (eval_value(rc, rc->m->lets[rc->nlets].expr, p, &rc->let[rc->nlets]) < 0)
            return -1;
    }
    return 0;
}

/* Evaluate expr at the shape into an integer >= lo; path names the field. */
static int eval_at(resolve_ctx *rc, const char *expr, const char *path, int64_t lo, int64_t *out)
{
    kiln_value v = {0, 0, 0.0};
    if (eval_value(rc, expr, path, &v.i) < 0)
        return -1;
    if (v.i < lo) {
        if (v.i == 0)
            return kiln_fail(rc->err, "manifest: %s is 0 at this shape", path);
        return kiln_fail(rc->err, "manifest: %s is negative at this shape", path);
    }
    *out = v.i;
    return 0;
}

static int over(resolve_ctx *rc, const char *path, const char *what, int64_t limit)
{
    return kiln_fail(rc->err, "manifest: %s exceeds the device's limit of %lld%s at this shape",
                     path, (long long)limit, what);
}

/* Evaluate n dims of a grid/block/cluster into out[3] (missing dims 1). */
static int eval_dims(resolve_ctx *rc, const char *path, const char (*exprs)[KILN_EXPR_MAX],
                     int n, const int64_t *max, uint32_t out[3])
{
    for (int d = 0; d < 3; d++) {
        int64_t v = 1;
        char p[64];
        snprintf(p, sizeof p, "%s[%d]", path, d);
        if (d < n && eval_at(rc, exprs[d], p, 1, &v) < 0)
            return -1;
        int64_t lim = max[d] < UINT32_MAX ? max[d] : UINT32_MAX;
        if (v > lim)
            return over(rc, p, "", lim);
        out[d] = (uint32_t)v;
    }
    return 0;
}

static int resolve_cluster(resolve_ctx *rc, const kiln_launch_spec *ls, const char *path,
                           kiln_wire_launch *wl)
{
    char p[64];
    snprintf(p, sizeof p, "%s.cluster", path);
    int64_t max[3] = {rc->lim->max_cluster, rc->lim->max_cluster, rc->lim->max_cluster};
    if (eval_dims(rc, p, ls->cluster, ls->ncluster, max, wl->cluster) < 0)
        return -1;
    int64_t blocks = (int64_t)wl->cluster[0] * wl->cluster[1] * wl->cluster[2];
    if (blocks > rc->lim->max_cluster)
        return over(rc, p, " blocks per cluster", rc->lim->max_cluster);
    for (int d = 0; d < 3; d++)
        if (wl->grid[d] % wl->cluster[d] != 0)
            return kiln_fail(rc->err, "manifest: %s.grid[%d] is not a multiple of %s[%d] at "
                             "this shape", path, d, p, d);
    return 0;
}

/* Immediate j of launch ls: its value at the shape, in its type's range. */
static int resolve_imm(resolve_ctx *rc, const kiln_imm_spec *im, const char *path,
                       const kiln_launch_spec *ls, int j, kiln_wire_imm *out)
{
    char p[64];
    int k = 0;
    while (k < ls->nargs && ls->arg[k] != KILN_WIRE_ARG_IMM + j)
        k++;
    snprintf(p, sizeof p, "%s.args[%d]", path, k);
    memset(out, 0, sizeof *out);
    out->kind = (uint32_t)im->kind;
    if (im->kind == KILN_WIRE_F32 || im->kind == KILN_WIRE_F64) {
        kiln_expr_env env = {resolve_lookup, resolve_sizeof, rc};
        kiln_value v;
        kiln_error xe;
        if (kiln_expr_eval(im->expr, &env, &v, &xe) < 0)
            return kiln_fail(rc->err, "manifest: %s: %s", p, xe.msg);
        out->fval = v.is_float ? v.f : (double)v.i;
        if (!isfinite(out->fval) || (im->kind == KILN_WIRE_F32 && fabs(out->fval) > 3.4e38))
            return kiln_fail(rc->err, "manifest: %s is not a finite %s at this shape", p,
                             im->kind == KILN_WIRE_F32 ? "f32" : "f64");
        return 0;
    }
    if (eval_value(rc, im->expr, p, &out->ival) < 0)
        return -1;
    if (im->kind == KILN_WIRE_I32 && (out->ival < INT32_MIN || out->ival > INT32_MAX))
        return kiln_fail(rc->err, "manifest: %s does not fit a 32-bit int at this shape (pass "
                         "it as i64(...) to a 64-bit parameter)", p);
    return 0;
}

static int resolve_launch(resolve_ctx *rc, int i, kiln_wire_launch *wl)
{
    const kiln_launch_spec *ls = &rc->m->launches[i];
    const kiln_device_limits *lim = rc->lim;
    char path[32], p[64];
    snprintf(path, sizeof path, "launches[%d]", i);
    memset(wl, 0, sizeof *wl);
    snprintf(wl->kernel, sizeof wl->kernel, "%s", ls->kernel);
    snprintf(p, sizeof p, "%s.grid", path);
    if (eval_dims(rc, p, ls->grid, ls->ngrid, lim->max_grid, wl->grid) < 0)
        return -1;
    snprintf(p, sizeof p, "%s.block", path);
    if (eval_dims(rc, p, ls->block, ls->nblock, lim->max_block, wl->block) < 0)
        return -1;
    int64_t threads = (int64_t)wl->block[0] * wl->block[1] * wl->block[2];
    if (threads > lim->max_threads_per_block)
        return over(rc, p, " threads per block", lim->max_threads_per_block);
    if (ls->ncluster > 0 && resolve_cluster(rc, ls, path, wl) < 0)
        return -1;
    int64_t smem;
    snprintf(p, sizeof p, "%s.smem", path);
    if (eval_at(rc, ls->smem, p, 0, &smem) < 0)
        return -1;
    int64_t smax = lim->max_smem_optin < UINT32_MAX ? lim->max_smem_optin : UINT32_MAX;
    if (smem > smax)
        return over(rc, p, " bytes of shared memory", smax);
    wl->smem = (uint32_t)smem;
    wl->nargs = (uint32_t)ls->nargs;
    for (int a = 0; a < ls->nargs; a++)
        wl->arg[a] = ls->arg[a];
    wl->nimm = (uint32_t)ls->nimm;
    for (int j = 0; j < ls->nimm; j++)
        if (resolve_imm(rc, &ls->imm[j], path, ls, j, &wl->imm[j]) < 0)
            return -1;
    return 0;
}

static int resolve_scratch(resolve_ctx *rc, int i, kiln_wire_scratch *ws)
{
    char p[48];
    snprintf(p, sizeof p, "scratch[%d].bytes", i);
    int64_t bytes;
    if (eval_at(rc, rc->m->scratch[i].bytes, p, 1, &bytes) < 0)
        return -1;
    if (bytes > rc->lim->max_scratch_bytes)
        return over(rc, p, " bytes", rc->lim->max_scratch_bytes);
    memset(ws, 0, sizeof *ws);
    ws->bytes = (uint64_t)bytes;
    ws->zero = (uint32_t)(rc->m->scratch[i].zero != 0);
    return 0;
}

int kiln_manifest_resolve(const kiln_manifest *m, const kiln_task *t, kiln_dtype dt,
                          const kiln_shape *s, const kiln_device_limits *lim,
                          kiln_call_req *rq, kiln_error *err)
{
    kiln_device_limits dflt;
    if (!lim) {
        kiln_device_limits_default(&dflt);
        lim = &dflt;
    }
    resolve_ctx rc = {m, t, dt, s, lim, err, 0, {0}};
    uint32_t n = 0;
    if (m->nlaunches < 1 || m->nlaunches > KILN_WORKER_MAX_LAUNCHES ||
        m->nscratch < 0 || m->nscratch > KILN_WORKER_MAX_SCRATCH ||
        m->nlets < 0 || m->nlets > KILN_MANIFEST_MAX_LETS)
        return kiln_fail(err, "manifest: not parsed (no launches)");
    if (resolve_lets(&rc) < 0)
        return -1;
    for (int i = 0; i < m->nlaunches; i++) {
        int64_t on = 1;
        char p[48];
        snprintf(p, sizeof p, "launches[%d].when", i);
        if (m->launches[i].when[0] && eval_value(&rc, m->launches[i].when, p, &on) < 0)
            return -1;
        if (on && resolve_launch(&rc, i, &rq->launches[n++]) < 0)
            return -1;
    }
    if (n == 0)
        return kiln_fail(err, "manifest: no launch's \"when\" holds at this shape");
    for (int i = 0; i < m->nscratch; i++)
        if (resolve_scratch(&rc, i, &rq->scratch[i]) < 0)
            return -1;
    rq->nlaunches = n;
    rq->nscratch = (uint32_t)m->nscratch;
    return 0;
}

void kiln_manifest_kernel_base(const char *kernel, char *base, size_t len)
{
    size_t n = strcspn(kernel, "<");
    if (memmem(kernel, n, "::", 2) || n >= len)
        n = 0;
    snprintf(base, len, "%.*s", (int)n, kernel);
}

void kiln_manifest_name_exprs(const kiln_manifest *m, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < m->nlaunches; i++) {
        const kiln_launch_spec *ls = &m->launches[i];
        int seen = 0;
        for (int k = 0; k < i && !seen; k++)
            seen = m->launches[k].by_name_expr && strcmp(m->launches[k].kernel, ls->kernel) == 0;
        if (!ls->by_name_expr || seen)
            continue;
        int w = snprintf(buf + used, len - used, "%s\n", ls->kernel);
        if (w < 0 || (size_t)w >= len - used)
            return;
        used += (size_t)w;
    }
}
