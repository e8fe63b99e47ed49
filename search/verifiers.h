/* verifiers.h - one search, many kilnd daemons (docs/fleet.md): the
 * verifiers a search was given (`--verifiers A,B`, or the endpoints of a
 * fleet directory, re-read so that nodes joining later are used), their
 * lanes and load from kilnd's `status`, which one gets the next job (the
 * most free lanes of the job's kind), which are down, and job ids that name
 * the verifier holding the job: "j00000042@" and 12 hex digits of a hash of
 * its address (docs/decisions.md). The judge (judge.c) sends the jobs and
 * re-sends those of a verifier that went down with these. */
#ifndef KILN_VERIFIERS_H
#define KILN_VERIFIERS_H

#include <stdint.h>

#include "kiln_error.h"

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
} kiln_verifiers;

/* `--verifiers A,B,...`: each a Unix socket path or tcp://HOST:PORT. -1
 * with err naming the one that is malformed or given twice. */
int kiln_verifiers_list(kiln_verifiers *vs, const char *list, kiln_error *err);
/* `--fleet DIR`: the endpoints in DIR/endpoints/JOB.json (kiln fleet up),
 * with DIR/token as the token (KILN_TOKEN_FILE is set to it, as kiln fleet
 * status does). -1 with err when DIR or its token is missing. */
int kiln_verifiers_fleet(kiln_verifiers *vs, const char *dir, kiln_error *err);
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

/* 12 hex digits of the FNV-1a hash of address. */
void kiln_verifier_tag(const char *address, char tag[13]);
/* "RAW@TAG" into out; -1 when it does not fit (kilnd's ids are short). */
int kiln_verifier_job_id(const char *tag, const char *raw, char out[32]);
/* Split "RAW@TAG": 1 tagged, 0 a plain job id (raw is the whole). */
int kiln_verifier_split_job(const char *job, char raw[32], char tag[13]);

#endif
