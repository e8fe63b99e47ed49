/* cmd_verify.c - `kiln verify`: run one verification and show the verdict
 * as a table for people or as JSON for scripts. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "task.h"
#include "verify.h"

static const char usage[] =
    "usage: kiln verify FILE --task NAME|DIR [options]\n"
    "\n"
    "Compile FILE in a sandbox, check it on visible, hidden and adversarial inputs,\n"
    "time it against the task's baseline and print the verdict.\n"
    "\n"
    "options:\n"
    "  --task NAME|DIR      the task (required)\n"
    "  --backend cpu|cuda   backend (default cpu; cuda needs a CUDA build)\n"
    "  --dtype T            element type (default: the task's first)\n"
    "  --group G            shape group (default: the task's default group)\n"
    "  --json               print the verdict as JSON\n"
    "  --timing-ms N        time budget of the timing stage (default 2000)\n"
    "  --call-timeout-ms N  longest a single call may take (default 10000)\n"
    "  --keep               keep the job directory (for debugging)\n"
    "\n"
    "Exit status: 0 pass, 1 fail or suspect, 2 bad input, 3 internal error.\n";

typedef struct args {
    const char *file, *task, *backend, *dtype, *group;
    int json, keep, timing_ms, call_timeout_ms;
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

static int parse(int argc, char **argv, args *a)
{
    *a = (args){.backend = "cpu", .timing_ms = 2000, .call_timeout_ms = 10000};
    for (int i = 1; i < argc; i++) {
        int miss = 0;
        const char *v;
        const char *arg = argv[i];
        if (kiln_is_help(arg)) {
            fputs(usage, stdout);
            exit(KILN_EXIT_OK);
        } else if ((v = kiln_flag_value(argc, argv, &i, "--task", &miss))) {
            a->task = v;
        } else if ((v = kiln_flag_value(argc, argv, &i, "--backend", &miss))) {
            a->backend = v;
        } else if ((v = kiln_flag_value(argc, argv, &i, "--dtype", &miss))) {
            a->dtype = v;
        } else if ((v = kiln_flag_value(argc, argv, &i, "--group", &miss))) {
            a->group = v;
        } else if ((v = kiln_flag_value(argc, argv, &i, "--timing-ms", &miss))) {
            if (parse_int(v, &a->timing_ms) < 0)
                return fprintf(stderr, "kiln verify: --timing-ms needs a positive integer\n"), -1;
        } else if ((v = kiln_flag_value(argc, argv, &i, "--call-timeout-ms", &miss))) {
            if (parse_int(v, &a->call_timeout_ms) < 0)
                return fprintf(stderr, "kiln verify: --call-timeout-ms needs a positive integer\n"), -1;
        } else if (strcmp(arg, "--json") == 0) {
            a->json = 1;
        } else if (strcmp(arg, "--keep") == 0) {
            a->keep = 1;
        } else if (miss) {
            return fprintf(stderr, "kiln verify: %s needs a value\n", arg), -1;
        } else if (arg[0] == '-' || a->file) {
            return fprintf(stderr, "kiln verify: unexpected argument '%s'\n", arg), -1;
        } else {
            a->file = arg;
        }
    }
    if (!a->file || !a->task)
        return fprintf(stderr, "kiln verify: need FILE and --task\n\n%s", usage), -1;
    return 0;
}

static void on_progress(void *ctx, const char *stage, const char *msg)
{
    (void)ctx;
    fprintf(stderr, "\r\033[K  %-12s %s", stage, msg);
    fflush(stderr);
}

static void fmt_time(double ns, char *buf, size_t len)
{
    if (ns <= 0)
        snprintf(buf, len, "-");
    else if (ns < 1e4)
        snprintf(buf, len, "%.2f us", ns / 1e3);
    else if (ns < 1e7)
        snprintf(buf, len, "%.1f us", ns / 1e3);
    else
        snprintf(buf, len, "%.2f ms", ns / 1e6);
}

static void print_table(const kiln_verdict *v, const kiln_task *t)
{
    printf("%-4s %-24s %16s %11s %11s %8s %8s\n", "id", "dims", "err/budget ULP", "candidate",
           "baseline", "speedup", "roofline");
    for (int i = 0; i < v->nresults; i++) {
        const kiln_shape_result *r = &v->results[i];
        char dims[128] = "hidden", err[48] = "-", ct[32], bt[32], sp[16] = "-", rf[16] = "-";
        if (r->visible)
            kiln_shape_format(t, &r->shape, dims, sizeof dims);
        if (r->checked)
            snprintf(err, sizeof err, "%.1f / %.0f", r->max_err_ulps, r->budget_ulps);
        fmt_time(r->timed ? r->cand.median_ns : 0, ct, sizeof ct);
        fmt_time(r->timed ? r->base.median_ns : 0, bt, sizeof bt);
        if (r->timed) {
            snprintf(sp, sizeof sp, "%.2fx", r->speedup);
            snprintf(rf, sizeof rf, "%.0f%%", 100 * r->roofline_fraction);
        }
        printf("%-4s %-24s %16s %11s %11s %8s %8s\n", r->id, dims, err, ct, bt, sp, rf);
    }
    if (v->geomean_speedup > 0)
        printf("\nspeedup: geomean %.2fx, min %.2fx; median roofline fraction %.0f%%\n",
               v->geomean_speedup, v->min_speedup, 100 * v->median_roofline);
    for (int i = 0; i < v->nflags; i++)
        printf("flag: %s\n", v->flags[i]);
    printf("sandbox: %s\n", v->sandbox[0] ? v->sandbox : "(worker not started)");
    printf("\n%s (stage %s, %s): %s\n", v->status, v->stage, v->code, v->reason);
    if (strcmp(v->code, "compile-error") == 0)
        printf("\n%s\n", v->feedback);
}

int kiln_cmd_verify(int argc, char **argv)
{
    args a;
    if (parse(argc, argv, &a) < 0)
        return KILN_EXIT_BAD_INPUT;
    if (strcmp(a.backend, "cpu") != 0) {
        fprintf(stderr, "kiln verify: backend '%s' is not available in this build (cpu only)\n",
                a.backend);
        return KILN_EXIT_BAD_INPUT;
    }
    if (access(a.file, R_OK) != 0) {
        fprintf(stderr, "kiln verify: cannot read %s\n", a.file);
        return KILN_EXIT_BAD_INPUT;
    }
    static kiln_task task;
    kiln_error err = {{0}};
    if (kiln_task_find(a.task, &task, &err) < 0) {
        fprintf(stderr, "kiln verify: %s\n", err.msg);
        return KILN_EXIT_BAD_INPUT;
    }
    kiln_dtype dt = a.dtype ? kiln_dtype_parse(a.dtype) : task.cpu_dtypes[0];
    int group = a.group ? kiln_task_group(&task, a.group) : task.default_group;
    if (!kiln_task_supports(&task, dt)) {
        fprintf(stderr, "kiln verify: task %s has no CPU variant for dtype '%s'\n", task.name,
                a.dtype ? a.dtype : "?");
        return KILN_EXIT_BAD_INPUT;
    }
    if (group < 0) {
        fprintf(stderr, "kiln verify: task %s has no group '%s'\n", task.name, a.group);
        return KILN_EXIT_BAD_INPUT;
    }
    int tty = isatty(STDERR_FILENO) && !a.json;
    kiln_verify_opts o = {.task = &task, .candidate = a.file, .dtype = dt, .group = group,
                          .timing_ms = a.timing_ms, .call_timeout_ms = a.call_timeout_ms,
                          .job_timeout_ms = 300000, .min_pairs = 5, .max_pairs = 200,
                          .speedup_ceiling = 100, .keep_dir = a.keep,
                          .progress = tty ? on_progress : NULL};
    static kiln_verdict v;
    int rc = kiln_verify(&o, &v, &err);
    if (tty)
        fprintf(stderr, "\r\033[K");
    if (rc < 0) {
        fprintf(stderr, "kiln verify: %s\n", err.msg);
        return rc == KILN_VERIFY_BAD_INPUT ? KILN_EXIT_BAD_INPUT : KILN_EXIT_INTERNAL;
    }
    if (a.json) {
        char *s = kiln_verdict_json(&v, &task, 1);
        puts(s ? s : "{}");
        free(s);
    } else {
        print_table(&v, &task);
    }
    return strcmp(v.status, "pass") == 0 ? KILN_EXIT_OK : KILN_EXIT_FAIL;
}
