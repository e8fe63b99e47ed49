/* graph_cache.c - instantiated batch graphs kept between calls (see
 * graph_cache.h). */
#include "graph_cache.h"

#include <stdlib.h>
#include <string.h>

CUgraphExec kiln_graph_cache_get(kiln_graph_cache *c, const void *key, size_t len)
{
    for (int i = 0; i < KILN_GRAPH_SLOTS; i++)
        if (c->slot[i].exec && c->slot[i].len == len && memcmp(c->slot[i].key, key, len) == 0) {
            c->slot[i].used = ++c->tick;
            return c->slot[i].exec;
        }
    return NULL;
}

static void drop(kiln_graph_cache *c, int i)
{
    if (c->slot[i].exec)
        cuGraphExecDestroy(c->slot[i].exec);
    free(c->slot[i].key);
    memset(&c->slot[i], 0, sizeof c->slot[i]);
}

int kiln_graph_cache_put(kiln_graph_cache *c, const void *key, size_t len, CUgraphExec exec)
{
    int victim = 0;
    for (int i = 1; i < KILN_GRAPH_SLOTS; i++)
        if (c->slot[i].used < c->slot[victim].used)
            victim = i;
    drop(c, victim);
    void *copy = malloc(len);
    if (!copy) {
        cuGraphExecDestroy(exec);
        return -1;
    }
    memcpy(copy, key, len);
    c->slot[victim].exec = exec;
    c->slot[victim].key = copy;
    c->slot[victim].len = len;
    c->slot[victim].used = ++c->tick;
    return 0;
}

void kiln_graph_cache_clear(kiln_graph_cache *c)
{
    for (int i = 0; i < KILN_GRAPH_SLOTS; i++)
        drop(c, i);
    c->tick = 0;
}
