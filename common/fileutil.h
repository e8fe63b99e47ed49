/* fileutil.h - small file and hashing helpers several modules share. */
#ifndef KILN_FILEUTIL_H
#define KILN_FILEUTIL_H

#include <stddef.h>

#include "kiln_error.h"

/* The one file reader: up to limit bytes of path into *buf (malloc'd,
 * NUL-terminated), their number in *len (NULL: not wanted). 0; 1 when the
 * file holds more than limit bytes (the first limit are read); -1 with err
 * naming the file when it cannot be opened or read. */
int kiln_read_file(const char *path, size_t limit, char **buf, size_t *len, kiln_error *err);
/* Write len bytes to path (created or truncated); -1 with err naming the file. */
int kiln_write_bytes(const char *path, const void *buf, size_t len, kiln_error *err);
/* Write text to path (created or truncated); -1 with err naming the file. */
int kiln_write_text(const char *path, const char *text, kiln_error *err);
/* SHA-256 of len bytes as 64 lowercase hex digits and a NUL. */
void kiln_sha256_hex(const void *buf, size_t len, char out[65]);
/* The SHA-256 of a file's contents, in hex. */
int kiln_sha256_file(const char *path, char out[65], kiln_error *err);

#endif
