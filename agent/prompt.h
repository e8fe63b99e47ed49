/* prompt.h - building the system and user prompts for a model proposer.
 *
 * The system prompt says what to write and how it is judged; the user prompt
 * carries this iteration's context: the task, the parent's source and
 * per-shape results, the recent attempts of the lineage and the lessons the
 * knowledge layer retrieved.  The user prompt is kept within a character
 * budget by dropping the oldest context first. */
#ifndef KILN_AGENT_PROMPT_H
#define KILN_AGENT_PROMPT_H

#include <stddef.h>

#include "kiln_error.h"

typedef struct kiln_attempt {      /* one earlier attempt in this lineage, newest last */
    int n;                         /* candidate number in the run */
    const char *hypothesis;        /* NULL or "": "(no hypothesis given)" */
    const char *status;            /* pass/fail/suspect/error/kept/rejected-not-faster/parse-error */
    const char *stage, *reason;    /* from the verdict (the verifier keeps hidden dims out) */
    const char *compile_log;       /* may be NULL */
    double speedup_vs_parent;      /* 0 if not timed */
} kiln_attempt;

typedef struct kiln_prompt_input {
    const char *task_text;         /* `kiln task show` output for this task/dtype */
    const char *lang;              /* "c" or "cuda" */
    const char *entry;             /* function name */
    const char *parent_source;
    const char *parent_verdict_json;  /* verdict JSON of the parent (may be NULL) */
    const kiln_attempt *attempts;
    int nattempts;
    const char *lessons;           /* may be NULL or "" */
    const char *strategy;          /* this draft's direction (kiln_draft_strategy); may be NULL */
    size_t max_chars;              /* user prompt budget in bytes; 0: none */
} kiln_prompt_input;

/* Build malloc'd system and user prompts.  To fit max_chars it drops, in
 * order: the compile logs of older attempts, the oldest attempts, the newest
 * attempt's log (first shortened), that attempt, then the end of the
 * lessons.  Returns 0, or -1 with err (and both NULL) on bad input, out of
 * memory, or when the task, parent source and results alone exceed
 * max_chars. */
int kiln_prompt_build(const kiln_prompt_input *in, char **system, char **user, kiln_error *err);

/* ---- diverse drafts ------------------------------------------------------
 *
 * The drafts of one iteration are asked different things: each gets a
 * direction to explore from a fixed list and a temperature of its own, so
 * no two requests of an iteration are the same (docs/search.md). */

#define KILN_DRAFT_STRATEGIES 8

/* The direction of draft d (0-based) of n in iteration it (1-based): entry
 * ((it - 1) * n + d) mod KILN_DRAFT_STRATEGIES of the list, so the drafts of
 * an iteration differ (while n <= the list's length) and the iterations go
 * on through the list. Never NULL. */
const char *kiln_draft_strategy(int iteration, int draft, int ndrafts);

/* Draft d's temperature: spread evenly over [0.2, 0.8] (0.2 + 0.6 d/(n-1),
 * to two decimals), 0.5 for a single draft: low ones refine, high ones
 * explore. */
double kiln_draft_temperature(int draft, int ndrafts);

#endif
