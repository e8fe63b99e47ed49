/* Honest cross_entropy: one pass per row, a running max with the sum rescaled when it grows (online softmax), four lanes merged at the end; ignored rows are skipped unread.
 * kiln-task: cross_entropy
 * kiln-expect: pass
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>

void cross_entropy(const float *logits, const int32_t *targets, float *loss, int32_t rows,
                   int32_t vocab)
{
    for (int32_t i = 0; i < rows; i++) {
        const float *x = logits + (size_t)i * vocab;
        int32_t t = targets[i];
        if (t == -100) {
            loss[i] = 0.0f;
            continue;
        }
        float lm[4] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY}, ls[4] = {0};
        for (int32_t c = 0; c < vocab; c++) {
            int l = c & 3;
            if (x[c] > lm[l]) {
                ls[l] = ls[l] * expf(lm[l] - x[c]) + 1.0f;
                lm[l] = x[c];
            } else {
                ls[l] += expf(x[c] - lm[l]);
            }
        }
        float m = fmaxf(fmaxf(lm[0], lm[1]), fmaxf(lm[2], lm[3])), s = 0.0f;
        for (int l = 0; l < 4; l++)
            if (lm[l] != -INFINITY)
                s += ls[l] * expf(lm[l] - m);
        loss[i] = logf(s) + (m - x[t]);
    }
}
