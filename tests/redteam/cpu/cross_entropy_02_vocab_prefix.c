/* Truncation: the log-sum-exp runs over the first 32768 logits of a row only (a power of two that holds LLaMA's 32000); wider rows (v5, GPT-2's 50257, and the hidden 50261 and 65537) come out wrong unless every such row is at the ignore index (one in 10^5).
 * kiln-task: cross_entropy
 * kiln-class: 2
 * kiln-group: decode
 * kiln-expect: fail
 * kiln-stages: visible hidden
 * kiln-codes: wrong-output
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#define MAXV 32768

void cross_entropy(const float *logits, const int32_t *targets, float *loss, int32_t rows,
                   int32_t vocab)
{
    int32_t n = vocab < MAXV ? vocab : MAXV;
    for (int32_t i = 0; i < rows; i++) {
        const float *x = logits + (size_t)i * vocab;
        int32_t t = targets[i];
        if (t == -100) {
            loss[i] = 0.0f;
            continue;
        }
        float m = x[0];
        for (int32_t c = 1; c < n; c++)
            m = x[c] > m ? x[c] : m;
        float s = 0.0f;
        for (int32_t c = 0; c < n; c++)
            s += expf(x[c] - m);
        loss[i] = logf(s) + (m - x[t]);
    }
}
