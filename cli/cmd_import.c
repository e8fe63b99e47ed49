/* cmd_import.c - `kiln import FILE.cu --task T`: a CUDA file with host
 * launch code into a kiln CUDA candidate (import.h does the work). Prints
 * what it mapped and the manifest it proposes, what it could not
 * translate as "FILE:LINE: cannot translate ...: reason" lines, and writes
 * the candidate only when everything translated (or with --force). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "fileutil.h"
#include "import.h"
#include "task.h"

#define SOURCE_LIMIT (4u << 20)

static const char usage[] =
    "usage: kiln import FILE.cu --task NAME|DIR [options]\n"
    "\n"
    "Read a CUDA file whose host code launches its kernels (kernel<<<grid, block,\n"
    "smem, stream>>>(args) in a host function, raw pointers or torch::Tensor,\n"
    "inside AT_/VLLM_DISPATCH_* lambdas too), propose a launch manifest for the\n"
    "task, and write a kiln CUDA candidate: the kernels unchanged (extern \"C\"\n"
    "added; a template instance copied out as an extern \"C\" kernel or named for\n"
    "NVRTC), the project's headers inlined, host code removed, the manifest\n"
    "appended. Prints how each launch was mapped. What it\n"
    "cannot translate is told as 'FILE:LINE: cannot translate ...: reason', and\n"
    "then nothing is written (exit 2) unless --force.\n"
    "\n"
    "options:\n"
    "  --task NAME|DIR     the task (required; it must have a CUDA backend)\n"
    "  -o OUT              where to write (default FILE.kiln.cu; '-' for stdout, the\n"
    "                      report then going to stderr)\n"
    "  --dry-run           print the mapping and the manifest, write nothing\n"
    "  --function NAME     the host function to read (default: the only one that\n"
    "                      launches kernels)\n"
    "  --map PARAM=TARGET  what the host function's PARAM stands for; repeatable:\n"
    "                        ARG            the task's arg (a buffer, dim or scalar)\n"
    "                        IN:OUT         a buffer the kernels update in place: the\n"
    "                                       candidate copies input IN into output OUT\n"
    "                                       first and passes OUT\n"
    "                        scratch[:B]    an output the task lacks: a scratch buffer\n"
    "                                       of B bytes (default: an upper bound)\n"
    "                        N              a constant (1, 1e-5)\n"
    "                        NAME[:V,...]   a knob: the file's, a #define, or a new\n"
    "                                       one (upper-case NAME; values V..., the\n"
    "                                       first its value; default 32..1024, 256)\n"
    "                      Other parameters map by name, then by a name holding the\n"
    "                      arg's (n_rows), then by position among const pointers and\n"
    "                      tensors the kernels read (inputs), pointers and tensors\n"
    "                      they write (outputs), integers (dims), floats (scalars)\n"
    "                      where the counts agree\n"
    "  --include DIR       where the project's own headers (#include \"name.h\") are,\n"
    "                      after the file's directory; repeatable. They are inlined\n"
    "                      into the candidate, their host code cut\n"
    "  --force             write the candidate even so, its manifest holding a \"TODO\"\n"
    "                      list and \"TODO: ...\" fields that kiln's check refuses\n"
    "                      until they are fixed by hand\n"
    "\n"
    "A written candidate has passed kiln's manifest check and resolves at the\n"
    "visible shapes of the task's default CUDA group (the static stage of kiln\n"
    "verify). docs/cuda.md, 'Importing a kernel', says what import understands.\n"
    "\n"
    "Exit status: 0 written (or, with --dry-run, translatable), 1 written with\n"
    "--force and TODOs left, 2 bad input or something not translated, 3 internal\n"
    "error.\n";

typedef struct args {
    const char *file, *task, *out;
    char dir[4096];                      /* the file's directory */
    int dry_run;
    kiln_import_opts o;
} args;

static int is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int bad(const char *what, const char *arg)
{
    fprintf(stderr, "kiln import: %s%s%s\n", what, arg ? " " : "", arg ? arg : "");
    return -1;
}

/* One flag at argv[*i]; 1 when it was one, 0 when not, -1 on error. */
static int flag(int argc, char **argv, int *i, args *a)
{
    int miss = 0;
    const char *v;
    if ((v = kiln_flag_value(argc, argv, i, "--task", &miss)))
        a->task = v;
    else if (!miss && (v = kiln_flag_value(argc, argv, i, "-o", &miss)))
        a->out = v;
    else if (!miss && (v = kiln_flag_value(argc, argv, i, "--function", &miss)))
        a->o.function = v;
    else if (!miss && (v = kiln_flag_value(argc, argv, i, "--map", &miss))) {
        if (a->o.nmaps == KILN_IMPORT_MAX_MAPS)
            return bad("too many --map flags", NULL);
        a->o.maps[a->o.nmaps++] = v;
    } else if (!miss && (v = kiln_flag_value(argc, argv, i, "--include", &miss))) {
        if (a->o.nincludes == KILN_IMPORT_MAX_INCLUDES)
            return bad("too many --include flags", NULL);
        if (!is_dir(v))
            return bad("--include: not a directory:", v);
        a->o.includes[a->o.nincludes++] = v;
    } else if (miss)
        return bad("missing value for", argv[*i]);
    else if (strcmp(argv[*i], "--dry-run") == 0)
        a->dry_run = 1;
    else if (strcmp(argv[*i], "--force") == 0)
        a->o.force = 1;
    else
        return 0;
    return 1;
}

