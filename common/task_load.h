/* task_load.h - what the task loader's modules share (task.c, task_int.c):
 * the file being loaded and the error that names a field in it. Not part of
 * task.h: nothing outside the loader reports a field of a task file. */
#ifndef KILN_TASK_LOAD_H
#define KILN_TASK_LOAD_H

#include <cjson/cJSON.h>

#include "task.h"

typedef struct kiln_task_ctx {
    const char *file;             /* the file whose fields errors name */
    kiln_error *err;
} kiln_task_ctx;

/* "FILE: field 'PATH': " + fmt with detail (fmt has one %s). Returns -1. */
int kiln_task_bad(kiln_task_ctx *c, const char *path, const char *fmt, const char *detail);

/* An integer input's init {"dist": "integers", "low", "high", "ignore"}
 * (init at path ip), into arg. */
int kiln_task_load_integers(kiln_task_ctx *c, const cJSON *init, const char *ip,
                            const kiln_task *t, kiln_arg *arg);

/* A stability variant of an integer input (at path p): "value",
 * "ignore_share" and/or "pattern": "extremes"; var->pattern is parsed. */
int kiln_task_load_int_variant(kiln_task_ctx *c, const cJSON *v, const char *p,
                               const kiln_task *t, kiln_variant *var);

/* Once hidden.json is in: every integer input's bounds, ignore value and
 * variant values, at every shape the task names (and the corners of its
 * random ranges), are integers of the input's dtype in order. */
int kiln_task_check_integers(kiln_task_ctx *c, const kiln_task *t);

#endif
