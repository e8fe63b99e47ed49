/* verdict_codes.c - the codes' table (see verdict_codes.h). */
#include "verdict_codes.h"

#include <stddef.h>
#include <string.h>

static const kiln_verdict_code table[] = {
    {"ok", "pass", 0, 0, "every stage passed", NULL},
    {"too-large", "fail", 0, 1, "static checks: more than 256 KiB", NULL},
    {"empty", "fail", 0, 1, "static checks: an empty source", NULL},
    {"not-text", "fail", 0, 1,
     "static checks: a NUL, a control byte other than tab, newline, carriage return and form "
     "feed, invalid UTF-8 or a bidi control in the source; names the first and its line and "
     "column", NULL},
    {"bad-manifest", "fail", 0, 1,
     "CUDA: the launch manifest does not parse, names an unknown kernel or arg, or gives a "
     "launch no device could make at a visible shape; C and CUDA: a precondition other than "
     "`DIM % N == 0`", NULL},
    {"no-visible-shape", "fail", 0, 1,
     "the candidate's preconditions admit no visible shape of the group (or none that the "
     "baseline's admit too)", NULL},
    {"launch-error", "fail", 0, 1,
     "CUDA: a launch refused at a shape (limits, parameter count or sizes against the kernel's)",
     "a launch failed"},
    {"compile-error", "fail", 0, 1, "the compiler's log, trimmed, is in `feedback`; CPU: a "
     "function that is not the task's signature (the compiler's \"conflicting types\") has a "
     "reason naming the prototype expected, which `feedback` gives first too", NULL},
    {"crash", "fail", 0, 1, "the worker died of a signal or exited during a call",
     "the candidate crashed"},
    {"timeout", "fail", 0, 0,
     "a call or the whole job ran out of time; the process group is killed",
     "a call did not return in time"},
    {"sandbox-violation", "fail", 0, 1, "a forbidden system call (named in the reason)",
     "the candidate made a forbidden system call"},
    {"resource-limit", "fail", 0, 0,
     "CPU time or file size limit; at compile, the compiler's time (30 s) or memory (2 GiB) "
     "limit", "the candidate ran out of an allowed resource"},
    {"unwritten-output", "fail", 0, 1, "poison left in an output",
     "output elements were never written"},
    {"non-finite", "fail", 0, 1, "NaN or Inf where the reference is finite",
     "outputs are NaN or Inf where the reference is finite"},
    {"wrong-output", "fail", 0, 1,
     "error over the budget (worst element and its expected value in the reason)",
     "outputs are over the error budget"},
    {"input-modified", "fail", 0, 1, "an input differs after the call",
     "the candidate modified an input"},
    {"guard-corrupted", "fail", 0, 1, "a write outside a buffer (CUDA: scratch buffers too)",
     "the candidate wrote outside its buffers"},
    {"nondeterministic", "fail", 0, 1, "the same inputs gave different bits", NULL},
    {"below-roofline", "suspect", 0, 0,
     "under 0.8 of the shape's floor (below): faster than moving its compulsory bytes at the "
     "measured bandwidth allows, or than 1.25x the baseline where the baseline itself beat "
     "that; the bandwidth is measured once more, with more readings, before it counts", NULL},
    {"speedup-ceiling", "suspect", 0, 0, "more than 100× faster than the baseline", NULL},
    {"timer-disagreement", "suspect", 0, 0,
     "the worker's reported times disagree with what the verifier or the kernel saw (CUDA: "
     "events, CUPTI and wall clock disagree)", NULL},
    {"baseline-below-roofline", "suspect", 0, 0,
     "in verdicts from before 2026-12-03 only: the baseline beat the floor (the floor is now "
     "at most the baseline's median, and no baseline flags a candidate)", NULL},
    {"duplicate", "", 1, 0,
     "the same source as a candidate the run verified, comments, whitespace and knob lists "
     "aside: not verified again, reverted (docs/search.md)", NULL},
    {"bad-answer", "error", 1, 0,
     "the proposal has no usable code block (a model's answer), or its file could not be read "
     "(replay)", NULL},
    {"llm-error", "error", 1, 0, "the model call failed (after its retries)", NULL},
};

const char *const kiln_verdict_stages[] = {
    "static", "compile", "smoke", "visible", "stability", "determinism", "hidden", "timing",
    "plausibility", NULL,
};

const kiln_verdict_code *kiln_verdict_codes(int *n)
{
    *n = (int)(sizeof table / sizeof table[0]);
    return table;
}

const kiln_verdict_code *kiln_verdict_code_find(const char *code)
{
    for (size_t i = 0; code && i < sizeof table / sizeof table[0]; i++)
        if (strcmp(table[i].code, code) == 0)
            return &table[i];
    return NULL;
}
