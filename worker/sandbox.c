/* sandbox.c - process confinement for kiln's untrusted candidates.
 *
 * Layers, applied by the forked child before it execs anything:
 *   rlimits   CPU, file size, open files, address space, no core dumps.
 *   Landlock  the filesystem shrinks to read+execute on a few system paths
 *             and one writable temp dir; from ABI 4/6 also no TCP and no
 *             signals or abstract UNIX sockets leaving the sandbox.
 *   seccomp   what the kernel may be asked at all, in up to two stacked
 *             filters (the kernel applies every filter; the strictest wins).
 *
 * Why two seccomp phases in kiln-worker: the dynamic loader needs to open
 * the candidate .so, stat it and map it executable, so dlopen() cannot run
 * under the filter the candidate function deserves.  The load filter (default
 * SIGSYS) therefore allows file opening (confined by Landlock) and executable
 * mappings (never writable and executable at once), and nothing that makes
 * processes, threads, sockets or touches other processes.  After dlopen, the
 * run filter is stacked on top: no more opening or stat-ing of paths, no
 * executable mappings at all.  A stacked filter can never be removed, so the
 * candidate cannot undo the second step.  The compiler stage instead gets a
 * default-allow filter, since compilers fork, exec and use pipes; it denies
 * with EPERM the calls that reach outside the process tree (network,
 * ptrace, mounts, namespaces, modules, kill of process groups, ...).
 *
 * Every filter checks the architecture: only the native one is allowed (on
 * x86_64 libseccomp also rejects x32 numbers); others kill the process.
 * Arguments are compared with 64-bit values by libseccomp, so int arguments
 * are tested through masks where a sign matters. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <linux/landlock.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include <seccomp.h>

/* ---- Landlock constants newer than the oldest headers we build with ---- */
#ifndef __NR_landlock_create_ruleset
#define __NR_landlock_create_ruleset 444
#define __NR_landlock_add_rule 445
#define __NR_landlock_restrict_self 446
#endif
#ifndef LANDLOCK_CREATE_RULESET_VERSION
#define LANDLOCK_CREATE_RULESET_VERSION (1U << 0)
#endif
#ifndef LANDLOCK_ACCESS_FS_REFER
#define LANDLOCK_ACCESS_FS_REFER (1ULL << 13)
#endif
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15)
#endif
#ifndef LANDLOCK_ACCESS_NET_BIND_TCP
#define LANDLOCK_ACCESS_NET_BIND_TCP (1ULL << 0)
#define LANDLOCK_ACCESS_NET_CONNECT_TCP (1ULL << 1)
#endif
#ifndef LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
#define LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#define LANDLOCK_SCOPE_SIGNAL (1ULL << 1)
#endif
#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

/* The ruleset attribute as of ABI 6; older kernels get a shorter prefix. */
struct kiln_ll_ruleset_attr {
    uint64_t handled_access_fs;
    uint64_t handled_access_net; /* ABI >= 4 */
    uint64_t scoped;             /* ABI >= 6 */
};

#define LL_FS_V1 ((LANDLOCK_ACCESS_FS_MAKE_SYM << 1) - 1)
#define LL_FILE_RIGHTS                                                        \
    (LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE |             \
     LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_TRUNCATE |             \
     LANDLOCK_ACCESS_FS_IOCTL_DEV)
#define LL_RO_RIGHTS                                                          \
    (LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE |              \
     LANDLOCK_ACCESS_FS_READ_DIR)
#define LL_NO_DEVICES                                                         \
    (LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_BLOCK)

/* ---------------------------------------------------------------- report */

static void note_missing(kiln_sandbox_report *rep, const char *what)
{
    if (!rep)
        return;
    size_t used = strnlen(rep->missing, sizeof rep->missing);
    if (used >= sizeof rep->missing - 1)
        return;
    snprintf(rep->missing + used, sizeof rep->missing - used, "%s%s",
             used ? " " : "", what);
}

/* --------------------------------------------------------------- rlimits */

static rlim_t to_rlim(uint64_t v)
{
    return v >= (uint64_t)RLIM_INFINITY ? RLIM_INFINITY : (rlim_t)v;
}

