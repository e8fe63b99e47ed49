/* test_safe_text.c - kiln_safe_text (common/safe_text.c): what it keeps
 * (printable ASCII, valid UTF-8, newline and tab), what it escapes
 * (controls, DEL, C1, bidi controls, every kind of invalid UTF-8), that it
 * never cuts an escape or a character, that it is idempotent, and, on
 * random bytes, that its output is always valid UTF-8 with no control but
 * \n and \t (checked by a decoder of this file's own, not the module's). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "safe_text.h"

static const char *clean_n(const char *in, size_t n)
{
    static char out[4096];
    kiln_safe_text(in, n, out, sizeof out);
    return out;
}

static const char *clean(const char *in)
{
    return clean_n(in, strlen(in));
}

static void test_keeps_text(void **state)
{
    (void)state;
    const char *keep[] = {"", "plain ascii ~!@#$%^&*()_+{}|:\"<>?`-=[]\\;',./",
                          "rows=32\tcols=1024\nnext line\n", "caf\xc3\xa9 \xe4\xb8\xad \xf0\x9f\x98\x80",
                          "\xef\xbf\xbd replacement char", "\xf4\x8f\xbf\xbf last scalar",
                          "\xed\x9f\xbf before the surrogates", "\xee\x80\x80 after them",
                          "\xc2\xa0 no-break space, \xc2\xbf"};
    for (size_t i = 0; i < sizeof keep / sizeof keep[0]; i++) {
        assert_string_equal(clean(keep[i]), keep[i]);
        assert_int_equal(kiln_text_first_unsafe(keep[i], strlen(keep[i]), "", NULL, NULL),
                         KILN_TEXT_SAFE);
    }
}

static void test_escapes_controls(void **state)
{
    (void)state;
    /* the audit's attack: erase the line, return, draw a fake pass */
    assert_string_equal(clean("\x1b[2K\r\x1b[32mpass 9.87x\x1b[0m"),
                        "\\x1b[2K\\x0d\\x1b[32mpass 9.87x\\x1b[0m");
    assert_string_equal(clean("bell\a bs\b vt\v ff\f del\x7f"),
                        "bell\\x07 bs\\x08 vt\\x0b ff\\x0c del\\x7f");
    assert_string_equal(clean_n("a\0b", 3), "a\\x00b");
    /* C1 controls, encoded properly (CSI U+009B, NEL U+0085) */
    assert_string_equal(clean("\xc2\x9b" "2J \xc2\x85"), "\\u009b2J \\u0085");
    /* bidi controls: RLO, LRI, PDI, RLM, ALM */
    assert_string_equal(clean("a\xe2\x80\xae" "b\xe2\x81\xa6" "c\xe2\x81\xa9" "d\xe2\x80\x8f"
                              "e\xd8\x9c"),
                        "a\\u202eb\\u2066c\\u2069d\\u200fe\\u061c");
}

