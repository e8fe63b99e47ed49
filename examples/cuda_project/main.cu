// main.cu - a plain CUDA program calling a kiln export: kiln_rmsnorm_bf16()
// from kiln_rmsnorm_bf16.cuh (included here, in this one .cu file), on
// random bf16 rows at a few shapes, checked against rmsnorm computed in
// double on the host from the same bf16 values, and timed with CUDA events.
// Exit status 0: every shape within 3 bf16 ulps (as export_cuda_run_test.sh) of the reference; 1 not.
#include "kiln_rmsnorm_bf16.cuh"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <vector>

#define CHECK(call)                                                                   \
    do {                                                                              \
        cudaError_t e_ = (call);                                                      \
        if (e_ != cudaSuccess) {                                                      \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,             \
                    cudaGetErrorString(e_));                                          \
            exit(2);                                                                  \
        }                                                                             \
    } while (0)

static unsigned long long rng = 88172645463325252ull;

static float uniform(void)   // in [-2, 2)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)((rng >> 11) * (1.0 / 9007199254740992.0) * 4.0 - 2.0);
}

// Worst error at rows x cols, in bf16 ulps of the reference value.
static double check_shape(int rows, int cols, float eps, cudaStream_t stream, float *ms)
{
    size_t n = (size_t)rows * cols;
    std::vector<__nv_bfloat16> x(n), w(cols), y(n);
    for (size_t i = 0; i < n; i++)
        x[i] = __float2bfloat16(uniform());
    for (int c = 0; c < cols; c++)
        w[c] = __float2bfloat16(uniform());
    __nv_bfloat16 *dx, *dw, *dy;
    void *scratch = NULL;
    size_t sb = kiln_rmsnorm_bf16_scratch_bytes(rows, cols);
    CHECK(cudaMalloc(&dx, n * sizeof *dx));
    CHECK(cudaMalloc(&dw, cols * sizeof *dw));
    CHECK(cudaMalloc(&dy, n * sizeof *dy));
    if (sb)
        CHECK(cudaMalloc(&scratch, sb));
    CHECK(cudaMemcpy(dx, x.data(), n * sizeof *dx, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dw, w.data(), cols * sizeof *dw, cudaMemcpyHostToDevice));
    CHECK(kiln_rmsnorm_bf16(dx, dw, dy, rows, cols, eps, scratch, stream));
    CHECK(cudaStreamSynchronize(stream));
    CHECK(cudaMemcpy(y.data(), dy, n * sizeof *dy, cudaMemcpyDeviceToHost));

    cudaEvent_t t0, t1;   // the mean of 20 calls after the checked one
    CHECK(cudaEventCreate(&t0));
    CHECK(cudaEventCreate(&t1));
    CHECK(cudaEventRecord(t0, stream));
    for (int i = 0; i < 20; i++)
        CHECK(kiln_rmsnorm_bf16(dx, dw, dy, rows, cols, eps, scratch, stream));
    CHECK(cudaEventRecord(t1, stream));
    CHECK(cudaEventSynchronize(t1));
    CHECK(cudaEventElapsedTime(ms, t0, t1));
    *ms /= 20;

    double worst = 0;
    for (int r = 0; r < rows; r++) {
        double ss = 0;
        for (int c = 0; c < cols; c++) {
            double v = __bfloat162float(x[(size_t)r * cols + c]);
            ss += v * v;
        }
        double inv = 1.0 / sqrt(ss / cols + eps);
        for (int c = 0; c < cols; c++) {
            size_t i = (size_t)r * cols + c;
            double ref = __bfloat162float(x[i]) * inv * __bfloat162float(w[c]);
            int e;
            frexp(fabs(ref) > 1e-30 ? ref : 1e-30, &e);
            double ulp = ldexp(1.0, e - 8);   // bf16 keeps 8 significant bits
            worst = fmax(worst, fabs(__bfloat162float(y[i]) - ref) / ulp);
        }
    }
    cudaEventDestroy(t0);
    cudaEventDestroy(t1);
    cudaFree(dx);
    cudaFree(dw);
    cudaFree(dy);
    cudaFree(scratch);
    return worst;
}

int main(void)
{
    static const int shapes[][2] = {{1, 2048}, {33, 1000}, {64, 4096}, {1024, 8192}, {4096, 5120}};
    cudaStream_t stream;
    CHECK(cudaStreamCreate(&stream));
    int bad = 0;
    printf("%8s %8s %12s %10s\n", "rows", "cols", "max err ulp", "time us");
    for (const auto &s : shapes) {
        float ms = 0;
        double err = check_shape(s[0], s[1], 1e-6f, stream, &ms);
        printf("%8d %8d %12.2f %10.2f%s\n", s[0], s[1], err, ms * 1000, err > 3 ? "  FAIL" : "");
        bad |= err > 3;
    }
    CHECK(cudaStreamDestroy(stream));
    printf(bad ? "FAIL: an output is more than 3 bf16 ulps off\n" : "ok\n");
    return bad;
}
