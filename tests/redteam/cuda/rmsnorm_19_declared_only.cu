/* Stale compiled code: the manifest launches rmsnorm_cached, which this file only declares, hoping a module or cache from an earlier job still provides it. The static check must want a definition, or the missing kernel must be a launch error, never a stale one found somewhere.
 * kiln-task: rmsnorm
 * kiln-class: 19
 * kiln-dtype: f32
 * kiln-expect: fail
 * kiln-stages: static compile smoke
 * kiln-codes: bad-manifest launch-error
 */
#include "kiln_cuda.h"

#define BLOCK 256 //@kiln tune 128 256 512 1024

/* Defined nowhere in this file. */
extern "C" __global__ void rmsnorm_cached(const kiln_t *x, const kiln_t *w, kiln_t *y, int cols, float eps);

extern "C" __global__ void rmsnorm_fwd(const kiln_t *x, const kiln_t *w, kiln_t *y, int cols, float eps)
{
    (void)x; (void)w; (void)y; (void)cols; (void)eps;
}

/*@kiln launch
{"launches": [{"kernel": "rmsnorm_cached", "grid": ["rows"], "block": ["BLOCK"], "smem": "0", "args": ["x", "w", "y", "cols", "eps"]}],
 "scratch": []}
@*/
