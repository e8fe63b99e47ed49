/* task_describe.h - a task as a candidate's author sees it (see
 * task_describe.c). */
#ifndef KILN_TASK_DESCRIBE_H
#define KILN_TASK_DESCRIBE_H

#include <stdio.h>

#include "dtype.h"
#include "task.h"

/* The CPU backend's view: the exact C signature, args, groups, budget. */
void kiln_task_describe(FILE *out, const kiln_task *t, kiln_dtype dt);
/* The CUDA backend's: kernel args, the manifest language, knobs, the
 * starter's manifest, groups, budget. */
void kiln_task_describe_cuda(FILE *out, const kiln_task *t, kiln_dtype dt);

#endif