static int set_limit(int res, const char *name, rlim_t soft, rlim_t hard,
                     kiln_error *err)
{
    struct rlimit rl = { .rlim_cur = soft, .rlim_max = hard };
    if (setrlimit(res, &rl) != 0)
        return kiln_fail(err, "sandbox: setrlimit(%s): %s", name,
                         strerror(errno));
    return 0;
}

int kiln_sandbox_rlimits(const kiln_limits *lim, kiln_sandbox_report *rep,
                         kiln_error *err)
{
    if (!lim)
        return kiln_fail(err, "sandbox: rlimits: no limits given");
    rlim_t cpu = to_rlim(lim->cpu_seconds);
    rlim_t cpu_hard = cpu == RLIM_INFINITY ? cpu : cpu + 1;
    rlim_t fsize = to_rlim(lim->file_bytes), nofile = to_rlim(lim->open_files);
    if (set_limit(RLIMIT_CPU, "RLIMIT_CPU", cpu, cpu_hard, err) ||
        set_limit(RLIMIT_FSIZE, "RLIMIT_FSIZE", fsize, fsize, err) ||
        set_limit(RLIMIT_NOFILE, "RLIMIT_NOFILE", nofile, nofile, err) ||
        set_limit(RLIMIT_CORE, "RLIMIT_CORE", 0, 0, err))
        return -1;
    if (lim->address_bytes) {
        rlim_t as = to_rlim(lim->address_bytes);
        if (set_limit(RLIMIT_AS, "RLIMIT_AS", as, as, err))
            return -1;
    }
    if (rep)
        rep->rlimits = 1;
    return 0;
}

/* -------------------------------------------------------------- Landlock */

static int ll_abi(void)
{
    long abi = syscall(__NR_landlock_create_ruleset, NULL, 0,
                       LANDLOCK_CREATE_RULESET_VERSION);
    return abi < 0 ? -1 : (int)abi;
}

static uint64_t ll_fs_rights(int abi)
{
    uint64_t r = LL_FS_V1;
    if (abi >= 2)
        r |= LANDLOCK_ACCESS_FS_REFER;
    if (abi >= 3)
        r |= LANDLOCK_ACCESS_FS_TRUNCATE;
    if (abi >= 5)
        r |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
    return r;
}

static void ll_note_gaps(kiln_sandbox_report *rep, int abi)
{
    if (abi < 3)
        note_missing(rep, "landlock-truncate");
    if (abi < 4)
        note_missing(rep, "landlock-net");
    if (abi < 5)
        note_missing(rep, "landlock-ioctl");
    if (abi < 6)
        note_missing(rep, "landlock-scope");
}

static int ll_create(int abi, kiln_error *err)
{
    struct kiln_ll_ruleset_attr attr = { .handled_access_fs = ll_fs_rights(abi) };
    size_t size = sizeof attr.handled_access_fs;
    if (abi >= 4) {
        attr.handled_access_net =
            LANDLOCK_ACCESS_NET_BIND_TCP | LANDLOCK_ACCESS_NET_CONNECT_TCP;
        size = offsetof(struct kiln_ll_ruleset_attr, scoped);
    }
    if (abi >= 6) {
        attr.scoped = LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | LANDLOCK_SCOPE_SIGNAL;
        size = sizeof attr;
    }
    long fd = syscall(__NR_landlock_create_ruleset, &attr, size, 0);
    if (fd < 0)
        return kiln_fail(err, "sandbox: landlock_create_ruleset: %s",
                         strerror(errno));
    return (int)fd;
}

