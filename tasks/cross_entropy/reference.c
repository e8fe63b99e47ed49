/* Trusted reference for cross_entropy, in double precision. The verifier
 * passes inputs converted exactly to double (the targets are integers,
 * exact as doubles) and compares the candidate to this. loss = log(sum of
 * exp(logits - max)) + (max - logits[target]), with max subtracted so no
 * exponential overflows; 0 at the ignore index -100; NaN for any other
 * target outside [0, vocab), which the verifier never draws. */
#include <math.h>
#include <stdint.h>

#define IGNORE_INDEX -100

void cross_entropy_reference(const double *logits, const double *targets, double *loss,
                             int64_t rows, int64_t vocab)
{
    for (int64_t i = 0; i < rows; i++) {
        const double *x = logits + i * vocab;
        int64_t t = (int64_t)targets[i];
        if (t == IGNORE_INDEX) {
            loss[i] = 0;
            continue;
        }
        if (t < 0 || t >= vocab) {
            loss[i] = NAN;
            continue;
        }
        double m = x[0];
        for (int64_t c = 1; c < vocab; c++)
            m = x[c] > m ? x[c] : m;
        double s = 0;
        for (int64_t c = 0; c < vocab; c++)
            s += exp(x[c] - m);
        loss[i] = log(s) + (m - x[t]);
    }
}
