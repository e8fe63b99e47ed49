/* worker_client.c - spawning, calling and reaping kiln-worker processes.
 *
 * Workers start with posix_spawn(): the child only rearranges descriptors
 * and calls execve(); everything else (the parent-death signal, limits,
 * Landlock, seccomp) is done by kiln-worker itself, so this stays safe to
 * use from a multi-threaded daemon. Every worker runs in its own process
 * group, which is killed as a whole when it is done. */
#include "worker_client.h"

#define KILN_FAULT_GRACE_MS 3000   /* see late_fault_report */
#define KILN_SETTLE_US 1000        /* see settled_times */

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "paths.h"
#include "safe_text.h"

extern char **environ;

const char *kiln_fault_code(kiln_fault f)
{
    switch (f) {
    case KILN_FAULT_NONE: return "none";
    case KILN_FAULT_CRASH: return "crash";
    case KILN_FAULT_TIMEOUT: return "timeout";
    case KILN_FAULT_SANDBOX: return "sandbox-violation";
    case KILN_FAULT_RESOURCE: return "resource-limit";
    case KILN_FAULT_PROTOCOL: return "crash";
    }
    return "crash";
}

/* The environment a worker gets: nothing of ours but the sanitizer options
 * a sanitizer build needs to run at all. */
typedef struct child_env {
    char *env[8];
    char buf[4][4200];
} child_env;

static void make_env(child_env *ce, const char *tmpdir, int cuda)
{
    static const char *keep[] = {"ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"};
    int n = 0;
    ce->env[n++] = "PATH=/usr/bin:/bin";
    ce->env[n++] = "LC_ALL=C";
    if (cuda)   /* no compiled kernel may come from an earlier job */
        ce->env[n++] = "CUDA_CACHE_DISABLE=1";
    if (tmpdir) {
        snprintf(ce->buf[3], sizeof ce->buf[3], "TMPDIR=%s", tmpdir);
        ce->env[n++] = ce->buf[3];
    }
    for (int i = 0; i < 3; i++) {
        const char *v = getenv(keep[i]);
        if (v) {
            snprintf(ce->buf[i], sizeof ce->buf[i], "%s=%s", keep[i], v);
            ce->env[n++] = ce->buf[i];
        }
    }
    ce->env[n] = NULL;
}

/* The child's descriptors: each goes first above all of them, so that no
 * move clobbers one still to be moved, then to its place. */
static int child_fds(posix_spawn_file_actions_t *fa, const int fds[3], int log_fd)
{
    int high = log_fd, rc = 0;
    for (int i = 0; i < 3; i++)
        high = fds[i] > high ? fds[i] : high;
    high++;
    for (int i = 0; i < 3 && !rc; i++)
        if (fds[i] >= 0)
            rc = posix_spawn_file_actions_adddup2(fa, fds[i], high + i);
    if (!rc)
        rc = posix_spawn_file_actions_adddup2(fa, log_fd, high + 3);
    if (!rc)
        rc = posix_spawn_file_actions_addopen(fa, 0, "/dev/null", O_RDONLY, 0);
    for (int i = 1; i <= 2 && !rc; i++)
        rc = posix_spawn_file_actions_adddup2(fa, high + 3, i);
    for (int i = 0; i < 3 && !rc; i++)
        if (fds[i] >= 0)
            rc = posix_spawn_file_actions_adddup2(fa, high + i, 3 + i);
    return rc ? rc : posix_spawn_file_actions_addclosefrom_np(fa, 6);
}

/* Start path in a process group of its own, *pid its pid: stdin is
 * /dev/null, stdout and stderr log_fd, fds[0..2] (-1: none) become 3, 4, 5,
 * nothing else stays open; pinned to core cpu when cpu >= 0. An errno
 * value when it could not start.
 * posix_spawn, not fork: glibc starts the child in the caller's memory
 * (CLONE_VM | CLONE_VFORK) until its execve, so no page table is copied,
 * and torn down again at the exec, for every worker. A sanitizer build
 * maps terabytes, so that copy was most of what starting a worker cost
 * (docs/decisions.md). What posix_spawn cannot do is done around it: the
 * calling thread is pinned for the call (the child inherits its
 * affinity), and the worker sets its parent-death signal itself (its
 * --parent flag). */
