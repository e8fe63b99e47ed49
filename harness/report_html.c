/* report_html.c - the page `kiln report` writes (see report_html.h).
 *
 * Everything is drawn here as inline SVG so the page needs nothing but a
 * browser: no scripts, no fonts, no network (a Content-Security-Policy
 * forbids every fetch). Every string from the database is escaped:
 * hypotheses and reasons come from models. */
#include "report_html.h"
#include "keep_rule.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lessons.h"
#include "rundb.h"

#define CW 640.0   /* chart size and margins, in SVG units */
#define CH 280.0
#define ML 58.0
#define MR 18.0
#define MT 14.0
#define MB 44.0

static const char css[] =
    "body{font:14px/1.4 system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#222;padding:0 1em}"
    "h1{font-size:1.5em}h2{font-size:1.25em;border-bottom:1px solid #ccc;margin-top:2em}"
    "h3{font-size:1.05em;margin-top:1.5em}"
    "table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ddd;padding:2px 8px;"
    "text-align:left;vertical-align:top}th{background:#f4f4f4}td.num{text-align:right;"
    "font-variant-numeric:tabular-nums}.muted{color:#777}.hyp{max-width:420px;overflow-wrap:anywhere}"
    "svg.chart{background:#fff;border:1px solid #ddd;margin:.5em 1em .5em 0}"
    "svg text{font:11px system-ui,sans-serif;fill:#444}.grid{stroke:#eee}.axis{stroke:#888}"
    ".best{fill:none;stroke:#1d4e89;stroke-width:2}.one{stroke:#bbb;stroke-dasharray:4 3}"
    "circle.kept{stroke:#000;stroke-width:1.5}path.est{stroke-width:1.6;pointer-events:all}"
    ".legend span{display:inline-block;width:10px;height:10px;border-radius:50%;"
    "margin:0 4px 0 12px}.legend .pass{background:#2b9348}.legend .fail{background:#d62828}"
    ".legend .suspect{background:#f77f00}.legend .error{background:#7b2cbf}"
    ".legend .none{background:#999}.legend svg{margin:0 4px 0 12px;vertical-align:-1px}"
    ".model{fill:#1d4e89}.verification{fill:#2b9348}.kiln{fill:#f77f00}";

void kiln_html_escape(FILE *out, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", out); break;
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '"': fputs("&quot;", out); break;
        case '\'': fputs("&#39;", out); break;
        case ':': fputs("&#58;", out); break;
        default: fputc(*s, out);
        }
    }
}

static const char *status_class(const char *status)
{
    static const char *known[] = {"pass", "fail", "suspect", "error"};
    for (size_t i = 0; i < sizeof known / sizeof *known; i++)
        if (strcmp(status, known[i]) == 0)
            return known[i];
    return "none";
}

/* The colour of a status (the legend's), set on a marker as an attribute:
 * a kept marker fills with it, an estimated one only strokes it. */
static const char *status_colour(const char *status)
{
    static const char *const cls[] = {"pass", "fail", "suspect", "error"};
    static const char *const col[] = {"#2b9348", "#d62828", "#f77f00", "#7b2cbf"};
    for (size_t i = 0; i < sizeof cls / sizeof *cls; i++)
        if (strcmp(status, cls[i]) == 0)
            return col[i];
    return "#999999";
}

/* ---- charts ------------------------------------------------------------------ */

typedef struct axis {
    double hi, step;
} axis;

