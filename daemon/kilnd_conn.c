/* kilnd_conn.c - what the event loop (kilnd.c) and the job threads
 * (kilnd_jobs.c) share: the log, a client connection's reference count
 * and output queue, both safe from any thread, and the list of who uses
 * the daemon (connections and holds) that ping and status give. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kilnd.h"

void kilnd_log(kilnd *d, const char *fmt, ...)
{
    char line[1024];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    size_t n = strftime(line, sizeof line, "%Y-%m-%dT%H:%M:%SZ ", &tm);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line + n, sizeof line - n - 1, fmt, ap);
    va_end(ap);
    strcat(line, "\n");
    pthread_mutex_lock(&d->log_mu);
    if (d->log_fd >= 0)
        (void)!write(d->log_fd, line, strlen(line));
    if (d->foreground)
        fputs(line, stderr);
    pthread_mutex_unlock(&d->log_mu);
}

/* ---- connections ------------------------------------------------------------ */

void kilnd_conn_retain(kilnd_conn *c)
{
    pthread_mutex_lock(&c->mu);
    c->refs++;
    pthread_mutex_unlock(&c->mu);
}

void kilnd_conn_release(kilnd_conn *c)
{
    pthread_mutex_lock(&c->mu);
    int last = --c->refs == 0;
    pthread_mutex_unlock(&c->mu);
    if (!last)
        return;
    pthread_mutex_destroy(&c->mu);
    free(c->in);
    free(c->out);
    free(c);
}

void kilnd_send(kilnd *d, kilnd_conn *c, const char *line)
{
    size_t n = strlen(line);
    pthread_mutex_lock(&c->mu);
    if (!c->closed) {
        if (c->out_len + n + 1 > KILND_OUT_LIMIT) {
            c->closed = 1;   /* it stopped reading: drop it, not the daemon */
        } else {
            if (c->out_len + n + 1 > c->out_cap) {
                size_t cap = (c->out_len + n + 1) * 2;
                char *p = realloc(c->out, cap);
                if (!p) {
                    c->closed = 1;
                    pthread_mutex_unlock(&c->mu);
                    return;
                }
                c->out = p;
                c->out_cap = cap;
            }
            memcpy(c->out + c->out_len, line, n);
            c->out[c->out_len + n] = '\n';
            c->out_len += n + 1;
        }
    }
    pthread_mutex_unlock(&c->mu);
    (void)!write(d->wake[1], "w", 1);
}

/* ---- who uses the daemon ------------------------------------------------------ */

void kilnd_add_clients(kilnd *d, cJSON *o)
{
    int n = 0;
    cJSON *holds = cJSON_CreateArray();
    for (kilnd_conn *c = d->conns; c; c = c->next) {
        n++;
        if (!c->held)
            continue;
        cJSON *h = cJSON_CreateObject();
        cJSON_AddNumberToObject(h, "pid", c->hold_pid);
        cJSON_AddStringToObject(h, "build", c->hold_build);
        cJSON_AddStringToObject(h, "what", c->hold_what);
        cJSON_AddItemToArray(holds, h);
    }
    cJSON_AddNumberToObject(o, "connections", n);
    cJSON_AddItemToObject(o, "holds", holds);
}
