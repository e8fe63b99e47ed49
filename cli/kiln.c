/* kiln.c - entry point of the kiln command: dispatches to subcommands. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const char usage[] =
    "usage: kiln <command> [options]\n"
    "\n"
    "kiln searches for fast kernels and verifies that they are really correct and fast.\n"
    "\n"
    "commands:\n"
    "  search TASK               search for a faster kernel (offline tuner by default)\n"
    "  verify FILE --task NAME   verify one candidate kernel and print its verdict\n"
    "  task show NAME            print a task as the agent sees it\n"
    "  task list                 list the built-in tasks\n"
    "  task new NAME --from T    copy task T under a name of its own\n"
    "  task from-trace TRACE     tasks for a model's ops, from a PyTorch trace\n"
    "  daemon start|stop|status  manage kilnd, the verifier daemon\n"
    "  fleet up|status|down      kilnd daemons on a Slurm cluster (docs/fleet.md)\n"
    "  status [RUN]              the essentials of the latest (or given) search run\n"
    "  report -o FILE.html       a self-contained HTML page about a run or a task\n"
    "  reverify [REV...|--best]  verify recorded kernels again, compare old and new\n"
    "  export --task T -o DIR    the fastest kept kernels per shape, with a C dispatch\n"
    "  import FILE.cu --task T   a CUDA file with host launch code into a candidate\n"
    "  lessons list|show|search|add|edit|retire|export|import|distill|stats\n"
    "                            the lessons a search learned (and yours)\n"
    "  db rebuild                the workspace's database again from its git notes\n"
    "  doctor                    check the build, daemon, GPU, sandbox, disk and model servers\n"
    "\n"
    "Run 'kiln COMMAND --help' (or 'kiln help COMMAND') for a command's options, and\n"
    "'kiln help tasks|verdicts|manifest|exit-codes' for those topics; 'kiln help\n"
    "--markdown' prints all of it as one Markdown page (docs/flags.md).\n"
    "Exit status: 0 pass, 1 fail or suspect, 2 bad input, 3 internal error, 130 interrupted.\n";

/* Each subcommand and the file that implements it (cli/cmd_NAME.c). */
static const struct {
    const char *name;
    int (*run)(int argc, char **argv);
} commands[] = {
    {"search", kiln_cmd_search},     {"verify", kiln_cmd_verify},   {"task", kiln_cmd_task},
    {"daemon", kiln_cmd_daemon},     {"reverify", kiln_cmd_reverify}, {"report", kiln_cmd_report},
    {"status", kiln_cmd_status},     {"export", kiln_cmd_export},   {"lessons", kiln_cmd_lessons},
    {"doctor", kiln_cmd_doctor},     {"import", kiln_cmd_import},
    {"fleet", kiln_cmd_fleet},       {"db", kiln_cmd_db},
};

int main(int argc, char **argv)
{
    if (argc >= 3 && strcmp(argv[1], "help") == 0)
        return strcmp(argv[2], "--markdown") == 0 ? kiln_help_markdown(usage) : kiln_help(argv[2]);
    if (argc < 2 || kiln_is_help(argv[1]) || strcmp(argv[1], "help") == 0) {
        fputs(usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? KILN_EXIT_BAD_INPUT : KILN_EXIT_OK;
    }
    if (strcmp(argv[1], "--version") == 0) {
        puts("kiln 0.1.0");
        return KILN_EXIT_OK;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(argv[1], commands[i].name) == 0)
            return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "kiln: unknown command '%s'\n\n%s", argv[1], usage);
    return KILN_EXIT_BAD_INPUT;
}
