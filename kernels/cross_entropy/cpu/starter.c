/* cross_entropy starter kernel: plain and correct. Per row: the max, one
 * float accumulator for the sum of exp(x - max), loss = log(sum) + (max -
 * x[target]); 0 where the target is the ignore index -100. The baseline
 * every candidate is timed against, and a search's start. */
#include <math.h>
#include <stdint.h>

#define IGNORE_INDEX -100

void cross_entropy(const float *logits, const int32_t *targets, float *loss, int32_t rows,
                   int32_t vocab)
{
    for (int32_t i = 0; i < rows; i++) {
        const float *x = logits + (int64_t)i * vocab;
        int32_t t = targets[i];
        if (t == IGNORE_INDEX) {
            loss[i] = 0.0f;
            continue;
        }
        float m = x[0];
        for (int32_t c = 1; c < vocab; c++)
            m = x[c] > m ? x[c] : m;
        float s = 0.0f;
        for (int32_t c = 0; c < vocab; c++)
            s += expf(x[c] - m);
        loss[i] = logf(s) + (m - x[t]);
    }
}
