#!/usr/bin/env bash
# doctor_test.sh - kiln doctor on a healthy setup (exit 0, a line per check),
# with a kilnd of another build on its socket and an unreachable model
# server (exit 1, each named with its fix).
#   doctor_test.sh BUILD_DIR
set -uo pipefail
B=$1
T=$(mktemp -d)
export KILN_STATE=$T/state KILN_SOCKET=$T/k.sock
unset OPENAI_BASE_URL OPENAI_API_KEY ANTHROPIC_BASE_URL ANTHROPIC_API_KEY
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$B/kiln" doctor >"$T/1.out" 2>&1
rc=$?
[ $rc = 0 ] || fail "healthy: exit $rc: $(cat "$T/1.out")"
for want in "ok    build" "ok    daemon     not running" "ok    sandbox" "ok    disk" "all fine"; do
    grep -q "$want" "$T/1.out" || fail "healthy: no '$want' line: $(cat "$T/1.out")"
done
echo "ok: healthy setup, exit 0"

cp "$B/kilnd" "$T/kilnd-other" && printf 'x' >>"$T/kilnd-other"
mkdir -p "$KILN_STATE"
"$T/kilnd-other" --foreground --socket "$KILN_SOCKET" --state "$KILN_STATE" 2>"$T/kilnd.err" &
pid=$!
for _ in $(seq 100); do [ -S "$KILN_SOCKET" ] && break; sleep 0.1; done
OPENAI_BASE_URL=http://127.0.0.1:9/v1 "$B/kiln" doctor >"$T/2.out" 2>&1
rc=$?
[ $rc = 1 ] || fail "problems: exit $rc, expected 1: $(cat "$T/2.out")"
grep -q "FIX   daemon .*but this kiln's kilnd is build" "$T/2.out" || fail "no daemon build line: $(cat "$T/2.out")"
grep -q "fix: kiln daemon stop" "$T/2.out" || fail "no fix for the daemon: $(cat "$T/2.out")"
grep -q "FIX   model      openai at http://127.0.0.1:9/v1" "$T/2.out" || fail "no model line: $(cat "$T/2.out")"
echo "ok: a daemon of another build and an unreachable model server, each with its fix"
echo "doctor_test: passed"
