/* cmd_task.c - `kiln task show|list|new`: a task as an agent may see it
 * (hidden shapes, ranges and the reference never appear here), and a copy
 * of one under a name of one's own (task_new.c). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "fileutil.h"
#include "cli.h"
#include "task_describe.h"
#include "task.h"
#include "manifest.h"
#include "task_new.h"
#include "task_trace.h"

static const char usage[] =
    "usage: kiln task show NAME|DIR [--backend cpu|cuda] [--dtype T]\n"
    "       kiln task list [--json]\n"
    "       kiln task new NAME --from TASK [--dir DIR]\n"
    "       kiln task from-trace TRACE.json [-o DIR] [--prefix NAME]\n"
    "\n"
    "show prints the task's description, what a candidate must provide (for the\n"
    "CPU backend, the default, the exact C signature; for CUDA, the kernel\n"
    "argument types, the launch manifest and knob syntax, and the starter's\n"
    "manifest), the argument list and the visible shapes of each group of that\n"
    "backend (a task may give CUDA groups of its own, sized for a GPU). Tasks are\n"
    "looked up in $KILN_TASKS, then in the built-in tasks directory.\n"
    "\n"
    "list prints each task's name and description; with --json one JSON object a\n"
    "line: name, description, dir, cpu_dtypes and cuda_dtypes (lists, empty for a\n"
    "backend the task does not have).\n"
    "\n"
    "new copies task TASK to DIR/NAME (without --dir: $KILN_TASKS/NAME when\n"
    "KILN_TASKS is set, else ./tasks/NAME) with the name NAME, so its runs,\n"
    "branches, best tags and lessons are its own, and task.json's \"function\"\n"
    "kept as TASK's C function, so every kernel of TASK verifies against it.\n"
    "Paths to files outside TASK's directory become absolute. Set KILN_TASKS\n"
    "to the parent directory to use the copy by name.\n"
    "\n"
    "from-trace reads a PyTorch profiler trace (torch.profiler with\n"
    "record_shapes=True, export_chrome_trace), prints the ops kiln has tasks for\n"
    "(rmsnorm, add_rmsnorm, layernorm, softmax, gemm, cross_entropy) and those it\n"
    "has none for, ranked by their kernels' GPU time (the CPU ops' time when the\n"
    "trace has no kernels), and copies each task found as PREFIX_TASK into DIR\n"
    "(default as for new; PREFIX defaults to the trace's file name) with a group\n"
    "`model` of the shapes seen and hidden shapes around them.\n"
    "\n"
    "Exit status: 0 ok, 2 bad input (no such task, a malformed task; for new, a\n"
    "bad or taken name or an existing destination; for from-trace, a malformed\n"
    "or foreign trace).\n";

static int describe(const kiln_task *t, int cuda, const char *dtype)
{
    int n = cuda ? t->ncuda_dtypes : t->ncpu_dtypes;
    if (n == 0) {
        fprintf(stderr, "kiln task show: task %s has no %s backend\n", t->name, cuda ? "CUDA" : "CPU");
        return KILN_EXIT_BAD_INPUT;
    }
    kiln_dtype dt = dtype ? kiln_dtype_parse(dtype) : cuda ? t->cuda_dtypes[0] : t->cpu_dtypes[0];
    if (!kiln_task_supports_backend(t, cuda ? "cuda" : "cpu", dt)) {
        fprintf(stderr, "kiln task show: task %s has no %s variant for dtype %s\n", t->name,
                cuda ? "CUDA" : "CPU", dtype ? dtype : "?");
        return KILN_EXIT_BAD_INPUT;
    }
    if (cuda)
        kiln_task_describe_cuda(stdout, t, dt);
    else
        kiln_task_describe(stdout, t, dt);
    return KILN_EXIT_OK;
}

static int show(const char *name, const char *backend, const char *dtype)
{
    kiln_error err = {0};
    int cuda = backend && strcmp(backend, "cuda") == 0;
    if (backend && !cuda && strcmp(backend, "cpu") != 0) {
        fprintf(stderr, "kiln task show: unknown backend '%s' (cpu, cuda)\n", backend);
        return KILN_EXIT_BAD_INPUT;
    }
    kiln_task *t = malloc(sizeof *t);   /* large: not on the stack */
    if (!t) {
        fprintf(stderr, "kiln task show: out of memory\n");
        return KILN_EXIT_INTERNAL;
    }
    int rc;
    if (kiln_task_find(name, t, &err) < 0) {
        fprintf(stderr, "kiln task show: %s\n", err.msg);
        rc = KILN_EXIT_BAD_INPUT;
    } else {
        rc = describe(t, cuda, dtype);
    }
    free(t);
    return rc;
}

static cJSON *dtypes_json(const kiln_dtype *dt, int n)
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < n; i++)
        cJSON_AddItemToArray(a, cJSON_CreateString(kiln_dtype_name(dt[i])));
    return a;
}

/* A task in `task list --json`: what the text line says, and the backends. */
static cJSON *task_json(const kiln_task *t)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", t->name);
    cJSON_AddStringToObject(o, "description", t->description);
    cJSON_AddStringToObject(o, "dir", t->dir);
    cJSON_AddItemToObject(o, "cpu_dtypes", dtypes_json(t->cpu_dtypes, t->ncpu_dtypes));
    cJSON_AddItemToObject(o, "cuda_dtypes", dtypes_json(t->cuda_dtypes, t->ncuda_dtypes));
    return o;
}

