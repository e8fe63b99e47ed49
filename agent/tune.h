/* tune.h - the offline tuner: knobs declared in a candidate and their mutation.
 *
 * A knob is a line `#define NAME VALUE //@kiln tune V1 V2 ...` (see
 * DESIGN.md, Candidate contract).  The tuner proposes a child of a parent
 * source that differs in one or two knob values, never a setting already
 * tried, deterministically for a seed so a run can be replayed. */
#ifndef KILN_AGENT_TUNE_H
#define KILN_AGENT_TUNE_H

#include <stddef.h>
#include <stdint.h>

#include "kiln_error.h"

#define KILN_KNOB_VALUES 16

typedef struct kiln_knob {
    char name[64];
    char value[64];                       /* the value in the source */
    int nvalues;                          /* >= 2 */
    char values[KILN_KNOB_VALUES][64];    /* in the order listed */
    int line;                             /* 1-based line of the #define */
} kiln_knob;

/* Parse every tune line of source into knobs (at most cap).  Returns the
 * count, or -1 with err naming the line and what is wrong with it: not a
 * `#define NAME VALUE` line, a value that is not an integer or identifier,
 * fewer than 2 or more than 16 values, a value listed twice, a knob declared
 * twice, more than cap knobs.  The current value need not be in the list. */
int kiln_knobs_parse(const char *source, kiln_knob *knobs, int cap, kiln_error *err);

/* A malloc'd copy of source with each knob's #define value replaced by
 * values[i]; every other byte is unchanged.  NULL when out of memory, when a
 * value is not an integer or identifier, or when the knobs do not come from
 * this source. */
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