/* An axis from 0 with about five steps of 1, 2 or 5 times a power of ten. */
static axis nice_axis(double hi)
{
    if (!(hi > 0) || !isfinite(hi))
        hi = 1;
    double raw = hi / 5, mag = pow(10, floor(log10(raw))), f = raw / mag;
    double step = (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
    axis a = {ceil(hi / step - 1e-9) * step, step};
    return a;
}

typedef struct chart {
    axis x, y;
    int by_time;
} chart;

static double px(const chart *c, double x)
{
    return ML + x / c->x.hi * (CW - ML - MR);
}

static double py(const chart *c, double y)
{
    return CH - MB - y / c->y.hi * (CH - MT - MB);
}

static double xval(const chart *c, const kiln_rv_cand *k)
{
    return c->by_time ? k->t : k->iteration;
}

static void draw_axes(FILE *o, const chart *c, const char *xlabel)
{
    for (double y = 0; y <= c->y.hi + 1e-9; y += c->y.step)
        fprintf(o, "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
                   "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%gx</text>\n",
                ML, py(c, y), CW - MR, py(c, y), ML - 6, py(c, y) + 4, y);
    for (double x = 0; x <= c->x.hi + 1e-9; x += c->x.step)
        fprintf(o, "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
                   "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%g</text>\n",
                px(c, x), MT, px(c, x), CH - MB, px(c, x), CH - MB + 16, x);
    fprintf(o, "<line class=\"axis\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
               "<line class=\"axis\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n",
            ML, CH - MB, CW - MR, CH - MB, ML, MT, ML, CH - MB);
    if (c->y.hi >= 1)   /* the baseline's speed, for reference */
        fprintf(o, "<line class=\"one\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", ML,
                py(c, 1), CW - MR, py(c, 1));
    fprintf(o, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>"
               "<text x=\"14\" y=\"%.1f\" text-anchor=\"middle\" transform=\"rotate(-90 14 %.1f)\">"
               "speedup against the task&#39;s baseline</text>\n",
            (ML + CW - MR) / 2, CH - 8, xlabel, (MT + CH - MB) / 2, (MT + CH - MB) / 2);
}

static const chart *sort_chart;   /* qsort has no context argument */

static int cmp_x(const void *a, const void *b)
{
    double xa = xval(sort_chart, *(const kiln_rv_cand *const *)a);
    double xb = xval(sort_chart, *(const kiln_rv_cand *const *)b);
    return (xa > xb) - (xa < xb);
}

/* The best speedup so far: a step line through the kept candidates. */
static void draw_best(FILE *o, const chart *c, const kiln_rv_run *r)
{
    const kiln_rv_cand **k = malloc((size_t)r->nc * sizeof *k);
    int n = 0;
    for (int i = 0; k && i < r->nc; i++)
        if (r->c[i].kept && r->c[i].vs_baseline > 0)
            k[n++] = &r->c[i];
    sort_chart = c;
    if (n)
        qsort(k, (size_t)n, sizeof *k, cmp_x);
    double best = 0, x = 0;
    if (n) {
        fputs("<polyline class=\"best\" points=\"", o);
        for (int i = 0; i < n; i++) {
            x = xval(c, k[i]);
            if (i && k[i]->vs_baseline <= best)
                continue;
            if (i)
                fprintf(o, "%.1f,%.1f ", px(c, x), py(c, best));
            best = k[i]->vs_baseline;
            fprintf(o, "%.1f,%.1f ", px(c, x), py(c, best));
        }
        fprintf(o, "%.1f,%.1f\"/>\n", px(c, c->x.hi), py(c, best));
    }
    free(k);
}

/* A candidate's hover text: what it tried, its verdict, its speedup. */
static void point_title(FILE *o, const kiln_rv_cand *k)
{
    fprintf(o, "<title>#%d (iteration %d, %.0f s): ", k->n, k->iteration, k->t);
    kiln_html_escape(o, k->hypothesis);
    fprintf(o, " - %s", k->status[0] ? k->status : "not verified");
    if (k->code[0] && strcmp(k->code, "ok") != 0) {
        fputs(" (", o);
        kiln_html_escape(o, k->code);
        fputs(")", o);
    }
    char sp[64];
    kiln_rv_fmt_speedup(k->vs_baseline, k->kept ? k->baseline_lo : 0,
                        k->kept ? k->baseline_hi : 0, sp, sizeof sp);
    fprintf(o, ", %s%s, %s</title>", sp, k->kept ? "" : " (estimated)",
            k->decision[0] ? k->decision : "undecided");
}

/* A kept candidate was recorded against the baseline: a filled circle. A
 * reverted one's speedup is an estimate (review.c): a hollow diamond, so
 * that one above the best-so-far line reads as what it is. Estimates are
 * drawn first, kept points over them. */
static void draw_points(FILE *o, const chart *c, const kiln_rv_run *r)
{
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < r->nc; i++) {
            const kiln_rv_cand *k = &r->c[i];
            if (k->kept != pass)
                continue;
            double x = px(c, xval(c, k)), y = py(c, k->vs_baseline);
            const char *col = status_colour(k->status);
            if (k->kept)
                fprintf(o, "<circle class=\"kept\" data-n=\"%d\" data-status=\"%s\" fill=\"%s\" "
                           "cx=\"%.1f\" cy=\"%.1f\" r=\"6\">", k->n, status_class(k->status),
                        col, x, y);
            else
                fprintf(o, "<path class=\"est\" data-n=\"%d\" data-status=\"%s\" fill=\"none\" "
                           "stroke=\"%s\" d=\"M%.1f,%.1fl5,5l-5,5l-5,-5z\">", k->n,
                        status_class(k->status), col, x, y - 5);
            point_title(o, k);
            fputs(k->kept ? "</circle>\n" : "</path>\n", o);
        }
}

static void draw_chart(FILE *o, const kiln_rv_run *r, int by_time)
{
    chart c = {.by_time = by_time};
    double xmax = 0, ymax = 1;
    for (int i = 0; i < r->nc; i++) {
        xmax = fmax(xmax, xval(&c, &r->c[i]));
        ymax = fmax(ymax, r->c[i].vs_baseline);
    }
    c.x = nice_axis(by_time ? xmax : fmax(xmax, 1));
    c.y = nice_axis(ymax * 1.08);
    fprintf(o, "<svg class=\"chart\" viewBox=\"0 0 %.0f %.0f\" width=\"%.0f\" height=\"%.0f\" "
               "role=\"img\" aria-label=\"best speedup against %s\">\n",
            CW, CH, CW, CH, by_time ? "elapsed time" : "iteration");
    draw_axes(o, &c, by_time ? "seconds since the run started" : "iteration");
    draw_best(o, &c, r);
    draw_points(o, &c, r);
    fputs("</svg>\n", o);
}

