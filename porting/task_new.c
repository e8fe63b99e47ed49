/* task_new.c - `kiln task new NAME --from TASK [--dir DIR]`: a task of one's
 * own, copied from an existing one.
 *
 * The copy gets a name of its own (so its runs, branches, best tags and
 * lessons never mix with the original's) but keeps the original's C
 * function ("function" in task.json), so every kernel written for the
 * original still verifies against it. Files at the top of the task
 * directory are copied; a path field that names anything else (the
 * built-in tasks' baselines under kernels/) is rewritten to the absolute
 * path it resolved to, so the copy works wherever it lives. */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kiln_exit.h"
#include "fileutil.h"
#include "paths.h"
#include "task.h"
#include "task_new.h"

#define TASK_FILE_LIMIT (1 << 20)

/* Where the copy goes: DIR/NAME, else $KILN_TASKS/NAME, else ./tasks/NAME. */
static void destination(const char *name, const char *dir, char *out, size_t len)
{
    const char *env = getenv("KILN_TASKS");
    const char *parent = dir && *dir ? dir : env && *env ? env : "tasks";
    snprintf(out, len, "%s/%s", parent, name);
}

/* The directory of a task already named `name` (in $KILN_TASKS or the
 * built-in tasks), or NULL: a second task of that name would share its
 * branches, tags and lessons. */
static const char *taken(const char *name, char *buf, size_t len)
{
    struct stat st;
    const char *env = getenv("KILN_TASKS");
    if (env && *env) {
        snprintf(buf, len, "%s/%s", env, name);
        if (stat(buf, &st) == 0)
            return buf;
    }
    snprintf(buf, len, "%s/%s", KILN_TASKS_DIR, name);
    return stat(buf, &st) == 0 ? buf : NULL;
}

/* Copy the regular files at the top of src into dst (task.json is written
 * afterwards, edited). */
static int copy_files(const char *src, const char *dst, kiln_error *err)
{
    DIR *d = opendir(src);
    if (!d)
        return kiln_fail(err, "%s: %s", src, strerror(errno));
    struct dirent *e;
    int rc = 0;
    while (rc == 0 && (e = readdir(d)) != NULL) {
        char from[PATH_MAX + 300], to[PATH_MAX + 300];
        struct stat st;
        snprintf(from, sizeof from, "%s/%s", src, e->d_name);
        if (e->d_name[0] == '.' || strcmp(e->d_name, "task.json") == 0 ||
            stat(from, &st) != 0 || !S_ISREG(st.st_mode))
            continue;
        snprintf(to, sizeof to, "%s/%s", dst, e->d_name);
        char *buf;
        size_t n;
        int r = kiln_read_file(from, TASK_FILE_LIMIT, &buf, &n, err);
        if (r == 1)
            kiln_fail(err, "%s: larger than 1 MiB", from);
        rc = r == 0 ? kiln_write_bytes(to, buf, n, err) : -1;
        free(buf);
    }
    closedir(d);
    return rc;
}

/* A path field's value, kept when it names a file copied with the task (at
 * the top of its directory), else the absolute path the loader resolved. */
static void rewrite_path(cJSON *obj, const char *key, const char *resolved)
{
    cJSON *it = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!cJSON_IsString(it) || !resolved[0] || strcmp(it->valuestring, KILN_BUILTIN_CUBLAS) == 0)
        return;
    if (it->valuestring[0] != '/' && !strchr(it->valuestring, '/'))
        return;
    cJSON_SetValuestring(it, resolved);
}

static void rewrite_paths(cJSON *root, const kiln_task *t)
{
    cJSON *ref = cJSON_GetObjectItemCaseSensitive(root, "reference");
    cJSON *base = cJSON_GetObjectItemCaseSensitive(root, "baseline");
    cJSON *start = cJSON_GetObjectItemCaseSensitive(root, "starter");
    rewrite_path(ref, "cpu", t->reference_cpu);
    rewrite_path(ref, "cuda", t->reference_cuda);
    rewrite_path(base, "cpu", t->baseline_cpu);
    rewrite_path(base, "cuda", t->baseline_cuda);
    rewrite_path(start, "cuda", t->starter_cuda);
}

/* "name" set to name and "function" to the original's function, right
 * after the name, so that the file reads as before. */
static int rename_task(cJSON *root, const char *name, const char *function)
{
    cJSON_DeleteItemFromObjectCaseSensitive(root, "function");
    cJSON *fn = cJSON_CreateString(function);
    cJSON *nm = cJSON_GetObjectItemCaseSensitive(root, "name");
    if (!fn || !cJSON_IsString(nm) || !cJSON_SetValuestring(nm, name)) {
        cJSON_Delete(fn);
        return -1;
    }
    fn->string = strdup("function");
    if (!fn->string) {
        cJSON_Delete(fn);
        return -1;
    }
    fn->next = nm->next;   /* linked in after "name" */
    fn->prev = nm;
    if (nm->next)
        nm->next->prev = fn;
    else
        root->child->prev = fn;   /* cJSON keeps the last item in child->prev */
    nm->next = fn;
    return 0;
}

