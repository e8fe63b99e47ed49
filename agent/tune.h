/* tune.h - the offline tuner: knobs declared in a candidate and their mutation.
 *
 * A knob is a line `#define NAME VALUE //@kiln tune V1 V2 ...`, parsed by
 * common/knobs.h, the parser the CUDA manifest uses too (the rules are
 * there and in docs/cuda.md).  The tuner proposes children of a parent
 * source, never a setting already tried, deterministically for a seed so a
 * run can be replayed: first a few samples spread over the whole space
 * (exploration), then coordinate descent around the parent (one knob moved
 * to a neighbouring value, knob after knob), then random untried settings
 * (docs/search.md, "The tuner"). */
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
    uint64_t rng;    /* splitmix64 state */
    uint64_t seed;   /* the seed given: the exploration samples depend on it alone */
    int cursor;      /* the knob coordinate descent looks at first */
} kiln_tuner;

void kiln_tuner_init(kiln_tuner *t, uint64_t seed);

/* How many exploration samples a space gets: two sweeps of the longest
 * value list (each sweep gives every value of every knob a turn), at most
 * half the other combinations. */
int kiln_tuner_explore_count(const kiln_knob *knobs, int n);

/* Propose a child of the parent's setting (the knobs' current values) whose
 * key (kiln_knobs_key) is not among tried[0..n_tried) (NULL entries are
 * skipped).  In order, the first that is untried:
 *   1. exploration sample 0, 1, ... of kiln_tuner_explore_count (fixed by
 *      the seed, whatever the parent);
 *   2. one knob moved d places along its list, d = 1 for every knob, then
 *      d = 2, ...; knobs taken in turn from the one the last descent
 *      proposal moved (so a kept move is pushed further first), the
 *      direction tried first drawn at random;
 *   3. random settings of list values, then any untried one.
 * Fills out_values (n entries) and hypothesis ("BLOCK 256 -> 512, UNROLL 1
 * -> 2").  Returns 1, 0 when every combination of list values has been tried
 * (the parent's own setting counts as tried; out_values then holds the
 * parent's values), -1 when there are no knobs or more than KILN_KNOBS_MAX, a
 * knob has no values, or out of memory.  A caller asking for several drafts
 * adds each one's key to tried before the next call. */
int kiln_tuner_propose(kiln_tuner *t, const kiln_knob *knobs, int n, const char *const *tried,
                       int n_tried, char out_values[][64], char *hypothesis, size_t hlen);

#endif
