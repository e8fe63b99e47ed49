/* worker_io.h - what both worker processes (kiln-worker, kiln-worker-cuda)
 * need to talk to the verifier: whole reads and writes on the request and
 * response pipes, a strict number parser for their flags, the monotonic
 * clock, the tie to the parent. Part of the sandbox library, so the CUDA worker needs nothing more. */
#ifndef KILN_WORKER_IO_H
#define KILN_WORKER_IO_H

#include <stddef.h>
#include <stdint.h>

/* 0 when all len bytes moved; -1 on error or end of file. */
int kiln_read_full(int fd, void *buf, size_t len);
int kiln_write_full(int fd, const void *buf, size_t len);

/* A decimal number; 0 and *ok = 0 when s is not one. */
uint64_t kiln_parse_u64(const char *s, int *ok);

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t kiln_mono_ns(void);

/* Die with the parent: sig when the thread that started this process ends.
 * The verifier starts workers with posix_spawn, which cannot set it, and
 * names itself (--parent PID); a parent that ended before this call is
 * caught by the check that follows it (this process has another parent
 * then), and this process exits at once. */
void kiln_worker_bind_parent(int sig, uint64_t parent);

#endif
