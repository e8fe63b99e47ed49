#!/usr/bin/env bash
# examples_gpu.sh - the export examples on the GPU machine (issue 16): a
# short offline search of rmsnorm bf16 on the GPU, its export, the plain
# CUDA project built against that export and run (outputs against a double
# reference, time per call), and the PyTorch extension where PyTorch with
# CUDA and an nvcc of its CUDA major version are there; otherwise the
# extension is reported as skipped, with the reason. Also builds and runs
# the project on the test fixture's export, which needs no search.
#   bench/examples_gpu.sh BUILD OUTDIR     (scripts/gpu-check.sh runs it)
# Each step prints "examples: STEP ok|FAILED|skipped (why)".
set -uo pipefail
B=$(readlink -f "$1")
O=$(mkdir -p "$2" && readlink -f "$2")
K=$B/kiln
cd "$(dirname "$0")/.."
export KILN_STATE=$O/state
say() { echo "examples: $*"; }
NVCC=${NVCC:-$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null | head -1)}

"$K" search rmsnorm --backend cuda --dtype bf16 --iterations 4 --workspace "$O/ws" --no-daemon \
    > "$O/search.txt" 2>&1 && say "search ok ($(tail -1 "$O/search.txt"))" ||
    say "search FAILED (see search.txt)"
for src in fixture search; do
    out=$O/export-$src
    if [ $src = fixture ]; then examples/export.sh -k "$K" "$out" > "$O/export-$src.txt" 2>&1
    else examples/export.sh -k "$K" "$O/ws" "$out" > "$O/export-$src.txt" 2>&1; fi ||
        { say "export of the $src FAILED"; continue; }
    if [ -z "$NVCC" ]; then
        say "cuda_project ($src) skipped (no nvcc on this machine)"
        continue
    fi
    make -s -C examples/cuda_project clean > /dev/null
    if make -s -C examples/cuda_project NVCC="$NVCC" KILN_EXPORT="$out" > "$O/make-$src.txt" 2>&1 &&
        examples/cuda_project/rmsnorm_demo > "$O/demo-$src.txt" 2>&1; then
        say "cuda_project ($src) ok"
    else
        say "cuda_project ($src) FAILED"
    fi
    sed 's/^/    /' "$O/demo-$src.txt" 2>/dev/null | head -12
done
make -s -C examples/cuda_project clean > /dev/null 2>&1
if ! python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
    say "torch_extension skipped ($(python3 -c 'import torch; print("PyTorch", torch.__version__, "sees no GPU")' 2>&1 | tail -1))"
    exit 0
fi
PATH=$(dirname "${NVCC:-/nonexistent}"):$PATH python3 examples/torch_extension/run.py "$O/export-search" \
    > "$O/torch.txt" 2>&1
rc=$?
case $rc in
0) say "torch_extension ok" ;;
2) say "torch_extension skipped ($(tail -1 "$O/torch.txt"))" ;;
*) say "torch_extension FAILED (exit $rc)" ;;
esac
sed 's/^/    /' "$O/torch.txt" | tail -12
