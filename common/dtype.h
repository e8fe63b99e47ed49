/* dtype.h - the element types kiln knows, their names and sizes. */
#ifndef KILN_DTYPE_H
#define KILN_DTYPE_H

#include <stddef.h>
#include <stdint.h>

typedef enum kiln_dtype {
    KILN_DT_INVALID = 0,
    KILN_DT_F32,
    KILN_DT_F16,
    KILN_DT_BF16,
    KILN_DT_F64,
    KILN_DT_I32,
    KILN_DT_I64,
    KILN_DT_I8,
} kiln_dtype;

/* "f32" -> KILN_DT_F32; KILN_DT_INVALID for an unknown name. */
kiln_dtype kiln_dtype_parse(const char *name);
const char *kiln_dtype_name(kiln_dtype dt);
size_t kiln_dtype_size(kiln_dtype dt);
/* sizeof(TYPE) in an expression: TYPE the first len bytes of type, "T"
 * meaning t. 0 with *bytes set, or -1 for an unknown type. */
int kiln_dtype_sizeof(const char *type, size_t len, kiln_dtype t, int64_t *bytes);
int kiln_dtype_is_float(kiln_dtype dt);
/* The C type a CPU candidate sees for dt ("float", "kiln_bf16", ...). */
const char *kiln_dtype_ctype(kiln_dtype dt);
/* The macro kiln defines to 1 when it builds a task's reference (C or
 * CUDA) for a run of dtype dt, e.g. "KILN_RUN_DTYPE_BF16": a reference
 * whose gold depends on a value the candidate stores in T reads it back
 * rounded as the candidate holds it (kiln_round_to_run in kiln_cpu.h and
 * kiln_cuda.h). Candidates never see it. */
const char *kiln_run_dtype_macro(kiln_dtype dt);

#endif
