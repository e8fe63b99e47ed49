/* prompt.h - building the system and user prompts for a model proposer.
 *
 * The system prompt says what to write and how it is judged; the user prompt
 * carries this iteration's context: the task, the machine the parent was
 * measured on, the parent's source, its verdict and per-shape results, the
 * recent attempts of the lineage and the lessons the knowledge layer
 * retrieved.  The user prompt is kept within a character budget by giving up
 * the least useful context first (docs/search.md, "The prompt"). */
#ifndef KILN_AGENT_PROMPT_H
#define KILN_AGENT_PROMPT_H

#include <stddef.h>
#include <stdint.h>

#include "kiln_error.h"

/* The user prompt's budget in bytes when the caller gives none (max_chars
 * 0): about 15k tokens, room for a long kernel and its context. */
#define KILN_PROMPT_DEFAULT_CHARS 60000
/* max_chars for no budget at all. */
#define KILN_PROMPT_NO_LIMIT SIZE_MAX

typedef struct kiln_attempt {      /* one earlier attempt in this lineage, newest last */
    int n;                         /* candidate number in the run */
    const char *hypothesis;        /* NULL or "": "(no hypothesis given)" */
    const char *status;            /* pass/fail/suspect/error/kept/rejected-not-faster/parse-error */
    const char *stage, *reason;    /* from the verdict (the verifier keeps hidden dims out) */
    const char *feedback;          /* the verdict's feedback (hides hidden shapes); may be NULL */
    const char *compile_log;       /* shown when feedback is NULL (the search's older field) */
    double speedup_vs_parent;      /* 0 if not timed */
} kiln_attempt;

typedef struct kiln_in_flight {   /* a draft of the iteration being verified while this one asks */
    int n;                         /* candidate number in the run */
    const char *hypothesis;        /* NULL or "": "(no hypothesis given)" */
    int parent;                    /* its parent's candidate number; -1: not known */
} kiln_in_flight;

typedef struct kiln_inspiration {  /* another elite of the run's archive (not the parent) */
    int n;                         /* candidate number in the run */
    const char *cell;              /* its archive cell ("all.BLOCK256") */
    double speedup, lo, hi;        /* the objective against the task's baseline, its interval */
    const char *hypothesis;        /* NULL or "": none shown */
    const char *source;            /* its source: the first lines are shown */
    /* its pooled verdict against the task's baseline (kiln_db_record_verdict_at),
     * for one line of its speedup per visible shape; NULL: no such line */
    const char *verdict_json;
} kiln_inspiration;

typedef struct kiln_prompt_input {
    const char *task_text;         /* `kiln task show` output for this task/dtype */
    const char *lang;              /* "c" or "cuda" */
    const char *entry;             /* function name */
    const char *parent_source;
    const char *parent_verdict_json;  /* verdict JSON of the parent (may be NULL) */
    const kiln_attempt *attempts;
    int nattempts;
    /* Pipelining (docs/search.md): the drafts of the iteration verified
     * while this prompt is answered, which the attempts cannot show yet;
     * NULL or 0: none (the section is left out). */
    const kiln_in_flight *in_flight;
    int nin_flight;
    const char *lessons;           /* may be NULL or "" */
    const kiln_inspiration *inspirations;   /* best first; may be NULL */
    int ninspirations;
    int parent_not_best;           /* 1: the parent is an elite of the archive, not the best */
    /* --objective per-shape: the shape to improve ("v4, now 21% of its
     * floor (held by #4, the parent)"); NULL or "": none */
    const char *target;
    const char *strategy;          /* this draft's direction (kiln_draft_strategy); may be NULL */
    size_t max_chars;              /* user prompt budget in bytes; 0: KILN_PROMPT_DEFAULT_CHARS */
} kiln_prompt_input;

/* Build malloc'd system and user prompts.  To fit max_chars it gives up, in
 * order: the inspirations' sources, the inspirations (from the last), the
 * feedback of older attempts (oldest first), the older attempts
 * (oldest first), the drafts being verified (from the last: a line each,
 * cheap, and what keeps the model from proposing them again), the lessons
 * (whole lessons, from the last), the newest
 * attempt's feedback (first shortened), that attempt, then the rows of the
 * shape table that are not called out as lagging or slower.  The task, the
 * machine, the parent's source, its verdict summary, the called-out shapes
 * and the direction are never cut: -1 with err (and both NULL) when they
 * alone exceed the budget, on bad input or out of memory. Text is cut only
 * between tokens (prompt_parts.h). */
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
