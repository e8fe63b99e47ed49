/* live_width.h - fitting a live progress line to the terminal: the
 * terminal's width, where to cut a line on a UTF-8 character boundary, and
 * the time left estimated from the steps finished so far. The live lines of
 * search (harness/progress.c) and verify/reverify (cli/cli.c) redraw over
 * themselves with "\r"; a line longer than the terminal wraps, and each
 * redraw then leaves a broken line behind. */
#ifndef KILN_LIVE_WIDTH_H
#define KILN_LIVE_WIDTH_H

#include <stddef.h>

/* The columns of the terminal on fd: its window size (TIOCGWINSZ), else
 * $COLUMNS when it is a positive number, else 80. */
int kiln_term_columns(int fd);

/* How many bytes of s fit in cols - 1 columns: the last column stays free,
 * so the cursor never moves to the next line. The cut falls between UTF-8
 * characters, never inside one; each character counts as one column. */
size_t kiln_fit_columns(const char *s, int cols);

/* Seconds left at the mean time of the finished steps:
 * elapsed_s / done * (total - done); -1 when none is finished yet or there
 * is no total (total <= 0), 0 once done reaches total. */
double kiln_eta_seconds(double elapsed_s, int done, int total);

#endif
