/* cupti_span.c - CUPTI activity tracing of kernels (see cupti_span.h).
 *
 * CUPTI hands completed records to a callback in buffers it asked us for;
 * the worker is single-threaded apart from CUPTI's own thread, so the span
 * is kept under a mutex. CONCURRENT_KERNEL records every kernel with its
 * real start and end, whichever stream launched it. */
#include "cupti_span.h"

#include <cupti.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define BUF_BYTES (1u << 20)
#define ALIGN 8

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static kiln_cupti_span span;
static uint64_t since;      /* records that started earlier are not the call's */
static uint64_t until = UINT64_MAX;   /* nor those that started later */
static int dropped;

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
    *buffer = aligned_alloc(ALIGN, BUF_BYTES);
    *size = *buffer ? BUF_BYTES : 0;
    *max_records = 0;
}

static void note_kernel(uint64_t start, uint64_t end)
{
    if (start < since || start > until)
        return;
    if (span.kernels == 0 || start < span.start_ns)
        span.start_ns = start;
    if (span.kernels == 0 || end > span.end_ns)
        span.end_ns = end;
    span.sum_ns += end > start ? end - start : 0;
    span.kernels++;
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
                                      size_t valid)
{
    (void)ctx;
    (void)stream;
    (void)size;
    CUpti_Activity *rec = NULL;
    pthread_mutex_lock(&mu);
    while (cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
        if (rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || rec->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
            const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)rec;
            note_kernel(k->start, k->end);
        }
    }
    size_t n = 0;
    if (cuptiActivityGetNumDroppedRecords(NULL, 0, &n) == CUPTI_SUCCESS && n)
        dropped = 1;
    pthread_mutex_unlock(&mu);
    free(buffer);
}

static int fail(CUptiResult r, const char *what, char *msg, size_t len)
{
    const char *s = NULL;
    cuptiGetResultString(r, &s);
    snprintf(msg, len, "CUPTI %s: %s", what, s ? s : "error");
    return -1;
}

int kiln_cupti_start(char *msg, size_t len)
{
    CUptiResult r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
    if (r != CUPTI_SUCCESS)
        return fail(r, "register callbacks", msg, len);
    r = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    if (r != CUPTI_SUCCESS)
        return fail(r, "enable kernel activity", msg, len);
    return 0;
}

/* Anything that started before now is ignored, so the span covers the
 * call's kernels only: the records of kiln's own kernels before the call
 * (inputs drawn, the previous call's checks, the shared memory poison),
 * which the caller has waited for, arrive with the call's at the flush in
 * kiln_cupti_collect and are dropped there. (A flush here as well cost a
 * second flush per call.) */
void kiln_cupti_reset(void)
{
    uint64_t now = 0;
    cuptiGetTimestamp(&now);
    pthread_mutex_lock(&mu);
    span = (kiln_cupti_span){0};
    since = now;
    until = UINT64_MAX;
    dropped = 0;
    pthread_mutex_unlock(&mu);
}

void kiln_cupti_close(void)
{
    uint64_t now = 0;
    cuptiGetTimestamp(&now);
    pthread_mutex_lock(&mu);
    until = now;
    pthread_mutex_unlock(&mu);
}

int kiln_cupti_collect(kiln_cupti_span *out, char *msg, size_t len)
{
    CUptiResult r = cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    if (r != CUPTI_SUCCESS)
        return fail(r, "flush", msg, len);
    pthread_mutex_lock(&mu);
    *out = span;
    int lost = dropped;
    pthread_mutex_unlock(&mu);
    if (lost) {
        snprintf(msg, len, "CUPTI dropped activity records");
        return -1;
    }
    return 0;
}