static int parse(int argc, char **argv, args *a)
{
    *a = (args){0};
    for (int i = 1; i < argc; i++) {
        int f = flag(argc, argv, &i, a);
        if (f < 0)
            return -1;
        if (f)
            continue;
        if (kiln_is_help(argv[i])) {
            fputs(usage, stdout);
            exit(KILN_EXIT_OK);
        }
        if (argv[i][0] == '-' || a->file)
            return bad("unexpected argument", argv[i]);
        a->file = argv[i];
    }
    if (!a->file || !a->task)
        return bad(!a->file ? "no FILE given (kiln import FILE.cu --task NAME)"
                            : "--task is required", NULL);
    a->o.file = a->file;
    const char *slash = strrchr(a->file, '/');
    if (!slash)
        snprintf(a->dir, sizeof a->dir, ".");
    else
        snprintf(a->dir, sizeof a->dir, "%.*s", (int)(slash == a->file ? 1 : slash - a->file),
                 a->file);
    a->o.dir = a->dir;
    return 0;
}

/* FILE.cu -> FILE.kiln.cu (anything else: FILE.kiln.cu appended). */
static void default_out(const char *file, char *out, size_t cap)
{
    size_t n = strlen(file);
    if (n > 3 && strcmp(file + n - 3, ".cu") == 0)
        snprintf(out, cap, "%.*s.kiln.cu", (int)(n - 3), file);
    else
        snprintf(out, cap, "%s.kiln.cu", file);
}

static void report(FILE *to, const kiln_import_result *r)
{
    for (int i = 0; i < r->account.n; i++)
        fprintf(to, "%s\n", r->account.v[i]);
    if (r->manifest)
        fprintf(to, "proposed manifest:\n%s", r->manifest);
    for (int i = 0; i < r->problems.n; i++)
        fprintf(stderr, "%s\n", r->problems.v[i]);
}

static int write_candidate(const args *a, const kiln_import_result *r, FILE *rep)
{
    char path[4096];
    kiln_error err;
    if (a->out && strcmp(a->out, "-") == 0) {
        fputs(r->candidate, stdout);
        return 0;
    }
    if (a->out)
        snprintf(path, sizeof path, "%s", a->out);
    else
        default_out(a->file, path, sizeof path);
    if (strcmp(path, a->file) == 0)
        return bad("will not overwrite the source with the candidate:", path);
    if (kiln_write_text(path, r->candidate, &err) < 0)
        return bad(err.msg, NULL);
    fprintf(rep, "wrote %s; next: kiln verify %s --task %s%s%s\n", path, path, a->task,
            r->dtype_only[0] ? " --dtype " : "", r->dtype_only);
    return 0;
}

static int finish(const args *a, const kiln_import_result *r)
{
    FILE *rep = a->out && strcmp(a->out, "-") == 0 ? stderr : stdout;
    report(rep, r);
    int n = r->problems.n;
    if (a->dry_run || (n && !a->o.force)) {
        if (n)
            fprintf(stderr, "kiln import: %d thing%s not translated; nothing written%s\n", n,
                    n == 1 ? "" : "s", a->dry_run ? " (dry run)" : " (--force writes a "
                    "candidate with TODOs to fix by hand)");
        return n ? KILN_EXIT_BAD_INPUT : KILN_EXIT_OK;
    }
    if (write_candidate(a, r, rep) < 0)
        return KILN_EXIT_BAD_INPUT;
    if (n)
        fprintf(stderr, "kiln import: written with %d TODO%s left in its manifest; kiln's "
                "check refuses it until they are resolved by hand\n", n, n == 1 ? "" : "s");
    return n ? KILN_EXIT_FAIL : KILN_EXIT_OK;
}

int kiln_cmd_import(int argc, char **argv)
{
    args a;
    kiln_error err;
    char *src = NULL;
    size_t len = 0;
    if (parse(argc, argv, &a) < 0)
        return KILN_EXIT_BAD_INPUT;
    int rd = kiln_read_file(a.file, SOURCE_LIMIT, &src, &len, &err);
    if (rd != 0) {
        free(src);
        return bad(rd > 0 ? "the file is larger than 4 MiB:" : err.msg, rd > 0 ? a.file : NULL),
               KILN_EXIT_BAD_INPUT;
    }
    kiln_task *t = malloc(sizeof *t);   /* large: not on the stack */
    kiln_import_result r;
    int rc = KILN_EXIT_BAD_INPUT;
    if (!t)
        rc = (bad("out of memory", NULL), KILN_EXIT_INTERNAL);
    else if (kiln_task_find(a.task, t, &err) < 0)
        bad(err.msg, NULL);
    else if (t->ncuda_dtypes == 0)
        bad("the task has no CUDA backend:", a.task);
    else {
        /* r holds what was found so far even when the import fails */
        if (kiln_import(src, len, t, &a.o, &r, &err) < 0)
            bad(err.msg, NULL);
        else
            rc = finish(&a, &r);
        kiln_import_result_free(&r);
    }
    free(t);
    free(src);
    return rc;
}
