/* patch.h - applying a model's unified diff to the parent's source.
 *
 * Hunks ("@@ -a,b +c,d @@") with context (' '), removed ('-') and added
 * ('+') lines; file headers ("diff --git", "index", "---", "+++") are
 * skipped.  No fuzz: every context and removed line must be in the parent,
 * in order (trailing blanks aside, which models drop).  Only the line
 * numbers may be off, as models count them loosely: a hunk is taken where
 * it says, else at its first exact match after the previous hunk. */
#ifndef KILN_AGENT_PATCH_H
#define KILN_AGENT_PATCH_H

#include <stddef.h>

/* Does text look like a unified diff (a hunk header "@@ -")? */
int kiln_patch_looks_like(const char *text);

/* Apply diff to parent (both LF text).  0 with *out malloc'd (LF text), or
 * -1 with why in err ("hunk 2 (@@ -9,3 +9,4 @@) does not apply: ..."). */
int kiln_patch_apply(const char *parent, const char *diff, char **out, char *err, size_t errcap);

#endif
