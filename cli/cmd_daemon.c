/* cmd_daemon.c - `kiln daemon start|stop|status`: kilnd for people. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "daemon_client.h"

static const char usage[] =
    "usage: kiln daemon start|stop|status [--socket ADDR] [--state DIR] [--json]\n"
    "\n"
    "start   start kilnd on the socket (with --state DIR: its state directory)\n"
    "stop    ask kilnd to stop: running jobs finish, queued jobs stay spooled\n"
    "status  queue, devices, uptime, jobs done, and the searches holding it\n"
    "\n"
    "Each build of kiln has a kilnd of its own, so another checkout's kiln never\n"
    "stops or replaces the daemon a search uses. Default socket: --socket, else\n"
    "$KILN_SOCKET, else $XDG_RUNTIME_DIR/kiln/kilnd-BUILD.sock, else STATE/kilnd.sock.\n"
    "Its state directory (spool, results, build cache, log): --state, else $KILN_STATE,\n"
    "else ~/.local/state/kiln/kilnd-BUILD (BUILD: the first 16 hex digits of kilnd's\n"
    "SHA-256; `kiln daemon status` shows it). Two kilnds cannot share a state\n"
    "directory: for a second one, give it its own (--state DIR here; KILN_STATE=DIR\n"
    "for the kiln commands that start one on demand).\n"
    "\n"
    "Exit status: 0 ok, 1 (status) not running, 2 bad input, 3 internal error.\n";

static int start(const char *addr, const char *state)
{
    kiln_error err = {0};
    kiln_client c;
    if (kiln_client_open(&c, addr, 0, &err) == 0) {
        kiln_client_close(&c);
        printf("kilnd is already running at %s\n", addr);
        return KILN_EXIT_OK;
    }
    if (strncmp(addr, "tcp://", 6) == 0) {
        fprintf(stderr, "kiln daemon: cannot start a daemon on another machine (%s)\n", addr);
        return KILN_EXIT_BAD_INPUT;
    }
    if (kiln_start_daemon(addr, state, 0, &err) < 0) {
        fprintf(stderr, "kiln daemon: %s\n", err.msg);   /* kilnd's reason, the other kilnd named */
        return KILN_EXIT_INTERNAL;
    }
    if (kiln_client_open(&c, addr, 0, &err) < 0) {
        for (int i = 0; i < 100 && c.fd < 0; i++) {
            usleep(50000);
            kiln_client_open(&c, addr, 0, &err);
        }
        if (c.fd < 0) {
            fprintf(stderr, "kiln daemon: %s\n", err.msg);
            return KILN_EXIT_INTERNAL;
        }
    }
    kiln_client_close(&c);
    printf("kilnd started at %s\n", addr);
    return KILN_EXIT_OK;
}

static int stop(const char *addr)
{
    kiln_error err = {0};
    kiln_client c;
    if (kiln_client_open(&c, addr, 0, &err) < 0) {
        printf("kilnd is not running at %s\n", addr);
        return KILN_EXIT_OK;
    }
    cJSON *r = kiln_client_request(&c, "shutdown", 10000, &err);
    cJSON_Delete(r);
    /* Wait until it has finished running jobs and closed the connection. */
    cJSON *more;
    while ((more = kiln_client_next(&c, 600000, &err)) != NULL)
        cJSON_Delete(more);
    kiln_client_close(&c);
    printf("kilnd at %s stopped\n", addr);
    return KILN_EXIT_OK;
}

