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
    char build[17];             /* the daemon's build, once kiln_client_open_keep accepted it */
} kiln_client;

/* --socket value, else $KILN_SOCKET, else the default path. */
int kiln_client_address(const char *flag, char *buf, size_t len, kiln_error *err);
/* Connect (authenticating for tcp:// with $KILN_TOKEN_FILE). With autostart
 * on a Unix path: kiln_client_open_keep with no build to keep. */
int kiln_client_open(kiln_client *c, const char *address, int autostart, kiln_error *err);
/* Connect to the local kilnd at address, starting one there when nothing
 * listens, and make sure it is the kilnd this kiln would start (same
 * SHA-256) or of build keep (non-NULL: the one the caller has used so far,
 * kept after a rebuild). Another build's daemon that kiln started on demand
 * is restarted as this kiln's, but only when nobody uses it (no job, hold or
 * other client); any other is refused with a message naming both builds
 * and the way out (docs/protocol.md, "Which daemon"). c->build gets the
 * daemon's build. */
int kiln_client_open_keep(kiln_client *c, const char *address, const char *keep, kiln_error *err);
/* Hold the daemon on c: tell it who we are (pid, build, what) and keep c
 * open for as long as we use it; while it is held, no kiln stops or
 * replaces it. */
int kiln_client_hold(kiln_client *c, const char *what, kiln_error *err);
/* 1 while the daemon on c is still there (the connection has not ended). */
int kiln_client_alive(kiln_client *c);
void kiln_client_close(kiln_client *c);
int kiln_client_send(kiln_client *c, const cJSON *msg, kiln_error *err);
/* Next event; NULL with err on timeout, end of stream or garbage. */
cJSON *kiln_client_next(kiln_client *c, int timeout_ms, kiln_error *err);
/* Send one request and return its first reply. */
cJSON *kiln_client_request(kiln_client *c, const char *op, int timeout_ms, kiln_error *err);
/* Connect to the kilnd at address (no autostart), ask its status and close:
 * the status event, or NULL with err. */
cJSON *kiln_client_status(const char *address, int timeout_ms, kiln_error *err);
/* Start kilnd in the background on a Unix socket (with state_dir, NULL: its
 * default), exiting after idle_s idle (0: never). err carries kilnd's own
 * reason when it does not start. */
int kiln_start_daemon(const char *socket_path, const char *state_dir, int idle_s, kiln_error *err);

#endif