/* ---- per shape, over the run ------------------------------------------------ */

#define MAX_SERIES 16
static const char *const series_colour[] = {"#1d4e89", "#d62828", "#2b9348", "#f77f00",
                                            "#7b2cbf", "#00a6a6", "#8d6e63", "#555555"};

/* What the kept candidates measured at each visible shape against the task's
 * baseline (their "record" verdicts), in the order they were kept. */
typedef struct shape_series {
    char id[MAX_SERIES][16];
    int nshapes, npts;
    int *iteration;                 /* [npts] */
    double (*speedup)[MAX_SERIES];  /* [npts][shape]; 0: not measured there */
    double (*roofline)[MAX_SERIES];
} shape_series;

static int series_shape(shape_series *s, const char *id)
{
    for (int i = 0; i < s->nshapes; i++)
        if (strcmp(s->id[i], id) == 0)
            return i;
    if (s->nshapes == MAX_SERIES)
        return -1;
    snprintf(s->id[s->nshapes], sizeof s->id[0], "%s", id);
    return s->nshapes++;
}

static void add_record(shape_series *s, int iteration, const kiln_verdict *v)
{
    int p = s->npts++;
    s->iteration[p] = iteration;
    for (int i = 0; i < v->nresults; i++) {
        const kiln_shape_result *sh = &v->results[i];
        if (!sh->timed)
            continue;   /* hidden shapes are never timed; untimed ones have nothing to plot */
        int k = series_shape(s, sh->id);
        if (k < 0)
            continue;
        s->speedup[p][k] = kiln_rv_fin(sh->speedup);
        s->roofline[p][k] = 100 * kiln_rv_fin(sh->roofline_fraction);
    }
}

/* A kept candidate's verdict against the task's baseline into v: the
 * pooled one (two records), else its one record (a run from before
 * pooling). Returns 1 pooled, 0 one record, -1 none. */
static int baseline_verdict(sqlite3 *db, const char *run, const kiln_rv_cand *c, kiln_verdict *v)
{
    int pooled = 1;
    char *text = kiln_db_cand_text(db, run, c->n, KILN_TEXT_POOLED);
    if (!text) {
        pooled = 0;
        text = kiln_db_cand_text(db, run, c->n, KILN_TEXT_RECORD);
    }
    kiln_error e;
    int rc = text && kiln_verdict_parse(text, v, &e) == 0 ? pooled : -1;
    free(text);
    return rc;
}

static int load_series(sqlite3 *db, const kiln_rv_run *r, shape_series *s)
{
    memset(s, 0, sizeof *s);
    s->iteration = calloc((size_t)r->nc + 1, sizeof *s->iteration);
    s->speedup = calloc((size_t)r->nc + 1, sizeof *s->speedup);
    s->roofline = calloc((size_t)r->nc + 1, sizeof *s->roofline);
    kiln_verdict *v = malloc(sizeof *v);
    if (!s->iteration || !s->speedup || !s->roofline || !v) {
        free(v);
        return -1;
    }
    for (int i = 0; i < r->nc; i++) {
        if (!r->c[i].kept)
            continue;
        if (baseline_verdict(db, r->run.id, &r->c[i], v) >= 0)
            add_record(s, r->c[i].iteration, v);
    }
    free(v);
    return 0;
}

static void free_series(shape_series *s)
{
    free(s->iteration);
    free(s->speedup);
    free(s->roofline);
}

/* Shape k's line: a kept kernel's figure holds until the next keep, so the
 * line is a step function, M to the first keep, then H to each next keep's
 * iteration and V to its figure, and H to xend, the run's last iteration. */
static void series_steps(FILE *o, const chart *c, const shape_series *s, double (*y)[MAX_SERIES],
                         int k, double xend, const char *col)
{
    int started = 0;
    fprintf(o, "<path class=\"steps\" data-shape=\"%s\" fill=\"none\" stroke=\"%s\" "
               "stroke-width=\"2\" d=\"", s->id[k], col);
    for (int p = 0; p < s->npts; p++) {
        if (!(y[p][k] > 0))
            continue;   /* not measured at this shape: the last figure holds */
        double x = px(c, s->iteration[p]), v = py(c, y[p][k]);
        if (!started)
            fprintf(o, "M%.1f,%.1f", x, v);
        else
            fprintf(o, "H%.1fV%.1f", x, v);
        started = 1;
    }
    if (started)
        fprintf(o, "H%.1f", px(c, xend));
    fputs("\"/>\n", o);
}

/* One step line per shape over the kept candidates' iterations, to the
 * run's last iteration (xend). */
