/* import_torch.h - what `kiln import` does for PyTorch-style host code and
 * the headers it drops: the type dispatch macros a project defines, the
 * host's checks (TORCH_CHECK, assert) as preconditions where kiln's
 * "require" can say them (DIM % N == 0) and as notes elsewhere, and the
 * stand-ins a candidate needs for what the dropped host headers gave its
 * device code (torch's scalar types, C++ library type traits from libcu++,
 * CUDA_VERSION), with a note for what NVRTC cannot take. */
#ifndef KILN_IMPORT_TORCH_H
#define KILN_IMPORT_TORCH_H

#include "import_include.h"
#include "import_map.h"

/* The function-like macros of s/f and the headers that expand to a type
 * dispatch (AT_DISPATCH_*, VLLM_DISPATCH_* or one of these), into out. */
void imp_dispatch_macros(const imp_src *s, const imp_file *f, const imp_units *us,
                         imp_lines *out);

/* The host function's checks: each conjunct a "require" entry
 * (c->require), a fact kiln's buffers and shapes make true, a condition on
 * the knobs checked at every value, or a note; one that can never hold is
 * a problem. */
void imp_checks(imp_ctx *c);

/* The text to put before the candidate's code (cand, len bytes: the
 * candidate so far) so its device code compiles where torch's headers are
 * not: "" when nothing is missing; NULL when out of memory. Notes say what
 * it gives and what NVRTC will not take. */
char *imp_shim(const char *cand, size_t len, int kiln_h, imp_lines *notes);

#endif
