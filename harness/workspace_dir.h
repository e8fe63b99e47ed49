/* workspace_dir.h - which directories kiln may use as a workspace and which
 * files in one are kiln's: the plain-file half of the workspace's safety
 * rules (docs/search.md, "Workspace"); workspace.c holds the git half.
 *
 * A workspace is known by its marker, .kiln/workspace. kiln makes one only
 * in a directory that is new, empty, or holds nothing but kiln's own .kiln/
 * files; a git repository without the marker is used only when its history
 * is kiln's (a workspace of an earlier kiln: workspace.c checks), and then
 * gets the marker. Anything else is refused, never written to. */
#ifndef KILN_WORKSPACE_DIR_H
#define KILN_WORKSPACE_DIR_H

#include <stddef.h>

#include "kiln_error.h"

#define KILN_WS_MARKER ".kiln/workspace"

typedef enum {
    KILN_WS_DIR_EMPTY,    /* nothing in it, or only kiln's .kiln/ files */
    KILN_WS_DIR_MARKED,   /* it has .kiln/workspace */
    KILN_WS_DIR_OTHER     /* anything else: a workspace only if git says so */
} kiln_ws_dir_kind;

/* What dir is; what gets a short list of what it holds, for a refusal
 * ("7 entries: .git/, README.md, src/, ..."). -1 with err when it cannot be
 * read. */
int kiln_ws_dir_classify(const char *dir, kiln_ws_dir_kind *kind, char *what, size_t len,
                         kiln_error *err);
/* 1 when dir/.kiln is missing or holds only files kiln writes there (the
 * run database and its journals, the lock, the marker). */
int kiln_ws_kiln_dir_ours(const char *dir);
/* 1 when dir holds .git and nothing else but kiln's .kiln/ files. */
int kiln_ws_dir_only_git(const char *dir);
/* 1 when a path (relative to the workspace) is one kiln writes in its
 * working tree: README.md, .gitignore, TASK/cpu/kernel.c, TASK/cuda/kernel.cu. */
int kiln_ws_own_path(const char *rel);
/* Write the marker (dir/.kiln exists). */
int kiln_ws_mark(const char *dir, kiln_error *err);

#endif
