/* task_new.h - `kiln task new` (task_new.c). */
#ifndef KILN_TASK_NEW_H
#define KILN_TASK_NEW_H

/* Copy task `from` (a name, as kiln finds tasks, or a directory) to
 * DIR/NAME (dir NULL: $KILN_TASKS/NAME, else ./tasks/NAME), named `name`,
 * keeping its C function. Prints what it did or why not; returns an exit
 * status (KILN_EXIT_BAD_INPUT for a bad name, a taken name, an existing
 * destination or an unknown task). */
int kiln_task_new(const char *name, const char *from, const char *dir);

#endif
