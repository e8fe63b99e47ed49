/* normalize.h - a source as the search compares sources. */
#ifndef KILN_NORMALIZE_H
#define KILN_NORMALIZE_H

/* Two candidates with the same normalised source are the same program, so
 * a search verifies it once (docs/search.md, "No source verified twice").
 * The source is lexed as C (common/c_lex.h):
 *   - comments are dropped, except a block comment whose text starts with
 *     "@kiln" (the CUDA launch manifest), which stays, normalised like code;
 *     the "//@kiln tune" lists go with the other comments, so a knob line is
 *     "#define NAME VALUE": its value counts, its list does not. A source
 *     whose knob lines do not parse (common/knobs.h) keeps every comment.
 *   - string and character literals are kept byte for byte;
 *   - backslash-newlines are removed; other whitespace is dropped except one
 *     space where tokens would otherwise join or change (between identifier
 *     or number characters, an identifier and a literal, two punctuators
 *     that form a longer one such as "+ +" or "- >", a number and "." or an
 *     exponent sign, and in a preprocessor line a name and "("), and a
 *     newline that ends a preprocessor line (which starts a line of its own).
 * Returns the malloc'd normalised text, or NULL when out of memory. */
char *kiln_source_normalize(const char *source);

#endif
