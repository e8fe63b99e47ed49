/* kiln_worker.c - the process a candidate runs in.
 *
 * Started fresh for every job. It confines itself (rlimits, Landlock,
 * seccomp for loading), maps the verifier's arena, loads the libraries the
 * verifier built, tightens seccomp again (no files, no new executable
 * memory), then serves calls: scribble the stack and heap when asked
 * (a message of its own before each call), time the call, answer. What it
 * reports is only cross-checked: the verifier times each call by the CPU
 * the kernel charged this process (docs/sandbox.md). Two other modes run trusted programs in a sandbox: --exec runs
 * the C compiler confined to its build directory.
 *
 *   kiln-worker --dir DIR --arena BYTES --lib SO [--lib SO] [limits] [--parent PID]
 *   kiln-worker --exec DIR [--cpu-seconds N] [--parent PID] -- PROGRAM ARGS...
 */
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sandbox.h"
#include "worker_io.h"
#include "worker_proto.h"

typedef struct opts {
    const char *dir;
    const char *libs[KILN_WORKER_MAX_LIBS];
    int nlibs;
    uint64_t arena_bytes;
    kiln_limits lim;
    char **exec_argv;       /* --exec mode: the program to run */
    uint64_t exec_address_bytes;   /* --exec mode: the program's address space, 0 none */
    double report_scale;    /* fault injection for tests: scale the candidate's times */
    uint64_t parent;        /* the verifier's pid (--parent), 0 when not given */
} opts;

/* Paths a loaded candidate may read: shared libraries and the loader cache. */
static const char *const run_ro_paths[] = {
    "/lib", "/lib64", "/usr/lib", "/usr/lib64", "/etc/ld.so.cache", NULL,
};

/* Paths the C compiler needs; /usr/share, /usr/local and home are left out
 * so that an #include cannot read task files or other candidates. */
static const char *const exec_ro_paths[] = {
    "/usr/bin", "/usr/lib", "/usr/lib64", "/usr/libexec", "/usr/include", "/bin",
    "/lib", "/lib64", "/etc/ld.so.cache", "/etc/alternatives", "/dev/null", NULL,
};

#if defined(__SANITIZE_ADDRESS__)
/* AddressSanitizer reserves terabytes of address space, so RLIMIT_AS cannot
 * bound a sanitizer build; its allocator bounds the candidate instead. */
#define ADDRESS_LIMIT_WORKS 0
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
    return "allocator_may_return_null=1:hard_rss_limit_mb=3072:detect_leaks=0:"
           /* a candidate's crash is reported by the verifier, and ASan's own
            * report would need system calls the sandbox forbids */
           "handle_segv=0:handle_sigbus=0:handle_sigfpe=0:handle_sigill=0:handle_abort=0";
}
#else
#define ADDRESS_LIMIT_WORKS 1
#endif

static void die(const char *what, const char *detail)
{
    fprintf(stderr, "kiln-worker: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
    _exit(KILN_WORKER_EXIT_SETUP);
}

static uint64_t parse_u64(const char *s, const char *flag)
{
    int ok;
    uint64_t v = kiln_parse_u64(s, &ok);
    if (!ok)
        die("bad number for", flag);
    return v;
}

static void parse_args(int argc, char **argv, opts *o)
{
    o->lim = (kiln_limits){.cpu_seconds = 60, .file_bytes = 16u << 20, .open_files = 64};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--") == 0) {
            o->exec_argv = argv + i + 1;
            break;
        } else if (strcmp(a, "--dir") == 0 || strcmp(a, "--exec") == 0) {
            o->dir = v;
        } else if (strcmp(a, "--lib") == 0 && o->nlibs < KILN_WORKER_MAX_LIBS) {
            o->libs[o->nlibs++] = v;
        } else if (strcmp(a, "--arena") == 0) {
            o->arena_bytes = parse_u64(v, a);
        } else if (strcmp(a, "--cpu-seconds") == 0) {
            o->lim.cpu_seconds = parse_u64(v, a);
        } else if (strcmp(a, "--file-bytes") == 0) {
            o->lim.file_bytes = parse_u64(v, a);
        } else if (strcmp(a, "--address-bytes") == 0) {
            o->lim.address_bytes = parse_u64(v, a);
        } else if (strcmp(a, "--exec-address-bytes") == 0) {
            o->exec_address_bytes = parse_u64(v, a);
        } else if (strcmp(a, "--parent") == 0) {
            o->parent = parse_u64(v, a);
        } else if (strcmp(a, "--report-scale") == 0) {
            o->report_scale = strtod(v ? v : "1", NULL);
        } else {
            die("unknown argument", a);
        }
        i++;
    }
    if (!o->dir)
        die("missing --dir or --exec", NULL);
}

