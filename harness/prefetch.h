/* prefetch.h - asking the model for the next iteration's drafts while this
 * iteration's candidates are verified through kilnd (docs/search.md,
 * "Pipelining"). The prompts are built on the main thread from the parent
 * known then; one thread does only the HTTP calls (no SQLite, no git); the
 * main thread records the answers when the next iteration starts. At most
 * one batch is in flight. */
#ifndef KILN_PREFETCH_H
#define KILN_PREFETCH_H

#include "search_state.h"

/* Ask for iteration it's drafts now, from the parent iteration it would
 * have if it started now (kiln_search_draw_parent), when that pays: a
 * model proposer, verification through kilnd, no batch in flight,
 * pipelining's rule by the model's and verification's times so far
 * (kiln_pipeline_pays, shares.h; a batch it declines is counted), and
 * iteration it inside the iteration and token budgets and, judging by the
 * slowest iteration so far, the time budget (the current iteration began
 * at wall time started). Nothing is asked when the prompts cannot be built
 * or no thread can be started: the iteration then asks for itself, as
 * without pipelining, and reports the error there. */
void kiln_prefetch_start(search *s, int it, double started);

/* The parent of iteration it's drafts when they were asked for early,
 * else NULL. */
const char *kiln_prefetch_parent(const search *s, int it);

/* Wait for iteration it's answers (the wait is the model's time) and
 * record them as candidates first, first+1, ... 0 recorded; 1 when Ctrl-C
 * came while waiting (the calls are given up, their answers dropped); -1
 * with err. */
int kiln_prefetch_collect(search *s, int it, int first, kiln_error *err);

/* Give up the batch in flight, if any: its calls are stopped, the thread
 * joined, and the answers that came are dropped with their tokens counted
 * (kiln_model_drop). */
void kiln_prefetch_cancel(search *s);

#endif
