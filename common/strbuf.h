/* strbuf.h - a growing string: appends that never fail midway (an
 * allocation failure sets oom and later appends do nothing), so a builder
 * checks once at the end. Used for prompts, imports and normalised sources. */
#ifndef KILN_STRBUF_H
#define KILN_STRBUF_H

#include <stddef.h>

typedef struct kiln_strbuf {
    char *p;        /* NUL-terminated once anything was added; free() it */
    size_t len, cap;
    int oom;
} kiln_strbuf;

void kiln_sb_addn(kiln_strbuf *b, const char *s, size_t n);
void kiln_sb_add(kiln_strbuf *b, const char *s);
void kiln_sb_printf(kiln_strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
