/* tune.h - the offline tuner: knobs declared in a candidate and their mutation.
 *
 * A knob is a line `#define NAME VALUE //@kiln tune V1 V2 ...`, parsed by
 * verifier/knobs.h, the parser the CUDA manifest uses too (the rules are
 * there and in docs/cuda.md).  The tuner proposes a child of a parent source
 * that differs in one or two knob values, never a setting already tried,
 * deterministically for a seed so a run can be replayed. */
#ifndef KILN_AGENT_TUNE_H
#define KILN_AGENT_TUNE_H

#include <stddef.h>
#include <stdint.h>

#include "kiln_error.h"
#include "knobs.h"   /* kiln_knob, kiln_knobs_parse: the one knob parser */

/* A malloc'd copy of source with each knob's #define value replaced by
 * values[i]; every other byte is unchanged.  NULL when out of memory, when a
 * value is not a knob value (kiln_knob_int), or when the knobs do not come
 * from this source (it must parse, with each knob on its line). */
char *kiln_knobs_apply(const char *source, const kiln_knob *knobs, int n, const char values[][64]);

/* "BLOCK=256,UNROLL=4": the knobs in file order; truncated to fit len. */
void kiln_knobs_key(const kiln_knob *knobs, int n, const char values[][64], char *buf, size_t len);

typedef struct kiln_tuner {
    uint64_t rng;   /* splitmix64 state */
} kiln_tuner;

void kiln_tuner_init(kiln_tuner *t, uint64_t seed);

/* Propose a child of the parent's setting (the knobs' current values) whose
 * key is not among tried[0..n_tried).  Changes one knob, or two with
 * probability 1/3 or when every one-knob neighbour has been tried, and falls
 * back to any untried combination of list values.  Fills out_values (n
 * entries) and hypothesis ("BLOCK 256 -> 512, UNROLL 1 -> 2").  Returns 1,
 * 0 when every combination has been tried (the parent's own setting counts
 * as tried; out_values then holds the parent's values), -1 when there are no
 * knobs, a knob has no values, or out of memory. */
int kiln_tuner_propose(kiln_tuner *t, const kiln_knob *knobs, int n, const char *const *tried,
                       int n_tried, char out_values[][64], char *hypothesis, size_t hlen);

#endif