/* Allow `rights` beneath `path`; a missing optional path is skipped. */
static int ll_allow(int ruleset, const char *path, uint64_t rights,
                    int optional, kiln_error *err)
{
    int fd = open(path, O_PATH | O_CLOEXEC);
    if (fd < 0) {
        if (optional && (errno == ENOENT || errno == ENOTDIR))
            return 0;
        return kiln_fail(err, "sandbox: landlock: open %s: %s", path,
                         strerror(errno));
    }
    struct stat st;
    int rc = fstat(fd, &st);
    if (rc == 0 && !S_ISDIR(st.st_mode))
        rights &= LL_FILE_RIGHTS;
    struct landlock_path_beneath_attr pb = { .allowed_access = rights,
                                             .parent_fd = fd };
    if (rc == 0)
        rc = (int)syscall(__NR_landlock_add_rule, ruleset,
                          LANDLOCK_RULE_PATH_BENEATH, &pb, 0);
    int saved = errno;
    close(fd);
    if (rc != 0)
        return kiln_fail(err, "sandbox: landlock: add rule for %s: %s", path,
                         strerror(saved));
    return 0;
}

static int ll_add_rules(int ruleset, int abi, const char *const *ro_paths,
                        const char *const *rw_paths, kiln_error *err)
{
    uint64_t handled = ll_fs_rights(abi);
    for (size_t i = 0; ro_paths && ro_paths[i]; i++)
        if (ll_allow(ruleset, ro_paths[i], LL_RO_RIGHTS & handled, 1, err))
            return -1;
    /* The first writable path is required (the worker's own directory);
     * later ones (device nodes, /proc) are skipped where missing. */
    for (size_t i = 0; rw_paths && rw_paths[i]; i++)
        if (ll_allow(ruleset, rw_paths[i], handled & ~LL_NO_DEVICES, i > 0, err))
            return -1;
    return 0;
}

int kiln_sandbox_landlock(const char *const *ro_paths, const char *rw_dir,
                          kiln_sandbox_report *rep, kiln_error *err)
{
    const char *rw[2] = {rw_dir, NULL};
    return kiln_sandbox_landlock_multi(ro_paths, rw, rep, err);
}

int kiln_sandbox_landlock_multi(const char *const *ro_paths, const char *const *rw_paths,
                                kiln_sandbox_report *rep, kiln_error *err)
{
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        return kiln_fail(err, "sandbox: PR_SET_NO_NEW_PRIVS: %s",
                         strerror(errno));
    int abi = ll_abi();
    if (rep)
        rep->landlock_abi = abi > 0 ? abi : 0;
    if (abi <= 0) {
        if (errno != ENOSYS && errno != EOPNOTSUPP)
            return kiln_fail(err, "sandbox: landlock ABI query: %s",
                             strerror(errno));
        note_missing(rep, "landlock");
        return 0;
    }
    ll_note_gaps(rep, abi);
    int ruleset = ll_create(abi, err);
    if (ruleset < 0)
        return -1;
    int rc = ll_add_rules(ruleset, abi, ro_paths, rw_paths, err);
    if (rc == 0 && syscall(__NR_landlock_restrict_self, ruleset, 0) != 0)
        rc = kiln_fail(err, "sandbox: landlock_restrict_self: %s",
                       strerror(errno));
    close(ruleset);
    if (rc == 0 && rep)
        rep->landlock = 1;
    return rc;
}

/* --------------------------------------------------------- seccomp common */

static scmp_filter_ctx sc_new(uint32_t def_action, int set_nnp,
                              const char *phase, kiln_error *err)
{
    scmp_filter_ctx ctx = seccomp_init(def_action);
    if (!ctx) {
        kiln_fail(err, "sandbox: seccomp %s: seccomp_init failed", phase);
        return NULL;
    }
    int rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH,
                              SCMP_ACT_KILL_PROCESS);
    if (rc == 0)
        rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, set_nnp ? 1 : 0);
    if (rc != 0) {
        seccomp_release(ctx);
        kiln_fail(err, "sandbox: seccomp %s: attributes: %s", phase,
                  strerror(-rc));
        return NULL;
    }
    return ctx;
}

/* Add a rule by syscall name.  Names this architecture lacks are skipped. */
static int sc_rule(scmp_filter_ctx ctx, uint32_t action, const char *name,
                   unsigned n, const struct scmp_arg_cmp *cmp, kiln_error *err)
{
    int nr = seccomp_syscall_resolve_name(name);
    if (nr < 0)
        return 0;
    int rc = seccomp_rule_add_array(ctx, action, nr, n, cmp);
    if (rc != 0)
        return kiln_fail(err, "sandbox: seccomp rule for %s: %s", name,
                         strerror(-rc));
    return 0;
}

