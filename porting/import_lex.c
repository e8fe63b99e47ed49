/* import_lex.c - tokens of a CUDA source for `kiln import` (import_lex.h).
 *
 * Literal and comment ends come from common/c_lex.c; a preprocessor line
 * (a '#' first on its line) is one token up to its unescaped newline, so
 * a #define's body is read later, by lexing that text again. Brackets are
 * paired here once, so every later walk skips a group in one step. */
#include "import_lex.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "c_lex.h"

/* Longest first, so "<<<" wins over "<<" and "<". */
static const char *const puncts[] = {
    "<<<", ">>>", "<<=", ">>=", "...", "->*", "<<", ">>", "<=", ">=", "==", "!=", "&&",
    "||", "++", "--", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "->", "::",
};

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

static int push(imp_src *s, int *cap, imp_tk kind, size_t at, size_t len, int line)
{
    if (s->ntok + 1 >= *cap) {
        int n = *cap ? 2 * *cap : 256;
        imp_tok *p = realloc(s->tok, (size_t)n * sizeof *p);
        if (!p)
            return -1;
        s->tok = p;
        *cap = n;
    }
    s->tok[s->ntok++] = (imp_tok){kind, at, len, line, -1};
    return 0;
}

/* Is text[i] the first non-blank character of its line? */
static int first_on_line(const char *t, size_t i)
{
    while (i > 0 && (t[i - 1] == ' ' || t[i - 1] == '\t'))
        i--;
    return i == 0 || t[i - 1] == '\n';
}

/* The end of a preprocessor line from i: its newline (not one escaped by
 * a backslash), skipping block comments that span lines. */
static size_t pp_end(const char *t, size_t n, size_t i)
{
    while (i < n && t[i] != '\n') {
        if (t[i] == '/' && i + 1 < n && t[i + 1] == '*')
            i = kiln_lex_block_comment_end(t, n, i, NULL);
        else if (t[i] == '\\' && i + 1 < n && (t[i + 1] == '\n' || t[i + 1] == '\r'))
            i += t[i + 1] == '\r' && i + 2 < n && t[i + 2] == '\n' ? 3 : 2;
        else
            i++;
    }
    return i;
}

/* A pp-number: digits, letters, '.', '\'' and a sign after e, E, p or P. */
static size_t number_end(const char *t, size_t n, size_t i)
{
    for (i++; i < n; i++) {
        char c = t[i], p = t[i - 1];
        if ((c == '+' || c == '-') && (p == 'e' || p == 'E' || p == 'p' || p == 'P'))
            continue;
        if (!kiln_is_ident_char(c) && c != '.' && c != '\'')
            break;
    }
    return i;
}

static size_t punct_len(const char *t, size_t n, size_t i)
{
    for (size_t k = 0; k < sizeof puncts / sizeof puncts[0]; k++) {
        size_t l = strlen(puncts[k]);
        if (i + l <= n && memcmp(t + i, puncts[k], l) == 0)
            return l;
    }
    return 1;
}

static int count_lines(const char *t, size_t from, size_t to)
{
    int n = 0;
    for (size_t i = from; i < to; i++)
        n += t[i] == '\n';
    return n;
}

/* One token or skipped stretch from *i; -1 when out of memory. */
static int lex_one(imp_src *s, int *cap, size_t *i, int *line)
{
    const char *t = s->text;
    size_t n = s->len, at = *i, end;
    imp_tk kind = IMP_PUNCT;
    char c = t[at], next = at + 1 < n ? t[at + 1] : 0;
    if (is_space(c)) {
        *line += c == '\n';
        *i = at + 1;
        return 0;
    }
    if (c == '/' && (next == '/' || next == '*')) {
        end = next == '/' ? kiln_lex_line_comment_end(t, n, at)
                          : kiln_lex_block_comment_end(t, n, at, NULL);
        *line += count_lines(t, at, end);
        *i = end;
        return 0;
    }
    if (c == '#' && first_on_line(t, at))
        end = pp_end(t, n, at), kind = IMP_PP;
    else if (c == '"' || c == '\'')
        end = kiln_lex_literal_end(t, n, at), kind = IMP_STRING;
    else if (kiln_is_ident_start(c))
        for (end = at + 1, kind = IMP_IDENT; end < n && kiln_is_ident_char(t[end]); end++) {}
    else if ((c >= '0' && c <= '9') || (c == '.' && next >= '0' && next <= '9'))
        end = number_end(t, n, at), kind = IMP_NUMBER;
    else
        end = at + punct_len(t, n, at);
    if (push(s, cap, kind, at, end - at, *line) < 0)
        return -1;
    *line += count_lines(t, at, end);
    *i = end;
    return 0;
}

/* Pair ( [ { with ) ] }; -1 with err at the first that has no partner. */
static int pair_brackets(imp_src *s, kiln_error *err)
{
    int *stack = malloc(((size_t)s->ntok + 1) * sizeof *stack), depth = 0;
    if (!stack)
        return kiln_fail(err, "out of memory");
    for (int i = 0; i < s->ntok; i++) {
        const imp_tok *k = &s->tok[i];
        char c = k->kind == IMP_PUNCT && k->len == 1 ? s->text[k->at] : 0;
        if (c == '(' || c == '[' || c == '{') {
            stack[depth++] = i;
        } else if (c == ')' || c == ']' || c == '}') {
            char want = c == ')' ? '(' : c == ']' ? '[' : '{';
            if (depth == 0 || s->text[s->tok[stack[depth - 1]].at] != want) {
                free(stack);
                return kiln_fail(err, "line %d: unbalanced '%c'", k->line, c);
            }
            s->tok[i].match = stack[--depth];
            s->tok[stack[depth]].match = i;
        }
    }
    int open = depth ? stack[depth - 1] : -1;
    free(stack);
    if (open >= 0)
        return kiln_fail(err, "line %d: '%c' is never closed", s->tok[open].line,
                         s->text[s->tok[open].at]);
    return 0;
}

