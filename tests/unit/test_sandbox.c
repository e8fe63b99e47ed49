/* test_sandbox.c - cmocka tests for worker/sandbox.c.
 *
 * Every test forks a child that applies sandbox pieces and tries something;
 * the child reports through its exit status (0 = all expectations held,
 * otherwise the number of the failed step) and a pipe (violation lines,
 * error messages).  Children always leave with _exit so that no atexit or
 * leak-check machinery runs under the filters. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "sandbox.h"

#define VIOLATION_EXIT 99
#define NO_LANDLOCK 77

typedef int (*child_fn)(int fd, void *arg);

typedef struct child_result {
    int status;
    char out[1024];
} child_result;

typedef struct dirs {
    char rw[64];
    char other[64];
} dirs;

/* ------------------------------------------------------------- helpers */

static void run_child(child_fn fn, void *arg, child_result *res)
{
    int p[2];
    assert_int_equal(pipe2(p, O_CLOEXEC), 0);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(p[0]);
        _exit(fn(p[1], arg));
    }
    close(p[1]);
    size_t n = 0;
    for (;;) {
        ssize_t r = read(p[0], res->out + n, sizeof res->out - 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
        if (n == sizeof res->out - 1)
            break;
    }
    res->out[n] = '\0';
    close(p[0]);
    assert_int_equal(waitpid(pid, &res->status, 0), pid);
}

static int say(int fd, int code, const char *msg)
{
    ssize_t w = write(fd, msg, strlen(msg));
    (void)w;
    return code;
}

static void expect_ok(const child_result *res)
{
    if (!WIFEXITED(res->status) || WEXITSTATUS(res->status) != 0)
        print_message("child status 0x%x, output: %s\n", res->status,
                      res->out);
    assert_true(WIFEXITED(res->status));
    assert_int_equal(WEXITSTATUS(res->status), 0);
}

static void expect_violation(const child_result *res, int nr,
                             const char *name)
{
    char want[128];
    snprintf(want, sizeof want, "sandbox-violation syscall=%d name=%s\n",
             nr, name);
    if (!WIFEXITED(res->status) || strcmp(res->out, want) != 0)
        print_message("child status 0x%x, output: %s\n", res->status,
                      res->out);
    assert_true(WIFEXITED(res->status));
    assert_int_equal(WEXITSTATUS(res->status), VIOLATION_EXIT);
    assert_string_equal(res->out, want);
}

static void write_file(const char *dir, const char *name, const char *text)
{
    char path[128];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
}

/* Read the start of path; 0 if it reads back `want`. */
static int read_matches(const char *path, const char *want)
{
    char buf[64] = { 0 };
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n < 0)
        return -1;
    return want && strncmp(buf, want, strlen(want)) != 0 ? -1 : 0;
}

static int with_limits(int fd)
{
    kiln_limits lim = { .cpu_seconds = 10, .file_bytes = 1 << 20,
                        .open_files = 64, .address_bytes = 0 };
    kiln_error err = {0};
    if (kiln_sandbox_rlimits(&lim, NULL, &err))
        return say(fd, 90, err.msg);
    return 0;
}

/* rlimits (core 0), violation handler, load filter. */
static int enter_load(int fd)
{
    kiln_error err = {0};
    if (with_limits(fd))
        return 90;
    kiln_sandbox_on_violation(fd, VIOLATION_EXIT);
    if (kiln_sandbox_seccomp_load(NULL, &err))
        return say(fd, 91, err.msg);
    return 0;
}

static int enter_run(int fd)
{
    kiln_error err = {0};
    if (enter_load(fd))
        return 92;
    if (kiln_sandbox_seccomp_run(NULL, &err))
        return say(fd, 93, err.msg);
    return 0;
}

static int setup_dirs(void **state)
{
    dirs *d = calloc(1, sizeof *d);
    if (!d)
        return -1;
    strcpy(d->rw, "/tmp/kiln-sb-rw-XXXXXX");
    strcpy(d->other, "/tmp/kiln-sb-other-XXXXXX");
    if (!mkdtemp(d->rw) || !mkdtemp(d->other)) {
        free(d);
        return -1;
    }
    *state = d;
    return 0;
}

static void remove_dir(const char *dir)
{
    static const char *const names[] = { "inside", "secret", "created", NULL };
    char path[128];
    for (size_t i = 0; names[i]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        unlink(path);
    }
    rmdir(dir);
}

static int teardown_dirs(void **state)
{
    dirs *d = *state;
    remove_dir(d->rw);
    remove_dir(d->other);
    free(d);
    return 0;
}

