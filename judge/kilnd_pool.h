/* kilnd_pool.h - one search, many kilnd daemons (docs/fleet.md): the
 * verifiers a search was given (`--verifiers A,B`, or the endpoints of a
 * fleet directory, re-read so that nodes joining later are used), their
 * lanes and load from kilnd's `status`, which one gets the next job (the
 * most free lanes of the job's kind), which are down, and job ids that name
 * the verifier holding the job: "j00000042@" and 12 hex digits of a hash of
 * its address (docs/decisions.md). The judge (judge.c) sends the jobs and
 * re-sends those of a verifier that went down with these.
 *
 * The rules that need no socket and no clock (addresses, job ids, a status
 * reply, an endpoint file, the choice, the down/retry bookkeeping) are in
 * kilnd_pool_rules.c and take the time as an argument, so that
 * tests/unit/test_kilnd_pool.c tests them alone; kilnd_pool.c asks the
 * daemons and reads the fleet directory. */
#ifndef KILN_VERIFIERS_H
#define KILN_VERIFIERS_H

#include <stddef.h>
#include <stdint.h>

#include "kiln_error.h"

struct cJSON;

#define KILN_VERIFIER_RETRY_S 15    /* a verifier found down is asked again after this */
#define KILN_VERIFIER_STATUS_MS 1000   /* its status is asked again after this */
#define KILN_VERIFIER_SCAN_MS 2000  /* a fleet directory is read again after this */

typedef struct kiln_verifier {
    char address[512];          /* a Unix socket path or tcp://HOST:PORT */
    char tag[13];               /* 12 hex digits: kiln_verifier_tag(address) */
    int lanes[2], load[2];      /* [0] cpu, [1] cuda lanes and their jobs, from the last status */
    int queued;                 /* its queue then (jobs not on a lane yet, any kind) */
    int sent;                   /* jobs handed to it since that status */
    int known;                  /* a status has been seen */
    int down;                   /* did not answer at down_at (why says how) */
    int gone;                   /* its endpoint file left the fleet directory */
    uint64_t down_at, status_at;   /* kiln_mono_ns() */
    char why[300];
} kiln_verifier;

typedef struct kiln_verifiers {
    kiln_verifier **v;          /* never removed: a job id may name any of them */
    int n, cap;
    char fleet[4096];           /* the fleet directory, or "" for a list */
    uint64_t scanned_at;
    unsigned turn;              /* ties go round */
    char bad[1024];             /* the last scan's malformed endpoint files, "" when none */
    int bad_news;               /* bad changed since kiln_verifiers_news last returned it */
} kiln_verifiers;

/* `--verifiers A,B,...`: each a Unix socket path or tcp://HOST:PORT. -1
 * with err naming the one that is malformed or given twice. */
int kiln_verifiers_list(kiln_verifiers *vs, const char *list, kiln_error *err);
/* A fleet directory as everything that reads one needs it: DIR a
 * directory, DIR/token present and the owner's alone (no group or other
 * bits). The token's path into token (len bytes) and KILN_TOKEN_FILE set to
 * it (what kiln_client_open authenticates with). -1 with err naming what is
 * wrong; the caller adds its prefix. */
int kiln_fleet_dir_check(const char *dir, char *token, size_t len, kiln_error *err);
/* `--fleet DIR`: the endpoints in DIR/endpoints/JOB.json (kiln fleet up),
 * with DIR/token as the token (KILN_TOKEN_FILE is set to it, as kiln fleet
 * status does). -1 with err when DIR or its token is missing. An endpoint
 * file that is not one is skipped, and named by kiln_verifiers_news. */
int kiln_verifiers_fleet(kiln_verifiers *vs, const char *dir, kiln_error *err);
/* The malformed endpoint files of the fleet directory ("DIR/endpoints/x.json:
 * why; ..."), when that changed since the last call (a file fixed or removed
 * makes it ""); NULL when unchanged. The caller says it. */
const char *kiln_verifiers_news(kiln_verifiers *vs);
/* Ask each verifier for its status now. -1 with err naming the first that
 * does not answer (all of them must: a list names daemons that should be up). */
