/* worker_client.h - the verifier's side of kiln-worker: start one, call it
 * with a deadline, and turn every way it can die into a classified failure.
 * Also runs trusted programs (the C compiler) confined by `kiln-worker --exec`. */
#ifndef KILN_WORKER_CLIENT_H
#define KILN_WORKER_CLIENT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <time.h>

#include "kiln_error.h"
#include "worker_io.h"      /* kiln_mono_ns: the one monotonic clock */
#include "worker_proto.h"

/* Why a worker failed, in the verdict's vocabulary. */
typedef enum kiln_fault {
    KILN_FAULT_NONE = 0,
    KILN_FAULT_CRASH,
    KILN_FAULT_TIMEOUT,
    KILN_FAULT_SANDBOX,
    KILN_FAULT_RESOURCE,
    KILN_FAULT_PROTOCOL,
} kiln_fault;

const char *kiln_fault_code(kiln_fault f);

typedef struct kiln_worker {
    pid_t pid;
    int req_fd, resp_fd;
    int arena_fd;
    unsigned char *arena;
    size_t arena_bytes;
    char dir[4096];
    char log_path[4200];
    char sandbox[480];
    uint64_t started_ns;
    uint64_t lifetime_ns;
    struct rusage ru;       /* as wait4 saw it */
    clockid_t cpu_clock;    /* the worker's CPU-time clock, as the kernel keeps it */
    int has_cpu_clock;
    int cpu_worker;         /* kiln-worker (not the CUDA worker): takes KILN_MSG_PREP */
    int core;               /* the core it is pinned to, or -1 */
    int stat_fd, has_stat;  /* /proc/PID/stat, to see whether the worker is blocked */
    int sched_fd, has_sched;   /* /proc/PID/schedstat: its main thread's CPU time */
    int use_sched;             /* ... which the kernel keeps, so it is read */
    uint64_t last_wait_ns;     /* the last call's time waiting for a core (0 if unknown) */
    int reaped, wstatus;
    int calls;              /* calls made so far */
    int start_timeout_ms;   /* for kiln_worker_await, from the spawn */
    int awaited;            /* kiln_worker_await has run */
    kiln_fault fault;
    char fault_msg[512];
    /* CUDA workers: what READY said. */
    uint32_t ready_status;       /* KILN_ST_OK, or KILN_ST_COMPILE with ready_info */
    char ready_info[472];
    char device[256];            /* "name=...|cc=9.0|..." from the worker */
} kiln_worker;

typedef struct kiln_worker_opts {
    const char *dir;                          /* the worker's private directory */
    const char *libs[KILN_WORKER_MAX_LIBS];   /* .so files inside dir (CUDA: .cu sources) */
    int nlibs;
    size_t arena_bytes;
    unsigned cpu_seconds;
    size_t address_bytes;                     /* RLIMIT_AS; 0 = none */
    double report_scale;                      /* fault injection (tests); 0 = off */
    int start_timeout_ms;
    int cuda;                                 /* start kiln-worker-cuda */
    const char *dtype;                        /* CUDA: "f32" "f16" "bf16" */
    int device;                               /* CUDA: the device ordinal */
    const char *builtin;                      /* CUDA: "cublas", a library after libs */
    int scrub;                                /* CUDA: zero device buffers after each
                                                 call (the reference worker) */
    int pin, cpu;                             /* pin: run only on core cpu */
    const char *ref;                          /* CUDA: the task's reference over doubles,
                                                 for device-resident calls, or NULL */
    const char *names[KILN_WORKER_MAX_LIBS];  /* CUDA: each lib's kernels named by NVRTC
                                                 name expressions, one per line, or NULL */
} kiln_worker_opts;

/* Start a worker and wait for it to say it is ready (or fail: then 0 with
 * w->fault set; -1 only when it could not be started at all). */
