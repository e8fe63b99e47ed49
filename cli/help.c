/* help.c - `kiln help TOPIC`: a subcommand's --help, or a short page on a
 * topic (tasks, verdicts, manifest, exit-codes) that points to its doc; and
 * `kiln help --markdown`, all of them as one Markdown page (docs/flags.md). */
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "verdict_codes.h"

static const char tasks_page[] =
    "Tasks: what a kernel must compute, its shapes and its tolerance.\n"
    "\n"
    "  kiln task list              the tasks (built in, and in $KILN_TASKS)\n"
    "  kiln task show T [--backend cuda]   a task as an agent sees it\n"
    "  kiln task new N --from T    a copy of task T named N (its own runs, same function)\n"
    "  kiln task from-trace TRACE.json   tasks for a model's ops, from a PyTorch profiler trace\n"
    "\n"
    "A task is a directory: task.json (visible shapes per backend, cost, tolerance),\n"
    "hidden.json (shapes a candidate never sees), reference.c (kiln_reference or\n"
    "F_reference, F the task's \"function\", in double) and, for CUDA, reference.cu.\n"
    "See docs/task-format.md.\n";

/* "  label: a, b, c" wrapped at 78 columns, continued 10 columns in. */
static void word_list(const char *label, const char *const *words, int n)
{
    int col = printf("  %s:", label);
    for (int i = 0; i < n; i++) {
        int wrap = col + 2 + (int)strlen(words[i]) > 78;
        if (wrap)
            col = printf(",\n          %s", words[i]) - 2;
        else
            col += printf("%s %s", i ? "," : "", words[i]);
    }
    printf("\n");
}

/* The codes of one status (NULL: any) by the verifier or the search. */
static void codes_line(const char *label, const char *status, int by_search)
{
    int n, k = 0;
    const kiln_verdict_code *t = kiln_verdict_codes(&n);
    const char *words[64];
    for (int i = 0; i < n && k < 64; i++)
        if (t[i].by_search == by_search && (!status || strcmp(t[i].status, status) == 0))
            words[k++] = t[i].code;
    word_list(label, words, k);
}

/* The verdicts page, from the codes' table (verdict_codes.h). */
static void verdicts_page(void)
{
    int n = 0;
    while (kiln_verdict_stages[n])
        n++;
    printf("Verdicts: pass, fail, suspect or error, with the stage and a code.\n\n");
    word_list("stages", kiln_verdict_stages, n);
    codes_line("fail codes", "fail", 0);
    codes_line("suspect codes", "suspect", 0);
    codes_line("the search's (stage propose)", NULL, 1);
    printf("\nHidden shapes show only id, pass or fail and the code. `kiln verify --json`\n"
           "prints the whole verdict; docs/verdict.md describes every field and code.\n");
}

static const char manifest_page[] =
    "The launch manifest of a CUDA candidate: a /*@kiln launch {...} @*/ comment\n"
    "naming each kernel with its grid, block, dynamic shared memory and arguments\n"
    "(task args by name, scratch buffers by index), as expressions over the task's\n"
    "dims, sizeof(T) and //@kiln tune knobs. `kiln task show T --backend cuda` shows\n"
    "the starter's as an example; docs/cuda.md has the language and the contract.\n"
    "`kiln import FILE.cu --task T` proposes one from a file's host launch code.\n";

static const char exit_page[] =
    "Exit status of every kiln command:\n"
    "\n"
    "  0    pass, or done\n"
    "  1    fail or suspect (verify); a regression (reverify); something to fix (doctor)\n"
    "  2    bad input: a flag, a file, a task, a workspace\n"
    "  3    internal error: kiln's problem, or a missing GPU, daemon or model server\n"
    "  130  interrupted by Ctrl-C or SIGTERM (a search is resumable with --resume)\n";

typedef int (*cmd_fn)(int argc, char **argv);

static const struct { const char *name; cmd_fn fn; } cmds[] = {
    {"search", kiln_cmd_search}, {"verify", kiln_cmd_verify}, {"task", kiln_cmd_task},
    {"daemon", kiln_cmd_daemon}, {"status", kiln_cmd_status}, {"report", kiln_cmd_report},
    {"reverify", kiln_cmd_reverify}, {"export", kiln_cmd_export},
    {"lessons", kiln_cmd_lessons}, {"doctor", kiln_cmd_doctor},
    {"import", kiln_cmd_import}, {"fleet", kiln_cmd_fleet}, {"db", kiln_cmd_db},
};
static const struct { const char *name; const char *text; } pages[] = {
    {"tasks", tasks_page}, {"manifest", manifest_page}, {"exit-codes", exit_page},
};
#define N_CMDS (sizeof cmds / sizeof cmds[0])
#define N_PAGES (sizeof pages / sizeof pages[0])

/* One section of the Markdown page: a heading, then what TOPIC's help
 * prints, as it prints it, in a fence (the text is laid out for a
 * terminal, not for Markdown). In a child process: some commands exit
 * once their --help is printed (search does, from its flag parser). */
static int markdown_section(const char *heading, const char *topic)
{
    printf("\n## %s\n\n```text\n", heading);
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        perror("kiln help --markdown: fork");
        return KILN_EXIT_INTERNAL;
    }
    if (pid == 0) {
        int rc = kiln_help(topic);
        fflush(stdout);
        _exit(rc);
    }
    int st;
    if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != KILN_EXIT_OK) {
        fprintf(stderr, "kiln help --markdown: 'kiln help %s' failed\n", topic);
        return KILN_EXIT_INTERNAL;
    }
    printf("```\n");
    return KILN_EXIT_OK;
}

int kiln_help_markdown(const char *overview)
{
    printf("# kiln: every command's flags\n\n"
           "What `kiln --help`, each `kiln COMMAND --help` and `kiln help TOPIC` print, on\n"
           "one page. Generated from the same text: do not edit it by hand, run\n"
           "`build/kiln help --markdown > docs/flags.md` (integration_flags_doc checks it).\n"
           "\n## kiln\n\n```text\n%s```\n", overview);
    int rc = KILN_EXIT_OK;
    char heading[64];
    for (size_t i = 0; i < N_CMDS && rc == KILN_EXIT_OK; i++) {
        snprintf(heading, sizeof heading, "kiln %s", cmds[i].name);
        rc = markdown_section(heading, cmds[i].name);
    }
    for (size_t i = 0; i < N_PAGES && rc == KILN_EXIT_OK; i++) {
        snprintf(heading, sizeof heading, "kiln help %s", pages[i].name);
        rc = markdown_section(heading, pages[i].name);
        if (i == 0 && rc == KILN_EXIT_OK)   /* the verdicts page, built from the codes' table */
            rc = markdown_section("kiln help verdicts", "verdicts");
    }
    return rc;
}

int kiln_help(const char *topic)
{
    for (size_t i = 0; i < N_CMDS; i++)
        if (strcmp(topic, cmds[i].name) == 0) {
            char *argv[] = {(char *)topic, "--help", NULL};
            return cmds[i].fn(2, argv);
        }
    if (strcmp(topic, "verdicts") == 0) {
        verdicts_page();
        return KILN_EXIT_OK;
    }
    for (size_t i = 0; i < N_PAGES; i++)
        if (strcmp(topic, pages[i].name) == 0) {
            fputs(pages[i].text, stdout);
            return KILN_EXIT_OK;
        }
    fprintf(stderr, "kiln help: no topic '%s' (a command, or tasks, verdicts, manifest, "
            "exit-codes)\n", topic);
    return KILN_EXIT_BAD_INPUT;
}
