#!/usr/bin/env bash
# setup.sh - install kiln's dependencies from Debian's packages and build it
# into build/. Safe to run again: apt skips what is installed, cmake and make
# rebuild only what changed. --deps-only: install the packages, build nothing.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  build-essential cmake pkg-config
  libcurl4-openssl-dev libcjson-dev libgit2-dev libsqlite3-dev libcmocka-dev
  libseccomp-dev libssl-dev git sqlite3
  python3    # the hidden-shape leak test reads verdicts with it
  chromium   # headless: the report test renders the page
  slurm-wlm munge   # the fleet test starts a private single-node Slurm
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
else
  echo "setup: all Debian packages already installed"
fi

if [ "${1:-}" = "--deps-only" ]; then
  exit 0
fi

echo "setup: configuring and building into build/"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$(nproc)"
echo "setup: done. Try: build/kiln verify kernels/rmsnorm/cpu/starter.c --task rmsnorm"
