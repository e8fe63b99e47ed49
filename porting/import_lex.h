/* import_lex.h - `kiln import`'s view of a CUDA source: tokens with their
 * offsets and lines, bracket pairs, and a list of report lines.
 *
 * The tokenizer asks common/c_lex.h where literals and comments end, as the
 * manifest parser does, so import and the static check agree on what is
 * code. A preprocessor line is one token (IMP_PP) spanning the logical
 * line; comments are skipped. The translation modules (import_expr.c,
 * import_scan.c, import_host.c, import.c) all read this token array. */
#ifndef KILN_IMPORT_LEX_H
#define KILN_IMPORT_LEX_H

#include <stddef.h>

#include "strbuf.h"
#include "kiln_error.h"

typedef enum imp_tk {
    IMP_IDENT,
    IMP_NUMBER,
    IMP_STRING,      /* "..." or '...' */
    IMP_PUNCT,
    IMP_PP,          /* a whole preprocessor line */
    IMP_END,         /* after the last token */
} imp_tk;

typedef struct imp_tok {
    imp_tk kind;
    size_t at, len;
    int line;
    int match;       /* ( [ { and ) ] }: the index of the other one, else -1 */
} imp_tok;

typedef struct imp_src {
    const char *text;
    size_t len;
    imp_tok *tok;    /* ntok tokens, then one IMP_END */
    int ntok;
    char *own;       /* imp_lex_macro's copy of the text, freed with s */
} imp_src;

/* Tokenize text (len bytes); -1 with err on an unbalanced bracket (its
 * line) or out of memory. */
int imp_lex(imp_src *s, const char *text, size_t len, kiln_error *err);
/* The same for part of a #define (its parameters or body): a copy without
 * its backslash-newlines, owned by s. */
int imp_lex_macro(imp_src *s, const char *text, size_t len, kiln_error *err);
void imp_src_free(imp_src *s);

/* Is token i exactly w? */
int imp_is(const imp_src *s, int i, const char *w);
/* Token i's text into buf (cut to cap - 1 bytes). */
void imp_word(const imp_src *s, int i, char *buf, size_t cap);
/* The source text of tokens [from, to), with runs of white space and
 * comments between them as one space, cut with "..." beyond cap - 1. */
void imp_text(const imp_src *s, int from, int to, char *buf, size_t cap);
/* The index of the first token in [from, to) at bracket depth 0 that is
 * w, or to. */
int imp_find(const imp_src *s, int from, int to, const char *w);
/* Split [from, to) at commas of depth 0 (brackets; also <> when angles)
 * into at most cap ranges; returns their number, or -1 when more. An empty
 * range gives 0 parts. */
int imp_split(const imp_src *s, int from, int to, int angles, int *pfrom, int *pto, int cap);

/* Lines of a report: each malloc'd; oom set when one could not be added. */
typedef struct imp_lines {
    char **v;
    int n, cap, oom;
} imp_lines;

/* Room for element n of *v (capacity *cap, elements of size bytes),
 * doubling as it fills; -1 when out of memory. */
int imp_grow(void **v, int n, int *cap, size_t size);

void imp_addf(imp_lines *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void imp_lines_free(imp_lines *l);

/* Growing strings are common/strbuf.h's kiln_strbuf. */

#endif
