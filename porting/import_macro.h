/* import_macro.h - host macros that launch, expanded before import reads
 * the host code: vLLM's LAUNCH_FUSED_ADD_RMS_NORM(width) and the like, a
 * function-like #define (of the file or a header) whose body holds a
 * kernel<<<...>>> launch, used in a host function. Each use is replaced by
 * its expansion on the use's own line, the line's newlines kept, so every
 * later line keeps its number; device code is never touched. */
#ifndef KILN_IMPORT_MACRO_H
#define KILN_IMPORT_MACRO_H

#include "import_include.h"

/* The text of s with those uses expanded into *out (malloc'd, *outlen
 * bytes); *n the number expanded (0: *out is NULL). Notes say which.
 * -1 when out of memory. */
int imp_expand_launch_macros(const imp_src *s, const imp_file *f, const imp_units *us,
                             char **out, size_t *outlen, int *n, imp_lines *notes);

#endif
