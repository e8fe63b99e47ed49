/* lessons_rewrite.h - the model that rewrites merged lessons for
 * `kiln lessons distill --model M` (see lessons_rewrite.c). */
#ifndef KILN_LESSONS_REWRITE_H
#define KILN_LESSONS_REWRITE_H

#include "lessons.h"
#include "llm.h"

typedef struct kiln_rewrite_ctx {
    kiln_llm_config cfg;
    int calls, failed;      /* requests made, and those that failed */
} kiln_rewrite_ctx;

/* agent: openai (NULL) or anthropic; base_url may be NULL (the
 * environment's, as kiln search). -1 with err set on a bad agent or a
 * missing key. */
int kiln_rewrite_setup(kiln_rewrite_ctx *r, const char *agent, const char *model,
                       const char *base_url, kiln_error *err);

/* A kiln_distill_rewrite_fn: ctx is a kiln_rewrite_ctx. */
int kiln_rewrite_lesson(void *ctx, const kiln_lesson *kept, const kiln_lesson *merged, int n,
                        char *action, size_t cap, kiln_error *err);

#endif
