#!/usr/bin/env bash
# signals_test.sh - a search that loses its terminal or its reader is
# interrupted, not killed (issue 31.2): SIGHUP stops it after the current
# step with the summary, exit 130 and the run recorded "stopped", and
# --resume completes it; under nohup SIGHUP is ignored and the search
# finishes; `kiln search | head -1` (and with --json) stops the search the
# same way, its summary on stderr, without a crash; a search killed with -9
# leaves a run recorded "running" that `kiln status` shows as interrupted
# with the command that resumes it, while a live one shows its pid.
#
# usage: signals_test.sh BUILD_DIR SOURCE_DIR
# Needs git, sqlite3 and nohup.
. "$(dirname "$0")/lib.sh"
t_init "$@"
need_tools git sqlite3 nohup
cd "$SRC" || exit 2
FIX=$SRC/tests/integration/search
# Long enough that a signal always lands mid-run; a stopped run ends after one step.
LONG=(rmsnorm --from "$FIX/many_knobs.c" --iterations 40 --group decode --timing-ms 200)

tail_of() { tail -n "${2:-8}" "$1" 2>/dev/null | sed 's/^/  | /'; }
head_of() { head -n "${2:-3}" "$1" 2>/dev/null | sed 's/^/  | /'; }
sq() { sqlite3 -cmd '.timeout 5000' "$1/.kiln/kiln.db" "$2" 2>&1; }
# wait_cand WS N: until candidate N of the workspace's run is recorded (60 s).
wait_cand() {
    local i
    for ((i = 0; i < 600; i++)); do
        [ "$(sq "$1" "SELECT count(*) FROM candidates WHERE n >= $2" 2>/dev/null)" -ge 1 ] 2>/dev/null &&
            return 0
        sleep 0.1
    done
    return 1
}
# wait_exit PID SECONDS: until PID has exited; its status in RC (-1: still running, killed).
wait_exit() {
    local i
    for ((i = 0; i < $2 * 10; i++)); do
        kill -0 "$1" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$1" 2>/dev/null; then
        kill -9 "$1" 2>/dev/null
        wait "$1" 2>/dev/null
        RC=-1
        return 1
    fi
    wait "$1"
    RC=$?
}
# resumes WS RUN ITERATIONS: --resume last finishes the run.
resumes() {
    timeout -k 10 300 "$KILN" search --workspace "$1" --resume last --iterations "$3" --group decode \
        --timing-ms 200 >"$tmp/resume.out" 2>"$tmp/resume.err" </dev/null
    local rc=$?
    [ $rc -eq 0 ] || problem "--resume last: exit $rc"$'\n'"$(tail_of "$tmp/resume.err")"
    local st
    st=$(sq "$1" "SELECT status || ' ' || iterations_done FROM runs WHERE id='$2'")
    [ "$st" = "done $3" ] || problem "after the resume the run is '$st', expected 'done $3'"
}
# stopped WS: the latest run is recorded stopped, kiln status says so and
# how to resume; sets RUN.
stopped() {
    RUN=$(sq "$1" "SELECT id FROM runs ORDER BY started_at DESC LIMIT 1")
    local st
    st=$(sq "$1" "SELECT status FROM runs WHERE id='$RUN'")
    [ "$st" = stopped ] || problem "the run is recorded '$st', expected 'stopped'"
    "$KILN" status --workspace "$1" >"$tmp/status.out" 2>&1
    grep -q "^run $RUN: stopped (interrupted)" "$tmp/status.out" &&
        grep -qF "resume with: kiln search --workspace $1 --resume $RUN" "$tmp/status.out" ||
        problem "kiln status does not show the run interrupted and how to resume:"$'\n'"$(head_of "$tmp/status.out")"
}

# ---- 1. SIGHUP -------------------------------------------------------------------

begin
WS=$tmp/ws1
"$KILN" search "${LONG[@]}" --workspace "$WS" >"$tmp/1.out" 2>"$tmp/1.err" </dev/null &
pid=$!
t_bg "$pid"
if ! wait_cand "$WS" 1; then
    problem "candidate 1 never appeared"$'\n'"$(tail_of "$tmp/1.err")"
    kill -9 "$pid"
else
    kill -HUP "$pid"
    sleep 0.2
    kill -HUP "$pid" 2>/dev/null   # a dropped terminal may send two: the second must not abort
    wait_exit "$pid" 60
    [ "$RC" -eq 130 ] || problem "exit $RC after SIGHUP, expected 130"$'\n'"$(tail_of "$tmp/1.err")"
    grep -q "stopped (interrupted: SIGHUP" "$tmp/1.out" ||
        problem "the summary does not say interrupted by SIGHUP:"$'\n'"$(tail_of "$tmp/1.out")"
    stopped "$WS"
    resumes "$WS" "$RUN" 3
