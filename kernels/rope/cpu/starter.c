/* rope starter kernel (neox layout): plain and correct. For each token and
 * head, element i < half_dim pairs with element i + half_dim and both rotate
 * by cos/sin[token][i]. The baseline every candidate is timed against, and
 * a search's start. */
#include <stdint.h>

#define UNROLL 1 //@kiln tune 1 2 4 8

void rope(const float *x, const float *cos, const float *sin, float *y, int32_t tokens,
          int32_t heads, int32_t half_dim)
{
    for (int32_t t = 0; t < tokens; t++) {
        const float *ct = cos + (int64_t)t * half_dim, *st = sin + (int64_t)t * half_dim;
        for (int32_t h = 0; h < heads; h++) {
            int64_t base = ((int64_t)t * heads + h) * 2 * half_dim;
            const float *x1 = x + base, *x2 = x1 + half_dim;
            float *y1 = y + base, *y2 = y1 + half_dim;
            int32_t i = 0;
            for (; i + UNROLL <= half_dim; i += UNROLL)
                for (int u = 0; u < UNROLL; u++) {
                    float a = x1[i + u], b = x2[i + u], c = ct[i + u], s = st[i + u];
                    y1[i + u] = a * c - b * s;
                    y2[i + u] = b * c + a * s;
                }
            for (; i < half_dim; i++) {
                float a = x1[i], b = x2[i], c = ct[i], s = st[i];
                y1[i] = a * c - b * s;
                y2[i] = b * c + a * s;
            }
        }
    }
}
