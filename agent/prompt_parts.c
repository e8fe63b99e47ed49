/* prompt_parts.c - pieces of the user prompt (see prompt_parts.h).
 *
 * Everything here reads the decoded verdict (kiln_verdict_parse), never the
 * JSON: a hidden shape comes back from the decoder as an id, a visibility
 * and a code, and this file prints no more of it than its id and whether it
 * passed, so the prompt cannot tell the model a hidden size even where a
 * verdict's text held one. */
#include "prompt_parts.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LAG 3        /* shapes called out as lagging */
#define MAX_SLOW 4       /* shapes called out as slower than the baseline */
#define LAG_SHARE 0.75   /* lagging: under this share of the median roofline fraction */

/* ---- cutting text ----------------------------------------------------------- */

/* Part of a token: a word, a number ("1.5e3", "v2"), a UTF-8 sequence. */
static int in_token(char c)
{
    unsigned char u = (unsigned char)c;
    return isalnum(u) || c == '_' || c == '.' || u >= 0x80;
}

size_t kiln_prompt_cut(const char *s, size_t n, size_t max)
{
    if (n <= max)
        return n;
    size_t k = max;
    while (k > 0 && in_token(s[k - 1]) && in_token(s[k]))
        k--;
    while (k > 0 && (s[k - 1] == ' ' || s[k - 1] == '\t'))   /* no dangling space */
        k--;
    return k;
}

void kiln_prompt_oneline(kiln_strbuf *b, const char *s, size_t max)
{
    size_t n = strlen(s), start = b->len;
    kiln_sb_addn(b, s, kiln_prompt_cut(s, n, max));
    if (b->oom)
        return;
    for (size_t i = start; i < b->len; i++)
        if (b->p[i] == '\n' || b->p[i] == '\r' || b->p[i] == '\t')
            b->p[i] = ' ';
    if (n > max)
        kiln_sb_add(b, "...");
}

/* ---- numbers ---------------------------------------------------------------- */

/* Two significant digits under 10%: a shape at 3.1% and one at 3.9% differ. */
static void sb_percent(kiln_strbuf *b, double frac)
{
    kiln_sb_printf(b, frac * 100 < 9.95 ? "%.1f%%" : "%.0f%%", frac * 100);
}

/* x to three significant digits (no exponent for the sizes seen here). */
static void sb_sig3(kiln_strbuf *b, double x)
{
    kiln_sb_printf(b, x < 10 ? "%.2f" : x < 100 ? "%.1f" : "%.0f", x);
}

static void sb_time(kiln_strbuf *b, double ns)
{
    if (!(ns > 0) || !isfinite(ns)) {
        kiln_sb_add(b, "-");
        return;
    }
    static const char *const unit[] = {"ns", "us", "ms", "s"};
    int u = 0;
    while (u < 3 && ns >= 1000) {
        ns /= 1000;
        u++;
    }
    sb_sig3(b, ns);
    kiln_sb_printf(b, " %s", unit[u]);
}

/* "60 MiB" from bytes given as text ("62914560"). */
static void sb_bytes(kiln_strbuf *b, const char *text)
{
    double x = atof(text);
    if (x >= 1 << 20)
        kiln_sb_printf(b, "%g MiB", round(x / (1 << 20) * 10) / 10);
    else
        kiln_sb_printf(b, "%g KiB", round(x / 1024 * 10) / 10);
}

/* ---- the machine ------------------------------------------------------------ */

static void add_gpu(kiln_strbuf *b, const kiln_verdict *v)
{
    char f[128];
    kiln_verdict_gpu_field(v->gpu, "name", f, sizeof f);
    kiln_sb_printf(b, "Machine (where the parent was measured): GPU %s", f[0] ? f : "(unnamed)");
    kiln_verdict_gpu_field(v->gpu, "cc", f, sizeof f);
    if (f[0])
        kiln_sb_printf(b, ", compute capability %s", f);
    kiln_verdict_gpu_field(v->gpu, "sms", f, sizeof f);
    if (atoi(f) > 0)
        kiln_sb_printf(b, ", %d SMs", atoi(f));
    kiln_verdict_gpu_field(v->gpu, "l2", f, sizeof f);
    if (atof(f) > 0) {
        kiln_sb_add(b, ", L2 ");
        sb_bytes(b, f);
    }
    kiln_verdict_gpu_field(v->gpu, "smem_optin", f, sizeof f);
    if (atof(f) > 0) {
        kiln_sb_add(b, ", shared memory per block up to ");
        sb_bytes(b, f);
    }
    kiln_verdict_gpu_field(v->gpu, "smem_sm", f, sizeof f);
    if (atof(f) > 0) {
        kiln_sb_add(b, ", shared memory per SM ");
        sb_bytes(b, f);
    }
    kiln_verdict_gpu_field(v->gpu, "regs_sm", f, sizeof f);
    if (atoi(f) > 0)
        kiln_sb_printf(b, ", %d registers per SM", atoi(f));
    kiln_verdict_gpu_field(v->gpu, "threads_sm", f, sizeof f);
    if (atoi(f) > 0)
        kiln_sb_printf(b, ", at most %d threads per SM", atoi(f));
    kiln_verdict_gpu_field(v->gpu, "clock_khz", f, sizeof f);
    if (atoi(f) > 0)
        kiln_sb_printf(b, ", SM clock %d MHz", atoi(f) / 1000);
    kiln_sb_add(b, ".\n");
    if (v->bandwidth_gbps > 0)
        kiln_sb_printf(b, "Measured copy bandwidth: %.0f GB/s (the roofline's bandwidth).\n",
                       v->bandwidth_gbps);
    if (v->peak_tflops > 0)
        kiln_sb_printf(b, "Dense peak for %s: %.0f TFLOP/s.\n", v->dtype[0] ? v->dtype : "this dtype",
                       v->peak_tflops);
}