/* --exec: the program runs in a child, confined; this process stays its
 * parent and the leader of its process group, and takes the group down
 * with it. A compiler starts processes of its own (cc1, as, ld) that no
 * parent-death signal reaches: without this, a kilnd killed mid-compile
 * left them writing into job directories the next kilnd had just swept. */
static void kill_group(int sig)
{
    (void)sig;
    kill(0, SIGKILL);   /* the whole group, this process included */
    _exit(128 + SIGKILL);
}

/* This process ends as the child did: the same exit status, or the same
 * signal (the verifier reads a CPU limit from SIGXCPU or SIGKILL). */
_Noreturn static void end_like(int status)
{
    if (WIFEXITED(status))
        _exit(WEXITSTATUS(status));
    int sig = WIFSIGNALED(status) ? WTERMSIG(status) : SIGKILL;
    struct rlimit none = {0, 0};
    setrlimit(RLIMIT_CORE, &none);   /* a re-raised SIGXCPU or SIGSEGV dumps nothing */
    signal(sig, SIG_DFL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    sigprocmask(SIG_UNBLOCK, &set, NULL);
    raise(sig);
    _exit(128 + sig);
}

static void exec_child(opts *o)
{
    kiln_sandbox_report rep = {0};
    kiln_error err;
    signal(SIGTERM, SIG_DFL);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (kiln_sandbox_rlimits(&o->lim, &rep, &err) < 0 ||
        kiln_sandbox_landlock(exec_ro_paths, o->dir, &rep, &err) < 0 ||
        kiln_sandbox_seccomp_compile(&rep, &err) < 0)
        die("sandbox", err.msg);
    /* The program's address space, set last: a sanitizer build of this
     * process maps far more than the program may use, and nothing of it
     * allocates after this. */
    struct rlimit as = {o->exec_address_bytes, o->exec_address_bytes};
    if (o->exec_address_bytes && setrlimit(RLIMIT_AS, &as) != 0)
        die("setrlimit", strerror(errno));
    execv(o->exec_argv[0], o->exec_argv);
    die("exec failed", strerror(errno));
}

static int run_exec_mode(opts *o)
{
    if (!o->exec_argv || !o->exec_argv[0])
        die("--exec needs -- PROGRAM", NULL);
    setpgid(0, 0);   /* kilnd made this group already; a shell may not have */
    /* The parent's death now means SIGTERM, which takes the group down. A
     * death before this line was a SIGKILL, set in main. */
    signal(SIGTERM, kill_group);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    pid_t pid = fork();
    if (pid < 0)
        die("fork", strerror(errno));
    if (pid == 0)
        exec_child(o);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            die("waitpid", strerror(errno));
    end_like(status);
}

/* Overwrite the stack below the caller so an uninitialised local in the
 * candidate reads a different value on every call. */
__attribute__((noinline)) static void scribble_stack(int byte)
{
    unsigned char pad[32768];
    memset(pad, byte, sizeof pad);
    __asm__ volatile("" : : "r"(pad) : "memory");
}

/* Decode one request into an argument vector; 0 when it is well formed. */
static int decode(const kiln_call_req *rq, unsigned char *arena, uint64_t arena_bytes,
                  int nlibs, void *argv[], int64_t ints[], float f32s[], double f64s[])
{
    if (rq->magic != KILN_MSG_CALL || rq->nargs > KILN_WORKER_MAX_ARGS ||
        (rq->lib >= (uint32_t)nlibs && rq->lib != KILN_WORKER_NULL_LIB))
        return -1;
    for (uint32_t i = 0; i < rq->nargs; i++) {
        const kiln_wire_arg *a = &rq->args[i];
        switch (a->kind) {
        case KILN_WIRE_BUFFER:
            if (a->offset >= arena_bytes)
                return -1;
            argv[i] = arena + a->offset;
            break;
        case KILN_WIRE_I32: {
            int32_t v = (int32_t)a->ival;
            memcpy(&ints[i], &v, sizeof v);
            argv[i] = &ints[i];
            break;
        }
        case KILN_WIRE_I64:
            ints[i] = a->ival;
            argv[i] = &ints[i];
            break;
        case KILN_WIRE_F32:
            f32s[i] = (float)a->fval;
            argv[i] = &f32s[i];
            break;
        case KILN_WIRE_F64:
            f64s[i] = a->fval;
            argv[i] = &f64s[i];
            break;
        default:
            return -1;
        }
    }
    return 0;
}

/* A worker that lies about the candidate's times, for the tests that prove
 * the verifier notices (kiln verify --test-report-scale). */
static double report_scale = 1.0;

static void serve(kiln_entry_fn entry[], int nlibs, unsigned char *arena, uint64_t arena_bytes)
{
    kiln_call_req rq;
    void *argv[KILN_WORKER_MAX_ARGS];
    int64_t ints[KILN_WORKER_MAX_ARGS];
    float f32s[KILN_WORKER_MAX_ARGS];
    double f64s[KILN_WORKER_MAX_ARGS];
    while (kiln_read_full(KILN_WORKER_REQ_FD, &rq, sizeof rq) == 0) {
        kiln_call_resp rs = {.magic = KILN_MSG_DONE, .nonce = rq.nonce};
        if (rq.magic == KILN_MSG_PREP) {
            /* Before the call's data are staged, in a round trip of its
             * own: the call's round trip holds only what any worker must
             * do to take a request and answer it (docs/sandbox.md). */
            mallopt(M_PERTURB, (int)(rq.scribble & 0xff));
            scribble_stack((int)(rq.scribble & 0xff));
        } else if (decode(&rq, arena, arena_bytes, nlibs, argv, ints, f32s, f64s) < 0) {
            rs.status = 1;
            snprintf(rs.info, sizeof rs.info, "malformed request");
        } else {
            uint64_t t0 = kiln_mono_ns();
            if (rq.lib != KILN_WORKER_NULL_LIB)
                entry[rq.lib](argv);
            /* What the call printed reaches the log before the verifier
             * looks, and the write counts as the call's: outside the
             * timed region it was CPU time the call did not report. */
            fflush(stdout);
            rs.elapsed_ns = kiln_mono_ns() - t0;
            if (rq.lib == 0 && report_scale > 0)
                rs.elapsed_ns = (uint64_t)((double)rs.elapsed_ns * report_scale);
        }
        if (kiln_write_full(KILN_WORKER_RESP_FD, &rs, sizeof rs) < 0)
            break;
    }
}

static int run_worker_mode(opts *o)
{
    kiln_sandbox_report rep = {0};
    kiln_error err;
    kiln_entry_fn entry[KILN_WORKER_MAX_LIBS];
    /* Its own directory too is read-only: nothing a candidate's constructor
     * or kernel runs can change a file that anything loads or reads later. */
    const char *ro[sizeof run_ro_paths / sizeof run_ro_paths[0] + 1], *none[1] = {NULL};
    size_t nro = 0;
    for (; run_ro_paths[nro]; nro++)
        ro[nro] = run_ro_paths[nro];
    ro[nro++] = o->dir;
    ro[nro] = NULL;
    if (o->nlibs == 0 || o->arena_bytes == 0)
        die("need --lib and --arena", NULL);
    kiln_sandbox_on_violation(STDERR_FILENO, KILN_WORKER_EXIT_VIOLATION);
    if (!ADDRESS_LIMIT_WORKS)
        o->lim.address_bytes = 0;
    if (kiln_sandbox_rlimits(&o->lim, &rep, &err) < 0 ||
        kiln_sandbox_landlock_multi(ro, none, &rep, &err) < 0 ||
        kiln_sandbox_seccomp_load(&rep, &err) < 0)
        die("sandbox", err.msg);
    unsigned char *arena = mmap(NULL, o->arena_bytes, PROT_READ | PROT_WRITE, MAP_SHARED,
                                KILN_WORKER_ARENA_FD, 0);
    if (arena == MAP_FAILED)
        die("cannot map the arena", strerror(errno));
    for (int i = 0; i < o->nlibs; i++) {
        void *h = dlopen(o->libs[i], RTLD_NOW | RTLD_LOCAL);
        void *sym = h ? dlsym(h, KILN_ENTRY_SYMBOL) : NULL;
        if (!sym)
            die("cannot load", dlerror());
        memcpy(&entry[i], &sym, sizeof sym);
    }
    if (kiln_sandbox_seccomp_run(&rep, &err) < 0)
        die("sandbox", err.msg);
    kiln_call_resp ready = {.magic = KILN_MSG_READY};
    kiln_sandbox_describe(&rep, ready.info, sizeof ready.info);
    if (!ADDRESS_LIMIT_WORKS)
        strncat(ready.info, " (sanitizer build: no address-space limit)",
                sizeof ready.info - strlen(ready.info) - 1);
    if (kiln_write_full(KILN_WORKER_RESP_FD, &ready, sizeof ready) < 0)
        _exit(KILN_WORKER_EXIT_SETUP);
    if (o->report_scale > 0)
        report_scale = o->report_scale;
    serve(entry, o->nlibs, arena, o->arena_bytes);
    /* _exit: no atexit handlers (leak checkers need syscalls we forbid). */
    _exit(0);
}

int main(int argc, char **argv)
{
    opts o = {0};
    parse_args(argc, argv, &o);
    if (o.parent)
        kiln_worker_bind_parent(SIGKILL, o.parent);
    if (o.exec_argv)
        return run_exec_mode(&o);
    return run_worker_mode(&o);
}
