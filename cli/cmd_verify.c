/* cmd_verify.c - `kiln verify`: run one verification, through kilnd when
 * possible (starting it if none runs) or in this process with --no-daemon,
 * and show the verdict as a table for people or as JSON for scripts. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fileutil.h"
#include "cli.h"
#include "daemon_client.h"
#include "judge.h"
#include "task.h"
#include "verdict_print.h"
#include "verify.h"
#include "worker_io.h"

#define SEND_LIMIT (512 * 1024)   /* larger files are judged in process */

static const char usage[] =
    "usage: kiln verify FILE --task NAME|DIR [options]\n"
    "\n"
    "Compile FILE in a sandbox, check it on visible, hidden and adversarial inputs,\n"
    "time it against the task's baseline and print the verdict. The job goes to kilnd\n"
    "(started on demand) unless --no-daemon is given.\n"
    "\n"
    "options:\n"
    "  --task NAME|DIR      the task (required)\n"
    "  --baseline FILE      time against FILE instead of the task's baseline\n"
    "  --backend cpu|cuda   backend (default: cuda for a .cu file, else cpu)\n"
    "  --dtype T            element type (default: the task's first)\n"
    "  --group G            shape group of the backend (default: its default group;\n"
    "                       a task's CUDA groups may differ from its CPU ones)\n"
    "  --json               print the verdict as JSON\n"
    "  --timing-ms N        time budget of the timing stage (default 2000)\n"
    "  --call-timeout-ms N  longest a single call may take (default 10000)\n"
    "  --socket ADDR        kilnd's socket path or tcp://HOST:PORT (default $KILN_SOCKET)\n"
    "  --no-daemon          verify in this process instead of through kilnd\n"
    "  --keep               keep the job directory (with --no-daemon, for debugging)\n"
    "\n"
    "Exit status: 0 pass, 1 fail or suspect, 2 bad input, 3 internal error.\n";

typedef struct args {
    const char *file, *task, *backend, *dtype, *group, *socket, *baseline;
    int json, keep, no_daemon, timing_ms, call_timeout_ms;
    double report_scale;
} args;

static int parse_int(const char *s, int *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (*s == '\0' || *end || v <= 0 || v > 100000000)
        return -1;
    *out = (int)v;
    return 0;
}

static int bad(const char *fmt, const char *what)
{
    fprintf(stderr, "kiln verify: ");
    fprintf(stderr, fmt, what);
    fprintf(stderr, "\n");
    return -1;
}

static int parse(int argc, char **argv, args *a)
{
    *a = (args){.timing_ms = 2000, .call_timeout_ms = 10000};
    for (int i = 1; i < argc; i++) {
        int miss = 0;
        const char *v, *arg = argv[i];
        if (kiln_is_help(arg)) {
            fputs(usage, stdout);
            exit(KILN_EXIT_OK);
        } else if ((v = kiln_flag_value(argc, argv, &i, "--task", &miss))) {
            a->task = v;
        } else if ((v = kiln_flag_value(argc, argv, &i, "--baseline", &miss))) {
            a->baseline = v;
        } else if ((v = kiln_flag_value(argc, argv, &i, "--backend", &miss))) {
            a->backend = v;
        } else if ((v = kiln_flag_value(argc, argv, &i, "--dtype", &miss))) {
            a->dtype = v;
        } else if ((v = kiln_flag_value(argc, argv, &i, "--group", &miss))) {
            a->group = v;
        } else if ((v = kiln_flag_value(argc, argv, &i, "--socket", &miss))) {
            a->socket = v;
        } else if ((v = kiln_flag_value(argc, argv, &i, "--timing-ms", &miss))) {
            if (parse_int(v, &a->timing_ms) < 0)
                return bad("--timing-ms needs a positive integer, got '%s'", v);
        } else if ((v = kiln_flag_value(argc, argv, &i, "--call-timeout-ms", &miss))) {
            if (parse_int(v, &a->call_timeout_ms) < 0)
                return bad("--call-timeout-ms needs a positive integer, got '%s'", v);
        } else if ((v = kiln_flag_value(argc, argv, &i, "--test-report-scale", &miss))) {
            a->report_scale = strtod(v, NULL);   /* fault injection, implies --no-daemon */
            a->no_daemon = 1;
        } else if (strcmp(arg, "--json") == 0) {
            a->json = 1;
        } else if (strcmp(arg, "--keep") == 0) {
            a->keep = 1;
        } else if (strcmp(arg, "--no-daemon") == 0) {
            a->no_daemon = 1;
        } else if (miss) {
            return bad("%s needs a value", arg);
        } else if (arg[0] == '-' || a->file) {
            return kiln_unexpected("verify", arg, usage);
        } else {
            a->file = arg;
        }
    }
    if (!a->file || !a->task)
        return fprintf(stderr, "kiln verify: need FILE and --task\n\n%s", usage), -1;
    if (!a->backend) {
        size_t n = strlen(a->file);
        a->backend = n > 3 && strcmp(a->file + n - 3, ".cu") == 0 ? "cuda" : "cpu";
    }
    return 0;
}

