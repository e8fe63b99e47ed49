#!/usr/bin/env bash
# kilnd_restart_test.sh - integration tests of the verifier daemon kilnd: kill -9
# with jobs queued (no worker outlives it; a job's candidate and baseline
# share a core), kiln verify across a kill -9 and restart, a graceful
# shutdown while busy, and the spooled jobs run after a restart.
# (kilnd_common.sh holds what the kilnd tests share.)
#
# usage: kilnd_restart_test.sh BUILD_DIR SOURCE_DIR
. "$(dirname "$0")/lib.sh"
t_init "$@"
. "$(dirname "$0")/kilnd_common.sh"

start_main

# ---- e. kill -9 with jobs queued ----------------------------------------------

begin
# As in g: e1, the slow one, alone first, and the rest once it holds the
# device. Sent together, a quick job could take the device first and end
# between the status that names it running and the kill.
{
    "$PROBE" --print-request --verify-file "$SLOW" --task rmsnorm --id e1 "${FAST[@]}"
    wait_lane_busy "$S" 30
    for i in 2 3 4; do
        "$PROBE" --print-request --verify-file "$HONEST2" --task rmsnorm --id e$i --timing-ms 200 --group decode
    done
} | timeout -k 5 120 "$PROBE" "$S" --finals 4 --timeout-ms 100000 >"$tmp/io/e.out" 2>&1 &
epid=$!
t_bg "$epid"
wait_lines "$tmp/io/e.out" '"event":"accepted"' 4 40 || problem "not 4 accepted events: $(head -c 400 "$tmp/io/e.out")"
mapfile -t ejobs < <(grep '"event":"accepted"' "$tmp/io/e.out" | sed -n 's/.*"job":"\(j[0-9]*\)".*/\1/p')
wait_lane_busy "$S" 30 || problem "no job reached the device: $st"
running=$busy_job
[ "$running" = "${ejobs[0]:-}" ] || problem "the device runs $running, not e1 (${ejobs[0]:-})"
# e1's candidate and baseline workers race on one core. posix_spawn cannot
# pin a child: kilnd's thread pins itself for the call, and only for it.
if [ "$(nproc)" -ge 2 ]; then
    cores() { sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' "/proc/$1/status" 2>/dev/null; }
    cand= base=
    for ((i = 0; i < 100; i++)); do
        for p in $(workers_of "$ST"); do
            args=$(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null)
            case $args in
            *" --exec "*) ;;   # a compile (of a job queued behind e1), not a timing worker
            *"/cand "*) cand=$(cores "$p") ;;
            *"/base "*) base=$(cores "$p") ;;
            esac
        done
        [ -n "$cand" ] && [ -n "$base" ] && break
        sleep 0.1
    done
    [[ $cand =~ ^[0-9]+$ ]] && [ "$base" = "$cand" ] ||
        problem "e1's candidate worker runs on cores '$cand', its baseline's on '$base': not one and the same"
    all=$(cores "$MAINPID")
    for t in /proc/$MAINPID/task/*; do
        [ "$(cores "${t#/proc/}")" = "$all" ] ||
            problem "kilnd thread ${t##*/} is left on cores '$(cores "${t#/proc/}")', not '$all'"
    done
fi
kill9 "$MAINPID"
wait "$epid" 2>/dev/null
wait_no_workers "$ST" 5 || problem "kiln-worker processes survived kilnd: $(procs_show $(workers_of "$ST"))"
end "e. kill -9 while a job runs: no worker outlives kilnd (jobs ${ejobs[*]}, running $running); its candidate and baseline share one core"

begin
start_kilnd "$S" "$ST" "$LOG" || problem "kilnd did not restart: $(tail -5 "$LOG")"
MAINPID=$KPID
for j in "${ejobs[@]}"; do
    result "$S" "$j"
    ev=$(ev_of "$res")
    code=$(code_of "$res")
    if [ "$ev" = verdict ]; then
        honest_line "$res" || problem "$j: verdict is not pass: ${res:0:300}"
        [ "$j" != "$running" ] || problem "$j was running at the kill but got a verdict"
    elif [ "$ev" = error ] && [ "$code" = daemon-restarted ]; then
        :
    else
        problem "$j: ${res:0:300}"
    fi
