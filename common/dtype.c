/* dtype.c - names, sizes and C spellings of kiln's element types. */
#include "dtype.h"

#include <string.h>

static const struct {
    kiln_dtype dt;
    const char *name;
    size_t size;
    int is_float;
    const char *ctype;
} table[] = {
    {KILN_DT_F32, "f32", 4, 1, "float"},
    {KILN_DT_F16, "f16", 2, 1, "kiln_f16"},
    {KILN_DT_BF16, "bf16", 2, 1, "kiln_bf16"},
    {KILN_DT_F64, "f64", 8, 1, "double"},
    {KILN_DT_I32, "i32", 4, 0, "int32_t"},
    {KILN_DT_I64, "i64", 8, 0, "int64_t"},
    {KILN_DT_I8, "i8", 1, 0, "int8_t"},
};

#define NTYPES (sizeof table / sizeof table[0])

kiln_dtype kiln_dtype_parse(const char *name)
{
    for (size_t i = 0; name && i < NTYPES; i++)
        if (strcmp(name, table[i].name) == 0)
            return table[i].dt;
    return KILN_DT_INVALID;
}

const char *kiln_dtype_name(kiln_dtype dt)
{
    for (size_t i = 0; i < NTYPES; i++)
        if (table[i].dt == dt)
            return table[i].name;
    return "invalid";
}

/* The table is in enum order, so a size is one indexed lookup (the entry's
 * dt is still compared); this runs per element in input generation and
 * comparison. */
int kiln_dtype_sizeof(const char *type, size_t len, kiln_dtype t, int64_t *bytes)
{
    char name[16];
    if (len >= sizeof name)
        return -1;
    memcpy(name, type, len);
    name[len] = '\0';
    kiln_dtype dt = strcmp(name, "T") == 0 ? t : kiln_dtype_parse(name);
    if (dt == KILN_DT_INVALID)
        return -1;
    *bytes = (int64_t)kiln_dtype_size(dt);
    return 0;
}

size_t kiln_dtype_size(kiln_dtype dt)
{
    if (dt >= KILN_DT_F32 && (size_t)dt <= NTYPES && table[dt - 1].dt == dt)
        return table[dt - 1].size;
    for (size_t i = 0; i < NTYPES; i++)
        if (table[i].dt == dt)
            return table[i].size;
    return 0;
}

int kiln_dtype_is_float(kiln_dtype dt)
{
    for (size_t i = 0; i < NTYPES; i++)
        if (table[i].dt == dt)
            return table[i].is_float;
    return 0;
}

const char *kiln_dtype_ctype(kiln_dtype dt)
{
    for (size_t i = 0; i < NTYPES; i++)
        if (table[i].dt == dt)
            return table[i].ctype;
    return "void";
}

const char *kiln_run_dtype_macro(kiln_dtype dt)
{
    switch (dt) {
    case KILN_DT_F16: return "KILN_RUN_DTYPE_F16";
    case KILN_DT_BF16: return "KILN_RUN_DTYPE_BF16";
    case KILN_DT_F64: return "KILN_RUN_DTYPE_F64";
    default: return "KILN_RUN_DTYPE_F32";
    }
}
