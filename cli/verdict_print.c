/* verdict_print.c - the table `kiln verify` prints (see verdict_print.h),
 * from the typed verdict: one from kilnd (decoded once) and one computed in
 * process print the same way. */
#include "verdict_print.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* A measured number, or 0 for one the verdict left out (NaN). */
static double fin(double x)
{
    return isfinite(x) ? x : 0;
}

static void fmt_time(double ns, char *buf, size_t len)
{
    if (!(ns > 0))
        snprintf(buf, len, "-");
    else if (ns < 1e4)
        snprintf(buf, len, "%.2f us", ns / 1e3);
    else if (ns < 1e7)
        snprintf(buf, len, "%.1f us", ns / 1e3);
    else
        snprintf(buf, len, "%.2f ms", ns / 1e6);
}

static void print_shape(FILE *out, const kiln_verdict *v, const kiln_shape_result *r, int width)
{
    char dims[128], err[48] = "-", ct[32] = "-", bt[32] = "-", sp[40] = "-", rf[16] = "-";
    kiln_verdict_dims(v, r, dims, sizeof dims);
    if (r->visible && r->checked)
        snprintf(err, sizeof err, "%.1f / %.0f", fin(r->max_err_ulps), fin(r->budget_ulps));
    if (r->timed) {
        fmt_time(r->cand.median_ns, ct, sizeof ct);
        fmt_time(r->base.median_ns, bt, sizeof bt);
        if (r->speedup_hi > 0)   /* device-resident: with its 95% interval */
            snprintf(sp, sizeof sp, "%.3fx [%.3f,%.3f]", fin(r->speedup), r->speedup_lo,
                     r->speedup_hi);
        else
            snprintf(sp, sizeof sp, "%.2fx", fin(r->speedup));
        snprintf(rf, sizeof rf, "%.0f%%", 100 * fin(r->roofline_fraction));
    }
    fprintf(out, "%-4s %-*s %16s %11s %11s %8s %8s\n", r->id, width, dims, err, ct, bt, sp, rf);
}

/* The rate of a compute-bound shape against the device's peak. */
static void print_rate(FILE *out, const kiln_verdict *v, const kiln_shape_result *r, double ns)
{
    double tf = ns > 0 ? fin(r->flops) / ns / 1e3 : 0;
    if (v->peak_tflops > 0 && tf > 0)
        fprintf(out, "   %.1f TFLOP/s, %.0f%% of peak", tf, 100 * tf / v->peak_tflops);
    fprintf(out, "\n");
}

/* Device-resident CUDA timing: per run of the launches, CUPTI's summed
 * kernel time (the figure), the events and CUPTI's span around the batch,
 * and how many input sets and pairs were timed. */
static int print_device_timers(FILE *out, const kiln_verdict *v)
{
    int first = 1;
    for (int i = 0; i < v->nresults; i++) {
        const kiln_shape_result *r = &v->results[i];
        if (!r->timed || !r->sets)
            continue;
        if (first)
            fprintf(out, "\ncandidate timers (median per run of the launches): CUPTI kernels / "
                         "events / CUPTI span / wall, input sets per call, pairs\n");
        first = 0;
        char k[32], ev[32], cu[32], wa[32];
        fmt_time(r->cand.median_ns, k, sizeof k);
        fmt_time(r->cand_events_ns, ev, sizeof ev);
        fmt_time(r->cand_cupti_ns, cu, sizeof cu);
        fmt_time(r->cand_wall_ns, wa, sizeof wa);
        fprintf(out, "%-4s %11s %11s %11s %11s %4d sets %4d pairs", r->id, k, ev, cu, wa, r->sets,
                r->pairs);
        print_rate(out, v, r, fin(r->cand.median_ns));
    }
    return !first;
}

/* CUDA: the three timers of the candidate per timed shape, so a reader can
 * see they agree (the table's times are the events'). */
static void print_timers(FILE *out, const kiln_verdict *v)
{
    if (strcmp(v->backend, "cuda") != 0 || print_device_timers(out, v))
        return;
    int first = 1;
    for (int i = 0; i < v->nresults; i++) {
        const kiln_shape_result *r = &v->results[i];
        if (!r->timed)
            continue;
        if (first)
            fprintf(out, "\ncandidate timers (median per call): events / CUPTI kernels / wall with "
                         "synchronize\n");
        first = 0;
        char ev[32], cu[32], wa[32];
        fmt_time(r->cand.median_ns, ev, sizeof ev);
        fmt_time(r->cand_cupti_ns, cu, sizeof cu);
        fmt_time(r->cand_wall_ns, wa, sizeof wa);
        fprintf(out, "%-4s %11s %11s %11s", r->id, ev, cu, wa);
        print_rate(out, v, r, fin(r->cand.median_ns));
    }
}