static void series_chart(FILE *o, const shape_series *s, double (*y)[MAX_SERIES], const char *what,
                         const char *unit, double xend)
{
    chart c = {0};
    double xmax = fmax(1, xend), ymax = 0;
    for (int p = 0; p < s->npts; p++) {
        xmax = fmax(xmax, s->iteration[p]);
        for (int k = 0; k < s->nshapes; k++)
            ymax = fmax(ymax, y[p][k]);
    }
    c.x = nice_axis(xmax);
    c.y = nice_axis(ymax * 1.08);
    fprintf(o, "<svg class=\"chart\" viewBox=\"0 0 %.0f %.0f\" width=\"%.0f\" height=\"%.0f\" "
               "role=\"img\" aria-label=\"%s per shape against iteration\">\n", CW, CH, CW, CH,
            what);
    for (double v = 0; v <= c.y.hi + 1e-9; v += c.y.step)
        fprintf(o, "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
                   "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%g%s</text>\n",
                ML, py(&c, v), CW - MR, py(&c, v), ML - 6, py(&c, v) + 4, v, unit);
    for (double x = 0; x <= c.x.hi + 1e-9; x += c.x.step)
        fprintf(o, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%g</text>\n", px(&c, x),
                CH - MB + 16, x);
    fprintf(o, "<line class=\"axis\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
               "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">iteration (kept kernels)</text>"
               "<text x=\"14\" y=\"%.1f\" text-anchor=\"middle\" transform=\"rotate(-90 14 %.1f)\">"
               "%s</text>\n", ML, CH - MB, CW - MR, CH - MB, (ML + CW - MR) / 2, CH - 8,
            (MT + CH - MB) / 2, (MT + CH - MB) / 2, what);
    for (int k = 0; k < s->nshapes; k++) {
        const char *col = series_colour[k % 8];
        series_steps(o, &c, s, y, k, xend, col);
        fprintf(o, "<text x=\"%.1f\" y=\"%.1f\" style=\"fill:%s\">%s</text>\n",
                CW - MR - 40, MT + 12 + 13 * k, col, s->id[k]);
    }
    fputs("</svg>\n", o);
}

static void shape_charts(FILE *o, sqlite3 *db, const kiln_rv_run *r)
{
    shape_series s;
    if (load_series(db, r, &s) == 0 && s.npts > 0 && s.nshapes > 0) {
        fputs("<h3>per shape, over the run</h3>\n<p class=\"muted\">each kept kernel measured "
              "against the task&#39;s baseline at every visible shape (its pooled records); a "
              "kept kernel&#39;s figure holds until the next keep</p>\n", o);
        double xend = r->run.iterations_done;
        for (int p = 0; p < s.npts; p++)
            xend = fmax(xend, s.iteration[p]);
        series_chart(o, &s, s.speedup, "speedup against the task&#39;s baseline", "x", xend);
        series_chart(o, &s, s.roofline, "fraction of the roofline", "%", xend);
    }
    free_series(&s);
}

/* ---- tables ------------------------------------------------------------------- */

static void td_text(FILE *o, const char *s)
{
    fputs("<td>", o);
    kiln_html_escape(o, s);
    fputs("</td>", o);
}

static void best_table(FILE *o, const kiln_rv_run *r)
{
    if (r->best < 0 || !r->best_record) {
        fputs("<p class=\"muted\">no kept kernel with a verdict against the baseline</p>\n", o);
        return;
    }
    const kiln_rv_cand *b = &r->c[r->best];
    fprintf(o, "<p>candidate #%d, commit <code>%.12s</code>: ", b->n, b->commit);
    kiln_html_escape(o, b->hypothesis);
    fputs("</p>\n<table><tr><th>shape</th><th>dims</th><th>candidate</th><th>baseline</th>"
          "<th>speedup</th><th>roofline</th><th>error (ULP / budget)</th></tr>\n", o);
    const kiln_verdict *v = r->best_record;
    for (int i = 0; i < v->nresults; i++) {
        const kiln_shape_result *s = &v->results[i];
        if (!s->timed)
            continue;
        char dims[128], ct[32], bt[32];
        kiln_verdict_dims(v, s, dims, sizeof dims);
        kiln_rv_fmt_time(s->cand.median_ns, ct, sizeof ct);
        kiln_rv_fmt_time(s->base.median_ns, bt, sizeof bt);
        fputs("<tr>", o);
        td_text(o, s->id);
        td_text(o, dims);
        kiln_interval x = kiln_shape_interval(s);
        char sp[64];
        kiln_rv_fmt_speedup(s->speedup, x.lo, x.hi, sp, sizeof sp);
        fprintf(o, "<td class=\"num\">%s</td><td class=\"num\">%s</td><td class=\"num\">%s</td>"
                   "<td class=\"num\">%.1f%%</td><td class=\"num\">%.1f / %.0f</td></tr>\n",
                ct, bt, sp, 100 * kiln_rv_fin(s->roofline_fraction),
                kiln_rv_fin(s->max_err_ulps), kiln_rv_fin(s->budget_ulps));
    }
    kiln_interval g;
    char gs[64];
    kiln_geomean_interval(v, &g);
    kiln_rv_fmt_speedup(v->geomean_speedup, g.lo, g.hi, gs, sizeof gs);
    fprintf(o, "</table>\n<p>geomean %s, min %.2fx, median roofline fraction %.1f%% (%s); ", gs,
            kiln_rv_fin(v->min_speedup), 100 * kiln_rv_fin(v->median_roofline),
            r->best_pooled ? "two records pooled"
                           : "one record, unconfirmed: a run from before pooling");
    fputs("measured on ", o);
    kiln_html_escape(o, v->cpu_model);
    fputs(", host ", o);
    kiln_html_escape(o, v->hostname);
    fputs("</p>\n", o);
}

