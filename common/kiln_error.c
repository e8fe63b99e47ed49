/* kiln_error.c - formatting for kiln_error, and the one map from its kind
 * to an exit status (see kiln_error.h). */
#include "kiln_error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "kiln_exit.h"

static void format(kiln_error *err, kiln_error_kind kind, const char *fmt, va_list ap)
{
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    err->kind = kind;
}

int kiln_fail(kiln_error *err, const char *fmt, ...)
{
    if (!err)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    format(err, KILN_ERR_INTERNAL, fmt, ap);
    va_end(ap);
    return -1;
}

int kiln_bad_input(kiln_error *err, const char *fmt, ...)
{
    if (!err)
        return -2;
    va_list ap;
    va_start(ap, fmt);
    format(err, KILN_ERR_BAD_INPUT, fmt, ap);
    va_end(ap);
    return -2;
}

int kiln_fail_as(kiln_error *err, kiln_error_kind kind, const char *fmt, ...)
{
    if (!err)
        return kiln_error_code(kind);
    va_list ap;
    va_start(ap, fmt);
    format(err, kind, fmt, ap);
    va_end(ap);
    return kiln_error_code(kind);
}

int kiln_error_as(kiln_error *err, kiln_error_kind kind)
{
    if (err)
        err->kind = kind;
    return kiln_error_code(kind);
}

int kiln_error_code(kiln_error_kind kind)
{
    return kind == KILN_ERR_BAD_INPUT ? -2 : -1;
}

int kiln_error_prefix(kiln_error *err, const char *fmt, ...)
{
    if (!err)
        return -1;
    char head[512], old[sizeof err->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(head, sizeof head, fmt, ap);
    va_end(ap);
    memcpy(old, err->msg, sizeof old);
    snprintf(err->msg, sizeof err->msg, "%.400s: %.600s", head, old);
    return -1;
}

int kiln_exit_status(const kiln_error *err)
{
    switch (err ? err->kind : KILN_ERR_INTERNAL) {
    case KILN_ERR_BAD_INPUT: return KILN_EXIT_BAD_INPUT;
    case KILN_ERR_INTERRUPTED: return KILN_EXIT_INTERRUPTED;
    case KILN_ERR_INTERNAL:
    case KILN_ERR_RESOURCE: break;
    }
    return KILN_EXIT_INTERNAL;
}
