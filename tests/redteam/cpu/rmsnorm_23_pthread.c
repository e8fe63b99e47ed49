/* Escape: splits the rows across a second thread with pthread_create (glibc 2.34+ has pthreads in libc, so no -lpthread is needed), falling back to one thread if creation fails; the result is correct either way.
 * kiln-task: rmsnorm
 * kiln-class: 23
 * kiln-expect: fail
 * kiln-stages: smoke
 * kiln-codes: sandbox-violation
 */
#include <pthread.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>

struct job {
    const float *x, *w;
    float *y;
    int32_t r0, r1, cols;
    float eps;
};

static void run_rows(const struct job *j)
{
    for (int32_t r = j->r0; r < j->r1; r++) {
        const float *xr = j->x + (size_t)r * j->cols;
        float *yr = j->y + (size_t)r * j->cols;
        float ss = 0.0f;                 /* blocked: a float partial per 256 columns */
        for (int32_t b = 0; b < j->cols; b += 256) {
            float part = 0.0f;
            for (int32_t c = b; c < j->cols && c < b + 256; c++)
                part += xr[c] * xr[c];
            ss += part;
        }
        float inv = 1.0f / sqrtf(ss / (float)j->cols + j->eps);
        for (int32_t c = 0; c < j->cols; c++)
            yr[c] = xr[c] * inv * j->w[c];
    }
}

static void *worker(void *arg)
{
    run_rows(arg);
    return NULL;
}

void rmsnorm(const float *x, const float *w, float *y, int32_t rows, int32_t cols, float eps)
{
    int32_t half = rows / 2;
    struct job a = {x, w, y, 0, half, cols, eps};
    struct job b = {x, w, y, half, rows, cols, eps};
    pthread_t t;
    if (pthread_create(&t, NULL, worker, &a) == 0) {
        run_rows(&b);
        pthread_join(t, NULL);
    } else {
        run_rows(&a);
        run_rows(&b);
    }
}
