/* Honest rmsnorm, vectorised as rmsnorm_honest_avx512.c (AVX-512, else
 * AVX2 with FMA, else plain C), on the decode group: working sets of 12 KiB
 * to 512 KiB, in L1 and L2, where the floor comes from the bandwidth at
 * that size (280 GB/s in L1 on the development machine, 110 in L2).
 * kiln-task: rmsnorm
 * kiln-group: decode
 * kiln-expect: pass
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#if defined(__AVX512F__) || defined(__AVX2__)
#include <immintrin.h>
#endif

#if defined(__AVX512F__)
static float sum_squares(const float *x, int32_t n)
{
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    int32_t c = 0;
    for (; c + 64 <= n; c += 64) {
        __m512 v0 = _mm512_loadu_ps(x + c), v1 = _mm512_loadu_ps(x + c + 16);
        __m512 v2 = _mm512_loadu_ps(x + c + 32), v3 = _mm512_loadu_ps(x + c + 48);
        a0 = _mm512_fmadd_ps(v0, v0, a0);
        a1 = _mm512_fmadd_ps(v1, v1, a1);
        a2 = _mm512_fmadd_ps(v2, v2, a2);
        a3 = _mm512_fmadd_ps(v3, v3, a3);
    }
    for (; c < n; c += 16) {
        __mmask16 m = n - c >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - c)) - 1);
        __m512 v = _mm512_maskz_loadu_ps(m, x + c);
        a0 = _mm512_fmadd_ps(v, v, a0);
    }
    return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
}

static void scale(const float *x, const float *w, float *y, int32_t n, float inv)
{
    __m512 s = _mm512_set1_ps(inv);
    for (int32_t c = 0; c < n; c += 16) {
        __mmask16 m = n - c >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - c)) - 1);
        __m512 v = _mm512_mul_ps(_mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + c), s),
                                 _mm512_maskz_loadu_ps(m, w + c));
        _mm512_mask_storeu_ps(y + c, m, v);
    }
}
#elif defined(__AVX2__) && defined(__FMA__)
static float sum_squares(const float *x, int32_t n)
{
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    int32_t c = 0;
    for (; c + 32 <= n; c += 32) {
        __m256 v0 = _mm256_loadu_ps(x + c), v1 = _mm256_loadu_ps(x + c + 8);
        __m256 v2 = _mm256_loadu_ps(x + c + 16), v3 = _mm256_loadu_ps(x + c + 24);
        a0 = _mm256_fmadd_ps(v0, v0, a0);
        a1 = _mm256_fmadd_ps(v1, v1, a1);
        a2 = _mm256_fmadd_ps(v2, v2, a2);
        a3 = _mm256_fmadd_ps(v3, v3, a3);
    }
    __m256 a = _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3));
    float lanes[8];
    _mm256_storeu_ps(lanes, a);
    float ss = ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) +
               ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
    for (; c < n; c++)
        ss += x[c] * x[c];
    return ss;
}

static void scale(const float *x, const float *w, float *y, int32_t n, float inv)
{
    __m256 s = _mm256_set1_ps(inv);
    int32_t c = 0;
    for (; c + 8 <= n; c += 8)
        _mm256_storeu_ps(y + c, _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(x + c), s),
                                              _mm256_loadu_ps(w + c)));
    for (; c < n; c++)
        y[c] = x[c] * inv * w[c];
}
#else
static float sum_squares(const float *x, int32_t n)
{
    float a[8] = {0};
    int32_t c = 0;
    for (; c + 8 <= n; c += 8)
        for (int k = 0; k < 8; k++)
            a[k] += x[c + k] * x[c + k];
    for (; c < n; c++)
        a[0] += x[c] * x[c];
    return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));
}

static void scale(const float *x, const float *w, float *y, int32_t n, float inv)
{
    for (int32_t c = 0; c < n; c++)
        y[c] = x[c] * inv * w[c];
}
#endif

void rmsnorm(const float *x, const float *w, float *y, int32_t rows, int32_t cols, float eps)
{
    for (int32_t r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * cols;
        float inv = 1.0f / sqrtf(sum_squares(xr, cols) / (float)cols + eps);
        scale(xr, w, y + (size_t)r * cols, cols, inv);
    }
}