/* ------------------------------------------------------------ Landlock */

static int child_landlock(int fd, void *arg)
{
    const dirs *d = arg;
    const char *const ro[] = { "/usr/lib", "/no/such/kiln/path", NULL };
    kiln_sandbox_report rep = { 0 };
    kiln_error err = {0};
    char path[128];
    if (kiln_sandbox_landlock(ro, d->rw, &rep, &err))
        return say(fd, 1, err.msg);
    if (rep.landlock_abi == 0)
        return NO_LANDLOCK;
    if (!rep.landlock)
        return 2;
    snprintf(path, sizeof path, "%s/secret", d->other);
    errno = 0;
    if (open(path, O_RDONLY | O_CLOEXEC) >= 0 || errno != EACCES)
        return 3;
    snprintf(path, sizeof path, "%s/inside", d->rw);
    if (read_matches(path, "inside text"))
        return 4;
    if (read_matches("/usr/lib/os-release", NULL))
        return 5;
    snprintf(path, sizeof path, "%s/created", d->rw);
    int w = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    if (w < 0)
        return 6;
    close(w);
    errno = 0;
    if (open("/usr/lib/kiln-sandbox-test", O_WRONLY | O_CREAT, 0600) >= 0 ||
        errno != EACCES)
        return 7;
    return 0;
}

static void test_landlock_confines_files(void **state)
{
    dirs *d = *state;
    write_file(d->other, "secret", "secret text");
    write_file(d->rw, "inside", "inside text");
    child_result res;
    run_child(child_landlock, d, &res);
    if (WIFEXITED(res.status) && WEXITSTATUS(res.status) == NO_LANDLOCK)
        skip();
    expect_ok(&res);
}

/* ------------------------------------------------------------- rlimits */

static int limit_is(int res, rlim_t soft, rlim_t hard)
{
    struct rlimit rl;
    return getrlimit(res, &rl) == 0 && rl.rlim_cur == soft &&
           rl.rlim_max == hard;
}

static int child_rlimits(int fd, void *arg)
{
    (void)arg;
    kiln_limits lim = { .cpu_seconds = 5, .file_bytes = 1 << 20,
                        .open_files = 32, .address_bytes = 0 };
#ifndef __SANITIZE_ADDRESS__
    lim.address_bytes = (uint64_t)8 << 30;
#endif
    kiln_sandbox_report rep = { 0 };
    kiln_error err = {0};
    if (kiln_sandbox_rlimits(&lim, &rep, &err))
        return say(fd, 1, err.msg);
    if (!rep.rlimits)
        return 2;
    if (!limit_is(RLIMIT_CPU, 5, 6))
        return 3;
    if (!limit_is(RLIMIT_FSIZE, 1 << 20, 1 << 20))
        return 4;
    if (!limit_is(RLIMIT_NOFILE, 32, 32))
        return 5;
    if (!limit_is(RLIMIT_CORE, 0, 0))
        return 6;
    if (lim.address_bytes &&
        !limit_is(RLIMIT_AS, lim.address_bytes, lim.address_bytes))
        return 7;
    return 0;
}

static void test_rlimits_applied(void **state)
{
    (void)state;
    child_result res;
    run_child(child_rlimits, NULL, &res);
    expect_ok(&res);
}

/* ------------------------------------------------------- compile filter */

static int denied(long rc)
{
    return rc == -1 && errno == EPERM;
}

static int fork_exec_true(void)
{
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        execl("/bin/true", "true", (char *)NULL);
        _exit(127);
    }
    int st;
    if (waitpid(pid, &st, 0) != pid)
        return -1;
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

static int child_compile(int fd, void *arg)
{
    (void)arg;
    kiln_sandbox_report rep = { 0 };
    kiln_error err = {0};
    if (kiln_sandbox_seccomp_compile(&rep, &err))
        return say(fd, 1, err.msg);
    if (!rep.seccomp_compile)
        return 2;
    if (!denied(socket(AF_INET, SOCK_STREAM, 0)) ||
        !denied(socket(AF_INET6, SOCK_DGRAM, 0)))
        return 3;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
        return 4;
    close(sv[0]);
    close(sv[1]);
    if (!denied(socketpair(AF_INET, SOCK_STREAM, 0, sv)))
        return 5;
    if (fork_exec_true() != 0)
        return 6;
    /* signal 0: harmless even if the filter were missing */
    if (!denied(kill(-1, 0)) || !denied(kill(0, 0)) || kill(getpid(), 0))
        return 7;
    if (!denied(unshare(CLONE_NEWUSER)) || !denied(ptrace(PTRACE_TRACEME)))
        return 8;
    struct rlimit rl;
    if (!denied(prlimit(1, RLIMIT_NOFILE, NULL, &rl)) ||
        getrlimit(RLIMIT_NOFILE, &rl) || setrlimit(RLIMIT_NOFILE, &rl))
        return 9;
    return 0;
}

