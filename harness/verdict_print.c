/* verdict_print.c - the table `kiln verify` prints (see verdict_print.h).
 * Works from the JSON form, so a verdict from kilnd and one computed in
 * process print the same way. */
#include "verdict_print.h"

#include <string.h>

#include "cli.h"

static double num(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

static const char *str(const cJSON *o, const char *k)
{
    const char *s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, k));
    return s ? s : "";
}

static void fmt_time(double ns, char *buf, size_t len)
{
    if (ns <= 0)
        snprintf(buf, len, "-");
    else if (ns < 1e4)
        snprintf(buf, len, "%.2f us", ns / 1e3);
    else if (ns < 1e7)
        snprintf(buf, len, "%.1f us", ns / 1e3);
    else
        snprintf(buf, len, "%.2f ms", ns / 1e6);
}

static void fmt_dims(const cJSON *shape, char *buf, size_t len)
{
    const cJSON *dims = cJSON_GetObjectItemCaseSensitive(shape, "dims");
    if (!cJSON_IsObject(dims)) {
        snprintf(buf, len, "hidden");
        return;
    }
    size_t u = 0;
    buf[0] = '\0';
    const cJSON *d;
    cJSON_ArrayForEach(d, dims) {
        if (u < len)
            u += (size_t)snprintf(buf + u, len - u, "%s%s=%.0f", u ? " " : "", d->string,
                                  d->valuedouble);
    }
}

static void print_shape(FILE *out, const cJSON *s, int width)
{
    char dims[128], err[48] = "-", ct[32], bt[32], sp[40] = "-", rf[16] = "-";
    fmt_dims(s, dims, sizeof dims);
    const cJSON *tm = cJSON_GetObjectItemCaseSensitive(s, "time");
    if (cJSON_GetObjectItemCaseSensitive(s, "budget_ulps"))
        snprintf(err, sizeof err, "%.1f / %.0f", num(s, "max_err_ulps"), num(s, "budget_ulps"));
    else if (cJSON_GetObjectItemCaseSensitive(s, "max_err_ulps"))
        snprintf(err, sizeof err, "%.0f%% of budget", 100 * num(s, "budget_fraction"));
    fmt_time(num(cJSON_GetObjectItemCaseSensitive(tm, "candidate"), "median_ns"), ct, sizeof ct);
    fmt_time(num(cJSON_GetObjectItemCaseSensitive(tm, "baseline"), "median_ns"), bt, sizeof bt);
    const cJSON *iv = cJSON_GetObjectItemCaseSensitive(s, "speedup_interval");
    if (tm && cJSON_GetArraySize(iv) == 2)   /* device-resident: with its 95% interval */
        snprintf(sp, sizeof sp, "%.3fx [%.3f,%.3f]", num(s, "speedup"),
                 cJSON_GetArrayItem(iv, 0)->valuedouble, cJSON_GetArrayItem(iv, 1)->valuedouble);
    else if (tm)
        snprintf(sp, sizeof sp, "%.2fx", num(s, "speedup"));
    if (tm) {
        snprintf(rf, sizeof rf, "%.0f%%", 100 * num(s, "roofline_fraction"));
    }
    fprintf(out, "%-4s %-*s %16s %11s %11s %8s %8s\n", str(s, "id"), width, dims, err, ct, bt, sp,
            rf);
}

/* Device-resident CUDA timing: per run of the launches, CUPTI's summed
 * kernel time (the figure), the events and CUPTI's span around the batch,
 * and how many input sets and pairs were timed. */
static int print_device_timers(FILE *out, const cJSON *v)
{
    const cJSON *s;
    int first = 1;
    double peak = num(cJSON_GetObjectItemCaseSensitive(v, "environment"), "peak_tflops");
    cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(v, "shapes")) {
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(s, "timers");
        if (!cJSON_GetObjectItemCaseSensitive(t, "candidate_kernel_ns"))
            continue;
        if (first)
            fprintf(out, "\ncandidate timers (median per run of the launches): CUPTI kernels / "
                         "events / CUPTI span / wall, input sets per call, pairs\n");
        first = 0;
        char k[32], ev[32], cu[32], wa[32];
        fmt_time(num(t, "candidate_kernel_ns"), k, sizeof k);
        fmt_time(num(t, "candidate_events_ns"), ev, sizeof ev);
        fmt_time(num(t, "candidate_cupti_span_ns"), cu, sizeof cu);
        fmt_time(num(t, "candidate_wall_ns"), wa, sizeof wa);
        fprintf(out, "%-4s %11s %11s %11s %11s %4.0f sets %4.0f pairs", str(s, "id"), k, ev, cu, wa,
                num(t, "sets"), num(t, "pairs"));
        double ns = num(t, "candidate_kernel_ns"), tf = ns > 0 ? num(s, "flops") / ns / 1e3 : 0;
        if (peak > 0 && tf > 0)
            fprintf(out, "   %.1f TFLOP/s, %.0f%% of peak", tf, 100 * tf / peak);
        fprintf(out, "\n");
    }
    return !first;
}