static int spawn_child(pid_t *pid, const char *path, char *const argv[], const int fds[3],
                       int log_fd, char *const env[], int cpu)
{
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    if (posix_spawn_file_actions_init(&fa) != 0)
        return ENOMEM;
    if (posix_spawnattr_init(&at) != 0) {
        posix_spawn_file_actions_destroy(&fa);
        return ENOMEM;
    }
    int rc = child_fds(&fa, fds, log_fd);
    if (!rc)
        rc = posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP);
    if (!rc)
        rc = posix_spawnattr_setpgroup(&at, 0);
    cpu_set_t saved;
    int pinned = 0;
    if (!rc && cpu >= 0 && sched_getaffinity(0, sizeof saved, &saved) == 0) {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(cpu, &one);
        pinned = sched_setaffinity(0, sizeof one, &one) == 0;
    }
    if (!rc)
        rc = posix_spawn(pid, path, &fa, &at, argv, env);
    if (pinned)
        sched_setaffinity(0, sizeof saved, &saved);
    posix_spawnattr_destroy(&at);
    posix_spawn_file_actions_destroy(&fa);
    return rc;
}

static int open_log(const char *path, kiln_error *err)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return kiln_fail(err, "cannot create %s: %s", path, strerror(errno));
    return fd;
}

