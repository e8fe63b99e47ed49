/* spool.h - kilnd's durable job records. A job is written to the spool
 * (and synced) before it is acknowledged; a marker says when it started
 * running; its final event goes to results/ before the spool entry is
 * removed. After a crash, recovery finds every job that was promised. */
#ifndef KILN_SPOOL_H
#define KILN_SPOOL_H

#include <cjson/cJSON.h>
#include <limits.h>

#include "kiln_error.h"
#include "protocol.h"

typedef struct kiln_spool {
    char root[PATH_MAX];
    char spool[PATH_MAX + 16];
    char results[PATH_MAX + 16];
    char work[PATH_MAX + 16];   /* job directories; emptied at open */
    char cache[PATH_MAX + 16];  /* built baselines and references (build_cache.h); "": none */
    char keys[PATH_MAX + 16];   /* idempotency keys -> job ids */
    unsigned long next_id;
} kiln_spool;

int kiln_spool_open(kiln_spool *s, const char *state_dir, kiln_error *err);
/* Assign an id, write the request durably. job gets "j00000042". */
int kiln_spool_accept(kiln_spool *s, const kiln_verify_request *rq, char job[32], kiln_error *err);
int kiln_spool_mark_running(kiln_spool *s, const char *job);
/* Store the job's final event (one JSON line) and drop its spool entry. */
int kiln_spool_finish(kiln_spool *s, const char *job, const char *event);
/* The stored final event of job, or NULL (free()). */
char *kiln_spool_result(const kiln_spool *s, const char *job);
int kiln_spool_pending(const kiln_spool *s, const char *job);

typedef void (*kiln_spool_visit)(void *ctx, const char *job, int was_running, cJSON *request);
/* Calls fn for every spooled job, oldest first. request is owned by fn. */
int kiln_spool_recover(kiln_spool *s, kiln_spool_visit fn, void *ctx, kiln_error *err);

int kiln_valid_job_id(const char *job);

/* A client that lost the answer to a verify request (it crashed, or the
 * connection broke before the job id arrived) sends the same key again and
 * gets the same job instead of a second verification. */
int kiln_spool_key_get(const kiln_spool *s, const char *key, char job[32]);
int kiln_spool_key_put(kiln_spool *s, const char *key, const char *job, kiln_error *err);

#endif
