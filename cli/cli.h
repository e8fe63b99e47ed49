/* cli.h - the kiln command's subcommands and shared helpers. */
#ifndef KILN_CLI_H
#define KILN_CLI_H

#include <stdint.h>
#include <stdio.h>

#include "task.h"

#include "kiln_exit.h"   /* KILN_EXIT_*: the statuses every command exits with */

int kiln_cmd_verify(int argc, char **argv);
int kiln_cmd_task(int argc, char **argv);
int kiln_cmd_daemon(int argc, char **argv);
int kiln_cmd_search(int argc, char **argv);
/* Review of recorded runs: cmd_reverify.c, cmd_report.c, cmd_status.c, cmd_export.c. */
int kiln_cmd_reverify(int argc, char **argv);
int kiln_cmd_report(int argc, char **argv);
int kiln_cmd_status(int argc, char **argv);
int kiln_cmd_export(int argc, char **argv);
int kiln_cmd_lessons(int argc, char **argv);
int kiln_cmd_doctor(int argc, char **argv);
/* `kiln fleet up|status|down`: kilnd jobs on Slurm (cmd_fleet.c). */
int kiln_cmd_fleet(int argc, char **argv);
/* `kiln import FILE.cu --task T`: host launch code into a candidate (cmd_import.c). */
int kiln_cmd_import(int argc, char **argv);
/* `kiln db rebuild`: the workspace's database from its git notes (cmd_db.c). */
int kiln_cmd_db(int argc, char **argv);
/* `kiln help TOPIC`: a command's --help or a topic page (help.c). */
int kiln_help(const char *topic);
/* `kiln help --markdown`: OVERVIEW (kiln --help), every command's --help
 * and every topic, as one Markdown page on stdout (docs/flags.md). */
int kiln_help_markdown(const char *overview);

/* "--flag value" or "--flag=value": returns the value and advances *i, or
 * NULL when argv[*i] is not this flag. Sets *missing when the value is absent. */
const char *kiln_flag_value(int argc, char **argv, int *i, const char *flag, int *missing);
int kiln_is_help(const char *arg);
/* A flag or argument command CMD does not take: says so on stderr, with the
 * closest flag of its usage text when one is close ("did you mean"), and
 * returns -1. */
int kiln_unexpected(const char *cmd, const char *arg, const char *usage);

/* The live line on a terminal (stderr; callers check isatty): minutes and
 * seconds since t0_ns (kiln_mono_ns()), what is running, then the message,
 * over the previous line, cut to the terminal's width (live_width.h).
 * kiln_live_clear() wipes it before other output. */
void kiln_live_line(uint64_t t0_ns, const char *what, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void kiln_live_clear(void);

/* --json output: o as one line of JSON on stdout, then o freed. 0, or -1
 * (said on stderr, naming cmd) when it could not be printed. */
struct cJSON;
int kiln_print_json(const char *cmd, struct cJSON *o);

#endif
