/* input_gen.c - what the verifier's CPU side costs per value: drawing
 * inputs (normal and uniform, as tasks declare them), rounding them to bf16
 * through kiln_fill_input, and comparing a bf16 output against gold; the
 * same for f32, the CPU backend's dtype. These
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
static double fill_ns(kiln_rng *r, const kiln_arg *arg, kiln_dtype dt, double *d, void *b,
                      size_t n)
{
    double best = 1e30;
    for (int k = 0; k < 3; k++) {
        double t0 = now_s();
        kiln_fill_input(r, arg, NULL, dt, 4096, d, b, n);
        double ns = (now_s() - t0) / (double)n * 1e9;
        best = ns < best ? ns : best;
    }
    return best;
}

/* Best of three comparisons of n values of dt against gold, in ns per value. */
static double compare_ns(kiln_dtype dt, const void *c, const double *gold, size_t n,
                         const kiln_tolerance *tol, kiln_compare_result *cr)
{
    double best = 1e30;
    for (int k = 0; k < 3; k++) {
        double t0 = now_s();
        kiln_compare(dt, c, gold, n, tol, cr);
        double ns = (now_s() - t0) / (double)n * 1e9;
        best = ns < best ? ns : best;
    }
    return best;
}

int main(int argc, char **argv)
{
    size_t n = (size_t)(argc > 1 ? atof(argv[1]) : 16) * 1000000u;
    double *d = malloc(n * sizeof *d);
    unsigned char *b = malloc(n * 2), *b4 = malloc(n * 4);
    if (!d || !b || !b4 || n == 0)
        return fprintf(stderr, "bench_input_gen: cannot allocate %zu values\n", n), 1;
    kiln_rng r;
    kiln_rng_seed(&r, 1);
    kiln_arg normal = {.kind = KILN_ARG_INPUT, .dist = KILN_DIST_NORMAL, .dist_b = 1};
    kiln_arg uniform = {.kind = KILN_ARG_INPUT, .dist = KILN_DIST_UNIFORM, .dist_a = -1,
                        .dist_b = 1};
    double nf = fill_ns(&r, &normal, KILN_DT_BF16, d, b, n);
    double uf = fill_ns(&r, &uniform, KILN_DT_BF16, d, b, n);
    kiln_tolerance tol = {2, 1.0 / 256, 0};
    kiln_compare_result cr;
    int pass = 1;
    double bc = compare_ns(KILN_DT_BF16, b, d, n, &tol, &cr);
    pass &= cr.pass;
    printf("%zu values, ns per value (best of 3): normal draw + bf16 rounding %.1f, "
           "uniform draw + bf16 rounding %.1f, bf16 comparison %.1f (%s)\n",
           n, nf, uf, bc, cr.pass ? "pass" : "FAIL");
    /* f32, the CPU backend's dtype */
    nf = fill_ns(&r, &normal, KILN_DT_F32, d, b4, n);
    uf = fill_ns(&r, &uniform, KILN_DT_F32, d, b4, n);
    double fc = compare_ns(KILN_DT_F32, b4, d, n, &tol, &cr);
    pass &= cr.pass;
    printf("%zu values, ns per value (best of 3): normal draw + f32 rounding %.1f, "
           "uniform draw + f32 rounding %.1f, f32 comparison %.1f (%s)\n",
           n, nf, uf, fc, cr.pass ? "pass" : "FAIL");
    free(d);
    free(b);
    free(b4);
    return pass ? 0 : 1;
}