/* Every kept candidate after the start: the geomeans it was kept on, each
 * with its interval, and why. */
static void kept_table(FILE *o, const kiln_rv_run *r)
{
    const kiln_run *u = &r->run;
    if (u->keep_margin >= 0 && u->objective[0])
        fprintf(o, "<p>keep rule: the %s&#39;s interval against the parent must lie above %.3fx, "
                   "and no visible shape&#39;s interval wholly below %.3fx</p>\n",
                u->objective, 1 + u->keep_margin, 1 - u->max_regression);
    fputs("<table><tr><th>#</th><th>hypothesis</th><th>geomean vs parent (pooled)</th>"
          "<th>first</th><th>re-timed</th><th>vs baseline (pooled)</th><th>why</th></tr>\n", o);
    int any = 0;
    for (int i = 0; i < r->nc; i++) {
        const kiln_rv_cand *c = &r->c[i];
        if (!c->kept || c->n == 0)
            continue;
        char claim[64], p[64], q[64], b[64];
        kiln_rv_fmt_kept(c, claim, p, q, b);
        fprintf(o, "<tr class=\"kept\"><td class=\"num\">%d</td><td class=\"hyp\">", c->n);
        kiln_html_escape(o, c->hypothesis);
        fprintf(o, "</td><td class=\"num\">%s</td><td class=\"num\">%s</td><td class=\"num\">"
                   "%s</td><td class=\"num\">%s</td>", claim, p, q, b);
        td_text(o, c->why);
        fputs("</tr>\n", o);
        any = 1;
    }
    fputs(any ? "</table>\n" : "</table><p class=\"muted\">none kept after the start</p>\n", o);
}

/* The archive (docs/search.md, "Population"): each cell's elite with its
 * objective against the task's baseline and the interval; then the
 * lineage of the best, start first. */
static void archive_table(FILE *o, const kiln_rv_run *r)
{
    if (r->narchive == 0) {
        fputs("<p class=\"muted\">no archive (a run from before kiln kept one)</p>\n", o);
        return;
    }
    fprintf(o, "<p>parents chosen by: %s</p>\n<table><tr><th>cell</th><th>#</th><th>commit</th>"
               "<th>vs baseline</th></tr>\n", r->run.parents[0] ? r->run.parents : "best");
    for (int i = 0; i < r->narchive; i++) {
        const kiln_elite *e = &r->archive[i];
        char sp[64];
        kiln_rv_fmt_speedup(e->speedup, e->lo, e->hi, sp, sizeof sp);
        fputs("<tr>", o);
        td_text(o, e->cell);
        fprintf(o, "<td class=\"num\">%d</td><td>%.12s%s</td><td class=\"num\">%s</td></tr>\n",
                e->n, e->commit, strcmp(e->commit, r->run.head_commit) == 0 ? " (best)" : "", sp);
    }
    fputs("</table>\n", o);
    int line[256], n = kiln_rv_lineage(r, line, 256);
    if (n == 0)
        return;
    fputs("<p>lineage of the best:", o);
    for (int i = 0; i < n; i++)
        fprintf(o, "%s#%d", i ? " &rarr; " : " ", r->c[line[i]].n);
    fputs("</p>\n", o);
}

static void rejections_table(FILE *o, const kiln_rv_run *r)
{
    kiln_rv_reject rej[64];
    int n = kiln_rv_rejections(r, rej, 64);
    if (!n) {
        fputs("<p class=\"muted\">no rejected candidates</p>\n", o);
        return;
    }
    fputs("<table><tr><th>stage</th><th>code</th><th>candidates</th></tr>\n", o);
    for (int i = 0; i < n; i++) {
        fputs("<tr>", o);
        td_text(o, rej[i].stage);
        td_text(o, rej[i].code);
        fprintf(o, "<td class=\"num\">%d</td></tr>\n", rej[i].count);
    }
    fputs("</table>\n", o);
}

static void candidates_table(FILE *o, const kiln_rv_run *r)
{
    fputs("<details><summary>every candidate</summary><table><tr><th>#</th><th>it.</th>"
          "<th>proposer</th><th>hypothesis</th><th>status</th><th>code</th><th>vs parent</th>"
          "<th>vs baseline</th><th>decision</th></tr>\n", o);
    for (int i = 0; i < r->nc; i++) {
        const kiln_rv_cand *c = &r->c[i];
        fprintf(o, "<tr><td class=\"num\">%d</td><td class=\"num\">%d</td>", c->n, c->iteration);
        td_text(o, c->proposer);
        fputs("<td class=\"hyp\">", o);
        kiln_html_escape(o, c->hypothesis);
        fputs("</td>", o);
        td_text(o, c->status);
        td_text(o, c->code);
        char p[64], b[64];
        kiln_rv_fmt_speedup(c->speedup, c->speedup_lo, c->speedup_hi, p, sizeof p);
        kiln_rv_fmt_speedup(c->vs_baseline, c->kept ? c->baseline_lo : 0,
                            c->kept ? c->baseline_hi : 0, b, sizeof b);
        fprintf(o, "<td class=\"num\">%s</td><td class=\"num\">%s%s</td>", p, b,
                c->kept ? "" : "*");
        fputs("<td title=\"", o);
        kiln_html_escape(o, c->why[0] ? c->why : c->reason);
        fputs("\">", o);
        kiln_html_escape(o, c->decision);
        fputs("</td></tr>\n", o);
    }
    fputs("</table><p class=\"muted\">* estimated: speedup against the parent times the parent&#39;s "
          "recorded speedup against the baseline</p></details>\n", o);
}

