/* worker_io.c - pipe I/O, flags and the clock for the worker processes
 * (see worker_io.h). */
#include "worker_io.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "worker_proto.h"

int kiln_read_full(int fd, void *buf, size_t len)
{
    char *p = buf;
    while (len) {
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

int kiln_write_full(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

uint64_t kiln_parse_u64(const char *s, int *ok)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s ? s : "", &end, 10);
    *ok = s && !errno && !*end && end != s;
    return *ok ? v : 0;
}

uint64_t kiln_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void kiln_worker_bind_parent(int sig, uint64_t parent)
{
    prctl(PR_SET_PDEATHSIG, sig);
    if ((uint64_t)getppid() != parent)
        _exit(KILN_WORKER_EXIT_SETUP);
}
