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
    size_t max_chars;              /* user prompt budget in bytes; 0: none */
} kiln_prompt_input;

/* Build malloc'd system and user prompts.  To fit max_chars it drops, in
 * order: the compile logs of older attempts, the oldest attempts, the newest
 * attempt's log (first shortened), that attempt, then the end of the
 * lessons.  Returns 0, or -1 with err (and both NULL) on bad input, out of
 * memory, or when the task, parent source and results alone exceed
 * max_chars. */
int kiln_prompt_build(const kiln_prompt_input *in, char **system, char **user, kiln_error *err);

#endif
