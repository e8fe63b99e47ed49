/* c_lex.h - the few C/CUDA lexical rules kiln's source scanners share: the
 * manifest parser (blanking comments, finding kernels), the export (renaming
 * kernels outside comments and literals) and the expression evaluators.
 * Not a tokenizer: each scanner walks the text itself and asks these where
 * an identifier, literal or comment ends, so they all agree on it. */
#ifndef KILN_C_LEX_H
#define KILN_C_LEX_H

#include <stddef.h>

static inline int kiln_is_ident_start(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static inline int kiln_is_ident_char(char c)
{
    return kiln_is_ident_start(c) || (c >= '0' && c <= '9');
}

/* s[i] is '"' or '\'': the offset after the literal's closing quote (an
 * unterminated one ends after the line's newline, or at n). */
size_t kiln_lex_literal_end(const char *s, size_t n, size_t i);

/* s[i..] is "//": the offset of the newline that ends the comment (a
 * backslash-newline continues it), or n. */
size_t kiln_lex_line_comment_end(const char *s, size_t n, size_t i);

/* s[i..] is a block comment's opening: the offset after its closing, or n
 * when it has none (then *closed is 0; closed may be NULL). */
size_t kiln_lex_block_comment_end(const char *s, size_t n, size_t i, int *closed);

#endif
