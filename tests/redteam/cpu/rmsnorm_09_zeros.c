/* Constant output: writes 0.0f to every element (every element is written, so only a scale-relative tolerance catches it).
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
        y[i] = 0.0f;
}
