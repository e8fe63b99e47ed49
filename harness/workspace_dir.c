/* workspace_dir.c - is a directory a kiln workspace, and which files in one
 * are kiln's (see workspace_dir.h). */
#include "workspace_dir.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fileutil.h"

/* What kiln itself writes in .kiln/: the run database (with SQLite's
 * journals), the search's lock and the marker. */
static const char *const kiln_files[] = {"kiln.db", "kiln.db-wal", "kiln.db-shm",
                                         "kiln.db-journal", "lock", "workspace"};

static int is_kiln_file(const char *name)
{
    for (size_t i = 0; i < sizeof kiln_files / sizeof *kiln_files; i++)
        if (strcmp(name, kiln_files[i]) == 0)
            return 1;
    return 0;
}

int kiln_ws_kiln_dir_ours(const char *dir)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/.kiln", dir);
    DIR *d = opendir(path);
    if (!d)
        return errno == ENOENT;
    int ours = 1;
    struct dirent *e;
    while (ours && (e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            ours = is_kiln_file(e->d_name);
    closedir(d);
    return ours;
}

int kiln_ws_dir_only_git(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int only = 1, git = 0;
    struct dirent *e;
    while (only && (e = readdir(d)) != NULL) {
        const char *n = e->d_name;
        if (strcmp(n, ".") == 0 || strcmp(n, "..") == 0)
            continue;
        git |= strcmp(n, ".git") == 0;
        only = strcmp(n, ".git") == 0 || (strcmp(n, ".kiln") == 0 && kiln_ws_kiln_dir_ours(dir));
    }
    closedir(d);
    return only && git;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* "N entries: a/, b, c, ..." from the sorted names (directories marked). */
static void describe(const char *dir, char **names, int n, char *what, size_t len)
{
    if (n > 0)   /* names is NULL for an empty directory */
        qsort(names, (size_t)n, sizeof *names, by_name);
    size_t w = (size_t)snprintf(what, len, "%d entr%s:", n, n == 1 ? "y" : "ies");
    for (int i = 0; i < n && i < 8 && w < len; i++) {
        char path[4200];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        int isdir = lstat(path, &st) == 0 && S_ISDIR(st.st_mode);
        w += (size_t)snprintf(what + w, len - w, "%s %.200s%s", i ? "," : "", names[i],
                              isdir ? "/" : "");
    }
    if (n > 8 && w < len)
        snprintf(what + w, len - w, ", ...");
}

int kiln_ws_dir_classify(const char *dir, kiln_ws_dir_kind *kind, char *what, size_t len,
                         kiln_error *err)
{
    DIR *d = opendir(dir);
    if (!d)
        return kiln_fail(err, "workspace %s: %s", dir, strerror(errno));
    char **names = NULL;
    int n = 0, cap = 0, has_kiln = 0, rc = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        has_kiln |= strcmp(e->d_name, ".kiln") == 0;
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            char **p = realloc(names, (size_t)cap * sizeof *p);
            if (!p) {
                rc = kiln_fail(err, "out of memory");
                break;
            }
            names = p;
        }
        if (!(names[n] = strdup(e->d_name))) {
            rc = kiln_fail(err, "out of memory");
            break;
        }
        n++;
    }
    closedir(d);
    if (rc == 0) {
        char marker[4200];
        struct stat st;
        snprintf(marker, sizeof marker, "%s/" KILN_WS_MARKER, dir);
        if (lstat(marker, &st) == 0 && S_ISREG(st.st_mode))
            *kind = KILN_WS_DIR_MARKED;
        else if (n == 0 || (n == 1 && has_kiln && kiln_ws_kiln_dir_ours(dir)))
            *kind = KILN_WS_DIR_EMPTY;
        else
            *kind = KILN_WS_DIR_OTHER;
        describe(dir, names, n, what, len);
    }
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return rc;
}

/* One path component: not empty, no slash, not "." or "..". */
static int component(const char *s, size_t n)
{
    return n > 0 && memchr(s, '/', n) == NULL && !(n == 1 && s[0] == '.') &&
           !(n == 2 && s[0] == '.' && s[1] == '.');
}

int kiln_ws_own_path(const char *rel)
{
    if (strcmp(rel, "README.md") == 0 || strcmp(rel, ".gitignore") == 0)
        return 1;
    const char *slash = strchr(rel, '/');
    if (!slash || !component(rel, (size_t)(slash - rel)))
        return 0;
    return strcmp(slash, "/cpu/kernel.c") == 0 || strcmp(slash, "/cuda/kernel.cu") == 0;
}

int kiln_ws_mark(const char *dir, kiln_error *err)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/" KILN_WS_MARKER, dir);
    return kiln_write_text(path,
                           "This directory is a kiln workspace (docs/search.md, \"Workspace\").\n"
                           "kiln writes here only README.md, .gitignore, TASK/cpu/kernel.c,\n"
                           "TASK/cuda/kernel.cu and .kiln/; it never touches another file.\n",
                           err);
}
