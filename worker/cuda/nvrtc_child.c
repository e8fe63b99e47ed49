/* nvrtc_child.c - one NVRTC compile in a child process under limits (see
 * nvrtc_child.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE   /* dladdr */
#endif
#include "nvrtc_child.h"

#include <dlfcn.h>
#include <errno.h>
#include <libgen.h>
#include <nvrtc.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandbox.h"   /* KILN_CC_SECONDS, KILN_CC_ADDRESS_BYTES */
#include "worker_io.h"

typedef struct result_head {
    int32_t rc, pad;
    uint64_t n, loglen, lowlen;
} result_head;

/* A Landlock layer on top of the worker's: read access to CUDA's include
 * directory and to NVRTC's own library directory (it loads
 * libnvrtc-builtins from there), nothing else and nothing
 * writable. The worker's layer lets it read /etc, /proc and its own
 * directory, and NVRTC opens any path an #include names; here such an
 * #include cannot open the file, whatever the include check
 * (rtc_includes.h) missed. Where Landlock is missing this adds nothing
 * (the worker's report already says so). */
static int confine_compiler(const kiln_nvrtc_in *in, char *why, size_t len)
{
    char lib[4096] = "";
    Dl_info info;
    if (dladdr((void *)nvrtcVersion, &info) && info.dli_fname && strlen(info.dli_fname) < sizeof lib) {
        strcpy(lib, info.dli_fname);
        dirname(lib);
    }
    /* NVRTC dlopens its builtins by soname, which the dynamic loader looks
     * up in /etc/ld.so.cache: loaded here first, the name is found loaded. */
    int major = 0, minor = 0;
    if (lib[0] && nvrtcVersion(&major, &minor) == NVRTC_SUCCESS) {
        char builtins[4200];
        snprintf(builtins, sizeof builtins, "%s/libnvrtc-builtins.so.%d.%d", lib, major, minor);
        dlopen(builtins, RTLD_NOW | RTLD_GLOBAL);   /* kept: the child exits after the compile */
    }
    const char *ro[3] = {0};
    int n = 0;
    if (in->cuda_include)
        ro[n++] = in->cuda_include;
    if (lib[0] == '/')
        ro[n++] = lib;
    /* NVRTC looks a quoted #include up in the working directory first: the
     * worker's, with the job's files, unless it is CUDA's own. */
    if (in->cuda_include && chdir(in->cuda_include) < 0) {
        snprintf(why, len, "cannot enter CUDA's include directory %s: %s", in->cuda_include,
                 strerror(errno));
        return -1;
    }
    kiln_error err;
    if (kiln_sandbox_landlock(ro, NULL, NULL, &err) < 0) {
        snprintf(why, len, "cannot confine NVRTC: %s", err.msg);
        return -1;
    }
    return 0;
}

/* The child: limits, the compile, the result down the pipe. RLIMIT_DATA
 * (heap and private mappings), not RLIMIT_AS: NVRTC maps large libraries. */
static void child_main(int fd, const kiln_nvrtc_in *in)
{
    struct rlimit data = {KILN_CC_ADDRESS_BYTES, KILN_CC_ADDRESS_BYTES};
    struct rlimit cpu = {KILN_CC_SECONDS, KILN_CC_SECONDS + 1};
#if !defined(__SANITIZE_ADDRESS__)
    /* AddressSanitizer's shadow is terabytes of private mappings, already
     * past any data limit: a sanitizer build's compiles have none. */
    setrlimit(RLIMIT_DATA, &data);
#else
    (void)data;
#endif
    setrlimit(RLIMIT_CPU, &cpu);
    kiln_nvrtc_out out = {0};
    char why[1200];
    int rc = -1;
    if (confine_compiler(in, why, sizeof why) < 0)
        out.log = strdup(why);
    else
        rc = kiln_nvrtc_compile(in, &out);
    char *log = out.log;
    /* NVRTC says so itself (its front end as a "catastrophic error"): the
     * memory limit. */
    if (log && ((rc < 0 && strstr(log, "OUT_OF_MEMORY")) ||
                (rc > 0 && strstr(log, "catastrophic error: out of memory"))))
        _exit(3);
    result_head h = {.rc = rc, .n = out.cubin_len, .loglen = log ? strlen(log) : 0,
                     .lowlen = out.lowered_len};
    int bad = kiln_write_full(fd, &h, sizeof h) < 0 || kiln_write_full(fd, out.cubin, h.n) < 0 ||
              kiln_write_full(fd, log, h.loglen) < 0 ||
              kiln_write_full(fd, out.lowered, h.lowlen) < 0;
    _exit(bad ? 1 : 0);
}

