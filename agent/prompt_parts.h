/* prompt_parts.h - pieces of the model's user prompt (agent/prompt.c): text
 * cut only between tokens, and what the prompt shows of the parent's verdict
 * (the machine it ran on, its summary, its shapes). Internal to agent/. */
#ifndef KILN_AGENT_PROMPT_PARTS_H
#define KILN_AGENT_PROMPT_PARTS_H

#include <stddef.h>

#include "strbuf.h"
#include "verdict.h"

/* How many bytes of s[0, n) to show within max: all of it when it fits,
 * else the longest prefix that ends between two tokens (never inside a
 * word, a number or a UTF-8 sequence), 0 when the first token alone is
 * longer than max. */
size_t kiln_prompt_cut(const char *s, size_t n, size_t max);

/* s as one line of at most max bytes (plus "..." when cut): newlines and
 * tabs become spaces. */
void kiln_prompt_oneline(kiln_strbuf *b, const char *s, size_t max);

/* "Machine: ..." from the verdict's environment: the GPU's name, SMs, L2,
 * measured copy bandwidth and peak for a CUDA verdict; the CPU and its
 * measured bandwidth for a CPU one. Nothing when the verdict has neither. */
void kiln_prompt_machine(kiln_strbuf *b, const kiln_verdict *v);

/* The verdict's status, stage, reason and summary line. */
void kiln_prompt_verdict_head(kiln_strbuf *b, const kiln_verdict *v);

/* The per-shape table (times, GB/s, roofline fraction, speedup and its
 * interval), one line on the hidden shapes (ids and pass/fail only), and
 * the shapes that lag the others. all = 0 keeps only the rows of the
 * shapes called out. */
void kiln_prompt_shapes(kiln_strbuf *b, const kiln_verdict *v, int all);

/* "v1 2.10x v2 1.80x": the speedup of each visible timed shape, in the
 * verdict's order; nothing when it has none. */
void kiln_prompt_shape_speedups(kiln_strbuf *b, const kiln_verdict *v);

#endif
