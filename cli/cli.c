/* cli.c - what every subcommand shares (see cli.h): flag helpers and the
 * live progress line. Kept out of kiln.c, which dispatches to the
 * subcommands, so that no subcommand depends on the dispatcher. */
#include "cli.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "live_width.h"
#include "suggest.h"
#include "worker_io.h"   /* kiln_mono_ns */

const char *kiln_flag_value(int argc, char **argv, int *i, const char *flag, int *missing)
{
    size_t n = strlen(flag);
    const char *a = argv[*i];
    if (strncmp(a, flag, n) != 0)
        return NULL;
    if (a[n] == '=')
        return a + n + 1;
    if (a[n] != '\0')
        return NULL;
    if (*i + 1 >= argc) {
        *missing = 1;
        return NULL;
    }
    return argv[++*i];
}

int kiln_is_help(const char *arg)
{
    return strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0;
}

int kiln_unexpected(const char *cmd, const char *arg, const char *usage)
{
    kiln_suggestion s;
    kiln_suggest_init(&s, arg);
    if (arg[0] == '-')
        kiln_suggest_flags(&s, usage);
    const char *near = kiln_suggest_best(&s);
    if (near)
        fprintf(stderr, "kiln %s: unknown flag '%s'; did you mean '%s'? (kiln %s --help)\n", cmd,
                arg, near, cmd);
    else
        fprintf(stderr, "kiln %s: unexpected argument '%s' (kiln %s --help lists the flags)\n",
                cmd, arg, cmd);
    return -1;
}

void kiln_live_line(uint64_t t0_ns, const char *what, const char *fmt, ...)
{
    unsigned s = (unsigned)((kiln_mono_ns() - t0_ns) / 1000000000u);
    char msg[512], line[640];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(line, sizeof line, "  %02u:%02u  %-12s %s", s / 60, s % 60, what, msg);
    /* no wider than the terminal, which would wrap it: each redraw would
     * then leave a broken line behind */
    int fit = (int)kiln_fit_columns(line, kiln_term_columns(STDERR_FILENO));
    fprintf(stderr, "\r\033[K%.*s", fit, line);
    fflush(stderr);
}

void kiln_live_clear(void)
{
    fputs("\r\033[K", stderr);
}

int kiln_print_json(const char *cmd, cJSON *o)
{
    char *line = o ? cJSON_PrintUnformatted(o) : NULL;
    cJSON_Delete(o);
    if (!line) {
        fprintf(stderr, "kiln %s: out of memory writing JSON\n", cmd);
        return -1;
    }
    puts(line);
    free(line);
    return 0;
}