static int sc_rules(scmp_filter_ctx ctx, uint32_t action,
                    const char *const *names, kiln_error *err)
{
    for (size_t i = 0; names[i]; i++)
        if (sc_rule(ctx, action, names[i], 0, NULL, err))
            return -1;
    return 0;
}

/* Load (if building succeeded) and release in every case. */
static int sc_finish(scmp_filter_ctx ctx, int built, const char *phase,
                     kiln_error *err)
{
    int rc = built;
    if (rc == 0) {
        int lrc = seccomp_load(ctx);
        if (lrc != 0)
            rc = kiln_fail(err, "sandbox: seccomp %s: load: %s", phase,
                           strerror(-lrc));
    }
    seccomp_release(ctx);
    return rc;
}

/* -------------------------------------------------------- compile phase */

static const char *const k_compile_deny[] = {
    "ptrace", "process_vm_readv", "process_vm_writev",
    "mount", "umount2", "pivot_root", "chroot", "reboot", "swapon", "swapoff",
    "kexec_load", "kexec_file_load", "init_module", "finit_module",
    "delete_module", "setns", "unshare", "bpf", "perf_event_open",
    "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register",
    "keyctl", "add_key", "request_key",
    /* other routes to the same ends, and root-only knobs */
    "fsopen", "fsconfig", "fsmount", "fspick", "move_mount", "open_tree",
    "mount_setattr", "pidfd_getfd", "open_by_handle_at", "name_to_handle_at",
    "mknod", "mknodat", "iopl", "ioperm", "syslog", "acct", "quotactl",
    "settimeofday", "clock_settime", "clock_adjtime", "adjtimex",
    "sethostname", "setdomainname", "vhangup", "fanotify_init",
    NULL,
};

static const unsigned long k_clone_ns_flags[] = {
    CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC,
    CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWTIME,
};

static int compile_socket_rules(scmp_filter_ctx ctx, kiln_error *err)
{
    struct scmp_arg_cmp not_unix = SCMP_A0(SCMP_CMP_NE, AF_UNIX);
    if (sc_rule(ctx, SCMP_ACT_ERRNO(EPERM), "socket", 1, &not_unix, err) ||
        sc_rule(ctx, SCMP_ACT_ERRNO(EPERM), "socketpair", 1, &not_unix, err))
        return -1;
    return 0;
}

/* kill(pid <= 0): process groups and "everyone".  pid is an int, so look
 * at the low 32 bits only: zero, or the sign bit set. */
static int compile_kill_rules(scmp_filter_ctx ctx, kiln_error *err)
{
    struct scmp_arg_cmp zero = SCMP_A0(SCMP_CMP_MASKED_EQ, 0xffffffffu, 0);
    struct scmp_arg_cmp neg =
        SCMP_A0(SCMP_CMP_MASKED_EQ, 0x80000000u, 0x80000000u);
    struct scmp_arg_cmp other_pid = SCMP_A0(SCMP_CMP_NE, 0);
    if (sc_rule(ctx, SCMP_ACT_ERRNO(EPERM), "kill", 1, &zero, err) ||
        sc_rule(ctx, SCMP_ACT_ERRNO(EPERM), "kill", 1, &neg, err) ||
        sc_rule(ctx, SCMP_ACT_ERRNO(EPERM), "prlimit64", 1, &other_pid, err))
        return -1;
    return 0;
}

/* Namespaces through clone flags (unshare is denied outright); clone3 keeps
 * its flags in memory, so it reports ENOSYS and glibc falls back to clone. */
