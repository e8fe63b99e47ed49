/* workspace.h - the search's git repository (libgit2): one branch per run,
 * one commit per candidate, rejected candidates kept under refs/kiln/,
 * verdicts as notes, the best kernel tagged. Plain `git log` and
 * `git notes --ref=kiln show` read everything it writes. Every libgit2
 * call in kiln is in workspace.c (scripts/deps.py checks). */
#ifndef KILN_WORKSPACE_H
#define KILN_WORKSPACE_H

#include <git2.h>
#include <limits.h>

#include "kiln_error.h"

#define KILN_NOTES_REF "refs/notes/kiln"                 /* one line per commit */
#define KILN_VERDICT_NOTES_REF "refs/notes/kiln-verdict"  /* the full verdicts, JSON */
#define KILN_REVERIFY_NOTES_REF "refs/notes/kiln-reverify" /* kiln reverify: a JSON line each */

typedef struct kiln_ws {
    git_repository *repo;
    char dir[PATH_MAX];
    int lock_fd;
} kiln_ws;

/* Open dir as a workspace (docs/search.md, "Workspace"): one with the
 * marker .kiln/workspace, or a repository an earlier kiln made (it gets the
 * marker). With make, a new or empty directory becomes one (a repository
 * with a first commit holding a README and .gitignore). Anything else is
 * refused with err naming the directory and what it holds: kiln never
 * writes into a directory it did not make. Takes .kiln/lock so that two
 * searches cannot share one workspace. */
int kiln_ws_open(kiln_ws *ws, const char *dir, int make, kiln_error *err);
void kiln_ws_close(kiln_ws *ws);
/* -2 with err naming them when the working tree holds files kiln did not
 * write at the paths kiln writes (README.md, .gitignore, TASK/cpu/kernel.c,
 * TASK/cuda/kernel.cu) or staged ones; checkout, reset and clean below make
 * the same check first and refuse (-2) rather than overwrite or delete them. */
int kiln_ws_check(kiln_ws *ws, kiln_error *err);
/* Why .kiln/lock (path) of workspace dir could not be taken, into err:
 * locking 0, creating .kiln/ or opening the lock failed with errno e (a
 * directory kiln cannot write, EACCES, EPERM or EROFS, is bad input, -2,
 * with the way out); locking 1, flock failed (EWOULDBLOCK: another search
 * holds it). Returns -1 or -2. */
int kiln_ws_lock_error(kiln_error *err, const char *dir, const char *path, int locking, int e);
/* Replace the lock file's text (who holds it: "PID RUN"), for `kiln status`. */
int kiln_ws_lock_note(kiln_ws *ws, const char *text);

/* Create refs/heads/<branch> at the first commit (if missing) and check it out. */
int kiln_ws_checkout_branch(kiln_ws *ws, const char *branch, kiln_error *err);
/* Commit content at relpath as a child of parent (hex; NULL: HEAD) without
 * moving any branch. oid gets the new commit. */
int kiln_ws_commit(kiln_ws *ws, const char *parent, const char *relpath, const char *content,
                   const char *message, char oid[41], kiln_error *err);
/* Move the checked-out branch to commit and make the working tree match. */
int kiln_ws_reset_hard(kiln_ws *ws, const char *commit, kiln_error *err);
int kiln_ws_set_ref(kiln_ws *ws, const char *ref, const char *commit, kiln_error *err);
/* A commit's notes: the one-line summary on KILN_NOTES_REF (what
 * `git log --notes=kiln` shows) and the full JSON on KILN_VERDICT_NOTES_REF. */
int kiln_ws_note(kiln_ws *ws, const char *commit, const char *summary, const char *json,
                 kiln_error *err);
int kiln_ws_tag(kiln_ws *ws, const char *tag, const char *commit, kiln_error *err);
/* The commit HEAD (or a ref) points to. */
int kiln_ws_resolve(kiln_ws *ws, const char *spec, char oid[41], kiln_error *err);
/* relpath's content at commit (malloc'd). */
int kiln_ws_read(kiln_ws *ws, const char *commit, const char *relpath, char **content,
                 kiln_error *err);
/* Remove untracked files at kiln's own paths that hold what kiln staged
 * there (a candidate stopped before its commit); every other file stays. */
int kiln_ws_clean(kiln_ws *ws, kiln_error *err);
/* The commits the tags under refs/tags/kiln/best/ point to, as git lists
 * the tags; *oids malloc'd. */
int kiln_ws_best_commits(kiln_ws *ws, char (**oids)[41], int *n, kiln_error *err);
/* A commit's note on ref (malloc'd); NULL when it has none, or commit is
 * not a commit id. */
char *kiln_ws_note_read(kiln_ws *ws, const char *ref, const char *commit);
/* When the commit was made (seconds since the epoch); 0 when unknown. */
double kiln_ws_commit_time(kiln_ws *ws, const char *commit);
/* Append line (one JSON object; NULL: out of memory) to the commit's note
 * on KILN_REVERIFY_NOTES_REF, leaving the lines before it. */
int kiln_ws_reverify_note_append(kiln_ws *ws, const char *commit, const char *line,
                                 kiln_error *err);

/* ---- reading them back (kiln db rebuild, harness/db_rebuild.h) ---------- */

/* fn(commit, note text, when, ctx, err) for each commit with a note on
 * ref, once, in the order of the notes' last writes (oldest first); when:
 * the notes commit's time of that write (seconds). Returns how many
 * (0: no notes), -1 with err (fn's failure ends it). */
typedef int (*kiln_ws_note_fn)(const char *commit, const char *text, double when, void *ctx,
                               kiln_error *err);
int kiln_ws_note_each(kiln_ws *ws, const char *ref, kiln_ws_note_fn fn, void *ctx,
                      kiln_error *err);
/* fn(ref name, commit, ctx, err) for each ref matching glob (fnmatch-like:
 * "refs/kiln/archive/RUN/" and a star). */
typedef int (*kiln_ws_ref_fn)(const char *ref, const char *commit, void *ctx, kiln_error *err);
int kiln_ws_ref_each(kiln_ws *ws, const char *glob, kiln_ws_ref_fn fn, void *ctx,
                     kiln_error *err);
/* A commit's first parent ("" for a root commit) and message (malloc'd). */
int kiln_ws_commit_info(kiln_ws *ws, const char *commit, char parent[41], char **message,
                        kiln_error *err);

#endif
