/* protocol.h - kilnd's wire protocol: newline-delimited JSON objects over a
 * Unix socket (or TCP with a token). docs/protocol.md has the details. */
#ifndef KILN_PROTOCOL_H
#define KILN_PROTOCOL_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "kiln_error.h"

#define KILN_PROTO_MAX_LINE (1u << 20)   /* a request, source included */
#define KILN_PROTO_VERSION "0.1.0"

typedef struct kiln_verify_request {
    char id[64];                /* the client's id, echoed in every event */
    char task[256];
    char language[8];           /* "c" */
    char backend[8];            /* "cpu" */
    char dtype[8];              /* "" = the task's first */
    char group[32];             /* "" = the task's default */
    char mode[16];              /* "full" */
    int timing_ms, call_timeout_ms;
    char *source;               /* malloc'd */
    char *baseline;             /* malloc'd source to time against, or NULL: the task's */
    char key[256];              /* idempotency key: the same key names the same job */
} kiln_verify_request;

/* Parse the fields of a verify request; -1 with err naming the field. */
/* The offset of the first byte of s[0..n) that is not valid UTF-8 (RFC 3629:
 * no overlong forms, surrogates or code points past U+10FFFF), or SIZE_MAX. */
size_t kiln_utf8_invalid_at(const char *s, size_t n);

int kiln_parse_verify(const cJSON *msg, kiln_verify_request *rq, kiln_error *err);
void kiln_verify_request_free(kiln_verify_request *rq);
/* The request as JSON (for the spool), source included. */
cJSON *kiln_verify_request_json(const kiln_verify_request *rq);

/* {"id":..., "event": "error", "error": {"code":..., "message":...}} */
char *kiln_event_error(const char *id, const char *job, const char *code, const char *message);

/* Read one line from fd into a growing buffer. Connection helpers for clients. */
int kiln_connect(const char *address, kiln_error *err);   /* path or tcp://host:port */

#endif
