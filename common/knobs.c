/* knobs.c - the one parser of `//@kiln tune` knob lines (see knobs.h), used
 * by the offline tuner and by the CUDA launch manifest.
 *
 * One walk over the source, token by token as c_lex.h lexes C: a line
 * comment that starts "//@kiln" is a directive; its line's code before it
 * must be the knob's #define, and the text after "tune" the knob's values.
 * Messages leave out the line, which the caller is given apart. */
#include "knobs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "c_lex.h"

#define MARK "//@kiln"
#define SHOW 40   /* longest token quoted in a message */

typedef struct knob_scan {
    const char *s;
    size_t n;
    kiln_knob *knobs;
    int cap, count;
    int line;          /* the line of `counted` */
    size_t counted;    /* newlines before this offset are in line */
    kiln_error *err;
} knob_scan;

static int is_blank(char c)   /* white space within a line */
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
}

static size_t skip_blanks(const char *s, size_t end, size_t i)
{
    while (i < end && is_blank(s[i]))
        i++;
    return i;
}

static size_t word_end(const char *s, size_t end, size_t i)
{
    while (i < end && !is_blank(s[i]))
        i++;
    return i;
}

static size_t ident_end(const char *s, size_t end, size_t i)
{
    if (i >= end || !kiln_is_ident_start(s[i]))
        return i;
    while (i < end && kiln_is_ident_char(s[i]))
        i++;
    return i;
}

static int show(size_t len)
{
    return len > SHOW ? SHOW : (int)len;
}

int kiln_knob_int(const char *s, size_t len, long long *out)
{
    char buf[24];
    size_t i = len > 0 && s[0] == '-';
    if (i >= len || len >= sizeof buf || (s[i] == '0' && len > 1))   /* no 010, no -0 */
        return -1;
    for (size_t k = i; k < len; k++)
        if (s[k] < '0' || s[k] > '9')
            return -1;
    memcpy(buf, s, len);
    buf[len] = '\0';
    errno = 0;
    long long v = strtoll(buf, NULL, 10);
    if (errno == ERANGE)
        return -1;
    if (out)
        *out = v;
    return 0;
}

/* The line of offset at (offsets only grow during a walk). */
static int line_at(knob_scan *ks, size_t at)
{
    for (; ks->counted < at; ks->counted++)
        ks->line += ks->s[ks->counted] == '\n';
    return ks->line;
}

/* 1 when the line comment at..eol is a tune directive (*list: where its
 * values start), 0 when it is no directive, -1 on a malformed one. */
static int directive(knob_scan *ks, size_t at, size_t eol, size_t *list)
{
    const char *s = ks->s;
    size_t t = skip_blanks(s, eol, at + 2);
    if (t > at + 2 && eol - t >= 5 && memcmp(s + t, "@kiln", 5) == 0)
        return kiln_fail(ks->err, "write '//@kiln tune' with no space between '//' and '@kiln'");
    if (eol - at < strlen(MARK) || memcmp(s + at, MARK, strlen(MARK)) != 0)
        return 0;
    size_t w = skip_blanks(s, eol, at + strlen(MARK)), we = word_end(s, eol, w);
    if (w == at + strlen(MARK) || we - w != 4 || memcmp(s + w, "tune", 4) != 0)
        return kiln_fail(ks->err, "unknown directive '//@kiln%s%.*s' (only '//@kiln tune' is "
                         "known)", w == at + strlen(MARK) ? "" : " ", show(we - w), s + w);
    *list = we;
    return 1;
}

static int form_error(knob_scan *ks)
{
    return kiln_fail(ks->err, "a knob line must read '#define NAME VALUE //@kiln tune V1 V2 "
                     "...' with an integer VALUE");
}

/* "#define NAME VALUE" and blanks, nothing else, in s[ls, at). */
static int parse_define(knob_scan *ks, size_t ls, size_t at, kiln_knob *k)
{
    const char *s = ks->s;
    size_t i = skip_blanks(s, at, ls);
    if (i >= at || s[i] != '#')
        return form_error(ks);
    i = skip_blanks(s, at, i + 1);
    size_t e = ident_end(s, at, i);
    if (e - i != 6 || memcmp(s + i, "define", 6) != 0)
        return form_error(ks);
    size_t name = skip_blanks(s, at, e), name_end = ident_end(s, at, name);
    if (name == e || name_end == name || name_end >= at || !is_blank(s[name_end]))
        return form_error(ks);
    k->value_at = skip_blanks(s, at, name_end);
    k->value_end = word_end(s, at, k->value_at);
    if (k->value_at == k->value_end || skip_blanks(s, at, k->value_end) != at)
        return form_error(ks);
    int nl = (int)(name_end - name);
    if (nl > KILN_KNOB_NAME_MAX)
        return kiln_fail(ks->err, "knob name '%.*s' is longer than %d characters", show(nl),
                         s + name, KILN_KNOB_NAME_MAX);
    snprintf(k->name, sizeof k->name, "%.*s", nl, s + name);
    size_t vl = k->value_end - k->value_at;
    if (kiln_knob_int(s + k->value_at, vl, NULL) < 0)
        return kiln_fail(ks->err, "knob '%s': value '%.*s' is not an integer", k->name,
                         show(vl), s + k->value_at);
    snprintf(k->value, sizeof k->value, "%.*s", (int)vl, s + k->value_at);
    return 0;
}

