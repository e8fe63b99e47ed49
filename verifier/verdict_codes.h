/* verdict_codes.h - every code a verdict or a candidate carries, as one
 * table (verdict_codes.c, curl's way): with the status it comes with, the
 * sentence docs/verdict.md gives it, the fixed words a hidden shape's
 * reason says for it, and whether it is the candidate's own fault. The
 * verifier's words for hidden shapes, `kiln help verdicts` and the
 * lessons' outcomes are read from it; tests/unit/test_verdict_codes.c
 * checks docs/verdict.md and the code literals of the sources against it. */
#ifndef KILN_VERDICT_CODES_H
#define KILN_VERDICT_CODES_H

typedef struct kiln_verdict_code {
    const char *code;           /* "wrong-output" */
    const char *status;         /* "pass", "fail", "suspect" or "error"; "" for a
                                   duplicate, which takes the status of what it repeats */
    int by_search;              /* 1: the search's (stage propose), not the verifier's */
    int fault;                  /* 1: the candidate's own fault (knowledge/outcome.c) */
    const char *meaning;        /* docs/verdict.md's sentence */
    const char *words;          /* a failed call's code: what the reason says at a hidden
                                   shape, in fixed words (nothing the call wrote, which
                                   could give the shape away); NULL: not a call's */
} kiln_verdict_code;

/* The table, in docs/verdict.md's order; *n entries. */
const kiln_verdict_code *kiln_verdict_codes(int *n);
/* The entry of code, or NULL: kiln has no such code. */
const kiln_verdict_code *kiln_verdict_code_find(const char *code);
/* The stages, in the order the verifier runs them (NULL-terminated). */
extern const char *const kiln_verdict_stages[];

#endif
