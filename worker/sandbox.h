/* sandbox.h - confinement of the processes that touch untrusted candidates.
 *
 * Used by the forked child before exec (rlimits, Landlock, compile-phase
 * seccomp) and by kiln-worker itself (load-phase seccomp before dlopen,
 * run-phase seccomp after it).  See sandbox.c for the design.  Nothing here
 * prints; failures come back through kiln_error. */
#ifndef KILN_SANDBOX_H
#define KILN_SANDBOX_H

#include <stddef.h>
#include <stdint.h>

#include "kiln_error.h"

/* What a compile (cc for the CPU backend, NVRTC for CUDA) may take: a
 * source that makes the compiler use more is `resource-limit`, not a
 * compile error. */
#define KILN_CC_SECONDS 30
#define KILN_CC_ADDRESS_BYTES (2ull << 30)

typedef struct kiln_sandbox_report {
    int landlock_abi;        /* 0 if unavailable */
    int landlock;            /* 1 once restrict_self succeeded */
    int seccomp_load;        /* 1 once the load-phase filter is installed */
    int seccomp_run;         /* 1 once the run-phase filter is installed */
    int rlimits;             /* 1 once the rlimits were set */
    char missing[256];       /* protections that could not be applied, "" if none */
    int seccomp_compile;     /* 1 once the compile-phase filter is installed */
} kiln_sandbox_report;

typedef struct kiln_limits {
    uint64_t cpu_seconds;    /* RLIMIT_CPU (soft; hard = soft+1) */
    uint64_t file_bytes;     /* RLIMIT_FSIZE */
    uint64_t open_files;     /* RLIMIT_NOFILE */
    uint64_t address_bytes;  /* RLIMIT_AS; 0 = leave unset (needed under ASan) */
} kiln_limits;               /* RLIMIT_CORE is always set to 0 */

/* Set the limits above (soft = hard except RLIMIT_CPU) and RLIMIT_CORE = 0.
 * UINT64_MAX means unlimited.  rep may be NULL. */
int kiln_sandbox_rlimits(const kiln_limits *lim, kiln_sandbox_report *rep,
                         kiln_error *err);

/* Landlock: read+execute on each of ro_paths (NULL-terminated; ones that do
 * not exist are skipped), all rights except creating device nodes on rw_dir
 * (may be NULL: nothing writable), nothing else on the filesystem.  Handles
 * every filesystem right the running ABI knows; from ABI 4 also denies TCP
 * bind/connect and from ABI 6 scopes signals and abstract UNIX sockets to
 * the sandbox.  Sets PR_SET_NO_NEW_PRIVS.  If Landlock is unavailable returns
 * 0 and records "landlock" in rep->missing. */
int kiln_sandbox_landlock(const char *const *ro_paths, const char *rw_dir,
                          kiln_sandbox_report *rep, kiln_error *err);

/* The same with several writable paths (NULL-terminated); the first must
 * exist. The CUDA worker needs its directory, /dev (the driver's device
 * nodes, with ioctl) and /proc. */
int kiln_sandbox_landlock_multi(const char *const *ro_paths, const char *const *rw_paths,
                                kiln_sandbox_report *rep, kiln_error *err);

/* Compile phase (the C compiler and its subprocesses): default allow,
 * EPERM for the dangerous rest.  Sets rep->seccomp_compile. */
int kiln_sandbox_seccomp_compile(kiln_sandbox_report *rep, kiln_error *err);

/* Load phase (kiln-worker before dlopen): default SIGSYS, allowlist. */
int kiln_sandbox_seccomp_load(kiln_sandbox_report *rep, kiln_error *err);

/* Run phase (kiln-worker after dlopen, stacked on the load filter). */
int kiln_sandbox_seccomp_run(kiln_sandbox_report *rep, kiln_error *err);

/* SIGSYS handler: writes "sandbox-violation syscall=<nr> name=<name>\n" to
 * report_fd, then _exit(exit_code). */
void kiln_sandbox_on_violation(int report_fd, int exit_code);

/* "landlock(abi 7) seccomp(load,run) rlimits" plus " missing: ..." */
void kiln_sandbox_describe(const kiln_sandbox_report *rep, char *buf,
                           size_t len);

#endif