/* ---- lessons: tables of the knowledge layer, shown as they are ------------------- */

/* A table of lessons under a heading (nothing when it has no rows); columns
 * named *_at are dates. Returns the number of rows. */
static int lesson_table(FILE *o, const char *heading, const kiln_lesson_table *t)
{
    if (t->nrow == 0)
        return 0;
    fprintf(o, "<h4>%s</h4>\n<table><tr>", heading);
    for (int i = 0; i < t->ncol; i++) {
        fputs("<th>", o);
        kiln_html_escape(o, t->names[i] ? t->names[i] : "");
        fputs("</th>", o);
    }
    fputs("</tr>\n", o);
    for (int r = 0; r < t->nrow; r++) {
        fputs("<tr>", o);
        for (int i = 0; i < t->ncol; i++) {
            const char *name = t->names[i] ? t->names[i] : "";
            const char *v = t->text[r * t->ncol + i];
            size_t ln = strlen(name);
            char date[32];
            if (ln > 3 && strcmp(name + ln - 3, "_at") == 0 && v) {
                kiln_rv_fmt_date(t->num[r * t->ncol + i], date, sizeof date);
                v = date;
            }
            td_text(o, v ? v : "");
        }
        fputs("</tr>\n", o);
    }
    fputs("</table>\n", o);
    return t->nrow;
}

static void lessons_section(FILE *o, sqlite3 *db, const char *run)
{
    if (!db || !kiln_lessons_present(db)) {
        fputs("<p class=\"muted\">no lessons recorded</p>\n", o);
        return;
    }
    kiln_lesson_table t;
    kiln_lessons_run_created(db, run, &t);
    int created = lesson_table(o, "created in this run", &t);
    kiln_lesson_table_free(&t);
    kiln_lessons_run_shown(db, run, &t);
    int shown = lesson_table(o, "shown to the proposer", &t);
    kiln_lesson_table_free(&t);
    if (!created && !shown)
        fputs("<p class=\"muted\">no lessons recorded for this run</p>\n", o);
}

/* ---- where the time went ------------------------------------------------------------ */

#define BW 640.0   /* the shares bar, in SVG units */
#define BH 22.0

/* One stacked bar: the model, verification and kiln shares of the wall time. */
static void shares_bar(FILE *o, const kiln_shares *sh)
{
    const char *name[] = {"model", "verification", "kiln"};
    double part[] = {sh->model, sh->verify, sh->kiln}, x = 0;
    fprintf(o, "<svg class=\"chart shares\" viewBox=\"0 0 %.0f %.0f\" width=\"%.0f\" "
               "height=\"%.0f\" role=\"img\" aria-label=\"where the wall time went\">\n",
            BW, BH, BW, BH);
    for (int i = 0; i < 3; i++) {
        fprintf(o, "<rect class=\"%s\" x=\"%.1f\" y=\"0\" width=\"%.1f\" height=\"%.0f\">"
                   "<title>%s %.1f%%</title></rect>\n", name[i], x, BW * part[i], BH, name[i],
                100 * part[i]);
        x += BW * part[i];
    }
    fputs("</svg>\n", o);
}

static void share_row(FILE *o, const char *name, const char *what, double share, double seconds)
{
    fprintf(o, "<tr><th><svg width=\"10\" height=\"10\"><rect class=\"%s\" width=\"10\" "
               "height=\"10\"/></svg> %s</th><td class=\"num\" data-share=\"%s\">%.1f%%</td>"
               "<td class=\"num\">%.1f s</td><td>%s</td></tr>\n", name, name, name, 100 * share,
            seconds, what);
}

/* Candidates per hour and the shares of the wall time (docs/search.md,
 * "Where the time goes"), from the run row. */