static int compile_clone_rules(scmp_filter_ctx ctx, kiln_error *err)
{
    size_t n = sizeof k_clone_ns_flags / sizeof k_clone_ns_flags[0];
    for (size_t i = 0; i < n; i++) {
        unsigned long f = k_clone_ns_flags[i];
        struct scmp_arg_cmp has = SCMP_A0(SCMP_CMP_MASKED_EQ, f, f);
        if (sc_rule(ctx, SCMP_ACT_ERRNO(EPERM), "clone", 1, &has, err))
            return -1;
    }
    return sc_rule(ctx, SCMP_ACT_ERRNO(ENOSYS), "clone3", 0, NULL, err);
}

int kiln_sandbox_seccomp_compile(kiln_sandbox_report *rep, kiln_error *err)
{
    scmp_filter_ctx ctx = sc_new(SCMP_ACT_ALLOW, 1, "compile", err);
    if (!ctx)
        return -1;
    int built = sc_rules(ctx, SCMP_ACT_ERRNO(EPERM), k_compile_deny, err);
    if (built == 0)
        built = compile_socket_rules(ctx, err);
    if (built == 0)
        built = compile_kill_rules(ctx, err);
    if (built == 0)
        built = compile_clone_rules(ctx, err);
    if (sc_finish(ctx, built, "compile", err))
        return -1;
    if (rep)
        rep->seccomp_compile = 1;
    return 0;
}

/* ------------------------------------------------- load and run phases */

/* Allowed in both worker phases, unconditionally. */
static const char *const k_worker_allow[] = {
    "read", "write", "readv", "writev", "close", "fstat",
    "munmap", "mremap", "madvise", "brk", "futex",
    "clock_gettime", "clock_nanosleep", "nanosleep", "gettimeofday",
    "getpid", "gettid", "getrusage",
    "rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "sigaltstack",
    "exit", "exit_group", "sched_yield", "getrandom", "restart_syscall",
    NULL,
};

/* Only while loading: the dynamic loader opens, stats and reads the .so;
 * seccomp itself so the run filter can be stacked afterwards. */
static const char *const k_load_only_allow[] = {
    "open", "openat", "newfstatat", "statx", "lseek", "pread64", "seccomp",
    NULL,
};

/* Signals only to ourselves (abort() is tgkill(getpid(), gettid(), ...)). */
static int worker_signal_rules(scmp_filter_ctx ctx, kiln_error *err)
{
    struct scmp_arg_cmp self = SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)getpid());
    static const char *const names[] = { "kill", "tkill", "tgkill", NULL };
    for (size_t i = 0; names[i]; i++)
        if (sc_rule(ctx, SCMP_ACT_ALLOW, names[i], 1, &self, err))
            return -1;
    return 0;
}

static int worker_common_rules(scmp_filter_ctx ctx, kiln_error *err)
{
    if (sc_rules(ctx, SCMP_ACT_ALLOW, k_worker_allow, err) ||
        worker_signal_rules(ctx, err) ||
        sc_rule(ctx, SCMP_ACT_ERRNO(ENOSYS), "clone3", 0, NULL, err))
        return -1;
    return 0;
}

/* mmap/mprotect allowed when the protection has no `bit`. */
static int prot_without(scmp_filter_ctx ctx, unsigned bit, kiln_error *err)
{
    struct scmp_arg_cmp no_bit = SCMP_A2(SCMP_CMP_MASKED_EQ, bit, 0);
    if (sc_rule(ctx, SCMP_ACT_ALLOW, "mmap", 1, &no_bit, err) ||
        sc_rule(ctx, SCMP_ACT_ALLOW, "mprotect", 1, &no_bit, err))
        return -1;
    return 0;
}

int kiln_sandbox_seccomp_load(kiln_sandbox_report *rep, kiln_error *err)
{
    scmp_filter_ctx ctx = sc_new(SCMP_ACT_TRAP, 1, "load", err);
    if (!ctx)
        return -1;
    int built = worker_common_rules(ctx, err);
    if (built == 0)
        built = sc_rules(ctx, SCMP_ACT_ALLOW, k_load_only_allow, err);
    /* executable or writable, never both */
    if (built == 0)
        built = prot_without(ctx, PROT_EXEC, err);
    if (built == 0)
        built = prot_without(ctx, PROT_WRITE, err);
    if (sc_finish(ctx, built, "load", err))
        return -1;
    if (rep)
        rep->seccomp_load = 1;
    return 0;
}

