/* cpu_build.h - turning a C source (candidate, baseline or reference) into a
 * shared object with a generated kiln_entry(), compiled by the system C
 * compiler confined to the build directory. */
#ifndef KILN_CPU_BUILD_H
#define KILN_CPU_BUILD_H

#include <stddef.h>

#include "kiln_error.h"
#include "sandbox.h"   /* KILN_CC_SECONDS, KILN_CC_ADDRESS_BYTES */
#include "task.h"

typedef enum kiln_build_role {
    KILN_BUILD_CANDIDATE,   /* the task's signature in the run's dtype */
    KILN_BUILD_REFERENCE,   /* <function>_reference over doubles and int64 dims */
} kiln_build_role;

typedef struct kiln_build_result {
    int ok;                 /* 1 when the .so was produced */
    int timed_out;
    char resource[96];      /* "" or the limit the compiler ran into, in words */
    char log[4096];         /* compiler output, trimmed */
    double seconds;
} kiln_build_result;

/* Compile source_path into dir/out_name. Returns -1 only when the build could
 * not be attempted (I/O, missing compiler); a compile error is res->ok == 0.
 * cache: a build cache directory (build_cache.h) to take the library from,
 * or to keep it in (a failed build is never kept: it runs, and fails, each
 * time). NULL: compile every time. */
int kiln_cpu_build(const kiln_task *task, kiln_dtype dt, kiln_build_role role,
                   const char *source_path, const char *dir, const char *out_name,
                   const char *cache, kiln_build_result *res, kiln_error *err);

/* The C compiler kiln builds with ($KILN_CC, else cc, gcc or clang in
 * /usr/bin), or NULL; and its flags as kiln_cpu_build passes them (the
 * machine's own ISA: -march=native). */
const char *kiln_cpu_cc(void);
#define KILN_CPU_CFLAGS "-std=gnu17 -O2 -march=native -fPIC"

/* The generated wrapper, exposed for tests. ref_fn: the reference's
 * function ("kiln_reference"), or NULL for FUNCTION_reference (task->function). */
int kiln_cpu_shim(const kiln_task *t, kiln_dtype dt, kiln_build_role role, const char *ref_fn,
                  char *buf, size_t len);

#endif
