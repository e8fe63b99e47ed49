/* cli.c - the flag helpers every subcommand shares (see cli.h). Kept out
 * of kiln.c, which dispatches to the subcommands, so that no subcommand
 * depends on the dispatcher. */
#include "cli.h"

#include <string.h>

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
