#!/usr/bin/env bash
# examples_test.sh - the examples/ projects build against a real kiln export:
# examples/export.sh exports the CUDA export fixture workspace
# (tests/integration/export_cuda/fixture.sh), then a copy of
# examples/cuda_project is built with its own Makefile and nvcc, and the
# PyTorch extension's CUDA half (examples/torch_extension/kiln_rmsnorm_cuda.cu,
# the file that includes the export) is compiled with nvcc; where a GPU is
# present the project's program runs and must be within 3 bf16 ulps. The
# PyTorch half needs torch (run.py, on the GPU machine; examples/README.md).
# Exits 77 (skipped) without nvcc.
#   examples_test.sh BUILD_DIR SOURCE_DIR
. "$(dirname "$0")/lib.sh"
t_init "$@"
need_nvcc
cd "$tmp" || exit 2

begin "examples/export.sh exported the fixture workspace"
# the fixture's date: the same export, so the same nvcc inputs, in both suites
export SOURCE_DATE_EPOCH=1767225600
"$SRC/examples/export.sh" -k "$KILN" out > export.txt 2>&1 ||
    fail "examples/export.sh: $(head -c 600 export.txt)"
[ -f out/kiln_rmsnorm_bf16.cuh ] || fail "examples/export.sh wrote no kiln_rmsnorm_bf16.cuh"
end

begin "examples/cuda_project builds with its Makefile, warning-free"

cp -r "$SRC/examples/cuda_project" proj || exit 2
rm -f proj/rmsnorm_demo
make -C proj NVCC="$SRC/tests/integration/nvcc_memo.sh $NVCC" KILN_EXPORT="$tmp/out" > make.txt 2>&1 ||
    fail "examples/cuda_project does not build: $(head -c 800 make.txt)"
grep -q "warning" make.txt && fail "examples/cuda_project builds with warnings: $(grep -m3 warning make.txt)"
[ -x proj/rmsnorm_demo ] || fail "make left no rmsnorm_demo"
end

begin "examples/torch_extension/kiln_rmsnorm_cuda.cu compiles and defines the launcher"

nvcc_memo -std=c++17 -O3 -arch=sm_90a -Xcompiler -Wall,-Wextra -I out -c \
    "$SRC/examples/torch_extension/kiln_rmsnorm_cuda.cu" -o ext.o > ext.txt 2>&1 ||
    fail "the extension's kiln_rmsnorm_cuda.cu does not compile: $(head -c 800 ext.txt)"
nm -C ext.o | grep -q " T kiln_example_rmsnorm(" || fail "ext.o does not define kiln_example_rmsnorm"
end

if have_gpu; then
    begin "rmsnorm_demo within 3 bf16 ulps on the GPU"
    ./proj/rmsnorm_demo > run.txt 2>&1 || fail "rmsnorm_demo: $(cat run.txt)"
    sed 's/^/# /' run.txt
    end
else
    skip "no NVIDIA GPU: rmsnorm_demo built, not run"
fi
t_done