void kiln_prompt_machine(kiln_strbuf *b, const kiln_verdict *v)
{
    if (strcmp(v->backend, "cuda") == 0 && v->gpu[0]) {
        add_gpu(b, v);
    } else if (strcmp(v->backend, "cuda") != 0 && v->cpu_model[0]) {
        kiln_sb_add(b, "Machine (where the parent was measured): CPU ");
        kiln_prompt_oneline(b, v->cpu_model, sizeof v->cpu_model);
        kiln_sb_add(b, ".\n");
        if (v->cpu_isa[0])
            kiln_sb_printf(b, "Vector extensions: %.190s.\n", v->cpu_isa);
        if (v->cpu_caches[0])
            kiln_sb_printf(b, "Caches: %.95s.\n", v->cpu_caches);
        if (v->compiler[0])
            kiln_sb_printf(b, "Your C is built with %.159s (one thread: the worker may start "
                              "none).\n", v->compiler);
        if (v->bandwidth_gbps > 0)
            kiln_sb_printf(b, "Measured memory bandwidth: %.1f GB/s with the largest timed "
                              "shape's bytes as the working set; each shape's roofline column "
                              "uses the bandwidth measured at its own working set, higher where "
                              "it fits a cache.\n", v->bandwidth_gbps);
    } else {
        return;
    }
    kiln_sb_add(b, "\n");
}

/* ---- the verdict's head ------------------------------------------------------- */

void kiln_prompt_verdict_head(kiln_strbuf *b, const kiln_verdict *v)
{
    kiln_sb_printf(b, "Parent's verdict: %s", v->status[0] ? v->status : "?");
    if (v->stage[0])
        kiln_sb_printf(b, " at %s", v->stage);
    if (strcmp(v->stage, "hidden") == 0)   /* the code alone: a verdict recorded before the
                                             hidden stage was one outcome named the shape */
        kiln_sb_printf(b, " (%.32s)", v->code);
    else if (v->reason[0]) {
        kiln_sb_add(b, ": ");
        kiln_prompt_oneline(b, v->reason, 300);
    }
    kiln_sb_add(b, "\n");
    if (v->geomean_speedup > 0 && isfinite(v->min_speedup)) {
        kiln_sb_printf(b, "Summary: geomean speedup %.2fx over %s (min %.2fx)", v->geomean_speedup,
                       v->baseline_is_task ? "the task's baseline" : "the baseline",
                       v->min_speedup);
        if (isfinite(v->median_roofline) && v->median_roofline > 0) {
            kiln_sb_add(b, ", median ");
            sb_percent(b, v->median_roofline);
            kiln_sb_add(b, " of roofline");
        }
        kiln_sb_add(b, "\n");
    }
}

/* ---- the shapes ----------------------------------------------------------------- */

/* A visible shape with a speedup to show. */
static int measured(const kiln_shape_result *r)
{
    return r->visible && r->timed && isfinite(r->speedup) && r->speedup > 0;
}

static int has_roof(const kiln_shape_result *r)
{
    return measured(r) && isfinite(r->roofline_fraction) && r->roofline_fraction > 0;
}

static double roof_of(const kiln_shape_result *r) { return r->roofline_fraction; }
static double speedup_of(const kiln_shape_result *r) { return r->speedup; }

/* Shapes called out: the lowest roofline fractions well under the median
 * (the kernel leaves bandwidth unused there) and those slower than the
 * baseline, each list lowest first. */
typedef struct callouts {
    int lag[MAX_LAG], nlag;
    int slow[MAX_SLOW], nslow;
    double median;      /* the roofline fractions' median; 0 with fewer than two */
} callouts;

