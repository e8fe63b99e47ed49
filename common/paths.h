/* paths.h - where kiln finds its own files: the worker binary, the CPU
 * candidate header, tasks, and the per-user state directory. */
#ifndef KILN_PATHS_H
#define KILN_PATHS_H

#include <stddef.h>

#include "kiln_error.h"

/* $KILN_WORKER, else kiln-worker next to the running executable. */
int kiln_worker_path(char *buf, size_t len, kiln_error *err);
/* $KILN_CUDA_WORKER, else kiln-worker-cuda next to the running executable. */
int kiln_cuda_worker_path(char *buf, size_t len, kiln_error *err);
/* Directory holding kiln_cuda.h ($KILN_CUDA_INCLUDE overrides). */
const char *kiln_cuda_include_dir(void);
/* Directory holding kiln_cpu.h. */
const char *kiln_cpu_include_dir(void);
/* $KILN_STATE, else $XDG_STATE_HOME/kiln, else ~/.local/state/kiln; created.
 * What every build shares (the CPU bandwidth cache, say). */
int kiln_state_dir(char *buf, size_t len, kiln_error *err);
/* The state directory of a kilnd of this build (the first 16 hex digits of
 * its SHA-256): $KILN_STATE when set, else STATE/kilnd-BUILD; created. Each
 * build has a daemon of its own by default, so another checkout's kiln
 * never stops or replaces the one a search uses (docs/decisions.md). */
int kiln_daemon_state_dir(const char *build, char *buf, size_t len, kiln_error *err);
/* Where a kilnd of that build listens by default: $KILN_SOCKET, else
 * $XDG_RUNTIME_DIR/kiln/kilnd-BUILD.sock, else DAEMON_STATE/kilnd.sock. */
int kiln_default_socket_of(const char *build, char *buf, size_t len, kiln_error *err);
/* The same for the kilnd this kiln starts (kiln_kilnd_build). */
int kiln_default_socket(char *buf, size_t len, kiln_error *err);
/* The build of the kilnd this kiln starts ("unknown" when there is none). */
void kiln_kilnd_build(char out[17]);
/* mkdir -p */
int kiln_mkdirs(const char *path, kiln_error *err);
/* A fresh private directory under root (NULL: $TMPDIR or /tmp): prefix-XXXXXX. */
int kiln_make_tempdir(const char *root, const char *prefix, char *buf, size_t len,
                      kiln_error *err);
/* The kilnd that kiln starts: $KILND, else kilnd next to the running kiln. */
int kiln_kilnd_path(char *buf, size_t len, kiln_error *err);
/* A binary's build identity: the first 16 hex digits of its SHA-256
 * ("unknown" if it cannot be read). */
void kiln_build_id(const char *path, char out[17]);
/* rm -rf, without following symlinks; returns -1 if something stayed. */
int kiln_remove_tree(const char *path);

#endif
