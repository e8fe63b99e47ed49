/* precond.h - a candidate's stated preconditions and the shapes they admit.
 *
 * A production kernel states what it needs ("cols % 8 == 0"). A candidate
 * may too: a CUDA candidate in its manifest's "require" field, a C candidate
 * in a block comment / *@kiln require ["cols % 8 == 0"] @* / (docs/cuda.md,
 * docs/decisions.md). The only form is divisibility of a task dim by a
 * positive integer literal, `DIM % N == 0`: no comparison, equality or
 * range, so a precondition can neither pin the visible shapes nor bisect
 * hidden dims. The verifier then checks the candidate on the visible shapes
 * that satisfy every precondition and on exactly as many hidden shapes as
 * always, each drawn or replaced from the job's secret seed so that it
 * satisfies them too. Backend-agnostic: verify.c and kiln export use it for
 * C and CUDA alike. */
#ifndef KILN_PRECOND_H
#define KILN_PRECOND_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>

#include "kiln_error.h"
#include "task.h"

#define KILN_PRECOND_MAX 8               /* entries in one "require" list */
#define KILN_PRECOND_MAX_DIVISOR 1048576 /* N in DIM % N == 0 (2^20) */

typedef struct kiln_precond {
    int dim;            /* index into the task's dims */
    int64_t divisor;    /* N >= 1 */
} kiln_precond;

typedef struct kiln_preconds {
    int n;
    kiln_precond p[KILN_PRECOND_MAX];
} kiln_preconds;

/* One entry, "DIM % N == 0" (blanks free, parsed by the manifest's own
 * expression grammar), into out. Anything else is refused with err naming
 * path (e.g. "require[1]") and saying what is allowed. */
int kiln_precond_parse(const kiln_task *t, const char *text, const char *path, kiln_precond *out,
                       kiln_error *err);

/* A JSON array of entries (field is the name for messages, "require"). */
int kiln_precond_parse_json(const kiln_task *t, const cJSON *arr, const char *field,
                            kiln_preconds *out, kiln_error *err);

/* The C candidate's "/ *@kiln require [...] @* /" block, found with
 * comments and literals lexed: 0 with out->n = 0 when there is none, 0 with
 * the list, -1 with err ("require (line N): ...") when it is malformed or
 * given twice. */
int kiln_precond_scan(const char *src, size_t len, const kiln_task *t, kiln_preconds *out,
                      kiln_error *err);

/* 1 when s satisfies every precondition (always with none). */
int kiln_precond_holds(const kiln_preconds *p, const kiln_shape *s);

/* "cols % 8 == 0 && rows % 2 == 0" over the task's dim names ("" for none);
 * entry i alone with kiln_precond_text. */
void kiln_precond_format(const kiln_preconds *p, const kiln_task *t, char *buf, size_t len);
void kiln_precond_text(const kiln_precond *p, const kiln_task *t, char *buf, size_t len);

/* The visible shapes of g that satisfy p: their indices into g->visible,
 * in order, in kept[]; returns how many. */
int kiln_precond_keep(const kiln_preconds *p, const kiln_group *g, int *kept);

/* The job's hidden shapes, exactly g->nhidden + g->nrandom of them (never
 * fewer), all satisfying p, everything drawn from seed: a fixed hidden
 * shape that satisfies p stays; one that does not gets each failing dim
 * replaced by a multiple drawn near its value; random shapes are drawn in
 * the group's ranges as multiples (the smallest multiple at or above the
 * range's low end when the range holds none). With no preconditions this is
 * the fixed list plus the same random draws as ever. out holds at least
 * KILN_MAX_SHAPES + 16 shapes; returns the count. */
int kiln_precond_hidden(const kiln_preconds *p, const kiln_task *t, const kiln_group *g,
                        uint64_t seed, kiln_shape *out);

#endif
