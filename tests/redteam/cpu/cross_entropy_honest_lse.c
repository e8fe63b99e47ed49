/* Honest cross_entropy, torch's way: log_softmax at the target, x[t] - (max + log(sum)), negated; the sum pairwise over blocks of 64.
 * kiln-task: cross_entropy
 * kiln-expect: pass
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>

static float sum_exp(const float *x, int32_t n, float m)
{
    if (n <= 64) {
        float s = 0.0f;
        for (int32_t c = 0; c < n; c++)
            s += expf(x[c] - m);
        return s;
    }
    return sum_exp(x, n / 2, m) + sum_exp(x + n / 2, n - n / 2, m);
}

void cross_entropy(const float *logits, const int32_t *targets, float *loss, int32_t rows,
                   int32_t vocab)
{
    for (int32_t i = 0; i < rows; i++) {
        const float *x = logits + (size_t)i * vocab;
        int32_t t = targets[i];
        float m = x[0];
        for (int32_t c = 1; c < vocab; c++)
            m = x[c] > m ? x[c] : m;
        float lse = m + logf(sum_exp(x, vocab, m));
        loss[i] = t == -100 ? 0.0f : -(x[t] - lse);
    }
}
