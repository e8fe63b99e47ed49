/* kilnd.h - the verifier daemon's shared state: connections (kilnd.c) and
 * the job queue, compile threads and device lanes (kilnd_jobs.c). */
#ifndef KILN_KILND_H
#define KILN_KILND_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "protocol.h"
#include "spool.h"

#define KILND_MAX_LANES 17   /* cpu and up to 16 GPUs */
#define KILND_OUT_LIMIT (8u << 20)   /* a client that stops reading is dropped */

typedef struct kilnd_conn {
    int fd;
    int refs;                   /* the event loop's one, plus one per job */
    int closed;
    int tcp, authed;
    time_t opened;              /* TCP: it must authenticate soon after */
    char *in;
    size_t in_len, in_cap;
    int discarding;             /* skipping the rest of an oversized line */
    /* A client's hold (op "hold"): a search using this daemon says who it is
     * for as long as the connection stays open; kiln never stops or
     * replaces a daemon that is held (docs/protocol.md, "Which daemon"). */
    int held;
    double hold_pid;
    char hold_build[17], hold_what[256];
    char *out;
    size_t out_len, out_cap;
    pthread_mutex_t mu;         /* out, refs, closed */
    struct kilnd_conn *next;
} kilnd_conn;

typedef struct kilnd_job {
    char id[32];
    kiln_verify_request rq;
    kilnd_conn *conn;           /* NULL for a job recovered from the spool */
    struct kilnd_job *next;
} kilnd_job;

typedef struct kilnd_waiter {   /* a `result` request for an unfinished job */
    char job[32], client_id[64];
    kilnd_conn *conn;
    struct kilnd_waiter *next;
} kilnd_waiter;

typedef struct kilnd_lane {
    char name[32];
    int busy;
    int load;                   /* jobs assigned to it, running or waiting (kilnd.mu) */
    char job[32];
    double busy_s;              /* seconds it was held by finished jobs, since kilnd
                                   started (status's "busy_s" adds the running one) */
    uint64_t busy_since;        /* kiln_mono_ns() it was taken, while busy */
    pthread_mutex_t mu;
    pthread_cond_t cv;
} kilnd_lane;

typedef struct kilnd {
    char socket_path[4096], state_dir[4096], listen_addr[256], token[128];
    int compile_jobs, foreground, idle_exit_s;
    int max_tcp;                /* TCP connections open at once */
    char build[17];             /* the first 16 hex digits of this binary's SHA-256 */
    kiln_spool spool;
    int log_fd;
    pthread_mutex_t log_mu;
    /* queue */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    kilnd_job *head, *tail;
    int queued, active;
    unsigned long done, failed;
    kilnd_waiter *waiters;
    int stopping;
    /* lanes */
    kilnd_lane lanes[KILND_MAX_LANES];
    int nlanes;
    pthread_t *threads;
    /* event loop */
    int wake[2];
    kilnd_conn *conns;
    time_t started, idle_since;
} kilnd;

void kilnd_log(kilnd *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Queue a line for a connection (thread-safe); drops it if the client is gone. */
void kilnd_send(kilnd *d, kilnd_conn *c, const char *line);
void kilnd_conn_release(kilnd_conn *c);
void kilnd_conn_retain(kilnd_conn *c);

int kilnd_jobs_start(kilnd *d, kiln_error *err);
/* Accept a verify request from c: spool, acknowledge, queue. */
void kilnd_submit(kilnd *d, kilnd_conn *c, const cJSON *msg, const char *client_id);
/* Answer a `result` request: the stored event, or wait for it. */
void kilnd_result(kilnd *d, kilnd_conn *c, const char *client_id, const char *job);
/* Re-queue or answer the jobs a previous daemon left in the spool. */
int kilnd_recover(kilnd *d, kiln_error *err);
char *kilnd_status_json(kilnd *d, const char *client_id);
/* Who uses this daemon: "connections" (open now) and "holds" (the clients
 * that hold it: pid, build, what), added to o. The event loop's thread only. */
void kilnd_add_clients(kilnd *d, cJSON *o);
/* Stop taking queued jobs, wait for running ones, answer queued clients. */
void kilnd_jobs_stop(kilnd *d);
int kilnd_idle(kilnd *d);

#endif