static void test_compile_filter(void **state)
{
    (void)state;
    child_result res;
    run_child(child_compile, NULL, &res);
    expect_ok(&res);
}

/* ---------------------------------------------------------- load filter */

static int child_load_socket(int fd, void *arg)
{
    (void)arg;
    if (enter_load(fd))
        return 1;
    socket(AF_INET, SOCK_STREAM, 0);
    return 2;
}

static void test_load_socket_violation(void **state)
{
    (void)state;
    child_result res;
    run_child(child_load_socket, NULL, &res);
    expect_violation(&res, SYS_socket, "socket");
}

static int child_load_fork(int fd, void *arg)
{
    (void)arg;
    if (enter_load(fd))
        return 1;
    pid_t pid = fork();
    if (pid == 0)
        _exit(3);
    return 2;
}

static void test_load_fork_violation(void **state)
{
    (void)state;
    child_result res;
    run_child(child_load_fork, NULL, &res);
    expect_violation(&res, SYS_clone, "clone");
}

static int child_load_open(int fd, void *arg)
{
    const dirs *d = arg;
    char path[128];
    if (enter_load(fd))
        return 1;
    snprintf(path, sizeof path, "%s/inside", d->rw);
    return read_matches(path, "inside text") ? 2 : 0;
}

static void test_load_open_works(void **state)
{
    dirs *d = *state;
    write_file(d->rw, "inside", "inside text");
    child_result res;
    run_child(child_load_open, d, &res);
    expect_ok(&res);
}

static int child_load_dlopen(int fd, void *arg)
{
    (void)arg;
    if (enter_load(fd))
        return 1;
    void *m = dlopen("libm.so.6", RTLD_NOW);
    if (!m || !dlsym(m, "cos"))
        return say(fd, 2, dlerror());
    /* one that is not already mapped, so the loader really opens a file */
    void *r = dlopen("libresolv.so.2", RTLD_NOW);
    if (!r || !dlsym(r, "res_mkquery"))
        return say(fd, 3, dlerror());
    return 0;
}

static void test_load_dlopen_works(void **state)
{
    (void)state;
    child_result res;
    run_child(child_load_dlopen, NULL, &res);
    expect_ok(&res);
}

static int child_load_wx(int fd, void *arg)
{
    (void)arg;
    if (enter_load(fd))
        return 1;
    void *rx = mmap(NULL, 4096, PROT_READ | PROT_EXEC,
                    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (rx == MAP_FAILED)
        return 2;
    mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
         MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return 3;
}

static void test_load_write_exec_violation(void **state)
{
    (void)state;
    child_result res;
    run_child(child_load_wx, NULL, &res);
    expect_violation(&res, SYS_mmap, "mmap");
}

/* ----------------------------------------------------------- run filter */

static int child_run_open(int fd, void *arg)
{
    (void)arg;
    if (enter_run(fd))
        return 1;
    open("/usr/lib/os-release", O_RDONLY | O_CLOEXEC);
    return 2;
}

static void test_run_openat_violation(void **state)
{
    (void)state;
    child_result res;
    run_child(child_run_open, NULL, &res);
    expect_violation(&res, SYS_openat, "openat");
}

static int child_run_mmap_exec(int fd, void *arg)
{
    (void)arg;
    if (enter_run(fd))
        return 1;
    mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1,
         0);
    return 2;
}

static void test_run_mmap_exec_violation(void **state)
{
    (void)state;
    child_result res;
    run_child(child_run_mmap_exec, NULL, &res);
    expect_violation(&res, SYS_mmap, "mmap");
}

static int child_run_mprotect_exec(int fd, void *arg)
{
    (void)arg;
    if (enter_run(fd))
        return 1;
    void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return 2;
    mprotect(p, 4096, PROT_READ | PROT_EXEC);
    return 3;
}

static void test_run_mprotect_exec_violation(void **state)
{
    (void)state;
    child_result res;
    run_child(child_run_mprotect_exec, NULL, &res);
    expect_violation(&res, SYS_mprotect, "mprotect");
}

