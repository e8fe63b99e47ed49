/* Right on rmsnorm's visible CPU prefill shapes, slightly wrong on every
 * other shape (the output scaled by 1 + 2^-10): the verdict's numbers for
 * a hidden shape (error, budget, their ratio) must not come back. */
#include <math.h>
#include <stdint.h>

static int visible(int32_t rows, int32_t cols)
{
    static const int32_t v[][2] = {{32, 1024}, {64, 4096}, {33, 1000}, {128, 2048}, {256, 4096},
                                   {512, 2048}};
    for (unsigned i = 0; i < sizeof v / sizeof v[0]; i++)
        if (v[i][0] == rows && v[i][1] == cols)
            return 1;
    return 0;
}

void rmsnorm(const float *x, const float *w, float *y, int32_t rows, int32_t cols, float eps)
{
    float k = visible(rows, cols) ? 1.0f : 1.0f + 0x1p-10f;
    for (int32_t r = 0; r < rows; r++) {
        double ss = 0;
        for (int32_t c = 0; c < cols; c++)
            ss += (double)x[(int64_t)r * cols + c] * x[(int64_t)r * cols + c];
        float inv = (float)(1.0 / sqrt(ss / cols + eps));
        for (int32_t c = 0; c < cols; c++)
            y[(int64_t)r * cols + c] = x[(int64_t)r * cols + c] * inv * w[c] * k;
    }
}