int kiln_verifiers_check(kiln_verifiers *vs, kiln_error *err);
void kiln_verifiers_free(kiln_verifiers *vs);

/* The verifier for the next job of backend ("cpu"/NULL or "cuda"): of those
 * answering, not in avoid and with a lane of that kind, the one with the
 * fewest jobs per lane of that kind once this one is added (jobs: assigned
 * to its lanes, queued, and sent since its status), so jobs go to free
 * lanes first and in proportion to lanes after; ties taken in turn. NULL
 * with err saying why none (each down one and why). */
kiln_verifier *kiln_verifiers_pick(kiln_verifiers *vs, const char *backend,
                                   kiln_verifier *const *avoid, int navoid, kiln_error *err);
/* The verifier whose tag this is (a fleet directory is read again first
 * when due); NULL when none. */
kiln_verifier *kiln_verifiers_find(kiln_verifiers *vs, const char *tag);
void kiln_verifier_down(kiln_verifier *v, const char *why);
/* Does the kilnd at address answer a ping within timeout_ms? 1 yes, 0 no
 * (err says why). */
int kiln_verifier_answers(const char *address, int timeout_ms, kiln_error *err);

/* ---- socket-free (kilnd_pool_rules.c) ---------------------------------------- */

/* 12 hex digits of the FNV-1a hash of address. */
void kiln_verifier_tag(const char *address, char tag[13]);
/* "RAW@TAG" into out; -1 when raw is not a kilnd job id of at most 18
 * characters ([A-Za-z0-9_.-]) or tag is not 12 hex digits. */
int kiln_verifier_job_id(const char *tag, const char *raw, char out[32]);
/* Split a recorded job id: 1 "RAW@TAG", 0 a plain id from an older run
 * (raw is the whole, tag ""), -1 malformed (raw and tag "", err says why:
 * an empty or over-long id, an empty RAW, a TAG that is not 12 hex digits). */
int kiln_verifier_parse_job(const char *job, char raw[32], char tag[13], kiln_error *err);
/* kiln_verifier_parse_job without the message. */
int kiln_verifier_split_job(const char *job, char raw[32], char tag[13]);

/* Is a a Unix socket path or tcp://HOST:PORT (port 1-65535, digits only)?
 * 0 yes; -1 no, why says what is wrong. */
int kiln_verifier_check_address(const char *a, char *why, size_t len);
/* A new verifier at address in vs (not checked); NULL with err. */
kiln_verifier *kiln_verifiers_add(kiln_verifiers *vs, const char *address, kiln_error *err);
/* The verifier at exactly this address; NULL when none. */
kiln_verifier *kiln_verifiers_at(const kiln_verifiers *vs, const char *address);
/* The endpoint named by an endpoint file's text into addr; -1 with why
 * (not JSON, no "endpoint" string, a malformed address). */
int kiln_verifier_endpoint(const char *text, char *addr, size_t len, char *why, size_t wlen);

/* v did not answer at now: not chosen until now + KILN_VERIFIER_RETRY_S. */
void kiln_verifier_down_at(kiln_verifier *v, const char *why, uint64_t now);
/* 1 while v is down and its retry time has not come. */
int kiln_verifier_resting(const kiln_verifier *v, uint64_t now);
/* 1 when v's status should be asked before choosing: never seen, or older
 * than KILN_VERIFIER_STATUS_MS. */
int kiln_verifier_stale(const kiln_verifier *v, uint64_t now);
/* A `status` reply into v's lanes ("cpu", "cuda:N"), load and queue; the
 * jobs sent since are forgotten and v is up. -1 with err when r is not a
 * status event (v is unchanged). */
int kiln_verifier_apply_status(kiln_verifier *v, const struct cJSON *r, uint64_t now,
                               kiln_error *err);
/* The choice rule of kiln_verifiers_pick among the statuses known now (no
 * daemon asked): kind 0 cpu, 1 cuda. The chosen one counts the job sent;
 * NULL with err (each verifier and why not) when none can take it. */
kiln_verifier *kiln_verifiers_choose(kiln_verifiers *vs, int kind, kiln_verifier *const *avoid,
                                     int navoid, uint64_t now, kiln_error *err);

#endif
