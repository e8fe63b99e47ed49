/* Shortcut: computes every row's loss as if its target were a class, ignore index included (-100 reads a logit 100 before the row: the previous row's, or the guard before the buffer), never writing the 0 an ignored row must have.
 * kiln-task: cross_entropy
 * kiln-class: 10
 * kiln-expect: fail
 * kiln-stages: smoke visible
 * kiln-codes: wrong-output non-finite
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>

void cross_entropy(const float *logits, const int32_t *targets, float *loss, int32_t rows,
                   int32_t vocab)
{
    for (int32_t i = 0; i < rows; i++) {
        const float *x = logits + (ptrdiff_t)i * vocab;
        float m = x[0];
        for (int32_t c = 1; c < vocab; c++)
            m = x[c] > m ? x[c] : m;
        float s = 0.0f;
        for (int32_t c = 0; c < vocab; c++)
            s += expf(x[c] - m);
        loss[i] = logf(s) + (m - x[targets[i]]);
    }
}
