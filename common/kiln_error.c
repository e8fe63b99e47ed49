/* kiln_error.c - formatting for kiln_error (see kiln_error.h). */
#include "kiln_error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int kiln_fail(kiln_error *err, const char *fmt, ...)
{
    if (!err)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    return -1;
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
