/* input_gen.c - what the verifier's CPU side costs per value: drawing
 * inputs (normal and uniform, as tasks declare them), rounding them to bf16
 * through kiln_fill_input, and comparing a bf16 output against gold. These
 * run for every checked and timed call, so they bound how fast a
 * verification can be on a given host (docs/BENCHMARKS.md).
 *
 *   build/bench_input_gen [MILLIONS]     (default 16 M values, best of 3) */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "numeric.h"
#include "rng.h"
#include "task.h"

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Best of three runs of kiln_fill_input for arg, in ns per value. */
static double fill_ns(kiln_rng *r, const kiln_arg *arg, double *d, void *b, size_t n)
{
    double best = 1e30;
    for (int k = 0; k < 3; k++) {
        double t0 = now_s();
        kiln_fill_input(r, arg, NULL, KILN_DT_BF16, 4096, d, b, n);
        double ns = (now_s() - t0) / (double)n * 1e9;
        best = ns < best ? ns : best;
    }
    return best;
}

int main(int argc, char **argv)
{
    size_t n = (size_t)(argc > 1 ? atof(argv[1]) : 16) * 1000000u;
    double *d = malloc(n * sizeof *d);
    unsigned char *b = malloc(n * 2);
    if (!d || !b || n == 0)
        return fprintf(stderr, "bench_input_gen: cannot allocate %zu values\n", n), 1;
    kiln_rng r;
    kiln_rng_seed(&r, 1);
    kiln_arg normal = {.kind = KILN_ARG_INPUT, .dist = KILN_DIST_NORMAL, .dist_b = 1};
    kiln_arg uniform = {.kind = KILN_ARG_INPUT, .dist = KILN_DIST_UNIFORM, .dist_a = -1,
                        .dist_b = 1};
    double nf = fill_ns(&r, &normal, d, b, n), uf = fill_ns(&r, &uniform, d, b, n);
    kiln_tolerance tol = {2, 1.0 / 256};
    kiln_compare_result cr;
    double best = 1e30;
    for (int k = 0; k < 3; k++) {
        double t0 = now_s();
        kiln_compare(KILN_DT_BF16, b, d, n, &tol, &cr);
        double ns = (now_s() - t0) / (double)n * 1e9;
        best = ns < best ? ns : best;
    }
    printf("%zu values, ns per value (best of 3): normal draw + bf16 rounding %.1f, "
           "uniform draw + bf16 rounding %.1f, bf16 comparison %.1f (%s)\n",
           n, nf, uf, best, cr.pass ? "pass" : "FAIL");
    free(d);
    free(b);
    return cr.pass ? 0 : 1;
}