/* No child could be made: the compile is refused as a limit. Compiling in
 * this process instead would skip the child's confinement (its working
 * directory and Landlock layer), and a quoted #include could then read the
 * worker's own directory. */
static void no_child(kiln_nvrtc_child *c, const char *what)
{
    c->rc = KILN_NVRTC_LIMIT;
    snprintf(c->limit, sizeof c->limit, "could not start its process (%s: %s)", what,
             strerror(errno));
}

void kiln_nvrtc_start(kiln_nvrtc_child *c, const kiln_nvrtc_in *in)
{
    memset(c, 0, sizeof *c);
    c->fd = -1;
    c->deadline_ns = kiln_mono_ns() + (uint64_t)KILN_CC_SECONDS * 1000000000ull;
    int p[2];
    if (pipe(p) < 0) {
        no_child(c, "pipe");
        return;
    }
    pid_t pid = fork();
    if (pid == 0) {
        close(p[0]);
        child_main(p[1], in);
    }
    close(p[1]);
    if (pid < 0) {
        close(p[0]);
        no_child(c, "fork");
        return;
    }
    c->pid = pid;
    c->fd = p[0];
}

/* Read n bytes before the deadline. 0, or -1 (EOF, error or too late). */
static int read_by(kiln_nvrtc_child *c, void *p, size_t n)
{
    char *b = p;
    while (n > 0) {
        uint64_t now = kiln_mono_ns();
        if (now >= c->deadline_ns)
            return -1;
        struct pollfd pf = {.fd = c->fd, .events = POLLIN};
        int left_ms = (int)((c->deadline_ns - now) / 1000000u) + 1;
        int pr = poll(&pf, 1, left_ms);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr <= 0)
            return -1;
        ssize_t r = read(c->fd, b, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        b += r;
        n -= (size_t)r;
    }
    return 0;
}

static int read_result(kiln_nvrtc_child *c)
{
    result_head h;
    if (read_by(c, &h, sizeof h) < 0 || h.n > ((uint64_t)1 << 31) ||
        h.loglen > ((uint64_t)1 << 26) || h.lowlen > ((uint64_t)1 << 20))
        return -1;
    c->cubin = h.n ? malloc(h.n) : NULL;
    c->log = malloc(h.loglen + 1);
    c->lowered = h.lowlen ? malloc(h.lowlen) : NULL;
    if ((h.n && !c->cubin) || !c->log || (h.lowlen && !c->lowered) ||
        read_by(c, c->cubin, h.n) < 0 || read_by(c, c->log, h.loglen) < 0 ||
        read_by(c, c->lowered, h.lowlen) < 0)
        return -1;
    c->log[h.loglen] = '\0';
    c->n = h.n;
    c->lowered_len = h.lowlen;
    c->rc = h.rc;
    return 0;
}

void kiln_nvrtc_wait(kiln_nvrtc_child *c)
{
    if (!c->pid)
        return;
    int got = read_result(c) == 0;
    if (!got)
        kill(c->pid, SIGKILL);
    int status = 0;
    while (waitpid(c->pid, &status, 0) < 0 && errno == EINTR)
        ;
    close(c->fd);
    c->pid = 0;
    c->fd = -1;
    if (got && WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return;
    free(c->cubin);
    free(c->log);
    free(c->lowered);
    c->cubin = NULL;
    c->log = NULL;
    c->lowered = NULL;
    c->n = c->lowered_len = 0;
    c->rc = KILN_NVRTC_LIMIT;
    if (!got && kiln_mono_ns() >= c->deadline_ns)
        snprintf(c->limit, sizeof c->limit, "ran past its time limit of %d s", KILN_CC_SECONDS);
    else if (WIFSIGNALED(status) && WTERMSIG(status) == SIGXCPU)
        snprintf(c->limit, sizeof c->limit, "ran past its CPU limit of %d s", KILN_CC_SECONDS);
    else
        snprintf(c->limit, sizeof c->limit, "ran past its memory limit of %llu MiB",
                 (unsigned long long)(KILN_CC_ADDRESS_BYTES >> 20));
}