static int status(const char *addr, int json)
{
    kiln_error err = {0};
    kiln_client c;
    if (kiln_client_open(&c, addr, 0, &err) < 0) {
        printf("kilnd is not running at %s\n", addr);
        return KILN_EXIT_FAIL;
    }
    cJSON *r = kiln_client_request(&c, "status", 10000, &err);
    kiln_client_close(&c);
    if (!r) {
        fprintf(stderr, "kiln daemon: %s\n", err.msg);
        return KILN_EXIT_INTERNAL;
    }
    if (json) {
        char *s = cJSON_Print(r);
        puts(s ? s : "{}");
        free(s);
    } else {
        const char *build = cJSON_GetStringValue(cJSON_GetObjectItem(r, "build"));
        printf("kilnd %s (build %s) at %s: pid %.0f, up %.0f s\n",
               cJSON_GetStringValue(cJSON_GetObjectItem(r, "version")), build ? build : "?", addr,
               cJSON_GetNumberValue(cJSON_GetObjectItem(r, "pid")),
               cJSON_GetNumberValue(cJSON_GetObjectItem(r, "uptime_s")));
        printf("jobs: %.0f queued, %.0f active, %.0f done (%.0f did not pass)\n",
               cJSON_GetNumberValue(cJSON_GetObjectItem(r, "queued")),
               cJSON_GetNumberValue(cJSON_GetObjectItem(r, "active")),
               cJSON_GetNumberValue(cJSON_GetObjectItem(r, "jobs_done")),
               cJSON_GetNumberValue(cJSON_GetObjectItem(r, "jobs_not_passed")));
        const cJSON *d, *h;
        cJSON_ArrayForEach(h, cJSON_GetObjectItem(r, "holds")) {
            const char *what = cJSON_GetStringValue(cJSON_GetObjectItem(h, "what"));
            const char *hb = cJSON_GetStringValue(cJSON_GetObjectItem(h, "build"));
            printf("held by %s (pid %.0f, build %s)\n", what && *what ? what : "a client",
                   cJSON_GetNumberValue(cJSON_GetObjectItem(h, "pid")), hb && *hb ? hb : "?");
        }
        cJSON_ArrayForEach(d, cJSON_GetObjectItem(r, "devices")) {
            const char *job = cJSON_GetStringValue(cJSON_GetObjectItem(d, "job"));
            printf("device %s: %s%s\n", cJSON_GetStringValue(cJSON_GetObjectItem(d, "name")),
                   job && *job ? "running " : "idle", job ? job : "");
        }
    }
    cJSON_Delete(r);
    return KILN_EXIT_OK;
}

int kiln_cmd_daemon(int argc, char **argv)
{
    if (argc < 2 || kiln_is_help(argv[1])) {
        fputs(usage, argc < 2 ? stderr : stdout);
        return argc < 2 ? KILN_EXIT_BAD_INPUT : KILN_EXIT_OK;
    }
    const char *sock = NULL, *state = NULL;
    int json = 0;
    for (int i = 2; i < argc; i++) {
        int miss = 0;
        const char *v = kiln_flag_value(argc, argv, &i, "--socket", &miss);
        if (v) {
            sock = v;
        } else if (!miss && (v = kiln_flag_value(argc, argv, &i, "--state", &miss))) {
            state = v;
        } else if (miss) {
            fprintf(stderr, "kiln daemon: %s needs a value\n", argv[i]);
            return KILN_EXIT_BAD_INPUT;
        } else if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else {
            fprintf(stderr, "kiln daemon: unexpected argument '%s'\n%s", argv[i], usage);
            return KILN_EXIT_BAD_INPUT;
        }
    }
    char addr[4096];
    kiln_error err = {0};
    if (kiln_client_address(sock, addr, sizeof addr, &err) < 0) {
        fprintf(stderr, "kiln daemon: %s\n", err.msg);
        return KILN_EXIT_BAD_INPUT;
    }
    if (state && strcmp(argv[1], "start") != 0) {
        fprintf(stderr, "kiln daemon: --state is for start (a running kilnd keeps its own)\n");
        return KILN_EXIT_BAD_INPUT;
    }
    if (strcmp(argv[1], "start") == 0)
        return start(addr, state);
    if (strcmp(argv[1], "stop") == 0)
        return stop(addr);
    if (strcmp(argv[1], "status") == 0)
        return status(addr, json);
    fprintf(stderr, "kiln daemon: unknown action '%s'\n%s", argv[1], usage);
    return KILN_EXIT_BAD_INPUT;
}
