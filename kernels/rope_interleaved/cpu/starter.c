/* rope_interleaved starter kernel (GPT-J layout): plain and correct. For
 * each token and head, elements 2i and 2i+1 form a pair that rotates by
 * cos/sin[token][i]. The baseline every candidate is timed against, and a
 * search's start. */
#include <stdint.h>

#define UNROLL 1 //@kiln tune 1 2 4 8

void rope_interleaved(const float *x, const float *cos, const float *sin, float *y,
                      int32_t tokens, int32_t heads, int32_t half_dim)
{
    for (int32_t t = 0; t < tokens; t++) {
        const float *ct = cos + (int64_t)t * half_dim, *st = sin + (int64_t)t * half_dim;
        for (int32_t h = 0; h < heads; h++) {
            int64_t base = ((int64_t)t * heads + h) * 2 * half_dim;
            const float *xv = x + base;
            float *yv = y + base;
            int32_t i = 0;
            for (; i + UNROLL <= half_dim; i += UNROLL)
                for (int u = 0; u < UNROLL; u++) {
                    float a = xv[2 * (i + u)], b = xv[2 * (i + u) + 1];
                    float c = ct[i + u], s = st[i + u];
                    yv[2 * (i + u)] = a * c - b * s;
                    yv[2 * (i + u) + 1] = b * c + a * s;
                }
            for (; i < half_dim; i++) {
                float a = xv[2 * i], b = xv[2 * i + 1], c = ct[i], s = st[i];
                yv[2 * i] = a * c - b * s;
                yv[2 * i + 1] = b * c + a * s;
            }
        }
    }
}
