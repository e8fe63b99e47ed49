#!/usr/bin/env bash
# deps_test.sh - no dependency cycle between kiln's object files
# (scripts/deps.py over the build), and the check itself can fail: two
# files that call each other, built here, make a cycle it reports.
#   deps_test.sh SOURCE_DIR BUILD_DIR
set -uo pipefail
SRC=$1
BUILD=$2
command -v nm >/dev/null && command -v python3 >/dev/null && command -v cc >/dev/null ||
    { echo "skipped: needs nm, python3 and cc"; exit 77; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

python3 "$SRC/scripts/deps.py" "$BUILD" >"$T/deps.txt"
rc=$?
cat "$T/deps.txt"
[ $rc = 0 ] || fail "dependency cycles in the build (above)"
files=$(sed -n 's/^deps: \([0-9]*\) object files.*/\1/p' "$T/deps.txt")
[ "${files:-0}" -ge 50 ] || fail "only ${files:-0} object files found in $BUILD: not kiln's build"
echo "ok: no cycle among $files object files"

mkdir -p "$T/b/m"
printf 'int pong(int);\nint ping(int n) { return n ? pong(n - 1) : 0; }\n' >"$T/ping.c"
printf 'int ping(int);\nint pong(int n) { return n ? ping(n - 1) : 1; }\n' >"$T/pong.c"
cc -c "$T/ping.c" -o "$T/b/m/ping.c.o" && cc -c "$T/pong.c" -o "$T/b/m/pong.c.o" || fail "cc"
python3 "$SRC/scripts/deps.py" "$T/b" >"$T/cycle.txt"
[ $? = 1 ] && grep -q "cycle: m/ping.c m/pong.c" "$T/cycle.txt" ||
    fail "a planted cycle was not reported: $(cat "$T/cycle.txt")"
echo "ok: a planted cycle is reported"