static int list(int json)
{
    int rc = KILN_EXIT_OK;
    const char *dir = getenv("KILN_TASKS");
    if (!dir || !*dir)
        dir = KILN_TASKS_DIR;
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "kiln task list: cannot open %s\n", dir);
        return KILN_EXIT_BAD_INPUT;
    }
    kiln_task *t = malloc(sizeof *t);   /* large: not on the stack */
    if (!t) {
        closedir(d);
        fprintf(stderr, "kiln task list: out of memory\n");
        return KILN_EXIT_INTERNAL;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char path[4096];
        kiln_error err;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (kiln_task_load(path, t, &err) < 0)
            continue;
        if (!json)
            printf("%-12s %.100s\n", t->name, t->description);
        else if (kiln_print_json("task list", task_json(t)) < 0)
            rc = KILN_EXIT_INTERNAL;
    }
    free(t);
    closedir(d);
    return rc;
}

/* `kiln task from-trace TRACE.json [-o DIR] [--prefix NAME]` */
static int cmd_from_trace(int argc, char **argv)
{
    const char *file = NULL, *dir = NULL, *prefix = NULL;
    for (int i = 2; i < argc; i++) {
        int missing = 0;
        const char *o = kiln_flag_value(argc, argv, &i, "-o", &missing);
        const char *p = o || missing ? NULL : kiln_flag_value(argc, argv, &i, "--prefix", &missing);
        if (kiln_is_help(argv[i])) {
            fputs(usage, stdout);
            return KILN_EXIT_OK;
        } else if (o) {
            dir = o;
        } else if (p) {
            prefix = p;
        } else if (missing || argv[i][0] == '-' || file) {
            kiln_unexpected("task from-trace", argv[i], usage);
            return KILN_EXIT_BAD_INPUT;
        } else {
            file = argv[i];
        }
    }
    if (!file) {
        fprintf(stderr, "kiln task from-trace: TRACE.json missing\n%s", usage);
        return KILN_EXIT_BAD_INPUT;
    }
    return kiln_task_from_trace(file, dir, prefix);
}

/* `kiln task new NAME --from TASK [--dir DIR]` */
static int cmd_new(int argc, char **argv)
{
    const char *name = NULL, *from = NULL, *dir = NULL;
    for (int i = 2; i < argc; i++) {
        int missing = 0;
        const char *f = kiln_flag_value(argc, argv, &i, "--from", &missing);
        const char *d = f || missing ? NULL : kiln_flag_value(argc, argv, &i, "--dir", &missing);
        if (kiln_is_help(argv[i])) {
            fputs(usage, stdout);
            return KILN_EXIT_OK;
        } else if (f) {
            from = f;
        } else if (d) {
            dir = d;
        } else if (missing || argv[i][0] == '-' || name) {
            kiln_unexpected("task new", argv[i], usage);
            return KILN_EXIT_BAD_INPUT;
        } else {
            name = argv[i];
        }
    }
    if (!name || !from) {
        fprintf(stderr, "kiln task new: %s\n%s", !name ? "NAME missing" : "--from TASK missing", usage);
        return KILN_EXIT_BAD_INPUT;
    }
    return kiln_task_new(name, from, dir);
}

int kiln_cmd_task(int argc, char **argv)
{
    if (argc < 2 || kiln_is_help(argv[1])) {
        fputs(usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? KILN_EXIT_BAD_INPUT : KILN_EXIT_OK;
    }
    if (strcmp(argv[1], "list") == 0) {
        int json = 0;
        for (int i = 2; i < argc; i++) {
            if (kiln_is_help(argv[i])) {
                fputs(usage, stdout);
                return KILN_EXIT_OK;
            }
            if (strcmp(argv[i], "--json") == 0) {
                json = 1;
                continue;
            }
            kiln_unexpected("task list", argv[i], usage);
            return KILN_EXIT_BAD_INPUT;
        }
        return list(json);
    }
    if (strcmp(argv[1], "new") == 0)
        return cmd_new(argc, argv);
    if (strcmp(argv[1], "from-trace") == 0)
        return cmd_from_trace(argc, argv);
    if (strcmp(argv[1], "show") != 0 || argc < 3) {
        fputs(usage, stderr);
        return KILN_EXIT_BAD_INPUT;
    }
    const char *dtype = NULL, *backend = NULL, *name = NULL;
    for (int i = 2; i < argc; i++) {
        int missing = 0;
        const char *v = kiln_flag_value(argc, argv, &i, "--dtype", &missing);
        const char *b = v || missing ? NULL : kiln_flag_value(argc, argv, &i, "--backend", &missing);
        if (kiln_is_help(argv[i])) {
            fputs(usage, stdout);
            return KILN_EXIT_OK;
        } else if (v) {
            dtype = v;
        } else if (b) {
            backend = b;
        } else if (missing || argv[i][0] == '-' || name) {
            kiln_unexpected("task show", argv[i], usage);
            return KILN_EXIT_BAD_INPUT;
        } else {
            name = argv[i];
        }
    }
    if (!name) {
        fputs(usage, stderr);
        return KILN_EXIT_BAD_INPUT;
    }
    return show(name, backend, dtype);
}
