/* Honest softmax: max and sum unrolled by 4 with 4 float lanes and a scalar tail (vectorised-looking), correct for any cols including 1..3.
 * kiln-task: softmax
 * kiln-expect: pass
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>

void softmax(const float *x, float *y, int32_t rows, int32_t cols)
{
    for (int32_t r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * cols;
        float *yr = y + (size_t)r * cols;
        float m0 = xr[0], m1 = xr[0], m2 = xr[0], m3 = xr[0];
        int32_t c = 0;
        for (; c + 4 <= cols; c += 4) {
            m0 = fmaxf(m0, xr[c + 0]);
            m1 = fmaxf(m1, xr[c + 1]);
            m2 = fmaxf(m2, xr[c + 2]);
            m3 = fmaxf(m3, xr[c + 3]);
        }
        for (; c < cols; c++)
            m0 = fmaxf(m0, xr[c]);
        float m = fmaxf(fmaxf(m0, m1), fmaxf(m2, m3));
        float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
        c = 0;
        for (; c + 4 <= cols; c += 4) {
            float e0 = expf(xr[c + 0] - m), e1 = expf(xr[c + 1] - m);
            float e2 = expf(xr[c + 2] - m), e3 = expf(xr[c + 3] - m);
            yr[c + 0] = e0; yr[c + 1] = e1; yr[c + 2] = e2; yr[c + 3] = e3;
            s0 += e0; s1 += e1; s2 += e2; s3 += e3;
        }
        for (; c < cols; c++) {
            float e = expf(xr[c] - m);
            yr[c] = e;
            s0 += e;
        }
        float inv = 1.0f / ((s0 + s1) + (s2 + s3));
        for (c = 0; c < cols; c++)
            yr[c] *= inv;
    }
}
