/* machine.h - the CPU a job ran on, as a kernel author needs to know it:
 * its vector extensions, its caches and the compiler kiln builds with. */
#ifndef KILN_MACHINE_H
#define KILN_MACHINE_H

#include <stddef.h>

/* "avx2 fma avx512f ...": the kernel-relevant flags of /proc/cpuinfo. */
void kiln_cpu_isa(char *buf, size_t len);
/* "L1d 48 KiB, L2 2 MiB, L3 105 MiB": the data and unified caches of cpu0. */
void kiln_cpu_caches(char *buf, size_t len);
/* "gcc 12.2.0, -std=gnu17 -O2 -march=native -fPIC": what builds a C candidate. */
void kiln_cpu_compiler(char *buf, size_t len);

#endif
