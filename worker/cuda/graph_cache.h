/* graph_cache.h - instantiated CUDA graphs of kiln's own work, kept
 * between calls: the reference's launches over a chunk of input sets.
 * Capturing and instantiating costs more than running the launches of
 * tiny shapes, and calls repeat the same launches on the same buffers; a
 * graph is reused only when everything it was captured from is byte for
 * byte the same (the caller's key: launches, arguments and every buffer
 * address). Never the candidate's timed batch: a graph kept between calls
 * measured a kernel against itself at 0.989-0.996x (docs/decisions.md). */
#ifndef KILN_GRAPH_CACHE_H
#define KILN_GRAPH_CACHE_H

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

#define KILN_GRAPH_SLOTS 4

typedef struct kiln_graph_cache {
    struct {
        CUgraphExec exec;
        void *key;
        size_t len;
        uint64_t used;      /* the tick of its last use: the oldest goes first */
    } slot[KILN_GRAPH_SLOTS];
    uint64_t tick;
} kiln_graph_cache;

/* The graph captured under exactly this key, or NULL. */
CUgraphExec kiln_graph_cache_get(kiln_graph_cache *c, const void *key, size_t len);

/* Keep exec under key (a copy), destroying the least recently used graph
 * if every slot is taken. The cache owns exec from here on, also when the
 * copy cannot be made (then exec is destroyed and -1 returned). */
int kiln_graph_cache_put(kiln_graph_cache *c, const void *key, size_t len, CUgraphExec exec);

/* Destroy every graph. */
void kiln_graph_cache_clear(kiln_graph_cache *c);

#endif
