#!/usr/bin/env bash
# exec_test.sh - kiln-worker --exec, the confined runner of the C compiler:
# it ends as its program did (an exit status, or the same signal: the
# verifier reads a CPU limit from SIGXCPU), and when its parent dies
# (kilnd killed with SIGKILL mid-compile) nothing it started lives on: a
# compiler's own processes (cc1, as, ld) once kept writing into job
# directories that the next kilnd had swept.
#
# usage: exec_test.sh BUILD_DIR SOURCE_DIR
. "$(dirname "$0")/lib.sh"
t_init "$@"
W=$WORKER
for p in /bin/sh sleep; do
    command -v "$p" >/dev/null || skip_all "$p is needed"
done

T=$tmp
mkdir "$T/d"
cd "$T/d" || exit 2   # where a core file would land (core_pattern "core")
# A sleep unique to this run, so that other tests' processes never match.
NAP=$((3000 + $$ % 1000))

"$W" --exec "$T/d" -- /bin/sh -c 'exit 7' 2>"$T/err"
rc=$?
begin
[ $rc -eq 7 ] || problem "exit $rc, expected 7: $(cat "$T/err")"
end "the program's exit status is kiln-worker's"

"$W" --exec "$T/d" -- /bin/sh -c 'kill -XCPU $$' 2>"$T/err"
rc=$?
begin
[ $rc -eq $((128 + 24)) ] || problem "exit $rc, expected $((128 + 24)) (SIGXCPU)"
[ -z "$(ls -A "$T/d")" ] || problem "files left in the directory: $(ls -A "$T/d")"
end "a program ended by SIGXCPU ends kiln-worker with SIGXCPU, and no core file"

# --parent PID (the verifier names itself; it starts workers with
# posix_spawn, which cannot set a parent-death signal): run by that parent,
# the program runs; a worker whose parent is not the one named (it died
# before the worker could tie itself to it) exits at once, and never runs
# the program.
"$W" --exec "$T/d" --parent $$ -- /bin/sh -c 'exit 7' 2>"$T/err"
rc=$?
"$W" --exec "$T/d" --parent 1 -- /bin/sh -c ': >ran' 2>"$T/err2"
rc2=$?
begin
[ $rc -eq 7 ] || problem "with --parent \$\$: exit $rc, expected 7: $(cat "$T/err")"
[ $rc2 -eq 98 ] || problem "with --parent 1: exit $rc2, expected 98 (setup): $(cat "$T/err2")"
[ ! -e "$T/d/ran" ] || problem "with --parent 1 the program ran"
rm -f "$T/d/ran"
end "--parent: the named parent's worker runs; any other parent's exits 98 before the program"

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
begin
[ $started -eq 1 ] || problem "the two sleeps never started"
[ $left -eq 0 ] || problem "alive 5 s after their parent's SIGKILL: $(pgrep -af "sleep $NAP")"
end "the parent killed with SIGKILL: kiln-worker, the program and the program's children all end"

t_done
