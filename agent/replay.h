/* replay.h - the replay proposer's pieces: a directory of candidate files,
 * offered one by one in a fixed order, each with the hypothesis it records. */
#ifndef KILN_AGENT_REPLAY_H
#define KILN_AGENT_REPLAY_H

#include <stddef.h>

#include "kiln_error.h"

/* The regular files in dir ending in ".c" (lang "c") or ".cu" (lang
 * "cuda"), hidden files skipped, as malloc'd "dir/name" paths sorted with
 * strcmp.  Returns 0 (n may be 0, paths then NULL) or -1 with err. */
int kiln_replay_list(const char *dir, const char *lang, char ***paths, int *n, kiln_error *err);

void kiln_replay_free(char **paths, int n);

/* The text after "HYPOTHESIS:" on the first line of source that holds it,
 * trimmed (a trailing comment close too), else "replay of <basename>". */
void kiln_replay_hypothesis(const char *source, const char *path, char *buf, size_t len);

#endif
