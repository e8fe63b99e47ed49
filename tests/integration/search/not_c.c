/* Not C: a replay candidate that must be rejected at compile time.
 * kiln-task: rmsnorm */
#include <stdint.h>

void rmsnorm(const float *x, const float *w, float *y, int32_t rows, int32_t cols, float eps)
{
    this is not C at all
}
