/* parse.h - reading a model's answer: the candidate file and its hypothesis.
 *
 * The model is asked to answer with the complete candidate file in one fenced
 * code block and one line "HYPOTHESIS: ...".  Models vary the fence, the
 * language tag, the line endings and the hypothesis markup, and sometimes send
 * several blocks or get cut off; kiln_parse_answer accepts the harmless
 * variations and turns the rest into an error the next prompt can quote. */
#ifndef KILN_AGENT_PARSE_H
#define KILN_AGENT_PARSE_H

#define KILN_MAX_SOURCE_BYTES (256 * 1024)

typedef struct kiln_proposal {
    int ok;
    char *source;            /* malloc'd, the code block's content (LF line ends) */
    char hypothesis[512];    /* one line, <= 500 bytes; "" when none was given */
    char error[256];         /* when !ok: why, phrased for the model to read */
} kiln_proposal;

/* Parse an answer.  lang: "c" or "cuda"; entry: the function the file must
 * define (the task's name for C).  For CUDA the complete file is the block
 * that holds the "@kiln launch" manifest comment, whatever its kernels are
 * called (entry must still be given).  Returns 0 with out->ok = 1, or -1
 * with out->ok = 0 and out->error filled (a rejected answer, bad arguments
 * or out of memory).  out is always initialised, so kiln_proposal_free is
 * safe. */
int kiln_parse_answer(const char *text, const char *lang, const char *entry, kiln_proposal *out);

/* The answer with what the client learnt about it, for kiln_parse_reply. */
typedef struct kiln_reply {
    const char *text, *lang, *entry;   /* as kiln_parse_answer's */
    const char *finish;   /* finish_reason / stop_reason; NULL or "": not known */
    const char *parent;   /* the parent's source, that a diff applies to; NULL: a
                             diff is refused */
} kiln_reply;

/* kiln_parse_answer, and beyond it: an answer the server cut off at its
 * token limit (finish "length" or "max_tokens") or with an unclosed fence
 * is refused with an error that starts "truncated: "; a refusal (prose and
 * no code, such as "I can't help with that") with "refusal: "; a file with
 * host code (a main(), for CUDA also a <<<...>>> launch) with "host code: ";
 * a ```diff block (or a bare unified diff) is applied to r->parent, and an
 * error starting "diff: " says why one does not apply. */
int kiln_parse_reply(const kiln_reply *r, kiln_proposal *out);

void kiln_proposal_free(kiln_proposal *p);

#endif
