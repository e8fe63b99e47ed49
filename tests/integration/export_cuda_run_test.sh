#!/usr/bin/env bash
# export_cuda_run_test.sh - the exported CUDA dispatch run on a GPU (ctest
# label gpu, run by scripts/gpu-check.sh): exports the fixture workspace of
# export_cuda_test.sh (three rmsnorm bf16 kernels: the starter, its BLOCK
# 1024 copy, a two-launch kernel with scratch, a cluster and 64 KiB of
# shared memory at rows=16384 cols=16384), builds a host program with nvcc that calls the dispatch
# on random bf16 inputs at every CUDA shape a kernel won in the fixture and
# three others (the fallback), and compares each output with rmsnorm
# computed in double on the host, within 3 bf16 ulps. Exits 77 (skipped)
# without a GPU or nvcc.
#   export_cuda_run_test.sh BUILD_DIR SOURCE_DIR
. "$(dirname "$0")/lib.sh"
t_init "$@"
need_gpu
need_nvcc
. "$SRC/tests/integration/export_cuda/fixture.sh" || exit 2
cd "$tmp" || exit 2

begin "the exported dispatch matches the reference at every shape"
make_fixture ws "$SRC" || fail "could not build the fixture workspace"
"$KILN" export --task rmsnorm --backend cuda --dtype bf16 --workspace ws -o out > export.txt 2>&1 ||
    fail "kiln export: $(head -c 600 export.txt)"

cat > main.cu <<'EOF'
// Calls the exported rmsnorm bf16 dispatch on random inputs and compares
// with a double-precision host reference computed from the same bf16 values.
#include "kiln_rmsnorm_bf16.cuh"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static uint64_t state = 88172645463325252u;

static double uniform(void)
{
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return (double)(state >> 11) * (1.0 / 9007199254740992.0);
}

static double normal(void)
{
    double u = uniform() + 1e-300, v = uniform();
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

/* The spacing of bf16 numbers at |v| (8 significant bits). */
static double bf16_ulp(double v)
{
    int e;
    frexp(fabs(v) > 1e-30 ? v : 1e-30, &e);
    return ldexp(1.0, e - 8);
}

#define CHECK(call)                                                            \
    do {                                                                       \
        cudaError_t e_ = (call);                                               \
        if (e_ != cudaSuccess) {                                               \
            printf("%s: %s\n", #call, cudaGetErrorString(e_));               \
            return -1;                                                         \
        }                                                                      \
    } while (0)

/* Worst error in bf16 ulps of the reference at rows x cols; -1 on an error. */
static double run_shape(int rows, int cols, cudaStream_t stream)
{
    size_t n = (size_t)rows * cols;
    __nv_bfloat16 *hx = (__nv_bfloat16 *)malloc(n * 2), *hw = (__nv_bfloat16 *)malloc(cols * 2);
    __nv_bfloat16 *hy = (__nv_bfloat16 *)malloc(n * 2);
    for (size_t i = 0; i < n; i++)
        hx[i] = __float2bfloat16((float)normal());
    for (int c = 0; c < cols; c++)
        hw[c] = __float2bfloat16((float)(0.5 + uniform()));
    const float eps = 1e-6f;
    kiln_t *dx, *dw, *dy;
    void *scratch = NULL;
    size_t sb = kiln_rmsnorm_bf16_scratch_bytes(rows, cols);
    CHECK(cudaMalloc((void **)&dx, n * 2));
    CHECK(cudaMalloc((void **)&dw, (size_t)cols * 2));
    CHECK(cudaMalloc((void **)&dy, n * 2));
    if (sb)
        CHECK(cudaMalloc(&scratch, sb));
    if (sb)   /* NaN bytes: a kernel that reads scratch it should have zeroed shows it */
        CHECK(cudaMemset(scratch, 0xff, sb));
    CHECK(cudaMemcpy(dx, hx, n * 2, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dw, hw, (size_t)cols * 2, cudaMemcpyHostToDevice));
    CHECK(cudaMemset(dy, 0xff, n * 2));   /* NaN: unwritten outputs show */
    CHECK(kiln_rmsnorm_bf16(dx, dw, dy, rows, cols, eps, scratch, stream));
    CHECK(cudaStreamSynchronize(stream));
    CHECK(cudaMemcpy(hy, dy, n * 2, cudaMemcpyDeviceToHost));
    double worst = 0;
    for (int r = 0; r < rows; r++) {
        double ss = 0;
        for (int c = 0; c < cols; c++) {
            double v = __bfloat162float(hx[(size_t)r * cols + c]);
            ss += v * v;
        }
        double inv = 1.0 / sqrt(ss / cols + eps);
        for (int c = 0; c < cols; c++) {
            size_t i = (size_t)r * cols + c;
            double ref = __bfloat162float(hx[i]) * inv * __bfloat162float(hw[c]);
            double got = __bfloat162float(hy[i]);
            double err = isfinite(got) ? fabs(got - ref) / bf16_ulp(ref) : INFINITY;
            if (!(err <= worst))
                worst = err;
        }
    }
    cudaFree(dx);
    cudaFree(dw);
    cudaFree(dy);
    cudaFree(scratch);
    free(hx);
    free(hw);
    free(hy);
    return worst;
}

int main(void)
{
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        printf("skipped: no CUDA device\n");
        return 77;
    }
    /* every shape of rmsnorm's cuda_groups a kernel won in the fixture (the
     * rest go to the fallback, like these last three) */
    static const int shapes[][2] = {{32, 1024}, {64, 4096}, {33, 1000}, {128, 2048}, {256, 4096},
                                    {512, 2048}, {1, 4096}, {8, 4096}, {16, 5120}, {32, 8192},
                                    {16384, 16384}, {1, 2048}, {3, 777}, {2, 20000}};
    cudaStream_t stream;
    if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess)
        return 1;
    int bad = 0;
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        double w = run_shape(shapes[s][0], shapes[s][1], stream);
        int ok = w >= 0 && w <= 3.0;
        printf("%s rows=%d cols=%d: worst error %.2f bf16 ulps\n", ok ? "ok  " : "BAD ",
               shapes[s][0], shapes[s][1], w);
        bad |= !ok;
    }
    cudaStreamDestroy(stream);
    return bad;
}
EOF
cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')
case $cap in
90) arch=sm_90a ;;
[0-9][0-9]|[0-9][0-9][0-9]) arch=sm_$cap ;;
*) arch=native ;;
esac
"$NVCC" -std=c++17 -O2 -arch=$arch -Iout -o host main.cu > nvcc.txt 2>&1 ||
    fail "nvcc -arch=$arch: $(head -c 800 nvcc.txt)"
timeout 60 ./host > host.txt 2>&1
rc=$?
sed 's/^/#   /' host.txt
[ $rc -eq 77 ] && skip_all "the host program found no CUDA device"
[ $rc -eq 0 ] || fail "the exported dispatch is wrong on some shape (exit status $rc)"
end "the exported dispatch matches the reference at every shape ($arch)"
t_done