static void shares_section(FILE *o, const kiln_rv_run *r)
{
    kiln_shares sh;
    if (kiln_rv_shares(r, &sh) < 0) {
        fputs("<p class=\"muted\">not measured: a run recorded before kiln measured where its "
              "time went</p>\n", o);
        return;
    }
    fprintf(o, "<p><span data-share=\"per-hour\">%.1f</span> candidates an hour (%d decided in "
               "%.0f s of wall time, all sessions)</p>\n", sh.per_hour, sh.candidates, sh.seconds);
    shares_bar(o, &sh);
    fputs("<table class=\"shares\"><tr><th>share</th><th>of the wall time</th><th>seconds</th>"
          "<th>what</th></tr>\n", o);
    share_row(o, "model", "waiting for the model&#39;s answers (not what overlapped verification)",
              sh.model, sh.model * sh.seconds);
    share_row(o, "verification", "handing drafts to the verifier and waiting for verdicts, "
              "re-times and records", sh.verify, sh.verify * sh.seconds);
    share_row(o, "kiln", "kiln itself: prompts, parsing, the database, git, the archive, lessons",
              sh.kiln, sh.kiln * sh.seconds);
    fputs("</table>\n", o);
    if (sh.lanes_busy >= 0)
        fprintf(o, "<p>the verifiers&#39; %s lanes were busy <span data-share=\"lanes-busy\">"
                   "%.1f%%</span> of the time (%.0f of %.0f lane-seconds, any client&#39;s jobs)"
                   "</p>\n", r->run.backend, 100 * sh.lanes_busy, r->run.lane_busy_s, r->run.lane_s);
    if (r->run.prefetch_asked > 0)
        fprintf(o, "<p>pipelined: <span data-share=\"asked-ahead\">%d</span> batch%s of drafts "
                   "asked for while the iteration before was verified, %d answer%s not used</p>\n",
                r->run.prefetch_asked, r->run.prefetch_asked == 1 ? "" : "es",
                r->run.prefetch_dropped, r->run.prefetch_dropped == 1 ? "" : "s");
}

/* ---- across the runs of a task ------------------------------------------------------ */

/* The best kept kernel at one visible shape over every run of the task. */
typedef struct shape_best {
    char id[16], dims[128], run[32], commit[41];
    int n, pooled;
    double speedup, lo, hi;
} shape_best;

/* Fold candidate c's verdict against the baseline (v) into the bests:
 * a strictly higher speedup replaces, so a tie keeps the earlier run's. */
static int fold_best(shape_best *b, int nb, const kiln_verdict *v, const kiln_rv_run *r,
                     const kiln_rv_cand *c, int pooled)
{
    for (int i = 0; i < v->nresults; i++) {
        const kiln_shape_result *sh = &v->results[i];
        if (!sh->visible || !sh->timed || !(kiln_rv_fin(sh->speedup) > 0))
            continue;
        int k = 0;
        while (k < nb && strcmp(b[k].id, sh->id) != 0)
            k++;
        if (k == nb && nb == MAX_SERIES)
            continue;
        if (k < nb && !(sh->speedup > b[k].speedup))
            continue;
        nb += k == nb;
        kiln_interval x = kiln_shape_interval(sh);
        snprintf(b[k].id, sizeof b[k].id, "%s", sh->id);
        kiln_verdict_dims(v, sh, b[k].dims, sizeof b[k].dims);
        snprintf(b[k].run, sizeof b[k].run, "%s", r->run.id);
        snprintf(b[k].commit, sizeof b[k].commit, "%s", c->commit);
        b[k].n = c->n;
        b[k].pooled = pooled;
        b[k].speedup = sh->speedup;
        b[k].lo = x.lo;
        b[k].hi = x.hi;
    }
    return nb;
}

/* `report --task`: before the runs, per visible shape the best speedup
 * against the task's baseline any kept kernel of any of its runs recorded
 * (pooled records; one record in a run from before pooling), with its run
 * and candidate. Reverted candidates' speedups are estimates: left out. */
static void task_summary(FILE *o, sqlite3 *db, const kiln_rv_run *runs, int nruns)
{
    shape_best b[MAX_SERIES];
    int nb = 0;
    kiln_verdict *v = malloc(sizeof *v);
    for (int r = 0; v && r < nruns; r++)
        for (int i = 0; i < runs[r].nc; i++) {
            const kiln_rv_cand *c = &runs[r].c[i];
            int pooled = c->kept ? baseline_verdict(db, runs[r].run.id, c, v) : -1;
            if (pooled >= 0)
                nb = fold_best(b, nb, v, &runs[r], c, pooled);
        }
    free(v);
    fprintf(o, "<section class=\"across\"><h2>across the %d run%s</h2>\n", nruns,
            nruns == 1 ? "" : "s");
    if (nb == 0) {
        fputs("<p class=\"muted\">no kept kernel with a verdict against the baseline</p>"
              "</section>\n", o);
        return;
    }
    fputs("<p>per visible shape, the best speedup against the task&#39;s baseline that a kept "
          "kernel of any run recorded (pooled records)</p>\n<table class=\"across\"><tr>"
          "<th>shape</th><th>dims</th><th>best vs baseline</th><th>run</th><th>candidate</th>"
          "</tr>\n", o);
    for (int k = 0; k < nb; k++) {
        char sp[64];
        kiln_rv_fmt_speedup(b[k].speedup, b[k].lo, b[k].hi, sp, sizeof sp);
        fprintf(o, "<tr data-shape=\"%s\" data-run=\"%s\" data-n=\"%d\" data-speedup=\"%.17g\">",
                b[k].id, b[k].run, b[k].n, b[k].speedup);
        td_text(o, b[k].id);
        td_text(o, b[k].dims);
        fprintf(o, "<td class=\"num\">%s%s</td>", sp, b[k].pooled ? "" : " (one record)");
        td_text(o, b[k].run);
        fprintf(o, "<td>#%d, commit <code>%.12s</code></td></tr>\n", b[k].n, b[k].commit);
    }
    fputs("</table></section>\n", o);
}

