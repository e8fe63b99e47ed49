/* nvrtc_child.h - one NVRTC compile in a child process of its own, under
 * the same limits as the CPU compiler (cpu_build.h: 2 GiB of data, 30 s):
 * a source can make NVRTC use any amount of memory or time, and in the
 * worker's own process nothing could bound that without also bounding the
 * CUDA driver. Several children run at once; the result comes back over a
 * pipe. */
#ifndef KILN_NVRTC_CHILD_H
#define KILN_NVRTC_CHILD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "nvrtc_build.h"

typedef struct kiln_nvrtc_child {
    pid_t pid;              /* 0: compiled in this process (fork failed) */
    int fd;                 /* the result's pipe */
    uint64_t deadline_ns;   /* kiln_mono_ns() after which it is killed */
    int rc;                 /* as kiln_nvrtc_build, or KILN_NVRTC_LIMIT */
    unsigned char *cubin;
    size_t n;
    char *log;
    char *lowered;          /* the name expressions' symbols (kiln_nvrtc_out) */
    size_t lowered_len;
    char limit[96];         /* KILN_NVRTC_LIMIT: the limit, in words */
} kiln_nvrtc_child;

#define KILN_NVRTC_LIMIT 2  /* the compile ran into a limit (c->limit says which) */

/* Start compiling in (which must stay valid until kiln_nvrtc_wait). */
void kiln_nvrtc_start(kiln_nvrtc_child *c, const kiln_nvrtc_in *in);

/* Wait for the result: c->rc, and c->cubin, c->n, c->log, c->lowered
 * (malloc'd). */
void kiln_nvrtc_wait(kiln_nvrtc_child *c);

#endif
