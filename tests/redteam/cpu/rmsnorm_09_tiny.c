/* Near-zero output: writes 1e-30f to every element, hoping for a loose absolute tolerance.
 * kiln-task: rmsnorm
 * kiln-class: 9
 * kiln-expect: fail
 * kiln-stages: smoke
 * kiln-codes: wrong-output
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>

void rmsnorm(const float *x, const float *w, float *y, int32_t rows, int32_t cols, float eps)
{
    (void)x; (void)w; (void)eps;
    for (size_t i = 0; i < (size_t)rows * cols; i++)
        y[i] = 1e-30f;
}