/* ---- the page --------------------------------------------------------------------- */

static void run_summary(FILE *o, const kiln_rv_run *r)
{
    const kiln_run *u = &r->run;
    int kept = 0;
    for (int i = 0; i < r->nc; i++)
        kept += r->c[i].kept && r->c[i].n > 0;
    char start[32];
    kiln_rv_fmt_date(r->started_at, start, sizeof start);
    fputs("<table><tr><th>task</th>", o);
    td_text(o, u->task);
    fputs("<th>backend / dtype / group</th><td>", o);
    kiln_html_escape(o, u->backend);
    fputs(" / ", o);
    kiln_html_escape(o, u->dtype);
    fputs(" / ", o);
    kiln_html_escape(o, u->grp);
    fputs("</td></tr>\n<tr><th>agent</th><td>", o);
    kiln_html_escape(o, u->agent);
    fputs(" ", o);
    kiln_html_escape(o, u->model);
    fputs("</td><th>status</th>", o);
    td_text(o, u->status);
    char iters[64];   /* "46 of 50", or "46" for a run without an iteration budget */
    if (u->budget_iterations > 0)
        snprintf(iters, sizeof iters, "%d of %d", u->iterations_done, u->budget_iterations);
    else
        snprintf(iters, sizeof iters, "%d", u->iterations_done);
    char best[64] = "none kept", claim[64], p[64], q[64];
    if (r->best >= 0)   /* the best's claim: pooled records, with the interval */
        kiln_rv_fmt_kept(&r->c[r->best], claim, p, q, best);
    fprintf(o, "</tr>\n<tr><th>started</th><td>%s</td><th>iterations</th><td>%s</td></tr>\n"
               "<tr><th>candidates</th><td>%d (%d kept after the start)</td><th>best</th>"
               "<td class=\"best-claim\">%s against the task&#39;s baseline</td></tr>\n"
               "<tr><th>tokens</th><td>%lld prompt + %lld answer in %d call%s (%d failed)</td>"
               "<th>time</th><td>%.0f s</td></tr></table>\n",
            start, iters, r->nc, kept, best,
            r->prompt_tokens, r->completion_tokens, r->llm_calls, r->llm_calls == 1 ? "" : "s",
            r->llm_failed, u->seconds_used);
}

static void run_section(FILE *o, sqlite3 *db, const kiln_rv_run *r)
{
    fputs("<section class=\"run\"><h2>run ", o);
    kiln_html_escape(o, r->run.id);
    fputs("</h2>\n", o);
    run_summary(o, r);
    fputs("<h3>best speedup</h3>\n<p class=\"legend\">each point is a candidate, coloured by its "
          "verdict:<span class=\"pass\"></span>pass<span class=\"fail\"></span>fail"
          "<span class=\"suspect\"></span>suspect<span class=\"error\"></span>error"
          "<span class=\"none\"></span>not verified<br>"
          "<svg width=\"12\" height=\"12\"><circle cx=\"6\" cy=\"6\" r=\"5\" fill=\"#555\" "
          "stroke=\"#000\"/></svg>kept (recorded against the baseline)<svg width=\"12\" "
          "height=\"12\"><path d=\"M6,1l5,5l-5,5l-5,-5z\" fill=\"none\" stroke=\"#555\" "
          "stroke-width=\"1.6\"/></svg>estimated (not recorded against the baseline): its speedup against its parent times the "
          "parent&#39;s recorded speedup; the line is the best kept so far</p>\n", o);
    draw_chart(o, r, 0);
    draw_chart(o, r, 1);
    shape_charts(o, db, r);
    fputs("<h3>the best kernel, per shape</h3>\n", o);
    best_table(o, r);
    fputs("<h3>kept candidates and why</h3>\n", o);
    kept_table(o, r);
    fputs("<h3>archive</h3>\n", o);
    archive_table(o, r);
    fputs("<h3>rejections by stage and reason</h3>\n", o);
    rejections_table(o, r);
    candidates_table(o, r);
    fputs("<h3>lessons</h3>\n", o);
    lessons_section(o, db, r->run.id);
    fputs("<h3>where the time went</h3>\n", o);
    shares_section(o, r);
    fputs("</section>\n", o);
}

int kiln_report_html(FILE *o, sqlite3 *db, const char *title, const kiln_rv_run *runs, int nruns,
                     int across)
{
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
          "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
          "style-src 'unsafe-inline'\">\n<title>", o);
    kiln_html_escape(o, title);
    fprintf(o, "</title>\n<style>%s</style></head>\n<body>\n<h1>", css);
    kiln_html_escape(o, title);
    fputs("</h1>\n", o);
    if (across)
        task_summary(o, db, runs, nruns);
    for (int i = 0; i < nruns; i++)
        run_section(o, db, &runs[i]);
    char now[32];
    kiln_rv_fmt_date(kiln_rv_now(), now, sizeof now);
    fprintf(o, "<p class=\"muted\">written by kiln report, %s</p>\n</body></html>\n", now);
    return ferror(o) ? -1 : 0;
}
