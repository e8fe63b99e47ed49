/* propose.h - a model's proposals in three steps, so that the requests can
 * go out on a thread of their own while the main thread verifies
 * (prefetch.c): prepare (main thread: the prompts, read from the database
 * and the workspace), ask (any thread: HTTP only, kiln_llm_complete_each
 * on the batch's requests and results), record (main thread: candidate
 * rows and llm_calls). kiln_propose (search_state.h) does all three in a
 * row. */
#ifndef KILN_PROPOSE_H
#define KILN_PROPOSE_H

#include "search_state.h"

#define KILN_MAX_DRAFTS 16

typedef struct kiln_model_batch {
    int it;                          /* the iteration the drafts are for */
    char parent[41];                 /* the parent their prompts show */
    int n;                           /* drafts */
    char *system[KILN_MAX_DRAFTS], *user[KILN_MAX_DRAFTS];
    kiln_llm_request req[KILN_MAX_DRAFTS];
    kiln_llm_result res[KILN_MAX_DRAFTS];   /* filled by the asking step */
    char entry[128];                 /* what the parser looks for */
    char *parent_src;                /* malloc'd: the parent's source, that a diff applies to */
    long long lesson_ids[16];        /* the lessons the prompts show */
    int nids;
    char *lessons;
} kiln_model_batch;

/* The requests of iteration it from parent (its source and its verdict
 * against the task's baseline, for the prompt): the run's decided
 * attempts, lessons and inspirations as they stand now. 0 or -1 with err;
 * free the batch with kiln_model_batch_free either way. */
int kiln_model_prepare(search *s, int it, const char *parent, const char *parent_src,
                       const char *parent_verdict, kiln_model_batch *b, kiln_error *err);

/* The answers as candidates first, first+1, ... of iteration b->it with
 * parent b->parent (s->parent is set to it), each call in llm_calls and
 * its tokens in the run; then the failure streak (a server that keeps
 * failing ends the run: -1 with err) and the lessons shown. */
int kiln_model_record(search *s, kiln_model_batch *b, int first, kiln_error *err);

/* Answers that will be no candidates (the run stopped before their
 * iteration): each call in llm_calls with candidate -1 and its tokens in
 * the run, so the budget and the records still count them. */
void kiln_model_drop(search *s, kiln_model_batch *b);

void kiln_model_batch_free(kiln_model_batch *b);

#endif