/* CUDA: the driver's view of the candidate's kernels at the largest
 * visible shape that has one (registers, spills, shared memory, occupancy). */
static void print_profile(FILE *out, const kiln_verdict *v)
{
    const kiln_shape_result *w = NULL;
    double most = -1;
    for (int i = 0; i < v->nresults; i++) {
        const kiln_shape_result *r = &v->results[i];
        double n = 1;
        for (int d = 0; d < KILN_MAX_DIMS; d++)
            n *= r->shape.d[d] ? (double)r->shape.d[d] : 1;
        if (r->nprofile && n > most) {
            most = n;
            w = r;
        }
    }
    if (!w)
        return;
    fprintf(out, "\nkernels at %s: threads, registers a thread, local bytes a thread, shared "
                 "static + dynamic, blocks an SM, occupancy\n", w->id);
    for (int k = 0; k < w->nprofile; k++) {
        const kiln_kernel_profile *p = &w->profile[k];
        fprintf(out, "  %-28.28s %5d %4d %6d %7d + %-7d %3d %4.0f%%\n", p->kernel, p->threads,
                p->regs, p->local_bytes, p->static_smem, p->dynamic_smem, p->blocks_per_sm,
                100 * fin(p->occupancy));
    }
}

/* CUDA: which device, as the worker saw it. */
static void print_gpu(FILE *out, const kiln_verdict *v)
{
    if (!v->gpu[0])
        return;
    char name[128], cc[16], driver[32], pageable[16], cublas[32];
    kiln_verdict_gpu_field(v->gpu, "name", name, sizeof name);
    kiln_verdict_gpu_field(v->gpu, "cc", cc, sizeof cc);
    kiln_verdict_gpu_field(v->gpu, "driver", driver, sizeof driver);
    kiln_verdict_gpu_field(v->gpu, "pageable", pageable, sizeof pageable);
    kiln_verdict_gpu_field(v->gpu, "cublas", cublas, sizeof cublas);
    fprintf(out, "gpu: %s (sm_%s), driver %.0f, copy bandwidth %.0f GB/s, pageable memory access %.0f\n",
            name, cc, atof(driver), fin(v->bandwidth_gbps), atof(pageable));
    if (v->peak_tflops > 0)
        fprintf(out, "gpu peak (dense, %s): %.0f TFLOP/s\n", v->dtype, v->peak_tflops);
    if (atof(cublas) > 0)
        fprintf(out, "baseline: cuBLAS %.0f (cublasGemmEx)\n", atof(cublas));
}

void kiln_print_verdict(FILE *out, const kiln_verdict *v)
{
    /* The dims column fits the longest (rope's three dims do not fit 24). */
    int width = 24;
    for (int i = 0; i < v->nresults; i++) {
        char dims[128];
        kiln_verdict_dims(v, &v->results[i], dims, sizeof dims);
        width = (int)strlen(dims) > width ? (int)strlen(dims) : width;
    }
    fprintf(out, "%-4s %-*s %16s %11s %11s %8s %8s\n", "id", width, "dims", "error ULP/budget",
            "candidate", "baseline", "speedup", "roofline");
    for (int i = 0; i < v->nresults; i++)
        print_shape(out, v, &v->results[i], width);
    if (v->nhidden)
        fprintf(out, "hidden shapes: %d, %s%s\n", v->nhidden,
                !v->hidden_ran ? "not run" : v->hidden_code[0] ? "failed: " : "all passed",
                v->hidden_ran ? v->hidden_code : "");
    if (v->geomean_speedup > 0)
        fprintf(out, "\nspeedup: geomean %.2fx, min %.2fx; median roofline fraction %.0f%%\n",
                v->geomean_speedup, fin(v->min_speedup), 100 * fin(v->median_roofline));
    print_timers(out, v);
    print_profile(out, v);
    for (int i = 0; i < v->nflags; i++)
        fprintf(out, "flag: %s\n", v->flags[i]);
    fprintf(out, "sandbox: %s\n", v->sandbox[0] ? v->sandbox : "(worker not started)");
    print_gpu(out, v);
    fprintf(out, "\n%s (stage %s, %s): %s\n", v->status, v->stage, v->code, v->reason);
    if (strcmp(v->code, "compile-error") == 0)
        fprintf(out, "\n%s\n", v->feedback);
}

int kiln_verdict_exit_code(const kiln_verdict *v)
{
    if (strcmp(v->status, "pass") == 0)
        return KILN_EXIT_OK;
    if (strcmp(v->status, "fail") == 0 || strcmp(v->status, "suspect") == 0)
        return KILN_EXIT_FAIL;
    return KILN_EXIT_INTERNAL;
}
