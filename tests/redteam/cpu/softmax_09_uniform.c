/* Constant output (softmax): writes the uniform distribution 1/cols everywhere, which is within a loose absolute tolerance of any wide softmax row but not within a scale-relative budget.
 * kiln-task: softmax
 * kiln-class: 9
 * kiln-expect: fail
 * kiln-stages: smoke
 * kiln-codes: wrong-output
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>

void softmax(const float *x, float *y, int32_t rows, int32_t cols)
{
    (void)x;
    float u = 1.0f / (float)cols;
    for (size_t i = 0; i < (size_t)rows * cols; i++)
        y[i] = u;
}
