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
            return bad("unexpected argument '%s'", arg);
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

static int show(const args *a, cJSON *verdict)
{
    if (a->json) {
        char *s = cJSON_Print(verdict);
        puts(s ? s : "{}");
        free(s);
    } else {
        kiln_print_verdict(stdout, verdict);
    }
    return kiln_verdict_exit_code(verdict);
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
    kiln_error err = {{0}};
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

static int verify_here(const args *a, kiln_task *task, kiln_dtype dt, int group)
{
    int tty = isatty(STDERR_FILENO) && !a->json;
    uint64_t t0 = kiln_mono_ns();
    kiln_verify_opts o = {.task = task, .candidate = a->file, .dtype = dt, .group = group,
                          .backend = (kiln_backend)kiln_backend_parse(a->backend),
                          .baseline = a->baseline, .test_report_scale = a->report_scale,
                          .timing_ms = a->timing_ms, .call_timeout_ms = a->call_timeout_ms,
                          .keep_dir = a->keep,
                          .progress = tty ? on_progress : NULL, .progress_ctx = &t0};
    kiln_verdict *v = calloc(1, sizeof *v);
    kiln_error err = {{0}};
    int rc = v ? kiln_verify(&o, v, &err) : KILN_VERIFY_INTERNAL;
    if (tty)
        kiln_live_clear();
    if (rc < 0) {
        fprintf(stderr, "kiln verify: %s\n", v ? err.msg : "out of memory");
        free(v);
        return rc == KILN_VERIFY_BAD_INPUT ? KILN_EXIT_BAD_INPUT : KILN_EXIT_INTERNAL;
    }
    char *s = kiln_verdict_json(v, task, 0);
    cJSON *j = s ? cJSON_Parse(s) : NULL;
    free(s);
    free(v);
    if (!j)
        return fprintf(stderr, "kiln verify: out of memory\n"), KILN_EXIT_INTERNAL;
    rc = show(a, j);
    cJSON_Delete(j);
    return rc;
}

static int kiln_remote_verify(const args *a, const char *task_ref, const char *source,
                              const char *baseline);

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
        return verify_here(&a, &task, dt, group);
    }
    /* The daemon resolves names itself; a directory is sent as a full path. */
    char ref[PATH_MAX];
    if (strchr(a.task, '/') || strcmp(a.task, ".") == 0)
        snprintf(ref, sizeof ref, "%s", task.dir);
    else
        snprintf(ref, sizeof ref, "%s", a.task);
    rc = kiln_remote_verify(&a, ref, src, base);
    free(src);
    free(base);
    return rc;
}

/* ---- through kilnd ---------------------------------------------------------- */

static cJSON *verify_request(const args *a, const char *task_ref, const char *source,
                             const char *baseline)
{
    cJSON *m = cJSON_CreateObject();
    char id[32];
    snprintf(id, sizeof id, "verify-%d", (int)getpid());
    cJSON_AddStringToObject(m, "op", "verify");
    cJSON_AddStringToObject(m, "id", id);
    cJSON_AddStringToObject(m, "task", task_ref);
    cJSON_AddStringToObject(m, "language", strcmp(a->backend, "cuda") == 0 ? "cuda" : "c");
    cJSON_AddStringToObject(m, "backend", a->backend);
    if (a->dtype)
        cJSON_AddStringToObject(m, "dtype", a->dtype);
    if (a->group)
        cJSON_AddStringToObject(m, "group", a->group);
    cJSON_AddNumberToObject(m, "timing_ms", a->timing_ms);
    cJSON_AddNumberToObject(m, "call_timeout_ms", a->call_timeout_ms);
    cJSON_AddStringToObject(m, "source", source);
    if (baseline)
        cJSON_AddStringToObject(m, "baseline", baseline);
    return m;
}

static int error_exit(const cJSON *ev)
{
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(ev, "error");
    const char *code = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "code"));
    const char *msg = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "message"));
    fprintf(stderr, "kiln verify: %s (%s)\n", msg ? msg : "error", code ? code : "?");
    if (code && (strcmp(code, "bad-input") == 0 || strcmp(code, "bad-request") == 0))
        return KILN_EXIT_BAD_INPUT;
    return KILN_EXIT_INTERNAL;
}

/* Read events until the final one. Returns an exit code, or -1 when the
 * connection was lost (the caller reconnects and asks for the result). */
static int follow(const args *a, kiln_client *c, char job[32])
{
    int tty = isatty(STDERR_FILENO) && !a->json;
    uint64_t t0 = kiln_mono_ns();
    for (;;) {
        kiln_error err = {{0}};
        cJSON *ev = kiln_client_next(c, 3600 * 1000, &err);
        if (!ev)
            return -1;
        const char *kind = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ev, "event"));
        const char *jid = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ev, "job"));
        int rc = -2;
        if (jid && !job[0])
            snprintf(job, 32, "%s", jid);
        if (kind && strcmp(kind, "progress") == 0 && tty) {
            on_progress(&t0, cJSON_GetStringValue(cJSON_GetObjectItem(ev, "stage")),
                        cJSON_GetStringValue(cJSON_GetObjectItem(ev, "message")));
        } else if (kind && strcmp(kind, "verdict") == 0) {
            if (tty)
                kiln_live_clear();
            rc = show(a, cJSON_GetObjectItemCaseSensitive(ev, "verdict"));
        } else if (kind && strcmp(kind, "error") == 0) {
            if (tty)
                kiln_live_clear();
            rc = error_exit(ev);
        }
        cJSON_Delete(ev);
        if (rc != -2)
            return rc;
    }
}

static int kiln_remote_verify(const args *a, const char *task_ref, const char *source,
                              const char *baseline)
{
    char addr[4096], job[32] = "";
    kiln_error err = {{0}};
    kiln_client c;
    if (kiln_client_address(a->socket, addr, sizeof addr, &err) < 0 ||
        kiln_client_open(&c, addr, 1, &err) < 0) {
        fprintf(stderr, "kiln verify: %s\n", err.msg);
        return KILN_EXIT_INTERNAL;
    }
    cJSON *m = verify_request(a, task_ref, source, baseline);
    int rc = kiln_client_send(&c, m, &err) < 0 ? -1 : follow(a, &c, job);
    cJSON_Delete(m);
    /* The daemon went away mid-job: the job is spooled, so ask again. */
    for (int tries = 0; rc == -1 && job[0] && tries < 60; tries++) {
        kiln_client_close(&c);
        sleep(1);
        if (kiln_client_open(&c, addr, 1, &err) < 0)
            continue;
        cJSON *r = cJSON_CreateObject();
        cJSON_AddStringToObject(r, "op", "result");
        cJSON_AddStringToObject(r, "id", "result");
        cJSON_AddStringToObject(r, "job", job);
        rc = kiln_client_send(&c, r, &err) < 0 ? -1 : follow(a, &c, job);
        cJSON_Delete(r);
    }
    kiln_client_close(&c);
    if (rc == -1) {
        fprintf(stderr, "kiln verify: lost kilnd at %s%s%s\n", addr, job[0] ? " during job " : "", job);
        return KILN_EXIT_INTERNAL;
    }
    return rc;
}
