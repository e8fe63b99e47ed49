/* import.h - `kiln import`: a CUDA file with host launch code into a kiln
 * CUDA candidate for a task (docs/cuda.md, "Importing a kernel").
 *
 * kiln_import reads one host function's `kernel<<<grid, block, smem,
 * stream>>>(args)` launches (also inside a type dispatch's lambda, an if's
 * branches as "when", a host macro that launches), maps the function's
 * parameters to the task's args (raw pointers and torch tensors alike),
 * scratch, constants and knobs, translates grid, block, shared memory and
 * computed arguments into manifest expressions (locals become "let"
 * values; a 64-bit parameter gets an i64 value), and writes the candidate:
 * the kernels as they are (extern "C" added, a template instance copied out
 * as an extern "C" kernel or named for NVRTC), the project's headers
 * inlined, host code and host headers removed, stand-ins for what those
 * gave the device code, the manifest appended. What it cannot translate is a problem line
 * "FILE:LINE: cannot translate ...: reason"; then there is no candidate,
 * unless force, which writes one whose manifest holds a "TODO" list (and
 * "TODO: ..." values) that kiln's static check refuses until they are
 * resolved by hand. A complete candidate has passed kiln_manifest_parse and
 * resolves at the visible shapes of the task's default CUDA group. */
#ifndef KILN_IMPORT_H
#define KILN_IMPORT_H

#include <stddef.h>

#include "import_lex.h"
#include "task.h"

#define KILN_IMPORT_MAX_MAPS 16
#define KILN_IMPORT_MAX_INCLUDES 8

typedef struct kiln_import_opts {
    const char *file;                    /* the name problems give the source */
    const char *dir;                     /* its directory: quoted #includes are looked
                                            up there first; NULL: only in includes */
    const char *function;                /* the host function, or NULL: the only one */
    int force;
    int nmaps;                           /* --map PARAM=TARGET (import_maps.c) */
    const char *maps[KILN_IMPORT_MAX_MAPS];
    int nincludes;                       /* --include DIR: the project's headers */
    const char *includes[KILN_IMPORT_MAX_INCLUDES];
} kiln_import_opts;

typedef struct kiln_import_result {
    char *candidate;                     /* malloc'd; NULL when not written */
    char *manifest;                      /* the proposed manifest block, or NULL */
    imp_lines problems;                  /* "FILE:LINE: cannot translate ...: reason" */
    imp_lines account;                   /* the mapping, launch by launch, and notes */
    char dtype_only[16];                 /* "f32" when the kernels take float buffers */
} kiln_import_result;

/* Translate src (len bytes) for task t. 0 (problems or not), or -1 with
 * err for bad input (a --map that names nothing, a source that does not
 * lex) or when out of memory. */
int kiln_import(const char *src, size_t len, const kiln_task *t, const kiln_import_opts *o,
                kiln_import_result *r, kiln_error *err);
void kiln_import_result_free(kiln_import_result *r);

#endif
