#!/usr/bin/env bash
# gpu-build.sh - build kiln here for the lent GPU machine (see
# ../shared/GPU.md): a RelWithDebInfo build in build-gpu/ whose binaries find the
# shared libraries that machine lacks (libgit2, cJSON and what they pull in)
# in build-gpu/lib through an $ORIGIN run path (DT_RPATH, which unlike
# DT_RUNPATH also serves the libraries those libraries load). The CUDA libraries (driver,
# NVRTC, CUPTI) and glibc are the GPU machine's own and are not shipped.
#
#   scripts/gpu-build.sh            then carry build-gpu to the device and run
#                                   scripts/gpu-check.sh there
set -euo pipefail
cd "$(dirname "$0")/.."
B=build-gpu
echo "gpu-build: configuring $B (RelWithDebInfo, run path \$ORIGIN/lib)"
cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=ON \
    '-DCMAKE_BUILD_RPATH=$ORIGIN/lib;$ORIGIN/../lib' \
    -DCMAKE_EXE_LINKER_FLAGS=-Wl,--disable-new-dtags >/dev/null
cmake --build "$B" -j"$(nproc)" >/dev/null
[ -x "$B/kiln-worker-cuda" ] || { echo "gpu-build: no CUDA toolkit here: kiln-worker-cuda was not built" >&2; exit 1; }
mkdir -p "$B/lib"
skip='^(linux-vdso|ld-linux|libc\.so|libm\.so|libpthread|libdl\.so|librt\.so|libcuda\.so|libnvrtc|libcupti|libgcc_s|libstdc\+\+)'
n=0
for bin in "$B"/kiln "$B"/kilnd "$B"/kiln-worker "$B"/kiln-worker-cuda "$B"/tests/*; do
    [ -f "$bin" ] && [ -x "$bin" ] || continue
    while read -r name _ path _; do
        [[ "$name" =~ $skip ]] && continue
        [ -f "${path:-}" ] || continue
        if [ ! -f "$B/lib/$name" ]; then
            cp -L "$path" "$B/lib/$name"
            n=$((n + 1))
        fi
    done < <(ldd "$bin" 2>/dev/null)
done
echo "gpu-build: $B ready ($n libraries copied to $B/lib, $(du -sh "$B" | cut -f1) in all)"
