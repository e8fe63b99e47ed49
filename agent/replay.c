/* replay.c - listing a replay directory and naming each file's hypothesis
 * (see replay.h).  The order is strcmp order of the names, not readdir's,
 * so a replay run is the same on every filesystem. */
#include "replay.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct list {
    char **p;
    int n, cap;
} list;

static int has_ext(const char *name, const char *ext)
{
    size_t n = strlen(name), e = strlen(ext);
    return n > e && strcmp(name + n - e, ext) == 0;
}

static int push(list *l, char *s)
{
    if (l->n == l->cap) {
        int cap = l->cap ? l->cap * 2 : 16;
        char **np = realloc(l->p, (size_t)cap * sizeof *np);
        if (!np)
            return -1;
        l->p = np;
        l->cap = cap;
    }
    l->p[l->n++] = s;
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* "dir/name" without a doubled slash; NULL when out of memory. */
static char *join(const char *dir, const char *name)
{
    size_t dl = strlen(dir);
    int slash = dl > 0 && dir[dl - 1] == '/';
    char *p = malloc(dl + strlen(name) + 2);
    if (p)
        sprintf(p, "%s%s%s", dir, slash ? "" : "/", name);
    return p;
}

/* Add dir/name if it is a regular file (following links, like open would). */
static int consider(list *l, const char *dir, const char *name, kiln_error *err)
{
    char *path = join(dir, name);
    struct stat st;
    if (!path)
        return kiln_fail(err, "out of memory listing %s", dir);
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
        free(path);
        return 0;
    }
    if (push(l, path) < 0) {
        free(path);
        return kiln_fail(err, "out of memory listing %s", dir);
    }
    return 0;
}

int kiln_replay_list(const char *dir, const char *lang, char ***paths, int *n, kiln_error *err)
{
    *paths = NULL;
    *n = 0;
    const char *ext = !lang ? NULL : strcmp(lang, "c") == 0 ? ".c"
                                   : strcmp(lang, "cuda") == 0 ? ".cu" : NULL;
    if (!ext)
        return kiln_fail(err, "replay: unknown language '%s' (want c or cuda)", lang ? lang : "");
    DIR *d = opendir(dir);
    if (!d)
        return kiln_fail(err, "replay: cannot open directory %s: %s", dir, strerror(errno));
    list l = {0};
    struct dirent *e;
    int rc = 0;
    while (rc == 0 && (e = readdir(d)) != NULL)
        if (e->d_name[0] != '.' && has_ext(e->d_name, ext))
            rc = consider(&l, dir, e->d_name, err);
    closedir(d);
    if (rc < 0) {
        kiln_replay_free(l.p, l.n);
        return -1;
    }
    if (l.n > 1)
        qsort(l.p, (size_t)l.n, sizeof *l.p, cmp_str);
    *paths = l.p;
    *n = l.n;
    return 0;
}

void kiln_replay_free(char **paths, int n)
{
    if (!paths)
        return;
    for (int i = 0; i < n; i++)
        free(paths[i]);
    free(paths);
}

void kiln_replay_hypothesis(const char *source, const char *path, char *buf, size_t len)
{
    if (!buf || len == 0)
        return;
    const char *p = source ? strstr(source, "HYPOTHESIS:") : NULL;
    if (p) {
        p += strlen("HYPOTHESIS:");
        size_t e = strcspn(p, "\r\n");
        while (e > 0 && isspace((unsigned char)p[e - 1]))
            e--;
        if (e >= 2 && p[e - 2] == '*' && p[e - 1] == '/')   /* a one-line block comment */
            e -= 2;
        while (e > 0 && isspace((unsigned char)p[e - 1]))
            e--;
        while (e > 0 && isspace((unsigned char)*p))
            p++, e--;
        if (e > 0) {
            snprintf(buf, len, "%.*s", (int)(e > 4096 ? 4096 : e), p);
            return;
        }
    }
    const char *base = path ? strrchr(path, '/') : NULL;
    base = base ? base + 1 : path ? path : "?";
    snprintf(buf, len, "replay of %s", base);
}
