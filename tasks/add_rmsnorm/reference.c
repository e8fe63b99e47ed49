/* Trusted reference for add_rmsnorm, in double precision. The verifier
 * passes inputs converted exactly to double and compares the candidate to
 * this. r is the exact sum rounded once to the run's dtype T (kiln defines
 * KILN_RUN_DTYPE_* for a reference; kiln_round_to_run in kiln_cpu.h), and y
 * is computed from that rounded r, as vLLM's fused_add_rms_norm computes
 * it from the residual it has just stored: the y a caller gets is the
 * rmsnorm of the r it gets (docs/task-format.md, "The tasks"). */
#include <math.h>
#include <stdint.h>

void add_rmsnorm_reference(const double *x, const double *residual, const double *w, double *r,
                           double *y, int64_t rows, int64_t cols, double eps)
{
    for (int64_t i = 0; i < rows; i++) {
        const double *xr = x + i * cols, *rr = residual + i * cols;
        double *ri = r + i * cols, *yi = y + i * cols;
        double ss = 0;
        for (int64_t c = 0; c < cols; c++) {
            ri[c] = kiln_round_to_run(xr[c] + rr[c]);
            ss += ri[c] * ri[c];
        }
        double inv = 1.0 / sqrt(ss / (double)cols + eps);
        for (int64_t c = 0; c < cols; c++)
            yi[c] = ri[c] * inv * w[c];
    }
}
