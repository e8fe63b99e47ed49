/* Stale output: returns without touching y, hoping the output buffer still holds an earlier answer.
 * kiln-task: rmsnorm
 * kiln-class: 1
 * kiln-expect: fail
 * kiln-stages: smoke
 * kiln-codes: unwritten-output
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>

void rmsnorm(const float *x, const float *w, float *y, int32_t rows, int32_t cols, float eps)
{
    (void)x; (void)w; (void)y; (void)rows; (void)cols; (void)eps;
}