/* Shape i into out (sorted by key, at most max kept). */
static void keep_lowest(const kiln_verdict *v, int *out, int *n, int max, int i,
                        double (*key)(const kiln_shape_result *))
{
    double k = key(&v->results[i]);
    if (*n == max && k >= key(&v->results[out[max - 1]]))
        return;
    int pos = *n < max ? (*n)++ : max - 1;
    for (; pos > 0 && key(&v->results[out[pos - 1]]) > k; pos--)
        out[pos] = out[pos - 1];
    out[pos] = i;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_roof(const kiln_verdict *v)
{
    double f[KILN_MAX_RESULTS];
    int n = 0;
    for (int i = 0; i < v->nresults; i++)
        if (has_roof(&v->results[i]))
            f[n++] = v->results[i].roofline_fraction;
    if (n < 2)
        return 0;
    qsort(f, (size_t)n, sizeof f[0], cmp_double);
    return n % 2 ? f[n / 2] : (f[n / 2 - 1] + f[n / 2]) / 2;
}

/* Slower than the baseline beyond the noise: the speedup's interval lies
 * under 1 (the device's 95% interval; on the CPU the candidate's and the
 * baseline's half 20-80 spreads combined, as the keep rule reads them). An
 * interval that straddles 1 is never called slower. */
static int surely_slower(const kiln_shape_result *r)
{
    if (r->speedup_hi > 0)
        return r->speedup_hi < 1;
    double hc = kiln_time_half_spread(&r->cand), hb = kiln_time_half_spread(&r->base);
    return r->speedup * exp(sqrt(hc * hc + hb * hb)) < 1;
}

static void find_callouts(const kiln_verdict *v, callouts *c)
{
    memset(c, 0, sizeof *c);
    c->median = median_roof(v);
    for (int i = 0; i < v->nresults; i++) {
        const kiln_shape_result *r = &v->results[i];
        if (c->median > 0 && has_roof(r) && r->roofline_fraction < LAG_SHARE * c->median)
            keep_lowest(v, c->lag, &c->nlag, MAX_LAG, i, roof_of);
        if (measured(r) && surely_slower(r))
            keep_lowest(v, c->slow, &c->nslow, MAX_SLOW, i, speedup_of);
    }
}

static int called_out(const callouts *c, int i)
{
    for (int k = 0; k < c->nlag; k++)
        if (c->lag[k] == i)
            return 1;
    for (int k = 0; k < c->nslow; k++)
        if (c->slow[k] == i)
            return 1;
    return 0;
}

static void sb_speedup(kiln_strbuf *b, const kiln_shape_result *r)
{
    kiln_sb_printf(b, "%.2fx", r->speedup);
    if (r->speedup_lo > 0 && r->speedup_hi > 0)
        kiln_sb_printf(b, " [%.2f, %.2f]", r->speedup_lo, r->speedup_hi);
}

/* One visible shape's row. */
static void add_row(kiln_strbuf *b, const kiln_verdict *v, const kiln_shape_result *r)
{
    char dims[128];
    kiln_verdict_dims(v, r, dims, sizeof dims);
    kiln_sb_printf(b, "| %.16s | %s | ", r->id[0] ? r->id : "?", dims[0] ? dims : "-");
    if (!measured(r)) {
        kiln_sb_printf(b, "- | - | - | - | not timed%s%.32s%s |\n", r->code[0] ? " (" : "",
                       r->code, r->code[0] ? ")" : "");
        return;
    }
    sb_time(b, r->cand.median_ns);
    kiln_sb_add(b, " | ");
    sb_time(b, r->base.median_ns);
    kiln_sb_add(b, " | ");
    if (r->bytes > 0 && r->cand.median_ns > 0)
        sb_sig3(b, r->bytes / r->cand.median_ns);   /* bytes per ns = GB/s */
    else
        kiln_sb_add(b, "-");
    kiln_sb_add(b, " | ");
    if (has_roof(r))
        sb_percent(b, r->roofline_fraction);
    else
        kiln_sb_add(b, "-");
    kiln_sb_add(b, " | ");
    sb_speedup(b, r);
    kiln_sb_add(b, " |\n");
}

/* The hidden shapes: how many, and the hidden stage's one outcome; the
 * decoded verdict holds nothing else of them, and nothing else is shown. */
static void add_hidden(kiln_strbuf *b, const kiln_verdict *v)
{
    if (v->nhidden == 0 || !v->hidden_ran)
        return;
    kiln_sb_printf(b, "Hidden shapes: %d (their sizes are never shown)", v->nhidden);
    if (!v->hidden_code[0])
        kiln_sb_add(b, ", all passed.\n");
    else
        kiln_sb_printf(b, "; the hidden stage failed: %.32s (which shape is never said).\n",
                       v->hidden_code);
}

static void add_callouts(kiln_strbuf *b, const kiln_verdict *v, const callouts *c)
{
    if (c->median > 0 && c->nlag == 0) {
        kiln_sb_add(b, "No shape lags: each reaches at least 3/4 of the shapes' median roofline "
                       "fraction (");
        sb_percent(b, c->median);
        kiln_sb_add(b, ").\n");
    } else if (c->nlag > 0) {
        kiln_sb_add(b, "Lagging shapes (roofline fraction under 3/4 of the shapes' median, ");
        sb_percent(b, c->median);
        kiln_sb_add(b, "; lowest first):");
        for (int k = 0; k < c->nlag; k++) {
            const kiln_shape_result *r = &v->results[c->lag[k]];
            kiln_sb_printf(b, "%s %.16s at ", k ? "," : "", r->id);
            sb_percent(b, r->roofline_fraction);
            kiln_sb_printf(b, " (%.2fx)", r->speedup);
        }
        kiln_sb_add(b, ".\n");
    }
    if (c->nslow > 0) {
        kiln_sb_add(b, "Slower than the baseline:");
        for (int k = 0; k < c->nslow; k++) {
            kiln_sb_printf(b, "%s %.16s ", k ? "," : "", v->results[c->slow[k]].id);
            sb_speedup(b, &v->results[c->slow[k]]);
        }
        kiln_sb_add(b, ".\n");
    }
}

/* The visible shape furthest from the roofline that has the driver's
 * view of its kernels, or NULL. */
static const kiln_shape_result *worst_profiled(const kiln_verdict *v)
{
    const kiln_shape_result *w = NULL;
    for (int i = 0; i < v->nresults; i++) {
        const kiln_shape_result *r = &v->results[i];
        if (r->visible && r->nprofile && r->timed &&
            (!w || r->roofline_fraction < w->roofline_fraction))
            w = r;
    }
    return w;
}

/* A profiler's static view of the parent's kernels at its worst shape:
 * registers, spills, shared memory and theoretical occupancy (CUDA). */
static void add_profile(kiln_strbuf *b, const kiln_verdict *v)
{
    const kiln_shape_result *r = worst_profiled(v);
    if (!r)
        return;
    kiln_sb_printf(b, "Kernels at %.16s, the shape furthest from the roofline (as the driver sees "
                      "them):\n", r->id);
    for (int k = 0; k < r->nprofile; k++) {
        const kiln_kernel_profile *p = &r->profile[k];
        kiln_sb_printf(b, "- %.48s: %d threads a block%s, %d registers a thread, %d bytes of "
                          "local memory a thread%s, shared memory %d static + %d dynamic bytes, %d "
                          "blocks an SM (theoretical occupancy ",
                       p->kernel, p->threads, p->cluster > 1 ? " in clusters" : "", p->regs,
                       p->local_bytes, p->local_bytes ? " (spills or a stack)" : "",
                       p->static_smem, p->dynamic_smem, p->blocks_per_sm);
        sb_percent(b, p->occupancy);
        kiln_sb_add(b, ")\n");
    }
}

void kiln_prompt_shapes(kiln_strbuf *b, const kiln_verdict *v, int all)
{
    callouts c;
    find_callouts(v, &c);
    int visible = 0, rows = 0;
    for (int i = 0; i < v->nresults; i++)
        visible += v->results[i].visible;
    if (visible > 0) {
        kiln_sb_add(b, "Parent's results per visible shape (median time per call; GB/s: the "
                       "compulsory bytes over the parent's time; roofline: the share of the "
                       "measured bandwidth reached; speedup over the baseline, with its 95% "
                       "interval where measured):\n| shape | dims | parent | baseline | GB/s | "
                       "roofline | speedup |\n|---|---|---|---|---|---|---|\n");
        for (int i = 0; i < v->nresults; i++)
            if (v->results[i].visible && (all || called_out(&c, i))) {
                add_row(b, v, &v->results[i]);
                rows++;
            }
        if (rows < visible)
            kiln_sb_printf(b, "(%d other visible shape%s not shown for length)\n", visible - rows,
                           visible - rows == 1 ? "" : "s");
    }
    add_hidden(b, v);
    add_callouts(b, v, &c);
    add_profile(b, v);
}

void kiln_prompt_shape_speedups(kiln_strbuf *b, const kiln_verdict *v)
{
    int shown = 0;
    for (int i = 0; i < v->nresults; i++) {
        const kiln_shape_result *r = &v->results[i];
        if (!r->visible || !r->timed || !(r->speedup > 0))
            continue;
        kiln_sb_printf(b, "%s%.15s %.2fx", shown++ ? " " : "", r->id, r->speedup);
    }
}