/* glibc >= 2.33 implements fstat() as newfstatat(fd, "", AT_EMPTY_PATH). */
static int run_fstat_rule(scmp_filter_ctx ctx, kiln_error *err)
{
    struct scmp_arg_cmp empty =
        SCMP_A3(SCMP_CMP_MASKED_EQ, AT_EMPTY_PATH, AT_EMPTY_PATH);
    return sc_rule(ctx, SCMP_ACT_ALLOW, "newfstatat", 1, &empty, err);
}

int kiln_sandbox_seccomp_run(kiln_sandbox_report *rep, kiln_error *err)
{
    /* no_new_privs is already set by the load filter; the prctl call that
     * libseccomp would make is not on the allowlist. */
    scmp_filter_ctx ctx = sc_new(SCMP_ACT_TRAP, 0, "run", err);
    if (!ctx)
        return -1;
    int built = worker_common_rules(ctx, err);
    if (built == 0)
        built = prot_without(ctx, PROT_EXEC, err);
    if (built == 0)
        built = run_fstat_rule(ctx, err);
    if (sc_finish(ctx, built, "run", err))
        return -1;
    if (rep)
        rep->seccomp_run = 1;
    return 0;
}

/* ------------------------------------------------------- SIGSYS handler */

static struct {
    int nr;
    const char *name;
} const k_sysnames[] = {
#define KILN_SYSNAME(n) { SCMP_SYS(n), #n }
    KILN_SYSNAME(socket), KILN_SYSNAME(socketpair), KILN_SYSNAME(connect),
    KILN_SYSNAME(bind), KILN_SYSNAME(listen), KILN_SYSNAME(accept),
    KILN_SYSNAME(accept4), KILN_SYSNAME(sendto), KILN_SYSNAME(sendmsg),
    KILN_SYSNAME(recvfrom), KILN_SYSNAME(recvmsg), KILN_SYSNAME(clone),
    KILN_SYSNAME(clone3), KILN_SYSNAME(fork), KILN_SYSNAME(vfork),
    KILN_SYSNAME(execve), KILN_SYSNAME(execveat), KILN_SYSNAME(open),
    KILN_SYSNAME(openat), KILN_SYSNAME(openat2), KILN_SYSNAME(creat),
    KILN_SYSNAME(newfstatat), KILN_SYSNAME(statx), KILN_SYSNAME(lseek),
    KILN_SYSNAME(pread64), KILN_SYSNAME(ptrace),
    KILN_SYSNAME(process_vm_readv), KILN_SYSNAME(process_vm_writev),
    KILN_SYSNAME(kill), KILN_SYSNAME(tkill), KILN_SYSNAME(tgkill),
    KILN_SYSNAME(mmap), KILN_SYSNAME(mprotect), KILN_SYSNAME(pkey_mprotect),
    KILN_SYSNAME(memfd_create), KILN_SYSNAME(prctl), KILN_SYSNAME(seccomp),
    KILN_SYSNAME(ioctl), KILN_SYSNAME(fcntl), KILN_SYSNAME(dup),
    KILN_SYSNAME(dup2), KILN_SYSNAME(dup3), KILN_SYSNAME(pipe),
    KILN_SYSNAME(pipe2), KILN_SYSNAME(wait4), KILN_SYSNAME(mount),
    KILN_SYSNAME(umount2), KILN_SYSNAME(unshare), KILN_SYSNAME(setns),
    KILN_SYSNAME(chdir), KILN_SYSNAME(mkdir), KILN_SYSNAME(unlink),
    KILN_SYSNAME(unlinkat), KILN_SYSNAME(rename), KILN_SYSNAME(getdents64),
    KILN_SYSNAME(setrlimit), KILN_SYSNAME(prlimit64), KILN_SYSNAME(reboot),
    KILN_SYSNAME(bpf), KILN_SYSNAME(io_uring_setup), KILN_SYSNAME(uname),
    KILN_SYSNAME(sysinfo), KILN_SYSNAME(poll), KILN_SYSNAME(ppoll),
    KILN_SYSNAME(select), KILN_SYSNAME(pselect6), KILN_SYSNAME(shmget),
    KILN_SYSNAME(shmat), KILN_SYSNAME(setuid), KILN_SYSNAME(setgid),
#undef KILN_SYSNAME
};