int kiln_worker_start(kiln_worker *w, const kiln_worker_opts *o, kiln_error *err);
/* The same in two halves, so that several workers start side by side:
 * spawn returns once the process runs; await waits for its READY (within
 * the options' start timeout, counted from the spawn). */
int kiln_worker_spawn(kiln_worker *w, const kiln_worker_opts *o, kiln_error *err);
int kiln_worker_await(kiln_worker *w);

/* One call. On a fault returns -1 with w->fault and w->fault_msg set and the
 * worker reaped; the caller reports it. rt_ns is the round trip as seen here;
 * cpu_ns the CPU time the kernel charged the worker meanwhile (0 if unknown):
 * unlike the round trip it does not grow when the machine is busy. */
int kiln_worker_call(kiln_worker *w, const kiln_call_req *rq, int timeout_ms,
                     kiln_call_resp *rs, uint64_t *rt_ns, uint64_t *cpu_ns);

/* Before a call's data are staged in a CPU worker's arena: the worker
 * scribbles its stack and freed heap with byte in a round trip of its own
 * (KILN_MSG_PREP), so that the call's round trip holds nothing a candidate
 * could leave out; on return the worker is asleep again. *cpu_ns (where
 * cpu_ns is not NULL): the CPU the kernel charged it for that round trip.
 * A no-op for a CUDA worker. -1 on a fault, as kiln_worker_call. */
int kiln_worker_prepare(kiln_worker *w, uint32_t byte, int timeout_ms, uint64_t *cpu_ns);

/* A call of no library (KILN_WORKER_NULL_LIB) in a trusted worker: *cpu_ns
 * the CPU the kernel charged it over the round trip (0 if unknown), the
 * overhead that every call's round trip carries. -1 on a fault. */
int kiln_worker_null_call(kiln_worker *w, int timeout_ms, uint64_t *cpu_ns);

/* The CPU time the kernel has charged the worker so far (0 if unknown):
 * its main thread's, where the kernel shows it, else all its threads'.
 * The sandbox lets a worker start no thread; a sanitizer build's runtime
 * has one of its own, which is no part of any call. Exact while the worker
 * is blocked; while it runs, as of the scheduler's last look at it. */
uint64_t kiln_worker_cpu_ns(const kiln_worker *w);

/* The worker's output (its stdout and stderr, device printf included) is
 * its log. kiln_worker_log_size: the log's size now (-1: none).
 * kiln_worker_log_since: what was written past from, at most len - 1 bytes
 * of it into buf as printable text (other bytes become '?'); returns how
 * many bytes were written past from in all. */
long long kiln_worker_log_size(const kiln_worker *w);
size_t kiln_worker_log_since(const kiln_worker *w, long long from, char *buf, size_t len);

/* Record that the worker failed (a CUDA fault it reported itself), and
 * make sure it is gone. */
void kiln_worker_fault(kiln_worker *w, kiln_fault f, const char *msg);

/* Kill the process group now, without waiting for it to go (a CUDA
 * worker's exit tears its context down, which takes a while): a later
 * kiln_worker_stop reaps it. */
void kiln_worker_kill(kiln_worker *w);
/* Close, give it a moment to exit, kill the process group, reap. Idempotent. */
void kiln_worker_stop(kiln_worker *w);

/* Run argv[0] (absolute) confined to dir via kiln-worker --exec, with stdout
 * and stderr captured into out (trimmed to outlen). *exit_code is the exit
 * status or 128+signal; -1 return only for failure to start; timeouts set
 * *timed_out. */
/* What a confined program may use: CPU seconds (SIGXCPU past them) and
 * address space (allocations fail past it); 0: the defaults (60 s, none). */
typedef struct kiln_confine_limits {
    unsigned cpu_seconds;
    unsigned long long address_bytes;
} kiln_confine_limits;

int kiln_run_confined(const char *dir, char *const argv[], const kiln_confine_limits *lim,
                      int timeout_ms, char *out, size_t outlen, int *exit_code, int *timed_out,
                      kiln_error *err);


#endif
