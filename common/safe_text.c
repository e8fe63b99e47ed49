/* safe_text.c - candidate text made safe to show (see safe_text.h). */
#include "safe_text.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The length of the valid, shortest-form UTF-8 sequence at s[0..n) and its
 * code point, or 0 if s[0] begins none (RFC 3629's table: no overlong
 * forms, no surrogates, nothing above U+10FFFF). */
static size_t utf8_decode(const unsigned char *s, size_t n, uint32_t *cp)
{
    unsigned char b = s[0];
    size_t len;
    unsigned char lo = 0x80, hi = 0xbf;   /* the second byte's range */
    if (b < 0x80) {
        *cp = b;
        return 1;
    }
    if (b >= 0xc2 && b <= 0xdf) {
        len = 2;
        *cp = b & 0x1f;
    } else if (b >= 0xe0 && b <= 0xef) {   /* E0: no overlong; ED: no surrogate */
        len = 3;
        *cp = b & 0x0f;
        lo = b == 0xe0 ? 0xa0 : 0x80;
        hi = b == 0xed ? 0x9f : 0xbf;
    } else if (b >= 0xf0 && b <= 0xf4) {   /* F0: no overlong; F4: to U+10FFFF */
        len = 4;
        *cp = b & 0x07;
        lo = b == 0xf0 ? 0x90 : 0x80;
        hi = b == 0xf4 ? 0x8f : 0xbf;
    } else {
        return 0;
    }
    if (n < len || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if (i > 1 && (s[i] < 0x80 || s[i] > 0xbf))
            return 0;
        *cp = (*cp << 6) | (s[i] & 0x3f);
    }
    return len;
}

static int is_bidi(uint32_t cp)
{
    return cp == 0x061c || cp == 0x200e || cp == 0x200f || (cp >= 0x202a && cp <= 0x202e) ||
           (cp >= 0x2066 && cp <= 0x2069);
}

/* The unit at s[0..n): its length in bytes (at least 1), its fault and
 * the value an escape shows (the byte, or the code point). */
static size_t classify(const unsigned char *s, size_t n, kiln_text_fault *f, uint32_t *value)
{
    uint32_t cp;
    size_t len = utf8_decode(s, n, &cp);
    if (len == 0) {
        *f = KILN_TEXT_BAD_UTF8;
        *value = s[0];
        return 1;
    }
    *value = cp;
    if ((cp < 0x20 && cp != '\n' && cp != '\t') || (cp >= 0x7f && cp <= 0x9f))
        *f = KILN_TEXT_CONTROL;
    else if (is_bidi(cp))
        *f = KILN_TEXT_BIDI;
    else
        *f = KILN_TEXT_SAFE;
    return len;
}

size_t kiln_safe_text(const char *in, size_t n, char *out, size_t cap)
{
    const unsigned char *s = (const unsigned char *)in;
    size_t used = 0;
    if (cap == 0)
        return 0;
    for (size_t i = 0; i < n;) {
        kiln_text_fault f;
        uint32_t value;
        size_t len = classify(s + i, n - i, &f, &value);
        char esc[8];
        const char *piece = (const char *)s + i;
        size_t plen = len;
        if (f != KILN_TEXT_SAFE) {
            /* a byte (ASCII control, bad byte) as \xNN, a code point as \uNNNN */
            int byte = f == KILN_TEXT_BAD_UTF8 || value < 0x80;
            plen = (size_t)snprintf(esc, sizeof esc, byte ? "\\x%02x" : "\\u%04x", (unsigned)value);
            piece = esc;
        }
        if (used + plen >= cap)
            break;
        memcpy(out + used, piece, plen);
        used += plen;
        i += len;
    }
    out[used] = '\0';
    return used;
}

void kiln_safe_text_inplace(char *s, size_t cap)
{
    size_t n = strnlen(s, cap);
    if (cap == 0 || kiln_text_first_unsafe(s, n, "", NULL, NULL) == KILN_TEXT_SAFE) {
        if (cap)
            s[n < cap ? n : cap - 1] = '\0';
        return;
    }
    char *copy = malloc(n);
    if (!copy) {   /* no memory: every byte that is not plain ASCII becomes '?' */
        for (size_t i = 0; i < n; i++)
            if ((unsigned char)s[i] < 0x20 ? s[i] != '\n' && s[i] != '\t'
                                          : (unsigned char)s[i] >= 0x7f)
                s[i] = '?';
        s[n < cap ? n : cap - 1] = '\0';
        return;
    }
    memcpy(copy, s, n);
    kiln_safe_text(copy, n, s, cap);
    free(copy);
}

kiln_text_fault kiln_text_first_unsafe(const char *s, size_t n, const char *allow, size_t *at,
                                       unsigned *value)
{
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        kiln_text_fault f;
        uint32_t v;
        size_t len = classify(u + i, n - i, &f, &v);
        if (f == KILN_TEXT_CONTROL && v < 0x80 && v != 0 && allow && strchr(allow, (int)v))
            f = KILN_TEXT_SAFE;
        if (f != KILN_TEXT_SAFE) {
            if (at)
                *at = i;
            if (value)
                *value = v;
            return f;
        }
        i += len;
    }
    return KILN_TEXT_SAFE;
}

int kiln_text_where_unsafe(const char *s, size_t n, const char *allow, char *buf, size_t len)
{
    size_t at = 0;
    unsigned value = 0;
    kiln_text_fault f = kiln_text_first_unsafe(s, n, allow, &at, &value);
    if (len)
        buf[0] = '\0';
    if (f == KILN_TEXT_SAFE)
        return 0;
    size_t line = 1, col = 1;
    for (size_t i = 0; i < at; i++, col++)
        if (s[i] == '\n')
            line++, col = 0;
    char what[64];
    if (f == KILN_TEXT_BAD_UTF8)
        snprintf(what, sizeof what, "a byte that is not UTF-8 (0x%02x)", value);
    else if (f == KILN_TEXT_BIDI)
        snprintf(what, sizeof what, "a bidirectional-text control (U+%04X)", value);
    else if (value == 0)
        snprintf(what, sizeof what, "a NUL byte");
    else if (value > 0x7f)
        snprintf(what, sizeof what, "a control character (U+%04X)", value);
    else
        snprintf(what, sizeof what, "a control character (0x%02x)", value);
    snprintf(buf, len, "%s at line %zu, column %zu", what, line, col);
    return 1;
}
