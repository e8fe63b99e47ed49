/* normalize.c - a source as the search compares sources (see
 * kiln_source_normalize in normalize.h): comments and whitespace out, knob
 * values in, so a reformatted copy of a verified candidate is known as one
 * and is not verified again (docs/search.md). */
#include "normalize.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "c_lex.h"
#include "knobs.h"
#include "strbuf.h"

typedef struct normer {
    kiln_strbuf out;
    int keep_comments;   /* the knobs do not parse: the verifier may judge the comments */
    int line_start;      /* only blanks and comments since the last newline */
    int directive;       /* inside a preprocessor line */
    int space;           /* whitespace or a comment since the last token */
    size_t word_at;      /* where the last identifier or number starts in out */
} normer;

static int is_quote(char c)
{
    return c == '"' || c == '\'';
}

/* After a number, "." and an exponent's sign continue it (C's pp-number):
 * "1 .5" and "1e +5" are not "1.5" and "1e+5". */
static int number_joins(const normer *z, char a, char b)
{
    if (!isdigit((unsigned char)z->out.p[z->word_at]))
        return 0;
    return b == '.' || ((a == 'e' || a == 'E' || a == 'p' || a == 'P') && (b == '+' || b == '-'));
}

/* Would dropping the whitespace between a (the last character out) and b
 * join two tokens or change one? Then one space stays. */
static int joins(const normer *z, char a, char b)
{
    /* punctuator pairs that lex as one token (or open a comment) */
    static const char pairs[] = "++ -- && || << >> -> == != <= >= += -= *= /= %= &= |= ^= "
                                "## // /* :: .. <: :> <% %> %:";
    if (kiln_is_ident_char(a))
        return kiln_is_ident_char(b) || is_quote(b) || (z->directive && b == '(') ||
               number_joins(z, a, b);
    if (is_quote(a))
        return kiln_is_ident_char(b);   /* u8"x", "x"_suffix in CUDA's C++ */
    char pair[3] = {a, b, '\0'};
    return strstr(pairs, pair) != NULL;
}

/* Append a token's text, after a space where one is needed; a '#' that
 * starts a line starts a preprocessor line, on a line of its own. */
static void put(normer *z, const char *t, size_t len)
{
    char last = z->out.len ? z->out.p[z->out.len - 1] : '\n';
    if (t[0] == '#' && z->line_start) {
        if (last != '\n')
            kiln_sb_addn(&z->out, "\n", 1);
        z->directive = 1;
    } else if (z->space && last != '\n' && joins(z, last, t[0])) {
        kiln_sb_addn(&z->out, " ", 1);
    }
    size_t at = z->out.len;
    if (kiln_is_ident_char(t[0]) && (at == 0 || !kiln_is_ident_char(z->out.p[at - 1])))
        z->word_at = at;
    kiln_sb_addn(&z->out, t, len);
    z->space = z->line_start = 0;
}

/* A newline ends a preprocessor line (kept), else it is whitespace. */
static void end_line(normer *z)
{
    if (z->directive)
        kiln_sb_addn(&z->out, "\n", 1);
    z->space = !z->directive;
    z->directive = 0;
    z->line_start = 1;
}

static void norm_text(normer *z, const char *s, size_t n);

/* The comment at s[i]: dropped (as whitespace), kept whole, or, for the
 * launch manifest, kept normalised. Returns where it ends. */
static size_t norm_comment(normer *z, const char *s, size_t n, size_t i)
{
    int block = s[i + 1] == '*', closed = 0;
    size_t end = block ? kiln_lex_block_comment_end(s, n, i, &closed)
                       : kiln_lex_line_comment_end(s, n, i);
    if (block && closed && end - i >= 9 && strncmp(s + i + 2, "@kiln", 5) == 0) {
        put(z, "/*", 2);
        norm_text(z, s + i + 2, end - i - 4);
        put(z, "*/", 2);
    } else if (z->keep_comments) {
        put(z, s + i, end - i);
        if (!block)   /* what follows is not part of the comment */
            kiln_sb_addn(&z->out, "\n", 1);
    } else {
        z->space = 1;
    }
    return end;
}

/* One lexical element at s[i]; returns where the next one starts. */
static size_t norm_step(normer *z, const char *s, size_t n, size_t i)
{
    char c = s[i], next = i + 1 < n ? s[i + 1] : '\0';
    if (c == '\\' && next == '\n')   /* a line splice joins lines, as C's phase 2 does */
        return i + 2;
    if (c == '\\' && next == '\r' && i + 2 < n && s[i + 2] == '\n')
        return i + 3;
    if (c == '/' && (next == '*' || next == '/'))
        return norm_comment(z, s, n, i);
    if (is_quote(c)) {
        size_t end = kiln_lex_literal_end(s, n, i);
        put(z, s + i, end - i);
        return end;
    }
    if (c == '\n')
        end_line(z);
    else if (isspace((unsigned char)c))
        z->space = 1;
    else
        put(z, s + i, 1);
    return i + 1;
}

static void norm_text(normer *z, const char *s, size_t n)
{
    for (size_t i = 0; i < n;)
        i = norm_step(z, s, n, i);
}

char *kiln_source_normalize(const char *source)
{
    if (!source)
        return NULL;
    size_t n = strlen(source);
    kiln_knob *k = malloc(KILN_KNOBS_MAX * sizeof *k);
    kiln_error e;
    normer z = {.line_start = 1};
    z.keep_comments = !k || kiln_knobs_scan(source, n, k, KILN_KNOBS_MAX, NULL, &e) < 0;
    free(k);
    norm_text(&z, source, n);
    kiln_sb_addn(&z.out, "", 0);   /* an empty source still gives "" */
    if (z.out.oom) {
        free(z.out.p);
        return NULL;
    }
    return z.out.p;
}
