/* Escape: writes machine code into ordinary read/write memory and mprotects it to PROT_READ|PROT_EXEC at call time to run it (an identity function on the row scale), so the result is still correct.
 * kiln-task: rmsnorm
 * kiln-class: 23
 * kiln-expect: fail
 * kiln-stages: smoke
 * kiln-codes: sandbox-violation
 */
#include <string.h>
#include <sys/mman.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#if defined(__x86_64__)
static const unsigned char ident_code[] = {0xc3};                    /* ret: xmm0 in, xmm0 out */
#elif defined(__aarch64__)
static const unsigned char ident_code[] = {0xc0, 0x03, 0x5f, 0xd6};  /* ret: s0 in, s0 out */
#else
static const unsigned char ident_code[] = {0};
#define NO_JIT 1
#endif

typedef float (*jit_fn)(float);

void rmsnorm(const float *x, const float *w, float *y, int32_t rows, int32_t cols, float eps)
{
    jit_fn fn = NULL;
    void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p != MAP_FAILED) {
        memcpy(p, ident_code, sizeof ident_code);
        __builtin___clear_cache((char *)p, (char *)p + sizeof ident_code);
        if (mprotect(p, 4096, PROT_READ | PROT_EXEC) == 0)
            fn = (jit_fn)p;
    }
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
#ifndef NO_JIT
        if (fn)
            inv = fn(inv);           /* generated code on the hot path */
#endif
        for (int32_t c = 0; c < cols; c++)
            yr[c] = xr[c] * inv * w[c];
    }
    if (p != MAP_FAILED)
        munmap(p, 4096);
}
