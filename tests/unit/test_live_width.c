/* test_live_width.c - fitting the live progress line to the terminal
 * (common/live_width.c): a pseudo-terminal's width from TIOCGWINSZ, $COLUMNS
 * when the descriptor is no terminal, 80 without either; the cut at widths
 * 40, 80 and 100 leaving the last column free; a cut that never splits a
 * multi-byte UTF-8 character; and the time left from the mean iteration. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "live_width.h"

/* A pseudo-terminal's other end, set to cols columns; -1 when the system
 * lends none (the test then skips that check). */
static int pty_of_width(int cols, int *master)
{
    *master = posix_openpt(O_RDWR | O_NOCTTY);
    if (*master < 0 || grantpt(*master) != 0 || unlockpt(*master) != 0)
        return -1;
    const char *name = ptsname(*master);
    int fd = name ? open(name, O_RDWR | O_NOCTTY) : -1;
    struct winsize ws = {.ws_row = 24, .ws_col = (unsigned short)cols};
    if (fd >= 0 && ioctl(fd, TIOCSWINSZ, &ws) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static void test_terminal_width(void **state)
{
    (void)state;
    setenv("COLUMNS", "55", 1);   /* the terminal's own size wins over it */
    int widths[] = {40, 80, 100};
    for (int i = 0; i < 3; i++) {
        int master, fd = pty_of_width(widths[i], &master);
        if (fd < 0) {
            if (master >= 0)
                close(master);
            skip();
        }
        assert_int_equal(kiln_term_columns(fd), widths[i]);
        close(fd);
        close(master);
    }
    unsetenv("COLUMNS");
}

static void test_columns_when_not_a_tty(void **state)
{
    (void)state;
    int p[2];
    assert_int_equal(pipe(p), 0);
    setenv("COLUMNS", "100", 1);
    assert_int_equal(kiln_term_columns(p[1]), 100);
    setenv("COLUMNS", "40", 1);
    assert_int_equal(kiln_term_columns(p[1]), 40);
    setenv("COLUMNS", "wide", 1);   /* not a number: the default */
    assert_int_equal(kiln_term_columns(p[1]), 80);
    setenv("COLUMNS", "0", 1);
    assert_int_equal(kiln_term_columns(p[1]), 80);
    unsetenv("COLUMNS");
    assert_int_equal(kiln_term_columns(p[1]), 80);
    close(p[0]);
    close(p[1]);
}

static void test_cut_ascii(void **state)
{
    (void)state;
    char line[301];
    memset(line, 'x', 300);
    line[300] = '\0';
    assert_int_equal(kiln_fit_columns(line, 40), 39);   /* the last column free */
    assert_int_equal(kiln_fit_columns(line, 80), 79);
    assert_int_equal(kiln_fit_columns(line, 100), 99);
    assert_int_equal(kiln_fit_columns("short", 80), 5);  /* fits: kept whole */
    assert_int_equal(kiln_fit_columns("", 80), 0);
    assert_int_equal(kiln_fit_columns("abc", 1), 0);     /* no room at all */
    assert_int_equal(kiln_fit_columns("abc", 0), 0);
}

static void test_cut_utf8(void **state)
{
    (void)state;
    /* 38 ASCII columns, then "é" (2 bytes) and "→" (3 bytes) at the cut of
     * a 40-column terminal: 39 columns hold the 38 and "é", whole. */
    char line[128];
    memset(line, 'a', 38);
    strcpy(line + 38, "\xc3\xa9\xe2\x86\x92tail");
    assert_int_equal(kiln_fit_columns(line, 40), 40);    /* 38 + 2 bytes of é */
    assert_int_equal(kiln_fit_columns(line, 39), 38);    /* é not split: cut before it */
    assert_int_equal(kiln_fit_columns(line, 41), 43);    /* → kept whole, 3 bytes */
    /* a character of four bytes (U+1F525) at the end of the room */
    const char *fire = "ab\xf0\x9f\x94\xa5" "cd";
    assert_int_equal(kiln_fit_columns(fire, 3), 2);
    assert_int_equal(kiln_fit_columns(fire, 4), 6);
    for (int cols = 1; cols < 48; cols++) {   /* no cut lands inside a character */
        size_t n = kiln_fit_columns(line, cols);
        assert_true(line[n] == '\0' || ((unsigned char)line[n] & 0xC0) != 0x80);
    }
}

static void test_eta(void **state)
{
    (void)state;
    /* 3 of 10 iterations in 60 s: 20 s each, 7 left: 140 s */
    assert_true(kiln_eta_seconds(60, 3, 10) == 140);
    assert_true(kiln_eta_seconds(5, 1, 4) == 15);
    assert_true(kiln_eta_seconds(90, 10, 10) == 0);     /* done */
    assert_true(kiln_eta_seconds(90, 12, 10) == 0);     /* past it (a resumed run) */
    assert_true(kiln_eta_seconds(30, 0, 10) == -1);     /* nothing finished: no mean yet */
    assert_true(kiln_eta_seconds(30, 3, 0) == -1);      /* no --iterations */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_terminal_width),
        cmocka_unit_test(test_columns_when_not_a_tty),
        cmocka_unit_test(test_cut_ascii),
        cmocka_unit_test(test_cut_utf8),
        cmocka_unit_test(test_eta),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