/* CUDA: the three timers of the candidate per timed shape, so a reader can
 * see they agree (the table's times are the events'). */
static void print_timers(FILE *out, const cJSON *v)
{
    const cJSON *s;
    int first = 1;
    if (print_device_timers(out, v))
        return;
    double peak = num(cJSON_GetObjectItemCaseSensitive(v, "environment"), "peak_tflops");
    cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(v, "shapes")) {
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(s, "timers");
        if (!cJSON_GetObjectItemCaseSensitive(t, "candidate_cupti_ns"))
            continue;
        if (first)
            fprintf(out, "\ncandidate timers (median per call): events / CUPTI kernels / wall with "
                         "synchronize\n");
        first = 0;
        char ev[32], cu[32], wa[32];
        fmt_time(num(t, "candidate_events_ns"), ev, sizeof ev);
        fmt_time(num(t, "candidate_cupti_ns"), cu, sizeof cu);
        fmt_time(num(t, "candidate_wall_ns"), wa, sizeof wa);
        fprintf(out, "%-4s %11s %11s %11s", str(s, "id"), ev, cu, wa);
        double ns = num(t, "candidate_events_ns"), tf = ns > 0 ? num(s, "flops") / ns / 1e3 : 0;
        if (peak > 0 && tf > 0)   /* compute-bound tasks: the rate against the peak */
            fprintf(out, "   %.1f TFLOP/s, %.0f%% of peak", tf, 100 * tf / peak);
        fprintf(out, "\n");
    }
}

/* CUDA: which device, as the worker saw it. */
static void print_gpu(FILE *out, const cJSON *v)
{
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(v, "environment"), "gpu");
    if (!g)
        return;
    fprintf(out, "gpu: %s (sm_%s), driver %.0f, copy bandwidth %.0f GB/s, pageable memory access %.0f\n",
            str(g, "name"), str(g, "cc"), num(g, "driver"),
            num(cJSON_GetObjectItemCaseSensitive(v, "environment"), "bandwidth_gbps"),
            num(g, "pageable"));
    double peak = num(cJSON_GetObjectItemCaseSensitive(v, "environment"), "peak_tflops");
    if (peak > 0)
        fprintf(out, "gpu peak (dense, %s): %.0f TFLOP/s\n", str(v, "dtype"), peak);
    if (num(g, "cublas") > 0)
        fprintf(out, "baseline: cuBLAS %.0f (cublasGemmEx)\n", num(g, "cublas"));
}

void kiln_print_verdict(FILE *out, const cJSON *v)
{
    /* The dims column fits the longest (rope's three dims do not fit 24). */
    int width = 24;
    const cJSON *s;
    cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(v, "shapes")) {
        char dims[128];
        fmt_dims(s, dims, sizeof dims);
        width = (int)strlen(dims) > width ? (int)strlen(dims) : width;
    }
    fprintf(out, "%-4s %-*s %16s %11s %11s %8s %8s\n", "id", width, "dims", "error ULP/budget",
            "candidate", "baseline", "speedup", "roofline");
    cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(v, "shapes")) print_shape(out, s, width);
    const cJSON *sum = cJSON_GetObjectItemCaseSensitive(v, "summary");
    if (num(sum, "geomean_speedup") > 0)
        fprintf(out, "\nspeedup: geomean %.2fx, min %.2fx; median roofline fraction %.0f%%\n",
                num(sum, "geomean_speedup"), num(sum, "min_speedup"),
                100 * num(sum, "median_roofline_fraction"));
    print_timers(out, v);
    const cJSON *f;
    cJSON_ArrayForEach(f, cJSON_GetObjectItemCaseSensitive(v, "flags"))
        fprintf(out, "flag: %s\n", cJSON_GetStringValue(f));
    const char *sb = str(cJSON_GetObjectItemCaseSensitive(v, "sandbox"), "protections");
    fprintf(out, "sandbox: %s\n", sb[0] ? sb : "(worker not started)");
    print_gpu(out, v);
    fprintf(out, "\n%s (stage %s, %s): %s\n", str(v, "status"), str(v, "stage"), str(v, "code"),
            str(v, "reason"));
    if (strcmp(str(v, "code"), "compile-error") == 0)
        fprintf(out, "\n%s\n", str(v, "feedback"));
}

int kiln_verdict_exit_code(const cJSON *v)
{
    const char *st = str(v, "status");
    if (strcmp(st, "pass") == 0)
        return KILN_EXIT_OK;
    if (strcmp(st, "fail") == 0 || strcmp(st, "suspect") == 0)
        return KILN_EXIT_FAIL;
    return KILN_EXIT_INTERNAL;
}
