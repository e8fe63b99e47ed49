/* daemon_client.h - talking to kilnd: finding it, starting it on demand,
 * sending requests and reading its newline-delimited JSON events. */
#ifndef KILN_DAEMON_CLIENT_H
#define KILN_DAEMON_CLIENT_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "kiln_error.h"

typedef struct kiln_client {
    int fd;
    char address[4096];
    char *buf;
    size_t len, cap;
    int closed;                 /* kilnd closed the connection (kiln_client_next saw its end) */
} kiln_client;

/* --socket value, else $KILN_SOCKET, else the default path. */
int kiln_client_address(const char *flag, char *buf, size_t len, kiln_error *err);
/* Connect (authenticating for tcp:// with $KILN_TOKEN_FILE). With autostart
 * on a Unix path: start kilnd there when nothing listens, and make sure the
 * daemon is the kilnd this kiln would start (same SHA-256): one started on
 * demand is restarted, any other refused with a message naming both. */
int kiln_client_open(kiln_client *c, const char *address, int autostart, kiln_error *err);
void kiln_client_close(kiln_client *c);
int kiln_client_send(kiln_client *c, const cJSON *msg, kiln_error *err);
/* Next event; NULL with err on timeout, end of stream or garbage. */
cJSON *kiln_client_next(kiln_client *c, int timeout_ms, kiln_error *err);
/* Send one request and return its first reply. */
cJSON *kiln_client_request(kiln_client *c, const char *op, int timeout_ms, kiln_error *err);
/* Connect to the kilnd at address (no autostart), ask its status and close:
 * the status event, or NULL with err. */
cJSON *kiln_client_status(const char *address, int timeout_ms, kiln_error *err);
/* Start kilnd in the background on a Unix socket, exiting after idle_s idle. */
int kiln_start_daemon(const char *socket_path, int idle_s, kiln_error *err);

#endif
