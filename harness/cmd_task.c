/* cmd_task.c - `kiln task show|list`: a task as an agent may see it. Hidden
 * shapes, ranges and the reference never appear here. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "task.h"

static const char usage[] =
    "usage: kiln task show NAME|DIR [--dtype T]\n"
    "       kiln task list\n"
    "\n"
    "show prints the task's description, the exact CPU candidate signature,\n"
    "the argument list and the visible shapes of each group. Tasks are looked up\n"
    "in $KILN_TASKS, then in the built-in tasks directory.\n";

static const char *kind_name(kiln_arg_kind k)
{
    static const char *names[] = {"input", "output", "dim", "scalar"};
    return names[k];
}

static void print_args(FILE *out, const kiln_task *t, kiln_dtype dt)
{
    fprintf(out, "\narguments:\n");
    for (int i = 0; i < t->nargs; i++) {
        const kiln_arg *a = &t->args[i];
        fprintf(out, "  %-8s %-6s %-5s", a->name, kind_name(a->kind),
               kiln_dtype_name(kiln_arg_dtype(a, dt)));
        if (a->rank) {
            fprintf(out, " [");
            for (int d = 0; d < a->rank; d++)
                fprintf(out, "%s%s", d ? ", " : "", t->dims[a->shape[d]]);
            fprintf(out, "]");
        }
        if (a->kind == KILN_ARG_SCALAR)
            fprintf(out, " = %g", a->value);
        fprintf(out, "\n");
    }
}

static void print_groups(FILE *out, const kiln_task *t)
{
    for (int g = 0; g < t->ngroups; g++) {
        const kiln_group *grp = &t->groups[g];
        fprintf(out, "\ngroup %s%s: visible shapes\n", grp->name, g == t->default_group ? " (default)" : "");
        for (int i = 0; i < grp->nvisible; i++) {
            char dims[128];
            kiln_shape_format(t, &grp->visible[i], dims, sizeof dims);
            fprintf(out, "  v%-3d %s\n", i + 1, dims);
        }
        fprintf(out, "  plus hidden shapes (larger and odder in every dim, named h1, h2, ...)\n");
    }
}

void kiln_task_describe(FILE *out, const kiln_task *t, kiln_dtype dt)
{
    char sig[1024];
    kiln_task_cpu_signature(t, dt, sig, sizeof sig);
    fprintf(out, "task %s (dtype %s)\n\n%s\n\ncandidate signature (CPU, C17, one file, may include "
            "\"kiln_cpu.h\"):\n  %s;\n", t->name, kiln_dtype_name(dt), t->description, sig);
    print_args(out, t, dt);
    print_groups(out, t);
    const kiln_tolerance_spec *ts = kiln_task_tolerance(t, dt);
    const char *red = t->reduction_dim >= 0 ? t->dims[t->reduction_dim] : "1";
    fprintf(out, "\ntolerance: %g ULPs of %s + %g * sqrt(%s) + %g * %s, at the reference's magnitude\n",
            ts->ulps, kiln_dtype_name(dt), ts->per_sqrt, red, ts->per_n, red);
    fprintf(out, "cost: bytes = %s; flops = %s\n", t->cost_bytes, t->cost_flops);
}

static int show(const char *name, const char *dtype)
{
    kiln_task t;
    kiln_error err = {{0}};
    if (kiln_task_find(name, &t, &err) < 0) {
        fprintf(stderr, "kiln task show: %s\n", err.msg);
        return KILN_EXIT_BAD_INPUT;
    }
    kiln_dtype dt = dtype ? kiln_dtype_parse(dtype) : t.cpu_dtypes[0];
    if (!kiln_task_supports(&t, dt)) {
        fprintf(stderr, "kiln task show: task %s has no CPU variant for dtype %s\n", t.name,
                dtype ? dtype : "?");
        return KILN_EXIT_BAD_INPUT;
    }
    kiln_task_describe(stdout, &t, dt);
    return KILN_EXIT_OK;
}

static int list(void)
{
    const char *dir = getenv("KILN_TASKS");
    if (!dir || !*dir)
        dir = KILN_TASKS_DIR;
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "kiln task list: cannot open %s\n", dir);
        return KILN_EXIT_BAD_INPUT;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        kiln_task t;
        char path[4096];
        kiln_error err;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (kiln_task_load(path, &t, &err) == 0)
            printf("%-12s %.100s\n", t.name, t.description);
    }
    closedir(d);
    return KILN_EXIT_OK;
}

int kiln_cmd_task(int argc, char **argv)
{
    if (argc < 2 || kiln_is_help(argv[1])) {
        fputs(usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? KILN_EXIT_BAD_INPUT : KILN_EXIT_OK;
    }
    if (strcmp(argv[1], "list") == 0)
        return list();
    if (strcmp(argv[1], "show") != 0 || argc < 3) {
        fputs(usage, stderr);
        return KILN_EXIT_BAD_INPUT;
    }
    const char *dtype = NULL, *name = NULL;
    for (int i = 2; i < argc; i++) {
        int missing = 0;
        const char *v = kiln_flag_value(argc, argv, &i, "--dtype", &missing);
        if (kiln_is_help(argv[i])) {
            fputs(usage, stdout);
            return KILN_EXIT_OK;
        } else if (v) {
            dtype = v;
        } else if (missing || argv[i][0] == '-' || name) {
            fprintf(stderr, "kiln task show: unexpected argument '%s'\n", argv[i]);
            return KILN_EXIT_BAD_INPUT;
        } else {
            name = argv[i];
        }
    }
    if (!name) {
        fputs(usage, stderr);
        return KILN_EXIT_BAD_INPUT;
    }
    return show(name, dtype);
}
