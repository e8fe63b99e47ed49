/* cross_entropy, tunable: the starter's algorithm (kernels/cross_entropy/
 * cpu/starter.c, which stays the baseline) with knobs for the offline tuner:
 * `kiln search cross_entropy --agent tune --from kernels/cross_entropy/cpu/tunable.c`.
 *
 * Every setting is an honest f32 kernel: the max subtracted before every
 * exponential, sums in float; an ignored row (target -100) writes 0 and
 * reads nothing. 4 x 2 x 2 = 16 settings.
 *
 *   LANES   independent (max and) sum accumulators per row, merged at the end
 *   ONLINE  0: two passes (the max, then the sum); 1: one pass, each lane's
 *           sum rescaled when its max grows (online softmax)
 *   VECT    1: GCC's loop vectoriser with its dynamic cost model */
#include <math.h>
#include <stdint.h>

#define LANES 4 //@kiln tune 1 2 4 8
#define ONLINE 0 //@kiln tune 0 1
#define VECT 0 //@kiln tune 0 1

#if VECT
#pragma GCC optimize("vect-cost-model=dynamic")
#endif

#define IGNORE_INDEX -100

static float lse_two_pass(const float *x, int32_t n)
{
    float lm[LANES], ls[LANES] = {0};
    for (int l = 0; l < LANES; l++)
        lm[l] = x[0];
    int32_t c = 0;
    for (; c + LANES <= n; c += LANES)
        for (int l = 0; l < LANES; l++)
            lm[l] = x[c + l] > lm[l] ? x[c + l] : lm[l];
    for (; c < n; c++)
        lm[0] = x[c] > lm[0] ? x[c] : lm[0];
    float m = lm[0];
    for (int l = 1; l < LANES; l++)
        m = lm[l] > m ? lm[l] : m;
    for (c = 0; c + LANES <= n; c += LANES)
        for (int l = 0; l < LANES; l++)
            ls[l] += expf(x[c + l] - m);
    for (; c < n; c++)
        ls[0] += expf(x[c] - m);
    float s = 0.0f;
    for (int l = 0; l < LANES; l++)
        s += ls[l];
    return m + logf(s);
}

static float lse_online(const float *x, int32_t n)
{
    float lm[LANES], ls[LANES] = {0};
    for (int l = 0; l < LANES; l++)
        lm[l] = -INFINITY;
    for (int32_t c = 0; c < n; c++) {
        int l = (int)(c % LANES);
        if (x[c] > lm[l]) {
            ls[l] = ls[l] * expf(lm[l] - x[c]) + 1.0f;
            lm[l] = x[c];
        } else {
            ls[l] += expf(x[c] - lm[l]);
        }
    }
    float m = lm[0], s = 0.0f;
    for (int l = 1; l < LANES; l++)
        m = lm[l] > m ? lm[l] : m;
    for (int l = 0; l < LANES; l++)
        if (lm[l] != -INFINITY)
            s += ls[l] * expf(lm[l] - m);
    return m + logf(s);
}

void cross_entropy(const float *logits, const int32_t *targets, float *loss, int32_t rows,
                   int32_t vocab)
{
    for (int32_t i = 0; i < rows; i++) {
        const float *x = logits + (size_t)i * vocab;
        int32_t t = targets[i];
        if (t == IGNORE_INDEX) {
            loss[i] = 0.0f;
            continue;
        }
        loss[i] = (ONLINE ? lse_online(x, vocab) : lse_two_pass(x, vocab)) - x[t];
    }
}
