#!/usr/bin/env bash
# doctor_test.sh - kiln doctor on a healthy setup (exit 0, a line per check),
# with a kilnd of another build on its socket and an unreachable model
# server (exit 1, each named with its fix).
#   doctor_test.sh BUILD_DIR SOURCE_DIR
. "$(dirname "$0")/lib.sh"
t_init "$@"
set -o pipefail
B=$BUILD
T=$tmp

begin "healthy setup, exit 0"
"$B/kiln" doctor >"$T/1.out" 2>&1
rc=$?
[ $rc = 0 ] || fail "healthy: exit $rc: $(cat "$T/1.out")"
for want in "ok    build" "ok    daemon     not running" "ok    sandbox" "ok    disk" "all fine"; do
    grep -q "$want" "$T/1.out" || fail "healthy: no '$want' line: $(cat "$T/1.out")"
done
end

begin "a daemon of another build and an unreachable model server, each with its fix"

cp "$B/kilnd" "$T/kilnd-other" && printf 'x' >>"$T/kilnd-other"
mkdir -p "$KILN_STATE"
"$T/kilnd-other" --foreground --socket "$KILN_SOCKET" --state "$KILN_STATE" 2>"$T/kilnd.err" &
t_bg $!
for _ in $(seq 100); do [ -S "$KILN_SOCKET" ] && break; sleep 0.1; done
OPENAI_BASE_URL=http://127.0.0.1:9/v1 "$B/kiln" doctor >"$T/2.out" 2>&1
rc=$?
[ $rc = 1 ] || fail "problems: exit $rc, expected 1: $(cat "$T/2.out")"
grep -q "FIX   daemon .*but this kiln's kilnd is build" "$T/2.out" || fail "no daemon build line: $(cat "$T/2.out")"
grep -q "fix: kiln daemon stop" "$T/2.out" || fail "no fix for the daemon: $(cat "$T/2.out")"
grep -q "FIX   model      openai at http://127.0.0.1:9/v1" "$T/2.out" || fail "no model line: $(cat "$T/2.out")"
end
t_done
