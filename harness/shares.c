/* shares.c - where a search's wall time went (see shares.h). */
#include "shares.h"

#include <stdio.h>

void kiln_shares_of(const kiln_run *r, int candidates, kiln_shares *out)
{
    *out = (kiln_shares){.seconds = r->seconds_used, .candidates = candidates, .lanes_busy = -1};
    if (r->lane_s > 0)
        out->lanes_busy = r->lane_busy_s < r->lane_s ? r->lane_busy_s / r->lane_s : 1;
    double t = r->seconds_used;
    if (t <= 0)
        return;
    out->per_hour = candidates / (t / 3600);
    /* Both waits are parts of the wall time; a clock step aside, they fit. */
    double m = r->model_wait_s > 0 ? r->model_wait_s : 0;
    double v = r->verify_wait_s > 0 ? r->verify_wait_s : 0;
    if (m + v > t) {
        double k = t / (m + v);
        m *= k;
        v *= k;
    }
    out->model = m / t;
    out->verify = v / t;
    out->kiln = 1 - out->model - out->verify;
    if (out->kiln < 0)
        out->kiln = 0;
}

void kiln_asked_ahead_text(int asked, int dropped, const char *tail, char *buf, size_t len)
{
    snprintf(buf, len, "pipelined: %d batch%s of drafts asked for while the iteration before was "
             "verified, %d answer%s not used%s", asked, asked == 1 ? "" : "es", dropped,
             dropped == 1 ? "" : "s", tail);
}

int kiln_pipeline_pays(const kiln_pipe_times *p, double min_saving)
{
    double k = min_saving != 0 ? min_saving : KILN_PIPELINE_MIN_SAVING;
    if (p->model_n <= 0 || p->verify_n <= 0 || k < 0)
        return 1;
    double m = p->model_s / p->model_n, v = p->verify_s / p->verify_n;
    double saved = m < v ? m : v;
    return m + v <= 0 || saved >= k * (m + v);
}

void kiln_pipelined_text(const kiln_pipe_times *p, int dropped, const char *tail, char *buf,
                         size_t len)
{
    double m = p->model_n > 0 ? p->model_s / p->model_n : 0;
    double v = p->verify_n > 0 ? p->verify_s / p->verify_n : 0;
    int w = snprintf(buf, len, "pipelined %d of %d iteration%s", p->pipelined, p->model_n,
                     p->model_n == 1 ? "" : "s");
    if (w < 0 || (size_t)w >= len)
        return;
    if (p->pipelined > 0)
        snprintf(buf + w, len - (size_t)w, ": saved %.0f s (model %.1f s, verification %.1f s an "
                 "iteration), %d answer%s not used%s", p->saved_s, m, v, dropped,
                 dropped == 1 ? "" : "s", tail);
    else if (dropped > 0)   /* a batch ahead that a stopped session never used */
        snprintf(buf + w, len - (size_t)w, " (model %.1f s, verification %.1f s an iteration), "
                 "%d answer%s not used%s", m, v, dropped, dropped == 1 ? "" : "s", tail);
    else
        snprintf(buf + w, len - (size_t)w, "%s (model %.1f s, verification %.1f s an iteration): "
                 "the model was asked after the verdicts%s", p->declined ? ": not worth it" : "",
                 m, v, tail);
}

void kiln_shares_text(const kiln_shares *sh, char *buf, size_t len)
{
    int w = snprintf(buf, len, "%.1f candidates an hour; of the wall time, model %.1f%%, "
                     "verification %.1f%%, kiln %.1f%%", sh->per_hour, 100 * sh->model,
                     100 * sh->verify, 100 * sh->kiln);
    if (sh->lanes_busy >= 0 && w > 0 && (size_t)w < len)
        snprintf(buf + w, len - (size_t)w, "; verifier lanes busy %.1f%%", 100 * sh->lanes_busy);
}