static int read_full_deadline(int fd, void *buf, size_t len, uint64_t deadline_ns)
{
    char *p = buf;
    while (len) {
        uint64_t now = kiln_mono_ns();
        if (now >= deadline_ns)
            return p == (char *)buf ? -2 : -3;   /* -3: late, part of it read */
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        int ms = (int)((deadline_ns - now) / 1000000u) + 1;
        int r = poll(&pfd, 1, ms);
        if (r < 0 && errno == EINTR)
            continue;
        if (r == 0)
            continue;
        ssize_t n = read(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static void reap(kiln_worker *w, int wait_ms)
{
    if (w->pid <= 0 || w->reaped)
        return;
    uint64_t deadline = kiln_mono_ns() + (uint64_t)wait_ms * 1000000u;
    while (kiln_mono_ns() < deadline) {
        pid_t r = wait4(w->pid, &w->wstatus, WNOHANG, &w->ru);
        if (r == w->pid) {
            w->reaped = 1;
            break;
        }
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
    }
    kill(-w->pid, SIGKILL);   /* the whole group, whatever it started */
    if (!w->reaped && wait4(w->pid, &w->wstatus, 0, &w->ru) == w->pid)
        w->reaped = 1;
    w->lifetime_ns = kiln_mono_ns() - w->started_ns;
}

long long kiln_worker_log_size(const kiln_worker *w)
{
    struct stat st;
    return stat(w->log_path, &st) == 0 ? (long long)st.st_size : -1;
}

size_t kiln_worker_log_since(const kiln_worker *w, long long from, char *buf, size_t len)
{
    buf[0] = '\0';
    long long now = kiln_worker_log_size(w);
    if (now <= from || len == 0)
        return 0;
    int fd = open(w->log_path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    char raw[4096];   /* the candidate's bytes, made safe to show (safe_text.h) */
    ssize_t n = pread(fd, raw, len - 1 < sizeof raw ? len - 1 : sizeof raw, (off_t)from);
    close(fd);
    kiln_safe_text(raw, n > 0 ? (size_t)n : 0, buf, len);
    return (size_t)(now - from);
}

/* Last line the worker wrote to its log (the sandbox names the syscall
 * there), made safe to show: the candidate wrote into the same log. */
static void log_tail(const char *path, char *buf, size_t len)
{
    buf[0] = '\0';
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    char raw[401];
    off_t size = lseek(fd, 0, SEEK_END);
    off_t from = size > 400 ? size - 400 : 0;
    ssize_t n = pread(fd, raw, sizeof raw - 1, from);
    close(fd);
    size_t m = n > 0 ? (size_t)n : 0;
    while (m > 0 && (raw[m - 1] == '\n' || raw[m - 1] == '\r'))
        m--;
    size_t start = m;
    while (start > 0 && raw[start - 1] != '\n')
        start--;
    kiln_safe_text(raw + start, m - start, buf, len);
}

static void classify_exit(kiln_worker *w)
{
    char tail[420];
    log_tail(w->log_path, tail, sizeof tail);
    int st = w->wstatus;
    if (WIFSIGNALED(st)) {
        int sig = WTERMSIG(st);
        w->fault = (sig == SIGXCPU || sig == SIGXFSZ) ? KILN_FAULT_RESOURCE
                   : sig == SIGSYS                  ? KILN_FAULT_SANDBOX
                                                    : KILN_FAULT_CRASH;
        snprintf(w->fault_msg, sizeof w->fault_msg, "worker killed by signal %d (%s)%s%s", sig,
                 strsignal(sig),
                 sig == SIGXFSZ ? ": output or file size limit exceeded"
                 : sig == SIGXCPU ? ": CPU time limit exceeded" : "",
                 "");
    } else if (WIFEXITED(st) && WEXITSTATUS(st) == KILN_WORKER_EXIT_VIOLATION) {
        w->fault = KILN_FAULT_SANDBOX;
        snprintf(w->fault_msg, sizeof w->fault_msg, "forbidden system call (%s)", tail);
    } else if (WIFEXITED(st) && WEXITSTATUS(st) == KILN_WORKER_EXIT_SETUP) {
        w->fault = KILN_FAULT_CRASH;
        snprintf(w->fault_msg, sizeof w->fault_msg, "worker setup failed: %s", tail);
    } else {
        w->fault = KILN_FAULT_CRASH;
        snprintf(w->fault_msg, sizeof w->fault_msg, "worker exited with status %d%s%s%.300s",
                 WIFEXITED(st) ? WEXITSTATUS(st) : -1, w->calls ? " during a call" : " while starting",
                 tail[0] ? ": " : "", tail);
    }
}

static void fail_worker(kiln_worker *w, kiln_fault f, const char *msg)
{
    if (f == KILN_FAULT_TIMEOUT) {
        kill(-w->pid, SIGKILL);
        reap(w, 1000);
        w->fault = f;
        snprintf(w->fault_msg, sizeof w->fault_msg, "%s", msg);
        return;
    }
    reap(w, 2000);
    classify_exit(w);
    if (f == KILN_FAULT_PROTOCOL && w->fault == KILN_FAULT_CRASH && WIFEXITED(w->wstatus) &&
        WEXITSTATUS(w->wstatus) == 0)
        snprintf(w->fault_msg, sizeof w->fault_msg, "%s", msg);
}

static int make_arena(kiln_worker *w, size_t bytes, kiln_error *err)
{
    w->arena_fd = memfd_create("kiln-arena", MFD_CLOEXEC);
    if (w->arena_fd < 0 || ftruncate(w->arena_fd, (off_t)bytes) < 0)
        return kiln_fail(err, "cannot create the call arena (%zu bytes): %s", bytes, strerror(errno));
    w->arena = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, w->arena_fd, 0);
    if (w->arena == MAP_FAILED) {
        w->arena = NULL;
        return kiln_fail(err, "cannot map the call arena: %s", strerror(errno));
    }
    w->arena_bytes = bytes;
    return 0;
}

static int spawn(kiln_worker *w, const kiln_worker_opts *o, int req[2], int resp[2], kiln_error *err)
{
    char path[4096], arena[32], cpu[32], as[32], header[4200];
    if ((o->cuda ? kiln_cuda_worker_path(path, sizeof path, err)
                 : kiln_worker_path(path, sizeof path, err)) < 0)
        return -1;
    snprintf(arena, sizeof arena, "%zu", o->arena_bytes);
    snprintf(cpu, sizeof cpu, "%u", o->cpu_seconds ? o->cpu_seconds : 60);
    snprintf(as, sizeof as, "%zu", o->address_bytes);
    snprintf(header, sizeof header, "%s/kiln_cuda.h", kiln_cuda_include_dir());
    char parent[24];
    snprintf(parent, sizeof parent, "%d", (int)getpid());
    char *argv[40] = {path, "--dir", (char *)o->dir, "--arena", arena, "--cpu-seconds", cpu,
                      "--parent", parent};
    int n = 9;
    if (o->cuda) {
        argv[n++] = "--dtype";
        argv[n++] = (char *)o->dtype;
        argv[n++] = "--header";
        argv[n++] = header;
        snprintf(as, sizeof as, "%d", o->device);
        argv[n++] = "--device";
        argv[n++] = as;
    } else {
        argv[n++] = "--address-bytes";
        argv[n++] = as;
    }
    for (int i = 0; i < o->nlibs; i++) {
        argv[n++] = o->cuda ? "--src" : "--lib";
        argv[n++] = (char *)o->libs[i];
        if (o->cuda && o->names[i] && o->names[i][0]) {
            argv[n++] = "--names";
            argv[n++] = (char *)o->names[i];
        }
    }
    if (o->cuda && o->builtin) {
        argv[n++] = "--builtin";
        argv[n++] = (char *)o->builtin;
    }
    if (o->cuda && o->scrub)
        argv[n++] = "--scrub";
    if (o->cuda && o->ref) {
        argv[n++] = "--ref";
        argv[n++] = (char *)o->ref;
    }
    char scale[32];
    if (o->report_scale > 0) {
        snprintf(scale, sizeof scale, "%g", o->report_scale);
        argv[n++] = "--report-scale";
        argv[n++] = scale;
    }
    argv[n] = NULL;
    int log_fd = open_log(w->log_path, err);
    if (log_fd < 0)
        return -1;
    int fds[3] = {req[0], resp[1], w->arena_fd};
    child_env ce;
    make_env(&ce, NULL, o->cuda);
    w->started_ns = kiln_mono_ns();
    int rc = spawn_child(&w->pid, path, argv, fds, log_fd, ce.env, o->pin ? o->cpu : -1);
    close(log_fd);
    if (rc != 0) {
        w->pid = -1;
        return kiln_fail(err, "cannot start %s: %s", path, strerror(rc));
    }
    w->cpu_worker = !o->cuda;
    w->core = o->pin ? o->cpu : -1;
    w->has_cpu_clock = clock_getcpuclockid(w->pid, &w->cpu_clock) == 0;
    char stat[64];
    snprintf(stat, sizeof stat, "/proc/%d/stat", (int)w->pid);
    w->stat_fd = open(stat, O_RDONLY | O_CLOEXEC);
    w->has_stat = w->stat_fd >= 0;
    snprintf(stat, sizeof stat, "/proc/%d/schedstat", (int)w->pid);
    w->sched_fd = open(stat, O_RDONLY | O_CLOEXEC);
    w->has_sched = w->sched_fd >= 0;   /* used once the worker has run: see below */
    return 0;
}

/* /proc/PID/schedstat: the main thread's runtime and the time it spent
 * runnable but waiting for a core, in ns (0: unreadable, or the kernel
 * keeps no scheduler statistics). */
static uint64_t main_thread_ns(const kiln_worker *w, uint64_t *waited)
{
    char buf[128], *end;
    ssize_t n = pread(w->sched_fd, buf, sizeof buf - 1, 0);
    *waited = 0;
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    uint64_t ran = strtoull(buf, &end, 10);
    *waited = strtoull(end, NULL, 10);
    return ran;
}

/* The worker's CPU time so far, and its time waiting for a core where the
 * kernel shows it (else 0), from one read. */
static uint64_t worker_times(const kiln_worker *w, uint64_t *waited)
{
    *waited = 0;
    if (w->use_sched)
        return main_thread_ns(w, waited);
    struct timespec ts;
    if (!w->has_cpu_clock || clock_gettime(w->cpu_clock, &ts) < 0)
        return 0;
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t kiln_worker_cpu_ns(const kiln_worker *w)
{
    uint64_t waited;
    return worker_times(w, &waited);
}

/* Is the worker asleep (blocked reading, for a worker that keeps to its
 * loop)? A process's CPU clock read by another process is only brought up
 * to date when the process stops running or at a scheduler tick: read
 * while the worker is still on its way back into read() after answering,
 * it misses the whole call. Unknown counts as asleep. */
static int worker_asleep(const kiln_worker *w)
{
    char buf[512];
    if (!w->has_stat)
        return 1;
    ssize_t n = pread(w->stat_fd, buf, sizeof buf - 1, 0);
    if (n <= 0)
        return 1;
    buf[n] = '\0';
    const char *paren = strrchr(buf, ')');   /* the name may hold anything */
    return !paren || paren[1] != ' ' || paren[2] != 'R';
}

/* worker_times once the worker has gone back to sleep after an answer,
 * waiting at most KILN_SETTLE_US; a worker still running then (one that
 * does work between calls) is read as it is, and what the read misses
 * shows up later, between its calls. */
static uint64_t settled_times(const kiln_worker *w, uint64_t *waited)
{
    uint64_t until = kiln_mono_ns() + KILN_SETTLE_US * 1000u;
    while (!worker_asleep(w) && kiln_mono_ns() < until) {
        struct timespec pause = {0, 2000};   /* lets a worker on this core run */
        nanosleep(&pause, NULL);
    }
    return worker_times(w, waited);
}

int kiln_worker_spawn(kiln_worker *w, const kiln_worker_opts *o, kiln_error *err)
{
    memset(w, 0, sizeof *w);
    w->req_fd = w->resp_fd = w->arena_fd = -1;
    snprintf(w->dir, sizeof w->dir, "%s", o->dir);
    snprintf(w->log_path, sizeof w->log_path, "%s/worker.log", o->dir);
    int req[2] = {-1, -1}, resp[2] = {-1, -1};
    if (make_arena(w, o->arena_bytes, err) < 0 || pipe2(req, O_CLOEXEC) < 0 ||
        pipe2(resp, O_CLOEXEC) < 0 || spawn(w, o, req, resp, err) < 0) {
        if (!err->msg[0])
            kiln_fail(err, "cannot start kiln-worker: %s", strerror(errno));
        for (int i = 0; i < 2; i++) {
            if (req[i] >= 0) close(req[i]);
            if (resp[i] >= 0) close(resp[i]);
        }
        req[1] = resp[0] = -1;
        kiln_worker_stop(w);
        return -1;
    }
    close(req[0]);
    close(resp[1]);
    w->req_fd = req[1];
    w->resp_fd = resp[0];
    w->start_timeout_ms = o->start_timeout_ms ? o->start_timeout_ms : 10000;
    signal(SIGPIPE, SIG_IGN);
    return 0;
}

int kiln_worker_await(kiln_worker *w)
{
    kiln_call_resp ready;
    w->awaited = 1;
    uint64_t deadline = w->started_ns + (uint64_t)w->start_timeout_ms * 1000000u;
    int r = read_full_deadline(w->resp_fd, &ready, sizeof ready, deadline);
    if (r < 0 || ready.magic != KILN_MSG_READY) {
        fail_worker(w, r <= -2 ? KILN_FAULT_TIMEOUT : KILN_FAULT_PROTOCOL,
                    r <= -2 ? "worker did not start in time (load-time code hung?)" : "worker did not start");
        return 0;   /* started, but already faulted: the caller reports w->fault */
    }
    ready.info[sizeof ready.info - 1] = '\0';
    /* the worker's words, but written by a process the candidate's code ran in */
    kiln_safe_text_inplace(ready.info, sizeof ready.info);
    w->ready_status = ready.status;
    snprintf(w->ready_info, sizeof w->ready_info, "%s", ready.info);
    char *nl = strchr(ready.info, '\n');   /* CUDA: the device follows the sandbox */
    if (nl) {
        *nl = '\0';
        snprintf(w->device, sizeof w->device, "%s", nl + 1);
    }
    snprintf(w->sandbox, sizeof w->sandbox, "%s", ready.info);
    /* The worker has run by now: a runtime of 0 means the kernel keeps no
     * scheduler statistics, and the process clock serves instead. */
    uint64_t waited;
    w->use_sched = w->has_sched && main_thread_ns(w, &waited) > 0;
    return 0;
}

int kiln_worker_start(kiln_worker *w, const kiln_worker_opts *o, kiln_error *err)
{
    if (kiln_worker_spawn(w, o, err) < 0)
        return -1;
    return kiln_worker_await(w);
}

void kiln_worker_fault(kiln_worker *w, kiln_fault f, const char *msg)
{
    reap(w, 2000);
    w->fault = f;
    kiln_safe_text(msg, strlen(msg), w->fault_msg, sizeof w->fault_msg);
}

/* A GPU fault (a misaligned address, a trap) can take the driver more than
 * a second to report: on the H200 a misaligned vector load once came back
 * after the 1 s a calibrated call may take, and was judged a hang. A CUDA
 * worker whose call is late gets a short grace in which only a failure
 * report counts; an answer of success after the deadline is still late.
 * Returns 0 when a failure report came in time, -2 otherwise. */
static int late_fault_report(kiln_worker *w, kiln_call_resp *rs)
{
    uint64_t grace = kiln_mono_ns() + (uint64_t)KILN_FAULT_GRACE_MS * 1000000u;
    if (read_full_deadline(w->resp_fd, rs, sizeof *rs, grace) == 0 && rs->status != 0)
        return 0;
    return -2;
}

int kiln_worker_call(kiln_worker *w, const kiln_call_req *rq, int timeout_ms,
                     kiln_call_resp *rs, uint64_t *rt_ns, uint64_t *cpu_ns)
{
    if (w->fault)
        return -1;
    w->calls++;
    uint64_t q0, q1;
    uint64_t c0 = worker_times(w, &q0);   /* the worker is blocked reading: its clock is still */
    uint64_t t0 = kiln_mono_ns();
    ssize_t n = write(w->req_fd, rq, sizeof *rq);
    if (n != (ssize_t)sizeof *rq) {
        fail_worker(w, KILN_FAULT_PROTOCOL, "worker stopped reading requests");
        return -1;
    }
    int r = read_full_deadline(w->resp_fd, rs, sizeof *rs, t0 + (uint64_t)timeout_ms * 1000000u);
    if (r == -2 && w->device[0])
        r = late_fault_report(w, rs);
    if (r == -3)
        r = -2;
    *rt_ns = kiln_mono_ns() - t0;
    uint64_t c1 = r == 0 ? settled_times(w, &q1) : worker_times(w, &q1);
    *cpu_ns = c0 && c1 > c0 ? c1 - c0 : 0;
    w->last_wait_ns = q1 > q0 ? q1 - q0 : 0;
    if (r == -2) {
        char msg[128];
        snprintf(msg, sizeof msg, "call did not return within %d ms", timeout_ms);
        fail_worker(w, KILN_FAULT_TIMEOUT, msg);
        return -1;
    }
    if (r < 0) {
        fail_worker(w, KILN_FAULT_PROTOCOL, "worker exited normally in the middle of a call");
        return -1;
    }
    if (rs->magic != KILN_MSG_DONE || rs->nonce != rq->nonce ||
        (rs->status != 0 && !w->device[0])) {   /* CUDA workers report their failures */
        fail_worker(w, KILN_FAULT_PROTOCOL, "worker answered out of turn (forged or corrupt reply)");
        if (!w->fault)
            w->fault = KILN_FAULT_CRASH;
        return -1;
    }
    return 0;
}

void kiln_worker_kill(kiln_worker *w)
{
    if (w->pid > 0 && !w->reaped)
        kill(-w->pid, SIGKILL);
}

/* A request of no call: PREP, or a CALL of KILN_WORKER_NULL_LIB. */
static int service_call(kiln_worker *w, uint32_t magic, uint32_t byte, int timeout_ms,
                        uint64_t *cpu_ns)
{
    kiln_call_req rq;
    memset(&rq, 0, sizeof rq);
    rq.magic = magic;
    rq.lib = magic == KILN_MSG_CALL ? KILN_WORKER_NULL_LIB : 0;
    rq.nonce = kiln_mono_ns() ^ ((uint64_t)w->calls << 40);
    rq.scribble = byte;
    kiln_call_resp rs;
    uint64_t rt;
    return kiln_worker_call(w, &rq, timeout_ms, &rs, &rt, cpu_ns);
}

int kiln_worker_prepare(kiln_worker *w, uint32_t byte, int timeout_ms, uint64_t *cpu_ns)
{
    uint64_t cpu = 0;
    int rc = w->cpu_worker ? service_call(w, KILN_MSG_PREP, byte, timeout_ms, &cpu) : 0;
    if (cpu_ns)
        *cpu_ns = cpu;
    return rc;
}

int kiln_worker_null_call(kiln_worker *w, int timeout_ms, uint64_t *cpu_ns)
{
    return service_call(w, KILN_MSG_CALL, 0, timeout_ms, cpu_ns);
}

void kiln_worker_stop(kiln_worker *w)
{
    if (w->req_fd >= 0)
        close(w->req_fd);
    w->req_fd = -1;
    if (w->pid > 0 && !w->reaped)
        reap(w, w->awaited ? 500 : 0);   /* one never awaited is still starting: no wait */
    if (w->resp_fd >= 0)
        close(w->resp_fd);
    w->resp_fd = -1;
    if (w->has_stat)
        close(w->stat_fd);
    if (w->has_sched)
        close(w->sched_fd);
    w->has_stat = w->has_sched = w->use_sched = 0;
    if (w->arena)
        munmap(w->arena, w->arena_bytes);
    w->arena = NULL;
    if (w->arena_fd >= 0)
        close(w->arena_fd);
    w->arena_fd = -1;
}

static void drain_into(int fd, char *out, size_t outlen, size_t *used)
{
    char tmp[4096];
    ssize_t n;
    while ((n = read(fd, tmp, sizeof tmp)) > 0) {
        size_t room = outlen - 1 - *used;
        size_t take = (size_t)n < room ? (size_t)n : room;
        memcpy(out + *used, tmp, take);
        *used += take;
    }
    out[*used] = '\0';
}

int kiln_run_confined(const char *dir, char *const argv[], const kiln_confine_limits *lim,
                      int timeout_ms, char *out, size_t outlen, int *exit_code, int *timed_out,
                      kiln_error *err)
{
    char path[4096], log[4200], cpu[24], as[24], parent[24];
    if (kiln_worker_path(path, sizeof path, err) < 0)
        return -1;
    snprintf(log, sizeof log, "%s/.exec.log", dir);
    snprintf(cpu, sizeof cpu, "%u", lim && lim->cpu_seconds ? lim->cpu_seconds : 60);
    snprintf(as, sizeof as, "%llu", lim ? lim->address_bytes : 0ull);
    snprintf(parent, sizeof parent, "%d", (int)getpid());
    char *full[64] = {path, "--exec", (char *)dir, "--cpu-seconds", cpu, "--file-bytes", "268435456",
                      "--exec-address-bytes", as, "--parent", parent, "--"};
    int n = 12;
    for (int i = 0; argv[i] && n < 63; i++)
        full[n++] = argv[i];
    full[n] = NULL;
    kiln_worker w = {.req_fd = -1, .resp_fd = -1, .arena_fd = -1};
    int log_fd = open_log(log, err);
    if (log_fd < 0)
        return -1;
    int none[3] = {-1, -1, -1};
    child_env ce;
    make_env(&ce, dir, 0);
    w.started_ns = kiln_mono_ns();
    int rc = spawn_child(&w.pid, path, full, none, log_fd, ce.env, -1);
    close(log_fd);
    if (rc != 0)
        return kiln_fail(err, "cannot start %s: %s", path, strerror(rc));
    *timed_out = 0;
    uint64_t deadline = kiln_mono_ns() + (uint64_t)timeout_ms * 1000000u;
    while (!w.reaped && kiln_mono_ns() < deadline) {
        if (wait4(w.pid, &w.wstatus, WNOHANG, &w.ru) == w.pid)
            w.reaped = 1;
        else
            usleep(2000);
    }
    *timed_out = !w.reaped;
    reap(&w, 0);
    *exit_code = WIFEXITED(w.wstatus) ? WEXITSTATUS(w.wstatus) : 128 + WTERMSIG(w.wstatus);
    size_t used = 0;
    int fd = open(log, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        drain_into(fd, out, outlen, &used);
        close(fd);
    }
    out[used] = '\0';
    unlink(log);
    kiln_safe_text_inplace(out, outlen);   /* a compiler quotes the source it was given */
    return 0;
}