/* The edited task.json of t, written to dst/task.json. */
static int write_task_json(const kiln_task *t, const char *name, const char *dst, kiln_error *err)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/task.json", t->dir);
    char *text;
    if (kiln_read_file(path, TASK_FILE_LIMIT, &text, NULL, err) != 0)
        return -1;
    cJSON *root = cJSON_Parse(text);
    free(text);
    if (!root || rename_task(root, name, t->function) < 0) {
        cJSON_Delete(root);
        return kiln_fail(err, "%s: cannot be rewritten", path);
    }
    rewrite_paths(root, t);
    char *out = cJSON_Print(root);
    cJSON_Delete(root);
    if (!out)
        return kiln_fail(err, "out of memory");
    size_t n = strlen(out);
    char *nl = realloc(out, n + 2);   /* a trailing newline, as the built-in files have */
    if (!nl) {
        free(out);
        return kiln_fail(err, "out of memory");
    }
    memcpy(nl + n, "\n", 2);
    snprintf(path, sizeof path, "%s/task.json", dst);
    int rc = kiln_write_text(path, nl, err);
    free(nl);
    return rc;
}

/* Undo a copy that failed half way: the files written, then the directory. */
static void remove_copy(const char *dst)
{
    DIR *d = opendir(dst);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            char p[PATH_MAX + 300];
            snprintf(p, sizeof p, "%s/%s", dst, e->d_name);
            if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
                unlink(p);
        }
        closedir(d);
    }
    rmdir(dst);
}

/* The copy itself, once the name and destination are known to be free;
 * then the copy is loaded back, so it is known to work. */
static int copy_task(const kiln_task *t, const char *name, const char *dst, kiln_error *err)
{
    char parent[PATH_MAX];
    snprintf(parent, sizeof parent, "%s", dst);
    char *slash = strrchr(parent, '/');
    if (slash && slash != parent) {
        *slash = '\0';
        if (kiln_mkdirs(parent, err) < 0)
            return -1;
    }
    if (mkdir(dst, 0777) != 0)
        return kiln_fail(err, "%s: %s", dst, strerror(errno));
    kiln_task *back = malloc(sizeof *back);
    int rc = !back ? kiln_fail(err, "out of memory")
           : copy_files(t->dir, dst, err) < 0 || write_task_json(t, name, dst, err) < 0 ||
             kiln_task_load(dst, back, err) < 0 ? -1 : 0;
    free(back);
    if (rc < 0)
        remove_copy(dst);
    return rc;
}

int kiln_task_new(const char *name, const char *from, const char *dir)
{
    char dst[PATH_MAX], other[PATH_MAX];
    if (!kiln_task_name_ok(name)) {
        fprintf(stderr, "kiln task new: '%s' is not a task name (letters, digits and _, not "
                "starting with a digit, at most %d characters)\n", name, KILN_NAME_MAX - 1);
        return KILN_EXIT_BAD_INPUT;
    }
    destination(name, dir, dst, sizeof dst);
    struct stat st;
    if (stat(dst, &st) == 0) {
        fprintf(stderr, "kiln task new: %s already exists; pick another name or --dir\n", dst);
        return KILN_EXIT_BAD_INPUT;
    }
    if (taken(name, other, sizeof other)) {
        fprintf(stderr, "kiln task new: a task named '%s' already exists (%s); a copy needs a "
                "name of its own\n", name, other);
        return KILN_EXIT_BAD_INPUT;
    }
    kiln_task *t = malloc(sizeof *t);   /* large: not on the stack */
    kiln_error err = {0};
    if (!t) {
        fprintf(stderr, "kiln task new: out of memory\n");
        return KILN_EXIT_INTERNAL;
    }
    int rc = KILN_EXIT_OK;
    if (kiln_task_find(from, t, &err) < 0) {
        fprintf(stderr, "kiln task new: --from %s: %s\n", from, err.msg);
        rc = KILN_EXIT_BAD_INPUT;
    } else if (copy_task(t, name, dst, &err) < 0) {
        fprintf(stderr, "kiln task new: %s\n", err.msg);
        rc = KILN_EXIT_INTERNAL;
    } else {
        printf("task %s: copied from %s to %s (its C function is still %s)\n", name, t->name, dst,
               t->function);
    }
    free(t);
    return rc;
}