static void test_escapes_bad_utf8(void **state)
{
    (void)state;
    assert_string_equal(clean("\x9b" "2J"), "\\x9b2J");                   /* raw C1 byte */
    assert_string_equal(clean("\xc0\xaf"), "\\xc0\\xaf");                  /* overlong '/' */
    assert_string_equal(clean("\xe0\x80\xaf"), "\\xe0\\x80\\xaf");         /* overlong, 3 */
    assert_string_equal(clean("\xf0\x80\x80\xaf"), "\\xf0\\x80\\x80\\xaf"); /* overlong, 4 */
    assert_string_equal(clean("\xed\xa0\x80"), "\\xed\\xa0\\x80");         /* a surrogate */
    assert_string_equal(clean("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80"); /* > U+10FFFF */
    assert_string_equal(clean("\xf5\xff\xfe"), "\\xf5\\xff\\xfe");
    assert_string_equal(clean("cut \xc3"), "cut \\xc3");                   /* cut short */
    assert_string_equal(clean("cut \xe4\xb8"), "cut \\xe4\\xb8");
    assert_string_equal(clean("\xe4\xb8x"), "\\xe4\\xb8x");                /* bad continuation */
    assert_string_equal(clean("\xc3\xc3\xa9"), "\\xc3\xc3\xa9");           /* resyncs at once */
}

static void test_never_cuts_a_unit(void **state)
{
    (void)state;
    char out[8];
    assert_int_equal(kiln_safe_text("ab\x1b", 3, out, 6), 2);   /* "ab\x1b" needs 7 */
    assert_string_equal(out, "ab");
    assert_int_equal(kiln_safe_text("ab\x1b", 3, out, 7), 6);
    assert_string_equal(out, "ab\\x1b");
    assert_int_equal(kiln_safe_text("\xc3\xa9", 2, out, 2), 0);   /* é and its NUL need 3 */
    assert_string_equal(out, "");
    assert_int_equal(kiln_safe_text("\xf0\x9f\x98\x80!", 5, out, 5), 4);
    assert_string_equal(out, "\xf0\x9f\x98\x80");
    assert_int_equal(kiln_safe_text("x", 1, out, 0), 0);
    char buf[8] = "\x1b\x1b\x1b";
    kiln_safe_text_inplace(buf, sizeof buf);
    assert_string_equal(buf, "\\x1b");
    char ok[8] = "fine";
    kiln_safe_text_inplace(ok, sizeof ok);
    assert_string_equal(ok, "fine");
}

static void test_first_unsafe(void **state)
{
    (void)state;
    size_t at = 0;
    unsigned v = 0;
    const char *src = "int x;\r\n\f\t// ok\n/* \x1b */";
    assert_int_equal(kiln_text_first_unsafe(src, strlen(src), "\r\f", &at, &v), KILN_TEXT_CONTROL);
    assert_int_equal(at, 19);
    assert_int_equal(v, 0x1b);
    assert_int_equal(kiln_text_first_unsafe(src, 19, "\r\f", &at, &v), KILN_TEXT_SAFE);
    assert_int_equal(kiln_text_first_unsafe("a\rb", 3, "", &at, &v), KILN_TEXT_CONTROL);
    assert_int_equal(kiln_text_first_unsafe("a\0b", 3, "\r", &at, &v), KILN_TEXT_CONTROL);
    assert_int_equal(at, 1);
    assert_int_equal(kiln_text_first_unsafe("\xc3\xa9\xff", 3, "", &at, &v), KILN_TEXT_BAD_UTF8);
    assert_int_equal(at, 2);
    assert_int_equal(v, 0xff);
    assert_int_equal(kiln_text_first_unsafe("x\xe2\x80\xaey", 5, "", &at, &v), KILN_TEXT_BIDI);
    assert_int_equal(at, 1);
    assert_int_equal(v, 0x202e);
    char where[128];
    assert_int_equal(kiln_text_where_unsafe(src, strlen(src), "\r\f", where, sizeof where), 1);
    assert_string_equal(where, "a control character (0x1b) at line 3, column 4");
    assert_int_equal(kiln_text_where_unsafe("ab\ncd\xc2\x85", 7, "", where, sizeof where), 1);
    assert_string_equal(where, "a control character (U+0085) at line 2, column 3");
    assert_int_equal(kiln_text_where_unsafe("a\0", 2, "", where, sizeof where), 1);
    assert_string_equal(where, "a NUL byte at line 1, column 2");
    assert_int_equal(kiln_text_where_unsafe("ok\r\n", 4, "\r", where, sizeof where), 0);
    assert_string_equal(where, "");
}

/* This test's own check: valid UTF-8 (RFC 3629), no C0 control but \n and
 * \t, no DEL, no C1 control. */
static int valid_and_quiet(const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        unsigned b = s[i];
        if (b < 0x80) {
            if ((b < 0x20 && b != '\n' && b != '\t') || b == 0x7f)
                return 0;
            i++;
            continue;
        }
        size_t len = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : 2;
        if (b < 0xc2 || b > 0xf4 || i + len > n)
            return 0;
        uint32_t cp = b & (0x7f >> len);
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xc0) != 0x80)
                return 0;
            cp = cp << 6 | (s[i + k] & 0x3f);
        }
        uint32_t min = len == 2 ? 0x80 : len == 3 ? 0x800 : 0x10000;
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) || cp <= 0x9f)
            return 0;
        i += len;
    }
    return 1;
}

static void test_random_bytes(void **state)
{
    (void)state;
    uint64_t x = 0x9e3779b97f4a7c15u;
    unsigned char in[64];
    char out[512], again[512];
    for (int round = 0; round < 20000; round++) {
        size_t n = (size_t)(x >> 58);
        for (size_t i = 0; i < n; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            /* mostly bytes near the interesting ranges */
            unsigned r = (unsigned)(x >> 32);
            in[i] = (unsigned char)(r & 1 ? 0x80 | (r >> 8 & 0x7f) : r & 2 ? r >> 8 & 0x1f
                                                                   : r >> 8);
        }
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        size_t m = kiln_safe_text((const char *)in, n, out, sizeof out);
        assert_int_equal(m, strlen(out));
        if (!valid_and_quiet((const unsigned char *)out, m))
            fail_msg("round %d: unsafe output", round);
        assert_int_equal(kiln_text_first_unsafe(out, m, "", NULL, NULL), KILN_TEXT_SAFE);
        kiln_safe_text(out, m, again, sizeof again);
        assert_string_equal(again, out);   /* idempotent */
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_keeps_text),
        cmocka_unit_test(test_escapes_controls),
        cmocka_unit_test(test_escapes_bad_utf8),
        cmocka_unit_test(test_never_cuts_a_unit),
        cmocka_unit_test(test_first_unsafe),
        cmocka_unit_test(test_random_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
