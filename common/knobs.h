/* knobs.h - the one parser of a candidate's tuning knobs.
 *
 * A knob is a line
 *
 *   #define NAME VALUE //@kiln tune V1 V2 ...
 *
 * The offline tuner (agent/tune.c) reads knobs to propose settings and the
 * CUDA launch manifest (verifier/manifest.c) reads them to evaluate its
 * expressions; both go through kiln_knobs_scan, so a file's knobs are the
 * same to both. The rules (docs/cuda.md, "Knobs"):
 *
 * - A directive is a line comment that starts `//@kiln`, found with comments
 *   and literals lexed (c_lex.h): `//@kiln` inside a string, a block comment
 *   or another line comment is text. Its word is `tune`, after one or more
 *   blanks; any other word is an error, and so is `// @kiln` (a space
 *   between the slashes and `@kiln`).
 * - The code before it on the line is `#define NAME VALUE` and nothing
 *   else: NAME a C identifier of at most KILN_KNOB_NAME_MAX characters,
 *   VALUE a decimal integer.
 * - A decimal integer is `0`, or digits that do not start with 0 (C would
 *   read 010 as octal) after an optional `-`, and fits int64.
 * - The values V1 V2 ... are decimal integers separated by blanks: 2 to
 *   KILN_KNOB_VALUES of them, none listed twice. VALUE need not be listed.
 * - No NAME is declared twice; at most KILN_KNOBS_MAX knobs per file. */
#ifndef KILN_KNOBS_H
#define KILN_KNOBS_H

#include <stddef.h>

#include "kiln_error.h"

#define KILN_KNOB_VALUES 16     /* most values one knob may list */
#define KILN_KNOBS_MAX 16       /* most knobs one source may declare */
#define KILN_KNOB_NAME_MAX 31   /* longest knob name */

typedef struct kiln_knob {
    char name[64];
    char value[64];                       /* the value in the source */
    int nvalues;                          /* 2 .. KILN_KNOB_VALUES */
    char values[KILN_KNOB_VALUES][64];    /* in the order listed */
    int line;                             /* 1-based line of the #define */
    size_t value_at, value_end;           /* where VALUE lies in the source */
} kiln_knob;

/* Parse every knob of src (len bytes; NUL not needed) into knobs, at most
 * cap (and KILN_KNOBS_MAX). Returns the count, or -1 with *line (when not
 * NULL) the 1-based line at fault and err saying what is wrong there,
 * without the line: the callers say where ("line 3: ...", "manifest (line
 * 3): ..."). */
int kiln_knobs_scan(const char *src, size_t len, kiln_knob *knobs, int cap, int *line,
                    kiln_error *err);

/* kiln_knobs_scan over a NUL-terminated source, the message starting
 * "line N: ". */
int kiln_knobs_parse(const char *source, kiln_knob *knobs, int cap, kiln_error *err);

/* Is s[0, len) a decimal integer as a knob value must be written? 0 with
 * *out set (out may be NULL), or -1. */
int kiln_knob_int(const char *s, size_t len, long long *out);

#endif
