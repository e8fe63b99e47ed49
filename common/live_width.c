/* live_width.c - the terminal's width, a UTF-8-safe cut and the time left,
 * for the live progress lines (see live_width.h). */
#include "live_width.h"

#include <stdlib.h>
#include <sys/ioctl.h>

#define KILN_DEFAULT_COLUMNS 80

/* $COLUMNS as a count of columns, or 0 when unset or not a positive number. */
static int env_columns(void)
{
    const char *c = getenv("COLUMNS");
    if (!c || !*c)
        return 0;
    char *end;
    long n = strtol(c, &end, 10);
    return (*end == '\0' && n > 0 && n < 100000) ? (int)n : 0;
}

int kiln_term_columns(int fd)
{
    struct winsize ws;
    if (ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
        return ws.ws_col;
    int n = env_columns();
    return n > 0 ? n : KILN_DEFAULT_COLUMNS;
}

/* A UTF-8 continuation byte (10xxxxxx) belongs to the character before it. */
static int continues(unsigned char c)
{
    return (c & 0xC0) == 0x80;
}

size_t kiln_fit_columns(const char *s, int cols)
{
    int room = cols - 1;
    size_t i = 0;
    while (s[i]) {
        if (!continues((unsigned char)s[i])) {
            if (room <= 0)
                break;   /* the next character starts here: cut before it */
            room--;
        }
        i++;
    }
    return i;
}

double kiln_eta_seconds(double elapsed_s, int done, int total)
{
    if (total <= 0 || done <= 0)
        return -1;
    if (done >= total)
        return 0;
    return elapsed_s / done * (total - done);
}
