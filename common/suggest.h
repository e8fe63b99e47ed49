/* suggest.h - "did you mean": the closest of some names to a mistyped one.
 *
 * Names are offered one at a time (a directory's entries, a usage text's
 * flags), so no list is built. Close means an edit distance (insertions,
 * deletions, substitutions and swaps of two neighbours, one each) of at
 * most 2, and at most a third of the word's length, rounded up: 'rmsnrom'
 * finds 'rmsnorm', 'gemm' does not find 'geglu'. */
#ifndef KILN_SUGGEST_H
#define KILN_SUGGEST_H

#include <stddef.h>

typedef struct kiln_suggestion {
    const char *word;   /* the mistyped word (not copied) */
    char best[64];      /* the closest name so far ("" when none is close) */
    int dist;           /* its distance */
} kiln_suggestion;

void kiln_suggest_init(kiln_suggestion *s, const char *word);
/* Offer one name; the first of equally close names stands. */
void kiln_suggest_try(kiln_suggestion *s, const char *name);
/* The closest name offered, or NULL when none was close. */
const char *kiln_suggest_best(const kiln_suggestion *s);
/* Offer each "--flag" token of a usage text (the flags its --help shows). */
void kiln_suggest_flags(kiln_suggestion *s, const char *usage);
/* The edit distance of a and b, capped at cap + 1 (words over 63 bytes: cap + 1). */
int kiln_edit_distance(const char *a, const char *b, int cap);

#endif
