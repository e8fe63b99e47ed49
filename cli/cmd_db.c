/* cmd_db.c - `kiln db rebuild`: a workspace's database made again from
 * its git notes and refs (harness/db_rebuild.h) when it is lost or corrupt. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "db_rebuild.h"

static const char usage[] =
    "usage: kiln db rebuild [--workspace DIR]\n"
    "\n"
    "Make the workspace's database (.kiln/kiln.db) again from its git notes and refs:\n"
    "the runs, every decided candidate with its verdicts, decision and source, the\n"
    "kept kernels and the archive. The old file is moved aside to\n"
    "kiln.db.corrupt-TIME, never deleted. It says what the notes do not hold (model\n"
    "usage, where the time went, lessons); those are not rebuilt. Refused while a\n"
    "search holds the workspace, and in a workspace without verdict notes.\n"
    "\n"
    "  --workspace DIR    the workspace (default ./kiln-work)\n"
    "\n"
    "Exit status: 0 rebuilt, 2 bad input (no workspace, no notes), 3 internal error.\n";

int kiln_cmd_db(int argc, char **argv)
{
    const char *workspace = "kiln-work";
    if (argc < 2 || kiln_is_help(argv[1])) {
        fputs(usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? KILN_EXIT_BAD_INPUT : KILN_EXIT_OK;
    }
    if (strcmp(argv[1], "rebuild") != 0) {
        fprintf(stderr, "kiln db: unknown subcommand '%s'\n\n%s", argv[1], usage);
        return KILN_EXIT_BAD_INPUT;
    }
    for (int i = 2; i < argc; i++) {
        int miss = 0;
        const char *v;
        if (kiln_is_help(argv[i]))
            return fputs(usage, stdout), KILN_EXIT_OK;
        if ((v = kiln_flag_value(argc, argv, &i, "--workspace", &miss)))
            workspace = v;
        else if (miss)
            return fprintf(stderr, "kiln db rebuild: %s needs a value\n", argv[i]),
                   KILN_EXIT_BAD_INPUT;
        else
            return kiln_unexpected("db rebuild", argv[i], usage), KILN_EXIT_BAD_INPUT;
    }
    kiln_error err = {0};
    if (kiln_db_rebuild(workspace, stdout, &err) == 0)
        return KILN_EXIT_OK;
    fprintf(stderr, "kiln db rebuild: %s\n", err.msg);
    return kiln_exit_status(&err);
}