static int child_run_malloc(int fd, void *arg)
{
    (void)arg;
    if (enter_run(fd))
        return 1;
    size_t size = (size_t)100 << 20;
    char *volatile p = malloc(size);
    if (!p)
        return 2;
    memset(p, 0x5a, size);
    if (p[size - 1] != 0x5a)
        return 3;
    free(p);
    struct stat st;
    if (fstat(fd, &st) != 0)
        return 4;
    errno = 0;
    if (syscall(SYS_clone3, NULL, 0) != -1 || errno != ENOSYS)
        return 5;
    return 0;
}

static void test_run_malloc_works(void **state)
{
    (void)state;
    child_result res;
    run_child(child_run_malloc, NULL, &res);
    expect_ok(&res);
}

static int child_run_kill_other(int fd, void *arg)
{
    (void)arg;
    if (enter_run(fd))
        return 1;
    kill(1, 0);
    return 2;
}

static void test_run_kill_other_violation(void **state)
{
    (void)state;
    child_result res;
    run_child(child_run_kill_other, NULL, &res);
    expect_violation(&res, SYS_kill, "kill");
}

static int child_run_kill_self(int fd, void *arg)
{
    (void)arg;
    if (enter_run(fd))
        return 1;
    return kill(getpid(), 0) == 0 ? 0 : 2;
}

static void test_run_kill_self_works(void **state)
{
    (void)state;
    child_result res;
    run_child(child_run_kill_self, NULL, &res);
    expect_ok(&res);
}

static int child_run_abort(int fd, void *arg)
{
    (void)arg;
    if (enter_run(fd))
        return 1;
    abort();
}

static void test_run_abort_is_sigabrt(void **state)
{
    (void)state;
    child_result res;
    run_child(child_run_abort, NULL, &res);
    if (!WIFSIGNALED(res.status))
        print_message("child status 0x%x, output: %s\n", res.status,
                      res.out);
    assert_true(WIFSIGNALED(res.status));
    assert_int_equal(WTERMSIG(res.status), SIGABRT);
    assert_string_equal(res.out, "");
}

static int child_report(int fd, void *arg)
{
    (void)arg;
    kiln_sandbox_report rep = { 0 };
    kiln_error err = {0};
    if (with_limits(fd))
        return 1;
    if (kiln_sandbox_seccomp_load(&rep, &err) ||
        kiln_sandbox_seccomp_run(&rep, &err))
        return say(fd, 2, err.msg);
    return rep.seccomp_load && rep.seccomp_run ? 0 : 3;
}

static void test_report_flags(void **state)
{
    (void)state;
    child_result res;
    run_child(child_report, NULL, &res);
    expect_ok(&res);
}

/* ------------------------------------------------------------ describe */

static void test_describe(void **state)
{
    (void)state;
    char buf[256];
    kiln_sandbox_report rep = { .landlock_abi = 7, .landlock = 1,
                                .seccomp_load = 1, .seccomp_run = 1,
                                .rlimits = 1 };
    kiln_sandbox_describe(&rep, buf, sizeof buf);
    assert_string_equal(buf, "landlock(abi 7) seccomp(load,run) rlimits");

    kiln_sandbox_report bare = { .seccomp_compile = 1 };
    strcpy(bare.missing, "landlock");
    kiln_sandbox_describe(&bare, buf, sizeof buf);
    assert_string_equal(buf, "seccomp(compile) missing: landlock");

    kiln_sandbox_report none = { 0 };
    kiln_sandbox_describe(&none, buf, sizeof buf);
    assert_string_equal(buf, "none");

    char tiny[8];
    kiln_sandbox_describe(&rep, tiny, sizeof tiny);
    assert_string_equal(tiny, "landloc");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_landlock_confines_files,
                                        setup_dirs, teardown_dirs),
        cmocka_unit_test(test_rlimits_applied),
        cmocka_unit_test(test_compile_filter),
        cmocka_unit_test(test_load_socket_violation),
        cmocka_unit_test(test_load_fork_violation),
        cmocka_unit_test_setup_teardown(test_load_open_works, setup_dirs,
                                        teardown_dirs),
        cmocka_unit_test(test_load_dlopen_works),
        cmocka_unit_test(test_load_write_exec_violation),
        cmocka_unit_test(test_run_openat_violation),
        cmocka_unit_test(test_run_mmap_exec_violation),
        cmocka_unit_test(test_run_mprotect_exec_violation),
        cmocka_unit_test(test_run_malloc_works),
        cmocka_unit_test(test_run_kill_other_violation),
        cmocka_unit_test(test_run_kill_self_works),
        cmocka_unit_test(test_run_abort_is_sigabrt),
        cmocka_unit_test(test_report_flags),
        cmocka_unit_test(test_describe),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
