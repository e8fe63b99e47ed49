/* cmd_report.c - `kiln report`: one self-contained HTML page about a search
 * run (or every run of a task), from the workspace's database. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "report_html.h"
#include "review.h"

static const char usage[] =
    "usage: kiln report [RUN | --task T] -o FILE.html [--workspace DIR]\n"
    "\n"
    "Write one self-contained HTML page (inline CSS and SVG, nothing fetched) about the\n"
    "latest run, run RUN, or every run of task T: best speedup against iteration and\n"
    "against time with every candidate as a point coloured by its verdict (kept ones\n"
    "filled, recorded against the baseline; reverted ones hollow, estimated), each\n"
    "kept kernel per shape as steps, the best kernel per shape with intervals, kept\n"
    "candidates, the archive and the best's lineage, rejections by stage and reason,\n"
    "lessons, tokens, candidates an hour and the model, verification and kiln shares\n"
    "of the wall time.\n"
    "\n"
    "  -o FILE            where to write the page\n"
    "  --task T           every run of task T, after a table of the best kept kernel\n"
    "                     per visible shape over all of them (its run and candidate)\n"
    "  --workspace DIR    the workspace (default ./kiln-work)\n"
    "\n"
    "Exit status: 0 written, 2 bad input (no workspace or run; a corrupt or lost\n"
    "database: kiln db rebuild), 3 internal error.\n";

typedef struct report_opts {
    const char *workspace, *run, *task, *out;
} report_opts;

static int parse(int argc, char **argv, report_opts *o)
{
    for (int i = 1; i < argc; i++) {
        int miss = 0;
        const char *v;
        if (kiln_is_help(argv[i]))
            return fputs(usage, stdout), 1;
        if ((v = kiln_flag_value(argc, argv, &i, "--workspace", &miss)))
            o->workspace = v;
        else if ((v = kiln_flag_value(argc, argv, &i, "--task", &miss)))
            o->task = v;
        else if ((v = kiln_flag_value(argc, argv, &i, "-o", &miss)) ||
                 (v = kiln_flag_value(argc, argv, &i, "--output", &miss)))
            o->out = v;
        else if (miss)
            return fprintf(stderr, "kiln report: %s needs a value\n", argv[i]), -1;
        else if (argv[i][0] == '-' || o->run)
            return kiln_unexpected("report", argv[i], usage);
        else
            o->run = argv[i];
    }
    if (o->run && o->task)
        return fprintf(stderr, "kiln report: give RUN or --task, not both\n"), -1;
    if (!o->out)
        return fprintf(stderr, "kiln report: need -o FILE.html\n\n%s", usage), -1;
    return 0;
}

static void free_runs(kiln_rv_run *runs, int n)
{
    for (int i = 0; i < n; i++)
        kiln_rv_run_free(&runs[i]);
    free(runs);
}

static int load_runs(sqlite3 *db, const report_opts *o, kiln_rv_run **runs, int *n,
                     kiln_error *err)
{
    char(*ids)[32] = NULL;
    int nids = 0, rc = kiln_rv_run_ids(db, o->run, o->task, &ids, &nids, err);
    *runs = rc == 0 ? calloc((size_t)nids, sizeof **runs) : NULL;
    *n = 0;
    if (rc == 0 && !*runs)
        rc = kiln_fail(err, "out of memory");
    for (int i = 0; rc == 0 && i < nids; i++, (*n)++)
        rc = kiln_rv_run_load(db, ids[i], &(*runs)[i], err);
    free(ids);
    return rc;
}

/* Written next to the target and renamed: a reader never sees half a page. */
static int write_page(const char *path, sqlite3 *db, const char *title, const kiln_rv_run *runs,
                      int n, int across, kiln_error *err)
{
    char tmp[PATH_MAX];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp", path) >= sizeof tmp)
        return kiln_fail(err, "%s: path too long", path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return kiln_fail(err, "%s: %s", tmp, strerror(errno));
    int rc = kiln_report_html(f, db, title, runs, n, across);
    if (fclose(f) != 0)
        rc = -1;
    if (rc == 0 && rename(tmp, path) == 0)
        return 0;
    int e = errno;
    remove(tmp);
    return kiln_fail(err, "%s: %s", path, strerror(e));
}

int kiln_cmd_report(int argc, char **argv)
{
    report_opts o = {0};
    int rc = parse(argc, argv, &o);
    if (rc != 0)
        return rc > 0 ? KILN_EXIT_OK : KILN_EXIT_BAD_INPUT;
    kiln_error err = {0};
    sqlite3 *db = NULL;
    kiln_rv_run *runs = NULL;
    int n = 0;
    rc = kiln_rv_db_open(o.workspace ? o.workspace : "kiln-work", &db, &err) < 0
             ? kiln_error_as(&err, KILN_ERR_BAD_INPUT) : 0;
    if (rc == 0)
        rc = load_runs(db, &o, &runs, &n, &err);
    char title[400];
    if (o.task)
        snprintf(title, sizeof title, "kiln report: task %s, %d run%s", o.task, n, n == 1 ? "" : "s");
    else
        snprintf(title, sizeof title, "kiln report: run %s (%s)", n ? runs[0].run.id : "",
                 n ? runs[0].run.task : "");
    if (rc == 0)
        rc = write_page(o.out, db, title, runs, n, o.task != NULL, &err);
    if (rc == 0)
        printf("wrote %s (%d run%s)\n", o.out, n, n == 1 ? "" : "s");
    else
        fprintf(stderr, "kiln report: %s\n", err.msg);
    free_runs(runs, n);
    kiln_db_close(db);
    return rc == 0 ? KILN_EXIT_OK : kiln_exit_status(&err);
}
