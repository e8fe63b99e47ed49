/* safe_text.h - candidate text made safe to show anywhere: a terminal,
 * JSON, SQLite, git notes, an HTML report, a model's prompt.
 *
 * What a candidate prints, what its compiler says about it and what its
 * worker wrote before it died are bytes the candidate chose. Shown raw, an
 * escape sequence can erase a line and draw a fake one, and invalid UTF-8
 * breaks a JSON reader. kiln_safe_text turns any bytes into valid UTF-8
 * with nothing a terminal acts on but newline and tab:
 *
 *   - C0 controls but \n and \t, and DEL, become \xNN ("\x1b");
 *   - C1 controls (U+0080..U+009F) and the bidirectional-text controls
 *     (U+061C, U+200E, U+200F, U+202A..U+202E, U+2066..U+2069: the
 *     "Trojan Source" characters) become \uNNNN;
 *   - a byte that does not begin a valid, shortest-form UTF-8 sequence of
 *     a scalar value (a stray continuation byte, an overlong form, a
 *     surrogate, beyond U+10FFFF, a sequence cut short) becomes \xNN, and
 *     decoding resumes at the next byte.
 *
 * Everything else, printable ASCII and valid UTF-8, is kept as it is, so
 * cleaning clean text changes nothing (the function is idempotent). */
#ifndef KILN_SAFE_TEXT_H
#define KILN_SAFE_TEXT_H

#include <stddef.h>

typedef enum kiln_text_fault {
    KILN_TEXT_SAFE = 0,
    KILN_TEXT_CONTROL,     /* a C0 or C1 control, or DEL */
    KILN_TEXT_BAD_UTF8,    /* not valid UTF-8 */
    KILN_TEXT_BIDI,        /* a bidirectional-text control */
} kiln_text_fault;

/* The n bytes at in, made safe, into out (cap bytes, NUL-terminated when
 * cap > 0). Output that does not fit is cut before a whole character or
 * escape, never inside one. Returns the bytes written, without the NUL. */
size_t kiln_safe_text(const char *in, size_t n, char *out, size_t cap);

/* The NUL-terminated string s (in a buffer of cap bytes) made safe in
 * place; escapes lengthen it, so its end may be cut. */
void kiln_safe_text_inplace(char *s, size_t cap);

/* The first unit of s[0..n) that kiln_safe_text would change, other than
 * the control characters in allow (such as "\r\f"): its fault, and in *at
 * (if not NULL) its byte offset and in *value its byte (a control or bad
 * byte) or code point (a bidi control). KILN_TEXT_SAFE if there is none. */
kiln_text_fault kiln_text_first_unsafe(const char *s, size_t n, const char *allow, size_t *at,
                                       unsigned *value);

/* That first unit in words, into buf: "a control character (0x1b) at line
 * 3, column 11" (columns count bytes). 1 when there is one, else 0 (buf
 * empty). */
int kiln_text_where_unsafe(const char *s, size_t n, const char *allow, char *buf, size_t len);

#endif
