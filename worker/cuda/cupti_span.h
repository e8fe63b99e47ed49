/* cupti_span.h - the second of the CUDA worker's three timers: CUPTI's
 * activity records of every kernel launched on the context, on any stream,
 * reduced per call to (first start, last end, count). */
#ifndef KILN_CUPTI_SPAN_H
#define KILN_CUPTI_SPAN_H

#include <stddef.h>
#include <stdint.h>

typedef struct kiln_cupti_span {
    uint64_t start_ns, end_ns;   /* GPU timestamps of the first start / last end */
    uint64_t sum_ns;             /* the kernels' durations, summed */
    uint32_t kernels;
} kiln_cupti_span;

/* Enable concurrent-kernel activity records. 0 ok, else -1 with msg set. */
int kiln_cupti_start(char *msg, size_t len);
/* Forget what was recorded so far (call after synchronizing, before the
 * call's first launch). */
void kiln_cupti_reset(void);
/* Close the window (call after synchronizing on the call's work): kernels
 * that start later, such as kiln's checks launched before the flush, are
 * not the call's. */
void kiln_cupti_close(void);
/* Flush the records of work already finished (call after a synchronize)
 * and report the span of the kernels that started between the last reset
 * and close. */
int kiln_cupti_collect(kiln_cupti_span *out, char *msg, size_t len);

#endif
