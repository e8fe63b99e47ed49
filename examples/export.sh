#!/usr/bin/env bash
# export.sh - produce the rmsnorm bf16 export the examples include:
#   examples/export.sh [-k KILN] [WORKSPACE] OUT
# With WORKSPACE (a kiln search's, e.g. kiln-work after
#   kiln search rmsnorm --backend cuda --dtype bf16 --iterations 8 --workspace kiln-work)
# it runs `kiln export --task rmsnorm --backend cuda --dtype bf16` on it.
# Without one it exports the test fixture workspace instead
# (tests/integration/export_cuda/fixture.sh: the rmsnorm CUDA starter, its
# BLOCK 1024 copy and a two-launch kernel, with recorded verdicts; no GPU
# needed), so the examples build anywhere. OUT gets kiln_rmsnorm_bf16.cuh,
# the kernel files, kiln_cuda.h and decisions.json (replaced if there).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
src=$(dirname "$here")
kiln=$src/build/kiln
if [ "${1:-}" = -k ]; then kiln=$2; shift 2; fi
case $# in
1) ws=; out=$1 ;;
2) ws=$1; out=$2 ;;
*) echo "usage: $0 [-k KILN] [WORKSPACE] OUT" >&2; exit 2 ;;
esac
[ -x "$kiln" ] || { echo "export.sh: no kiln at $kiln (build it, or pass -k KILN)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [ -z "$ws" ]; then
    . "$src/tests/integration/export_cuda/fixture.sh"
    ws=$tmp/ws
    make_fixture "$ws" "$src" || { echo "export.sh: could not build the fixture workspace" >&2; exit 1; }
    echo "export.sh: no workspace given: exporting the test fixture (starter, BLOCK 1024, two-launch)"
fi
mkdir -p "$out"
"$kiln" export --task rmsnorm --backend cuda --dtype bf16 --workspace "$ws" -o "$out" --force
