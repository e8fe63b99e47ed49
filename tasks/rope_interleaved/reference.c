/* Trusted reference for rope_interleaved (rotary embedding, GPT-J layout),
 * in double precision. x and y are [tokens][heads][2*half_dim]; elements 2i and
 * 2i+1 form a pair and rotate by cos/sin[t][i]. Every product of two inputs
 * is exact in double, so each output is rounded once. */
#include <stdint.h>

void rope_interleaved_reference(const double *x, const double *cos, const double *sin, double *y,
                                int64_t tokens, int64_t heads, int64_t half_dim)
{
    for (int64_t t = 0; t < tokens; t++)
        for (int64_t h = 0; h < heads; h++) {
            const double *xv = x + (t * heads + h) * 2 * half_dim;
            double *yv = y + (t * heads + h) * 2 * half_dim;
            for (int64_t i = 0; i < half_dim; i++) {
                double c = cos[t * half_dim + i], s = sin[t * half_dim + i];
                double x1 = xv[2 * i], x2 = xv[2 * i + 1];
                yv[2 * i] = x1 * c - x2 * s;
                yv[2 * i + 1] = x2 * c + x1 * s;
            }
        }
}