static int show(const args *a, const kiln_verdict *v, const kiln_task *t)
{
    if (a->json) {
        char *s = kiln_verdict_json(v, t, 1);
        puts(s ? s : "{}");
        free(s);
    } else {
        kiln_print_verdict(stdout, v);
    }
    return kiln_verdict_exit_code(v);
}

/* The live line on a terminal: time since the verification started, the
 * stage, and where in it (shape i of n; in timing, the budget left). */
static void on_progress(void *ctx, const char *stage, const char *msg)
{
    kiln_live_line(*(const uint64_t *)ctx, stage, "%s", msg);
}

/* Check what can be checked before any work: the task, dtype and group. */
static int check_task(const args *a, kiln_task *task, kiln_dtype *dt, int *group)
{
    kiln_error err = {0};
    if (kiln_task_find(a->task, task, &err) < 0) {
        fprintf(stderr, "kiln verify: %s\n", err.msg);
        return -1;
    }
    kiln_backend b = (kiln_backend)kiln_backend_parse(a->backend);
    *dt = a->dtype ? kiln_dtype_parse(a->dtype) : kiln_backend_default_dtype(task, b);
    /* the backend's groups: a task with cuda_groups has other shapes there */
    *group = a->group ? kiln_task_group_for(task, a->backend, a->group)
                      : kiln_task_default_group_for(task, a->backend);
    if (!kiln_task_supports_backend(task, a->backend, *dt)) {
        fprintf(stderr, "kiln verify: task %s has no %s variant for dtype '%s'\n", task->name,
                a->backend, a->dtype ? a->dtype : "(default)");
        return -1;
    }
    if (*group < 0) {
        fprintf(stderr, "kiln verify: task %s has no %s group '%s'\n", task->name, a->backend,
                a->group ? a->group : "(default)");
        return -1;
    }
    return 0;
}

/* What a failed judgement exits with: 2 for input kiln refused, else 3. */
static int error_exit(const kiln_judge *j, const kiln_error *err)
{
    fprintf(stderr, "kiln verify: %s\n", err->msg);
    const char *code = j->error_code;
    return strcmp(code, "bad-input") == 0 || strcmp(code, "bad-request") == 0
               ? KILN_EXIT_BAD_INPUT
               : KILN_EXIT_INTERNAL;
}

/* Judge FILE through the one client: kilnd, or this process when asked
 * to or when the file cannot be sent whole (source is then NULL). */
static int judge_file(const args *a, const kiln_task *task, const char *source,
                      const char *baseline)
{
    int tty = isatty(STDERR_FILENO) && !a->json;
    uint64_t t0 = kiln_mono_ns();
    kiln_judge j = {.in_process = a->no_daemon || !source, .task = task, .backend = a->backend,
                    .dtype = a->dtype, .group = a->group, .timing_ms = a->timing_ms,
                    .call_timeout_ms = a->call_timeout_ms, .keep_dir = a->keep,
                    .report_scale = a->report_scale, .progress = tty ? on_progress : NULL,
                    .progress_ctx = &t0, .candidate_path = a->file, .baseline_path = a->baseline};
    kiln_error err = {0};
    /* The daemon resolves names itself; a directory is sent as a full path. */
    snprintf(j.task_ref, sizeof j.task_ref, "%s",
             strchr(a->task, '/') || strcmp(a->task, ".") == 0 ? task->dir : a->task);
    if (!j.in_process && kiln_client_address(a->socket, j.address, sizeof j.address, &err) < 0)
        return error_exit(&j, &err);
    char job[32] = "";
    kiln_verdict *v = kiln_judge_run(&j, source, baseline, NULL, job, NULL, NULL, &err);
    if (tty)
        kiln_live_clear();
    if (!v)
        return error_exit(&j, &err);
    int rc = show(a, v, task);
    free(v);
    return rc;
}

int kiln_cmd_verify(int argc, char **argv)
{
    args a;
    if (parse(argc, argv, &a) < 0)
        return KILN_EXIT_BAD_INPUT;
    if (kiln_backend_parse(a.backend) < 0)
        return bad("unknown backend '%s' (cpu or cuda)", a.backend), KILN_EXIT_BAD_INPUT;
    if (access(a.file, R_OK) != 0)
        return bad("cannot read %s", a.file), KILN_EXIT_BAD_INPUT;
    static kiln_task task;
    kiln_dtype dt;
    int group;
    if (check_task(&a, &task, &dt, &group) < 0)
        return KILN_EXIT_BAD_INPUT;
    if (a.baseline && access(a.baseline, R_OK) != 0)
        return bad("cannot read %s", a.baseline), KILN_EXIT_BAD_INPUT;
    /* What cannot be sent whole (unreadable, too large, not text) is
     * verified here, which says what is wrong with it. */
    size_t len = 0, blen = 0;
    char *src = NULL, *base = NULL;
    kiln_error unsent;
    int rc = a.no_daemon ? 1 : kiln_read_file(a.file, SEND_LIMIT, &src, &len, &unsent);
    if (rc == 0 && a.baseline)
        rc = kiln_read_file(a.baseline, SEND_LIMIT, &base, &blen, &unsent);
    if (rc != 0 || memchr(src, 0, len)) {
        free(src);
        free(base);
        src = base = NULL;
    }
    rc = judge_file(&a, &task, src, base);
    free(src);
    free(base);
    return rc;
}
