/* Out-of-bounds write: outputs are stored in whole groups of 8 (tail lanes zero-filled), so when cols % 8 != 0 the last row's store runs up to 7 floats past the end of y (earlier rows' overhang is overwritten by the next row).
 * kiln-task: rmsnorm
 * kiln-class: 7
 * kiln-expect: fail
 * kiln-stages: smoke visible hidden stability determinism timing
 * kiln-codes: guard-corrupted
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>

void rmsnorm(const float *x, const float *w, float *y, int32_t rows, int32_t cols, float eps)
{
    for (int32_t r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * cols;
        float *yr = y + (size_t)r * cols;
        float ss = 0.0f;                 /* blocked: a float partial per 256 columns */
        for (int32_t b = 0; b < cols; b += 256) {
            float part = 0.0f;
            for (int32_t c = b; c < cols && c < b + 256; c++)
                part += xr[c] * xr[c];
            ss += part;
        }
        float inv = 1.0f / sqrtf(ss / (float)cols + eps);
        for (int32_t c = 0; c < cols; c += 8) {
            float v[8];
            for (int k = 0; k < 8; k++)          /* masked load ... */
                v[k] = c + k < cols ? xr[c + k] * inv * w[c + k] : 0.0f;
            for (int k = 0; k < 8; k++)          /* ... unmasked store */
                yr[c + k] = v[k];
        }
    }
}
