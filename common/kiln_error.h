/* kiln_error.h - the one error type every module returns through.
 *
 * Functions that can fail take a `kiln_error *` and return -1 after filling
 * it with a message that names what is wrong and where; callers add context
 * with kiln_error_prefix() and only the top level prints. The error's kind
 * says whose fault it is, and the exit status follows from it in one place
 * (kiln_exit_status): a command never maps return codes to statuses by
 * hand. */
#ifndef KILN_ERROR_H
#define KILN_ERROR_H

#include <stddef.h>

typedef enum kiln_error_kind {
    KILN_ERR_INTERNAL = 0,      /* kiln's problem, or something it relies on failed (exit 3) */
    KILN_ERR_BAD_INPUT,         /* a flag, a file, a task, a workspace the user gave (exit 2) */
    KILN_ERR_RESOURCE,          /* the machine's: no GPU, daemon or model server, a full
                                   disk (exit 3; the run is kept to resume) */
    KILN_ERR_INTERRUPTED,       /* Ctrl-C or SIGTERM (exit 130) */
} kiln_error_kind;

typedef struct kiln_error {
    char msg[1024];
    kiln_error_kind kind;
} kiln_error;

/* Format a message into err (which may be NULL), of kind internal, and
 * return -1. */
int kiln_fail(kiln_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The same of kind bad input; returns -2, the code functions that tell bad
 * input apart document. */
int kiln_bad_input(kiln_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The same of another kind; returns kiln_error_code(kind). */
int kiln_fail_as(kiln_error *err, kiln_error_kind kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The message in err stands, and is of kind (a callee's failure that is,
 * here, the user's input); returns kiln_error_code(kind). */
int kiln_error_as(kiln_error *err, kiln_error_kind kind);

/* -2 for bad input, -1 for the rest. */
int kiln_error_code(kiln_error_kind kind);

/* Prepend "prefix: " to the message already in err (its kind stays);
 * returns -1. */
int kiln_error_prefix(kiln_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The exit status of a command that failed with err (kiln_exit.h): 2 bad
 * input, 130 interrupted, 3 the rest. */
int kiln_exit_status(const kiln_error *err);

#endif
