/* kiln_error.h - the one error type every module returns through.
 *
 * Functions that can fail take a `kiln_error *` and return -1 after filling
 * it with a message that names what is wrong and where; callers add context
 * with kiln_error_prefix() and only the top level prints. */
#ifndef KILN_ERROR_H
#define KILN_ERROR_H

#include <stddef.h>

typedef struct kiln_error {
    char msg[1024];
} kiln_error;

/* Format a message into err (which may be NULL) and return -1. */
int kiln_fail(kiln_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Prepend "prefix: " to the message already in err; returns -1. */
int kiln_error_prefix(kiln_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