fi
end "1. SIGHUP: stops after the current step with the summary, exit 130, recorded stopped; --resume last completes"

# ---- 2. nohup ------------------------------------------------------------------------

begin
WS=$tmp/ws2
nohup "$KILN" search rmsnorm --from "$FIX/many_knobs.c" --iterations 3 --group decode --timing-ms 200 \
    --workspace "$WS" >"$tmp/2.out" 2>"$tmp/2.err" </dev/null &
pid=$!
t_bg "$pid"
if wait_cand "$WS" 1; then
    kill -HUP "$pid" 2>/dev/null
fi
wait_exit "$pid" 120
[ "$RC" -eq 0 ] || problem "exit $RC under nohup after a SIGHUP, expected 0"$'\n'"$(tail_of "$tmp/2.err")"
st=$(sq "$WS" "SELECT status || ' ' || iterations_done FROM runs")
[ "$st" = "done 3" ] || problem "under nohup the run is '$st', expected 'done 3'"
end "2. under nohup SIGHUP is ignored: the search finishes"

# ---- 3. a reader that goes away ------------------------------------------------------------

for mode in text json; do
    begin
    WS=$tmp/ws3-$mode
    extra=()
    [ $mode = json ] && extra=(--json)
    timeout -k 10 300 "$KILN" search "${LONG[@]}" --workspace "$WS" "${extra[@]}" 2>"$tmp/3.err" </dev/null |
        head -1 >"$tmp/3.out"
    rc=${PIPESTATUS[0]}
    [ "$rc" -eq 130 ] || problem "kiln search | head -1: exit $rc, expected 130 (141: killed by SIGPIPE)"$'\n'"$(tail_of "$tmp/3.err")"
    [ -s "$tmp/3.out" ] || problem "head read nothing"
    grep -q "stopped (interrupted: SIGPIPE" "$tmp/3.err" ||
        problem "no summary on stderr saying interrupted by SIGPIPE:"$'\n'"$(tail_of "$tmp/3.err")"
    n=$(sq "$WS" "SELECT iterations_done FROM runs")
    [ "${n:-99}" -lt 40 ] 2>/dev/null || problem "the search ran on to iteration '$n' with nobody reading"
    stopped "$WS"
    resumes "$WS" "$RUN" $((n + 1))
    end "3. kiln search${extra[*]:+ ${extra[*]}} | head -1: stops as interrupted (exit 130, summary on stderr), recorded stopped, resumes"
done

# ---- 4. a dead run and a live one in kiln status ---------------------------------------------

begin
WS=$tmp/ws4
"$KILN" search "${LONG[@]}" --workspace "$WS" >"$tmp/4.out" 2>"$tmp/4.err" </dev/null &
pid=$!
t_bg "$pid"
if ! wait_cand "$WS" 1; then
    problem "candidate 1 never appeared"$'\n'"$(tail_of "$tmp/4.err")"
else
    RUN=$(sq "$WS" "SELECT id FROM runs")
    "$KILN" status --workspace "$WS" >"$tmp/4s.out" 2>&1
    grep -q "^run $RUN: running (pid $pid)" "$tmp/4s.out" ||
        problem "a live search is not shown running with its pid:"$'\n'"$(head_of "$tmp/4s.out")"
    grep -q "a search is running in this workspace (pid $pid, run $RUN)" "$tmp/4s.out" ||
        problem "no line naming the live search:"$'\n'"$(tail_of "$tmp/4s.out" 3)"
    kill -9 "$pid"
    wait "$pid" 2>/dev/null
    st=$(sq "$WS" "SELECT status FROM runs WHERE id='$RUN'")
    [ "$st" = running ] || problem "after kill -9 the run is recorded '$st' (expected running: nothing could record it)"
    "$KILN" status --workspace "$WS" >"$tmp/4d.out" 2>&1
    grep -q "^run $RUN: interrupted (recorded as running, but no search holds it" "$tmp/4d.out" &&
        grep -qF "resume with: kiln search --workspace $WS --resume $RUN" "$tmp/4d.out" ||
        problem "a dead run is not shown interrupted with how to resume:"$'\n'"$(head_of "$tmp/4d.out")"
    ! grep -q "a search is running" "$tmp/4d.out" || problem "status still says a search is running"
    n=$(sq "$WS" "SELECT iterations_done FROM runs WHERE id='$RUN'")
    resumes "$WS" "$RUN" $((n + 1))
fi
end "4. kiln status: a live run shows its pid; one whose search was killed shows interrupted and how to resume, and resumes"

t_done