done
[ ${#ejobs[@]} -eq 4 ] || problem "only ${#ejobs[@]} job ids"
if [ -n "$running" ]; then
    result "$S" "$running"
    [ "$(code_of "$res")" = daemon-restarted ] || problem "running job $running: ${res:0:300}"
fi
end "e. after the restart every job ends in a verdict or daemon-restarted"

begin
wait_idle "$S" 60 || problem "kilnd did not settle: $st"
left=$(ls -d "$ST"/work/kiln-job-* 2>/dev/null)
[ -z "$left" ] || problem "job directories left: $left"
left=$(ls "$ST"/spool 2>/dev/null)
[ -z "$left" ] || problem "spool entries left: $left"
end "e. no kiln-job-* directories or spool entries left after the restart settles"

# ---- f. kiln verify across a daemon restart -----------------------------------

begin
timeout -k 5 150 "$KILN" verify "$HONEST" --task rmsnorm --socket "$S" --json "${LONG[@]}" \
    >"$tmp/io/f.out" 2>"$tmp/io/f.err" </dev/null &
fpid=$!
t_bg "$fpid"
wait_lane_busy "$S" 30 || problem "the job did not reach the device: $st"
kill9 "$MAINPID"
start_kilnd "$S" "$ST" "$LOG" || problem "kilnd did not restart: $(tail -5 "$LOG")"
MAINPID=$KPID
t0=$SECONDS
if wait_gone "$fpid" 120; then
    wait "$fpid"
    rc=$?
else
    rc=hang
fi
case $rc in
0 | 1) honest_out "$rc" "$tmp/io/f.out" || problem "exit $rc without a verdict: $(head -c 300 "$tmp/io/f.out")" ;;
3) grep -q daemon-restarted "$tmp/io/f.err" || problem "exit 3 without daemon-restarted: $(head -c 300 "$tmp/io/f.err")" ;;
*) problem "kiln verify: exit $rc after $((SECONDS - t0)) s: $(head -c 300 "$tmp/io/f.err")" ;;
esac
[ "$(daemon_pid "$S")" = "$MAINPID" ] || problem "another kilnd answers on $S (did kiln verify start its own?)"
end "f. kiln verify survives a kill -9 and restart of kilnd mid-job (exit $rc)"

# ---- g. shutdown while busy ---------------------------------------------------

begin
# g1 is sent alone and the rest only once it holds the device: sent together,
# a quicker compile could take the device first and leave fewer queued.
{
    # The running job must outlast the steps below for sure: an honest fast
    # one stops timing as soon as its median is stable, so it is a slow one.
    "$PROBE" --print-request --verify-file "$SLOW" --task rmsnorm --id g1 "${FAST[@]}"
    wait_lane_busy "$S" 30
    for i in 2 3 4; do
        "$PROBE" --print-request --verify-file "$HONEST2" --task rmsnorm --id g$i --timing-ms 200 --group decode
    done
} | timeout -k 5 120 "$PROBE" "$S" --finals 4 --timeout-ms 100000 >"$tmp/io/g.out" 2>&1 &
gpid=$!
t_bg "$gpid"
wait_lines "$tmp/io/g.out" '"event":"accepted"' 4 40 || problem "not 4 accepted events"
mapfile -t gjobs < <(grep '"event":"accepted"' "$tmp/io/g.out" | sed -n 's/.*"job":"\(j[0-9]*\)".*/\1/p')
# One on the device, one compiled and waiting for it (--compile-jobs 2), two queued.
wait_lane_busy "$S" 30 2 || problem "not one running and two queued: $st"
[ "$busy_job" = "${gjobs[0]:-}" ] || problem "the device runs $busy_job, not g1 (${gjobs[0]:-})"
# A client waiting (result op) for a queued job is answered too.
printf '{"op":"result","id":"gw","job":"%s"}\n' "${gjobs[3]:-}" |
    timeout -k 5 120 "$PROBE" "$S" --finals 1 --timeout-ms 100000 >"$tmp/io/g.wait" 2>&1 &
gwpid=$!
t_bg "$gwpid"
wait_lines "$tmp/io/g.wait" '"event":"pending"' 1 10 || problem "result of a queued job: $(cat "$tmp/io/g.wait")"
t0=$SECONDS
timeout -k 5 90 "$KILN" daemon stop --socket "$S" >"$tmp/io/g.stop" 2>&1
src=$?
[ $src -eq 0 ] || problem "kiln daemon stop: exit $src: $(cat "$tmp/io/g.stop")"
wait_gone "$MAINPID" 60 || problem "kilnd still runs $((SECONDS - t0)) s after shutdown"
wait "$gpid"
[ $? -eq 0 ] || problem "the client did not get 4 final events: $(grep -v progress "$tmp/io/g.out" | head -c 800)"
declare -A gfinal=()
for j in "${gjobs[@]}"; do
    line=$(grep "\"job\":\"$j\"" "$tmp/io/g.out" | grep -E '"event":"(verdict|error)"' | tail -1)
    gfinal[$j]="$(ev_of "$line") $(code_of "$line")"
done
g1=${gjobs[0]:-} g3=${gjobs[2]:-} g4=${gjobs[3]:-}
[ "${gfinal[$g1]:-}" != "${gfinal[$g1]#verdict}" ] || problem "running job $g1: ${gfinal[$g1]:-nothing}"
for j in "$g3" "$g4"; do
    [ "${gfinal[$j]:-}" = "error shutting-down" ] || problem "queued job $j: ${gfinal[$j]:-nothing}"
done
wait "$gwpid"
line=$(tail -1 "$tmp/io/g.wait")
[ "$(ev_of "$line")" = error ] && [ "$(code_of "$line")" = shutting-down ] ||
    problem "the result waiter for ${gjobs[3]:-}: $(cat "$tmp/io/g.wait")"
end "g. shutdown while busy: running job answered, queued ones and a result waiter get shutting-down, kilnd exits"

begin
start_kilnd "$S" "$ST" "$LOG" || problem "kilnd did not restart: $(tail -5 "$LOG")"
MAINPID=$KPID
for j in "${gjobs[@]}"; do
    result "$S" "$j"
    honest_line "$res" || problem "$j: ${res:0:300}"
done
end "g. after a restart the spooled jobs run and their results can be fetched"

# ---- h. after all -------------------------------------------------------------

after_all 9
t_done
