/* hot_region_probe.c - in the sanitizer build, the library's per-value
 * loops are not instrumented (common/hot.h); their callers check each
 * buffer whole. This hands kiln_compare, or kiln_fill_input, a buffer one
 * element short: AddressSanitizer must stop it at that check
 * (tests/CMakeLists.txt matches its report). Without AddressSanitizer it
 * says so and exits 77, ctest's skip.
 *   hot_region_probe compare|fill */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "numeric.h"
#include "rng.h"
#include "task.h"

int main(int argc, char **argv)
{
#ifndef __SANITIZE_ADDRESS__
    (void)argc;
    (void)argv;
    printf("skipped: built without AddressSanitizer, which this probe needs\n");
    return 77;
#else
    enum { N = 4096 };
    if (argc != 2 || (strcmp(argv[1], "compare") != 0 && strcmp(argv[1], "fill") != 0)) {
        fprintf(stderr, "usage: hot_region_probe compare|fill\n");
        return 2;
    }
    double *gold = calloc(N, sizeof *gold);
    float *cand = calloc(N - 1, sizeof *cand);   /* one short */
    if (!gold || !cand)
        return 2;
    if (strcmp(argv[1], "compare") == 0) {
        kiln_compare_result res;
        kiln_compare(KILN_DT_F32, cand, gold, N, NULL, &res);
    } else {
        kiln_arg arg = {.kind = KILN_ARG_INPUT, .dist = KILN_DIST_NORMAL, .dist_a = 0, .dist_b = 1};
        kiln_rng r;
        kiln_rng_seed(&r, 1);
        kiln_fill_input(&r, &arg, NULL, KILN_DT_F32, N, gold, cand, N);
    }
    printf("the %s loop ran past its buffer and nothing stopped it\n", argv[1]);
    free(gold);
    free(cand);
    return 1;
#endif
}