static int violation_fd = -1;
static int violation_exit = 1;

static const char *sysname(int nr)
{
    for (size_t i = 0; i < sizeof k_sysnames / sizeof k_sysnames[0]; i++)
        if (k_sysnames[i].nr == nr)
            return k_sysnames[i].name;
    return "?";
}

/* Async-signal-safe append of s at *pos (bounded by end). */
static char *put_str(char *pos, char *end, const char *s)
{
    while (*s && pos < end)
        *pos++ = *s++;
    return pos;
}

static char *put_int(char *pos, char *end, int v)
{
    char digits[16];
    int n = 0;
    unsigned u = v < 0 ? 0u - (unsigned)v : (unsigned)v;
    do {
        digits[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u && n < (int)sizeof digits);
    if (v < 0 && pos < end)
        *pos++ = '-';
    while (n > 0 && pos < end)
        *pos++ = digits[--n];
    return pos;
}

static void on_sigsys(int sig, siginfo_t *info, void *ucontext)
{
    (void)sig;
    (void)ucontext;
    char line[128], *end = line + sizeof line, *p = line;
    p = put_str(p, end, "sandbox-violation syscall=");
    p = put_int(p, end, info->si_syscall);
    p = put_str(p, end, " name=");
    p = put_str(p, end, sysname(info->si_syscall));
    p = put_str(p, end, "\n");
    if (violation_fd >= 0) {
        ssize_t w = write(violation_fd, line, (size_t)(p - line));
        (void)w;
    }
    _exit(violation_exit);
}

void kiln_sandbox_on_violation(int report_fd, int exit_code)
{
    violation_fd = report_fd;
    violation_exit = exit_code;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigsys;
    sa.sa_flags = SA_SIGINFO;
    sigfillset(&sa.sa_mask);
    sigaction(SIGSYS, &sa, NULL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGSYS);
    sigprocmask(SIG_UNBLOCK, &set, NULL);
}

/* -------------------------------------------------------------- describe */

static size_t put(char *buf, size_t len, size_t at, const char *s)
{
    if (at >= len)
        return at;
    int n = snprintf(buf + at, len - at, "%s", s);
    return n < 0 ? at : at + (size_t)n;
}

static size_t describe_seccomp(const kiln_sandbox_report *rep, char *buf,
                               size_t len, size_t at)
{
    const char *sep = "seccomp(";
    const int on[] = { rep->seccomp_compile, rep->seccomp_load,
                       rep->seccomp_run };
    const char *names[] = { "compile", "load", "run" };
    for (size_t i = 0; i < 3; i++) {
        if (!on[i])
            continue;
        at = put(buf, len, put(buf, len, at, sep), names[i]);
        sep = ",";
    }
    return sep[0] == ',' ? put(buf, len, at, ")") : at;
}

void kiln_sandbox_describe(const kiln_sandbox_report *rep, char *buf,
                           size_t len)
{
    if (!buf || len == 0)
        return;
    buf[0] = '\0';
    if (!rep)
        return;
    char ll[32];
    snprintf(ll, sizeof ll, "landlock(abi %d) ", rep->landlock_abi);
    size_t at = rep->landlock ? put(buf, len, 0, ll) : 0;
    at = describe_seccomp(rep, buf, len, at);
    if (at > 0 && at < len && buf[at - 1] != ' ')
        at = put(buf, len, at, " ");
    at = rep->rlimits ? put(buf, len, at, "rlimits") : at;
    if (at > 0 && at < len && buf[at - 1] == ' ')
        buf[--at] = '\0';
    if (at == 0)
        at = put(buf, len, at, "none");
    if (rep->missing[0]) {
        at = put(buf, len, at, " missing: ");
        put(buf, len, at, rep->missing);
    }
}
