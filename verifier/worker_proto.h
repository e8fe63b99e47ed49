/* worker_proto.h - the wire format between the verifier and kiln-worker.
 *
 * The verifier owns a shared arena (a memfd the worker maps at fd
 * KILN_WORKER_ARENA_FD). For each call it writes guards, inputs and poisoned
 * outputs into the arena, sends a request naming where each argument lives,
 * and the worker answers with the time the call took. The worker never
 * learns seeds, gold outputs or hidden dims beyond the sizes it is called
 * with, and everything it reports is cross-checked by the verifier. */
#ifndef KILN_WORKER_PROTO_H
#define KILN_WORKER_PROTO_H

#include <stdint.h>

#define KILN_WORKER_REQ_FD 3
#define KILN_WORKER_RESP_FD 4
#define KILN_WORKER_ARENA_FD 5
#define KILN_WORKER_MAX_ARGS 16
#define KILN_WORKER_MAX_LIBS 2

#define KILN_MSG_READY 0x6b6c6e52u   /* worker -> verifier once loaded */
#define KILN_MSG_CALL 0x6b6c6e43u    /* verifier -> worker */
#define KILN_MSG_DONE 0x6b6c6e44u    /* worker -> verifier */

/* Exit codes of kiln-worker that mean something to the verifier. */
#define KILN_WORKER_EXIT_VIOLATION 97   /* seccomp trapped a forbidden syscall */
#define KILN_WORKER_EXIT_SETUP 98       /* could not set up (bad args, load error) */

typedef enum kiln_wire_kind {
    KILN_WIRE_BUFFER = 0,   /* pointer: arena + offset */
    KILN_WIRE_I32,
    KILN_WIRE_I64,
    KILN_WIRE_F32,
    KILN_WIRE_F64,
} kiln_wire_kind;

typedef struct kiln_wire_arg {
    uint32_t kind;
    uint32_t pad;
    uint64_t offset;        /* buffers */
    int64_t ival;           /* i32 / i64 */
    double fval;            /* f32 / f64 */
} kiln_wire_arg;

typedef struct kiln_call_req {
    uint32_t magic;         /* KILN_MSG_CALL */
    uint32_t lib;           /* which loaded library to call */
    uint64_t nonce;         /* echoed in the answer */
    uint32_t nargs;
    uint32_t scribble;      /* byte written over the stack and freed heap */
    kiln_wire_arg args[KILN_WORKER_MAX_ARGS];
} kiln_call_req;

typedef struct kiln_call_resp {
    uint32_t magic;         /* KILN_MSG_DONE or KILN_MSG_READY */
    uint32_t status;        /* 0 ok */
    uint64_t nonce;
    uint64_t elapsed_ns;    /* CLOCK_MONOTONIC around the call */
    char info[232];         /* READY: the sandbox description */
} kiln_call_resp;

/* Every library kiln builds exports this, generated around the candidate or
 * reference, so the worker never needs to know the task's signature. */
typedef void (*kiln_entry_fn)(void *const *args);
#define KILN_ENTRY_SYMBOL "kiln_entry"

#endif
