/* build_cache.h - libraries kilnd built from trusted sources (a baseline,
 * a reference; never a candidate) kept for reuse, by the hash of everything
 * that goes into their build (docs/decisions.md, 2026-12-02). */
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
 * (KILN_BUILD_CACHE_MAX for kilnd's) is emptied first. */
int kiln_build_cache_put(const char *cache, const char *key, const char *src, int max,
                         kiln_error *err);

#define KILN_BUILD_CACHE_MAX 512

#endif