static int listed(const kiln_knob *k, const char *v, size_t len)
{
    for (int i = 0; i < k->nvalues; i++)
        if (strlen(k->values[i]) == len && memcmp(k->values[i], v, len) == 0)
            return 1;
    return 0;
}

/* The values after "tune", from i to the end of the line. */
static int parse_values(knob_scan *ks, size_t i, size_t eol, kiln_knob *k)
{
    const char *s = ks->s;
    k->nvalues = 0;
    for (i = skip_blanks(s, eol, i); i < eol; i = skip_blanks(s, eol, i)) {
        size_t e = word_end(s, eol, i);
        if (kiln_knob_int(s + i, e - i, NULL) < 0)
            return kiln_fail(ks->err, "knob '%s': tune value '%.*s' is not an integer", k->name,
                             show(e - i), s + i);
        if (k->nvalues == KILN_KNOB_VALUES)
            return kiln_fail(ks->err, "knob '%s': more than %d values", k->name,
                             KILN_KNOB_VALUES);
        if (listed(k, s + i, e - i))
            return kiln_fail(ks->err, "knob '%s': value %.*s is listed twice", k->name,
                             (int)(e - i), s + i);
        snprintf(k->values[k->nvalues++], sizeof k->values[0], "%.*s", (int)(e - i), s + i);
        i = e;
    }
    if (k->nvalues < 2)
        return kiln_fail(ks->err, "knob '%s': lists %d value%s; a knob needs at least 2",
                         k->name, k->nvalues, k->nvalues == 1 ? "" : "s");
    return 0;
}

static int add(knob_scan *ks, const kiln_knob *k)
{
    for (int i = 0; i < ks->count; i++)
        if (strcmp(ks->knobs[i].name, k->name) == 0)
            return kiln_fail(ks->err, "knob '%s' is declared twice (first on line %d)", k->name,
                             ks->knobs[i].line);
    int most = ks->cap < KILN_KNOBS_MAX ? ks->cap : KILN_KNOBS_MAX;
    if (ks->count >= most)
        return kiln_fail(ks->err, "more than %d knobs", most);
    ks->knobs[ks->count++] = *k;
    return 0;
}

/* The line comment from at to eol: a knob, no directive, or an error. */
static int on_comment(knob_scan *ks, size_t at, size_t eol)
{
    size_t list = at, ls = at;
    kiln_knob k = {.line = line_at(ks, at)};
    int r = directive(ks, at, eol, &list);
    if (r <= 0)
        return r;
    while (ls > 0 && ks->s[ls - 1] != '\n')
        ls--;
    if (parse_define(ks, ls, at, &k) < 0 || parse_values(ks, list, eol, &k) < 0)
        return -1;
    return add(ks, &k);
}

/* Where the token at i ends: a comment, a literal, or one character. */
static size_t token_end(const char *s, size_t n, size_t i)
{
    if (s[i] == '"' || s[i] == '\'')
        return kiln_lex_literal_end(s, n, i);
    if (s[i] != '/' || i + 1 >= n)
        return i + 1;
    if (s[i + 1] == '*')
        return kiln_lex_block_comment_end(s, n, i, NULL);
    return s[i + 1] == '/' ? kiln_lex_line_comment_end(s, n, i) : i + 1;
}

int kiln_knobs_scan(const char *src, size_t len, kiln_knob *knobs, int cap, int *line,
                    kiln_error *err)
{
    knob_scan ks = {src, len, knobs, cap, 0, 1, 0, err};
    if (line)
        *line = 0;
    if (!src || (!knobs && cap > 0))
        return kiln_fail(err, "kiln_knobs_scan: no source");
    for (size_t i = 0; i < len; i = token_end(src, len, i)) {
        int comment = src[i] == '/' && i + 1 < len && src[i + 1] == '/';
        if (comment && on_comment(&ks, i, kiln_lex_line_comment_end(src, len, i)) < 0) {
            if (line)
                *line = ks.line;
            return -1;
        }
    }
    return ks.count;
}

int kiln_knobs_parse(const char *source, kiln_knob *knobs, int cap, kiln_error *err)
{
    int line;
    if (!source)
        return kiln_fail(err, "kiln_knobs_parse: no source");
    int n = kiln_knobs_scan(source, strlen(source), knobs, cap, &line, err);
    if (n < 0 && line > 0)
        kiln_error_prefix(err, "line %d", line);
    return n;
}
