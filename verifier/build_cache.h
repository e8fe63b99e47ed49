/* build_cache.h - built libraries (candidates, baselines, references) kept
 * for reuse, by the hash of everything that goes into their build: a hit
 * is the very library that build would make again (docs/decisions.md,
 * the build-cache entries of 2026-12-02). kilnd's is in its state
 * directory, a verification in this process's in the user's cache
 * directory. */
#ifndef KILN_BUILD_CACHE_H
#define KILN_BUILD_CACHE_H

#include "kiln_error.h"

/* The key of a build: the SHA-256 of the files it reads (their bytes, in
 * order), the compiler's command line (with the build directory dir, which
 * differs from job to job, written as $DIR), the compiler binary's identity
 * (its inode, size and time) and the host CPU (the build targets
 * -march=native). */
int kiln_build_key(const char *const files[], int nfiles, char *const argv[], const char *dir,
                   char key[65], kiln_error *err);

/* Copy the library kept under key to dst: 1 when it was there and intact
 * (its bytes hash as they did when stored), 0 when not (a damaged entry is
 * removed), -1 when dst cannot be written. */
int kiln_build_cache_get(const char *cache, const char *key, const char *dst, kiln_error *err);

/* Keep the library at src under key. The entry appears whole or not at all
 * (written aside, then renamed); a cache that already holds max entries
 * (KILN_BUILD_CACHE_MAX for kilnd's) is emptied first. A library larger
 * than KILN_BUILD_CACHE_ENTRY_BYTES is not kept (0, as for a kept one):
 * a candidate decides its library's size. */
int kiln_build_cache_put(const char *cache, const char *key, const char *src, int max,
                         kiln_error *err);

#define KILN_BUILD_CACHE_MAX 512
#define KILN_BUILD_CACHE_ENTRY_BYTES ((size_t)8 << 20)

/* The cache directory to use, created: $KILN_BUILD_CACHE when set ("off":
 * none), else fallback when given (kilnd's STATE/build-cache), else
 * $XDG_CACHE_HOME/kiln/build-cache or ~/.cache/kiln/build-cache. 1 with the
 * path in out; 0 for none (turned off, or a default that cannot be made:
 * the builds go on without a cache); -1 when $KILN_BUILD_CACHE or the
 * fallback names a directory that cannot be made. */
int kiln_build_cache_dir(const char *fallback, char *out, size_t len, kiln_error *err);

#endif
