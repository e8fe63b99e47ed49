/* Determinism that is replayed: the row sums run in an order drawn from
 * getrandom() on every call, so two runs on the same inputs differ in their
 * last bits; but it keeps a fingerprint of its inputs and a copy of its
 * last output, and when the same inputs come back it copies the output
 * instead of computing. Run twice in one worker it looks deterministic;
 * determinism's second run is in a fresh worker, where no copy exists, so
 * the order differs and the bits do too.
 * kiln-task: rmsnorm
 * kiln-class: 30
 * kiln-expect: fail
 * kiln-stages: determinism
 * kiln-codes: nondeterministic
 */
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <sys/random.h>

#define CAP (1 << 21)   /* elements kept: the largest visible CPU shape is 2^20 */

static float last_y[CAP];
static uint64_t last_key;

static uint64_t fingerprint(const float *x, const float *w, int64_t n, int32_t cols)
{
    uint64_t h = 1469598103934665603ull ^ (uint64_t)n;
    for (int64_t i = 0; i < n; i += 97) {
        uint32_t b;
        memcpy(&b, &x[i], 4);
        h = (h ^ b) * 1099511628211ull;
    }
    uint32_t b;
    memcpy(&b, &w[cols - 1], 4);
    return (h ^ b) * 1099511628211ull;
}

void rmsnorm(const float *x, const float *w, float *y, int32_t rows, int32_t cols, float eps)
{
    int64_t n = (int64_t)rows * cols;
    uint64_t key = fingerprint(x, w, n, cols);
    if (n <= CAP && key == last_key) {
        memcpy(y, last_y, (size_t)n * sizeof *y);
        return;
    }
    uint32_t seed = 0;
    if (getrandom(&seed, sizeof seed, 0) != sizeof seed)
        seed = 12345;
    for (int32_t r = 0; r < rows; r++) {
        const float *xr = x + (int64_t)r * cols;
        float *yr = y + (int64_t)r * cols;
        /* sum from a rotating start: a different order, different bits */
        int32_t start = (int32_t)((seed + (uint32_t)r * 2654435761u) % (uint32_t)cols);
        float ss = 0.0f;
        for (int32_t k = 0; k < cols; k++) {
            float v = xr[(start + k) % cols];
            ss += v * v;
        }
        float inv = 1.0f / sqrtf(ss / (float)cols + eps);
        for (int32_t c = 0; c < cols; c++)
            yr[c] = xr[c] * inv * w[c];
    }
    if (n <= CAP) {
        memcpy(last_y, y, (size_t)n * sizeof *y);
        last_key = key;
    }
}
