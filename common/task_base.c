/* task_base.c - the task helpers every loader module shares (task.c,
 * task_int.c): a field's error, a dim's index and a shape's text. Apart from
 * task.c so that its modules call down to these and task.c calls them, with
 * no cycle between the loader's files. */
#include <stdio.h>
#include <string.h>

#include "task_load.h"

int kiln_task_bad(kiln_task_ctx *c, const char *path, const char *fmt, const char *detail)
{
    char what[640];
    snprintf(what, sizeof what, fmt, detail ? detail : "");
    return kiln_fail(c->err, "%s: field '%s': %s", c->file, path, what);
}

int kiln_task_dim(const kiln_task *t, const char *name)
{
    for (int i = 0; i < t->ndims; i++)
        if (strcmp(t->dims[i], name) == 0)
            return i;
    return -1;
}

void kiln_shape_format(const kiln_task *t, const kiln_shape *s, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < t->ndims && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%s=%lld", i ? " " : "", t->dims[i],
                                 (long long)s->d[i]);
}
