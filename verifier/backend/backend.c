/* backend.c - the backends kiln knows: one line each (see backend.h). */
#include "backend.h"

#include <stdlib.h>
#include <string.h>

int kiln_backend_parse(const char *name)
{
    if (name && strcmp(name, "cpu") == 0)
        return KILN_BACKEND_CPU;
    if (name && strcmp(name, "cuda") == 0)
        return KILN_BACKEND_CUDA;
    return -1;
}

const char *kiln_backend_name(kiln_backend b)
{
    return b == KILN_BACKEND_CUDA ? "cuda" : "cpu";
}

kiln_dtype kiln_backend_default_dtype(const kiln_task *t, kiln_backend b)
{
    if (b == KILN_BACKEND_CUDA)
        return t->ncuda_dtypes ? t->cuda_dtypes[0] : KILN_DT_INVALID;
    return t->ncpu_dtypes ? t->cpu_dtypes[0] : KILN_DT_INVALID;
}

static const kiln_backend_ops *const backends[] = {
    &kiln_backend_cpu,
    &kiln_backend_cuda,
};

const kiln_backend_ops *kiln_backend_ops_for(kiln_backend kind, const kiln_task *t)
{
    /* CUDA data live on the device for every task with a CUDA reference,
     * unless KILN_HOST_DATA=1 keeps them on the host (how the "before"
     * figures of the benchmarks are measured). */
    const char *h = getenv("KILN_HOST_DATA");
    int host = (h && strcmp(h, "1") == 0) || !t->reference_cuda[0];
    if (kind == KILN_BACKEND_CUDA && host)
        return &kiln_backend_cuda_host;
    for (size_t i = 0; i < sizeof backends / sizeof backends[0]; i++)
        if (backends[i]->kind == kind)
            return backends[i];
    return NULL;
}