int imp_lex(imp_src *s, const char *text, size_t len, kiln_error *err)
{
    *s = (imp_src){.text = text, .len = len};
    int cap = 0, line = 1;
    size_t i = 0;
    while (i < len)
        if (lex_one(s, &cap, &i, &line) < 0) {
            imp_src_free(s);
            return kiln_fail(err, "out of memory");
        }
    if (push(s, &cap, IMP_END, len, 0, line) < 0) {
        imp_src_free(s);
        return kiln_fail(err, "out of memory");
    }
    s->ntok--;   /* the IMP_END stays at tok[ntok] */
    if (pair_brackets(s, err) < 0) {
        imp_src_free(s);
        return -1;
    }
    return 0;
}

int imp_lex_macro(imp_src *s, const char *text, size_t len, kiln_error *err)
{
    char *copy = malloc(len + 1);
    size_t n = 0;
    if (!copy)
        return kiln_fail(err, "out of memory");
    for (size_t i = 0; i < len; i++) {
        if (text[i] == '\\' && i + 1 < len && (text[i + 1] == '\n' || text[i + 1] == '\r')) {
            i += text[i + 1] == '\r' && i + 2 < len && text[i + 2] == '\n' ? 2 : 1;
            copy[n++] = ' ';
            continue;
        }
        copy[n++] = text[i];
    }
    copy[n] = '\0';
    if (imp_lex(s, copy, n, err) < 0) {
        free(copy);
        return -1;
    }
    s->own = copy;
    return 0;
}

void imp_src_free(imp_src *s)
{
    free(s->tok);
    free(s->own);
    s->tok = NULL;
    s->own = NULL;
    s->ntok = 0;
}

int imp_is(const imp_src *s, int i, const char *w)
{
    if (i < 0 || i >= s->ntok)
        return 0;
    size_t n = strlen(w);
    return s->tok[i].len == n && memcmp(s->text + s->tok[i].at, w, n) == 0;
}

void imp_word(const imp_src *s, int i, char *buf, size_t cap)
{
    if (i < 0 || i >= s->ntok)
        snprintf(buf, cap, "%s", "");
    else
        snprintf(buf, cap, "%.*s", (int)s->tok[i].len, s->text + s->tok[i].at);
}

void imp_text(const imp_src *s, int from, int to, char *buf, size_t cap)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = from; i < to && i < s->ntok; i++) {
        const imp_tok *k = &s->tok[i];
        int gap = i > from && s->tok[i - 1].at + s->tok[i - 1].len < k->at;
        size_t need = k->len + (size_t)gap;
        if (used + need + 1 > cap) {
            snprintf(buf + (used + 4 < cap ? used : cap - 4), 4, "...");
            return;
        }
        used += (size_t)snprintf(buf + used, cap - used, "%s%.*s", gap ? " " : "", (int)k->len,
                                 s->text + k->at);
    }
}

int imp_find(const imp_src *s, int from, int to, const char *w)
{
    for (int i = from; i < to; i++) {
        if (imp_is(s, i, w))
            return i;
        if (s->tok[i].match > i)
            i = s->tok[i].match;
    }
    return to;
}

/* The depth change of an angle bracket token when angles count. */
static int angle_step(const imp_src *s, int i)
{
    return imp_is(s, i, "<") ? 1 : imp_is(s, i, ">") ? -1 : imp_is(s, i, ">>") ? -2 : 0;
}

int imp_split(const imp_src *s, int from, int to, int angles, int *pfrom, int *pto, int cap)
{
    int n = 0, start = from, angle = 0;
    if (from >= to)
        return 0;
    for (int i = from; i <= to; i++) {
        if (i < to && s->tok[i].match > i) {
            i = s->tok[i].match;
            continue;
        }
        if (i < to && angles) {
            angle += angle_step(s, i);
            angle = angle < 0 ? 0 : angle;
        }
        if (i < to && (!imp_is(s, i, ",") || angle > 0))
            continue;
        if (n == cap)
            return -1;
        pfrom[n] = start;
        pto[n++] = i;
        start = i + 1;
    }
    return n;
}

void imp_addf(imp_lines *l, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (l->n == l->cap) {
        int n = l->cap ? 2 * l->cap : 16;
        char **p = realloc(l->v, (size_t)n * sizeof *p);
        if (!p) {
            l->oom = 1;
            return;
        }
        l->v = p;
        l->cap = n;
    }
    if (!(l->v[l->n] = strdup(buf)))
        l->oom = 1;
    else
        l->n++;
}

void imp_lines_free(imp_lines *l)
{
    for (int i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
    *l = (imp_lines){0};
}

int imp_grow(void **v, int n, int *cap, size_t size)
{
    if (n < *cap)
        return 0;
    int c = *cap ? 2 * *cap : 16;
    void *p = realloc(*v, (size_t)c * size);
    if (!p)
        return -1;
    *v = p;
    *cap = c;
    return 0;
}
