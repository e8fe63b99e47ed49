#!/usr/bin/env bash
# exec_test.sh - kiln-worker --exec, the confined runner of the C compiler:
# it ends as its program did (an exit status, or the same signal: the
# verifier reads a CPU limit from SIGXCPU), and when its parent dies
# (kilnd killed with SIGKILL mid-compile) nothing it started lives on: a
# compiler's own processes (cc1, as, ld) once kept writing into job
# directories that the next kilnd had swept.
#
# usage: exec_test.sh BUILD_DIR
# Prints "ok - NAME" / "not ok - NAME" lines, then "N passed, N failed".
set -u

if [ $# -ne 1 ]; then
    echo "usage: $0 BUILD_DIR" >&2
    exit 2
fi
W=$(readlink -f -- "$1")/kiln-worker
[ -x "$W" ] || { echo "$0: no kiln-worker in $1" >&2; exit 2; }
for p in /bin/sh sleep; do
    command -v "$p" >/dev/null || { echo "SKIP: $p is needed"; exit 77; }
done

npass=0
nfail=0
check() {   # NAME PROBLEM...: ok when no problem is given
    local name=$1
    shift
    if [ $# -eq 0 ]; then
        echo "ok - $name"
        npass=$((npass + 1))
    else
        echo "not ok - $name"
        printf '#   %s\n' "$@"
        nfail=$((nfail + 1))
    fi
}

T=$(mktemp -d /tmp/kiln-exec-test.XXXXXX) || exit 2
mkdir "$T/d"
cd "$T/d" || exit 2   # where a core file would land (core_pattern "core")
# A sleep unique to this run, so that other tests' processes never match.
NAP=$((3000 + $$ % 1000))
cleanup() {
    pkill -KILL -f "sleep $NAP" 2>/dev/null
    rm -rf "$T"
}
trap cleanup EXIT

"$W" --exec "$T/d" -- /bin/sh -c 'exit 7' 2>"$T/err"
rc=$?
p=()
[ $rc -eq 7 ] || p+=("exit $rc, expected 7: $(cat "$T/err")")
check "the program's exit status is kiln-worker's" "${p[@]}"

"$W" --exec "$T/d" -- /bin/sh -c 'kill -XCPU $$' 2>"$T/err"
rc=$?
p=()
[ $rc -eq $((128 + 24)) ] || p+=("exit $rc, expected $((128 + 24)) (SIGXCPU)")
[ -z "$(ls -A "$T/d")" ] || p+=("files left in the directory: $(ls -A "$T/d")")
check "a program ended by SIGXCPU ends kiln-worker with SIGXCPU, and no core file" "${p[@]}"

# --parent PID (the verifier names itself; it starts workers with
# posix_spawn, which cannot set a parent-death signal): run by that parent,
# the program runs; a worker whose parent is not the one named (it died
# before the worker could tie itself to it) exits at once, and never runs
# the program.
"$W" --exec "$T/d" --parent $$ -- /bin/sh -c 'exit 7' 2>"$T/err"
rc=$?
"$W" --exec "$T/d" --parent 1 -- /bin/sh -c ': >ran' 2>"$T/err2"
rc2=$?
p=()
[ $rc -eq 7 ] || p+=("with --parent \$\$: exit $rc, expected 7: $(cat "$T/err")")
[ $rc2 -eq 98 ] || p+=("with --parent 1: exit $rc2, expected 98 (setup): $(cat "$T/err2")")
[ ! -e "$T/d/ran" ] || p+=("with --parent 1 the program ran")
rm -f "$T/d/ran"
check "--parent: the named parent's worker runs; any other parent's exits 98 before the program" "${p[@]}"

# A parent that dies while the program has children of its own. The
# subshell forks kiln-worker (the trailing ':' keeps it from exec'ing).
( "$W" --exec "$T/d" --cpu-seconds 60 -- /bin/sh -c "sleep $NAP & sleep $NAP & wait"; : ) &
holder=$!
started=0
for ((i = 0; i < 100; i++)); do
    [ "$(pgrep -c -f "^sleep $NAP\$")" -ge 2 ] && { started=1; break; }
    sleep 0.05
done
kill -9 "$holder"
wait "$holder" 2>/dev/null
left=1
for ((i = 0; i < 50; i++)); do
    if [ -z "$(pgrep -f "sleep $NAP")" ]; then
        left=0
        break
    fi
    sleep 0.1
done
p=()
[ $started -eq 1 ] || p+=("the two sleeps never started")
[ $left -eq 0 ] || p+=("alive 5 s after their parent's SIGKILL: $(pgrep -af "sleep $NAP")")
check "the parent killed with SIGKILL: kiln-worker, the program and the program's children all end" "${p[@]}"

echo "$npass passed, $nfail failed"
[ $nfail -eq 0 ]
