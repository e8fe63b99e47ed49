/* synonyms.c - the few words kernel engineers write several ways, so that a
 * search for one finds lessons that use another ("SIMD" finds "vectorized
 * loads" and "float4", "smem" finds "shared memory"). Kept small on
 * purpose: each group is a set of names for one idea, not a thesaurus, and
 * docs/knowledge.md lists them. The FTS5 tokenizer stems English endings
 * (porter: vectorized -> vector) but not British ones or abbreviations,
 * hence the variants. Entries are lowercase; two-word entries match two
 * adjacent words of the query. */
#include "lessons_int.h"

#include <string.h>
#include <strings.h>

#define MAX_GROUP 24

/* An entry starting with '~' only recognises the query's words: the
 * stemmer already makes it one of the group's other entries (vectorized and
 * vectorize are both "vector"), and searching the same stem twice would
 * count a lesson's word twice in BM25. */
static const char *const groups[][MAX_GROUP] = {
    {"simd", "vectorize", "vectorise", "vector loads", "vector stores", "wide loads", "float4",
     "float2", "half2", "bfloat162", "~vectorized", "~vectorised", "~vectorization",
     "~vectorisation", "~vectorizing", "~vectorising", "~vector load", "~vector store", NULL},
    {"smem", "shmem", "shared memory", "~shared mem", NULL},
    {"gmem", "global memory", "hbm", "dram", NULL},
    {"shfl", "shuffle", "warp shuffle", "~shuffles", "~warp shuffles", NULL},
    {"tensor core", "tensorcore", "mma", "wgmma", "hmma", "~tensor cores", NULL},
    {"tma", "cp async", "async copy", "bulk copy", NULL},
    {"coalesce", "contiguous access", "~coalesced", "~coalescing", "~contiguous accesses", NULL},
};

/* Does entry e equal the n words tok[0..n-1] (joined by one space)? */
static int entry_is(const char *e, const char *const *tok, const size_t *len, int n)
{
    e += *e == '~';
    for (int i = 0; i < n; i++) {
        if (i > 0 && *e++ != ' ')
            return 0;
        if (strncasecmp(e, tok[i], len[i]) != 0)
            return 0;
        e += len[i];
    }
    return *e == '\0';
}

/* The group naming the words at tok[0] (two words tried before one), or
 * NULL; *used: how many words it took. */
const char *const *kn_synonyms(const char *const *tok, const size_t *len, int ntok, int *used)
{
    for (int n = ntok >= 2 ? 2 : 1; n >= 1; n--)
        for (size_t g = 0; g < sizeof groups / sizeof *groups; g++)
            for (int k = 0; groups[g][k]; k++)
                if (entry_is(groups[g][k], tok, len, n)) {
                    *used = n;
                    return groups[g];
                }
    return NULL;
}
