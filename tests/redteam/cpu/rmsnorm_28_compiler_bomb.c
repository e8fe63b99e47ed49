/* Compiler bomb: macros that expand a string literal to gigabytes, so the
 * compiler, not the candidate, eats the machine (one such 1 KB source took
 * 6.5 GiB for 30 s). The compiler runs with 2 GiB of address space and 30 s
 * of CPU: the verdict names the limit.
 * kiln-task: rmsnorm
 * kiln-class: 17
 * kiln-expect: fail
 * kiln-stages: compile
 * kiln-codes: resource-limit
 */
#include <stdint.h>

#define A(x) x x x x x x x x x x
#define B(x) A(A(A(A(x))))
#define C(x) B(B(x))
static const char blob[] = C("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");

void rmsnorm(const float *x, const float *w, float *y, int32_t rows, int32_t cols, float eps)
{
    (void)x, (void)w, (void)eps;
    for (int64_t i = 0; i < (int64_t)rows * cols; i++)
        y[i] = (float)blob[i % 64];
}
