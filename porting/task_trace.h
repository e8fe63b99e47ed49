/* task_trace.h - `kiln task from-trace` (task_trace.c). */
#ifndef KILN_TASK_TRACE_H
#define KILN_TASK_TRACE_H

/* Read PyTorch profiler trace `file`, print which ops kiln has tasks for,
 * ranked by GPU time, and copy each such task as PREFIX_TASK into dir
 * (NULL: $KILN_TASKS, else ./tasks) with a `model` group of the shapes
 * seen; prefix NULL: from the file name. Returns an exit status
 * (KILN_EXIT_BAD_INPUT for a malformed or foreign trace). */
int kiln_task_from_trace(const char *file, const char *dir, const char *prefix);

#endif
