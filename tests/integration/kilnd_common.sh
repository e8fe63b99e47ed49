# kilnd_common.sh - what the kilnd_*_test.sh scripts share, sourced after
# lib.sh's t_init: the main daemon's socket, state and log and the TCP
# daemon's, the plants, kiln_probe and the waits on kilnd's status, and the
# two checks each script makes of its main daemon: that it starts
# (start_main) and, at the end, that it stops cleanly and leaves nothing
# behind (after_all). The fields of kilnd's protocol events are read with
# sed here, not json_get: each is one flat line, and the wire-protocol
# checks read some hundred of them (a python start each would add seconds).
[ -x "$PROBE" ] || { echo "$0: $PROBE is not an executable" >&2; exit 2; }

# kilnd compiles into its own build cache, in its state directory (which
# kilnd_cache_test checks): not the one ctest gives every test.
unset KILN_BUILD_CACHE

S=$tmp/k.sock           # the main daemon's socket
ST=$tmp/state           # and its state directory
LOG=$tmp/kilnd.stderr   # its stderr, across restarts
TS=$tmp/t.sock          # the TCP daemon
TST=$tmp/tstate
TLOG=$tmp/kilnd-tcp.stderr
mkdir -p "$tmp/io"

cd "$SRC" || exit 2

HONEST=kernels/rmsnorm/cpu/starter.c
HONEST2=tests/redteam/cpu/rmsnorm_honest_unroll8.c
CRASH=tests/redteam/cpu/rmsnorm_21_null_write.c
SPIN=tests/redteam/cpu/rmsnorm_20_spin.c
ZEROS=tests/redteam/cpu/rmsnorm_09_zeros.c
SLOW=tests/integration/slow_rmsnorm.c   # honest, 100 ms per call
FAST=(--timing-ms 200 --group decode)
# A job that holds the device for several seconds (the default group times
# more shapes; decode ones reach their pair limit long before the budget).
LONG=(--timing-ms 3000)

# probe SOCKET ARGS... < input: kiln_probe with a hard limit; output in $out.
probe() {
    out=$(timeout -k 5 150 "$PROBE" "$@")
    prc=$?
}
# The "event" / error "code" / "job" of one unformatted event line.
ev_of() { sed -n 's/.*"event":"\([^"]*\)".*/\1/p' <<<"$1" | head -1; }
code_of() { sed -n 's/.*"code":"\([^"]*\)".*/\1/p' <<<"$1" | head -1; }
job_of() { sed -n 's/.*"job":"\(j[0-9]*\)".*/\1/p' <<<"$1" | head -1; }
# A JSON number field of a status line.
num_of() { sed -n "s/.*\"$2\":\([0-9.]*\).*/\1/p" <<<"$1" | head -1; }

# status SOCKET: one status line in $st (empty when kilnd does not answer).
status() {
    st=$(printf '{"op":"status","id":"st"}\n' | timeout -k 2 10 "$PROBE" "$1" --timeout-ms 5000 2>/dev/null |
         grep '"event":"status"')
}
daemon_pid() {
    local line
    line=$(printf '{"op":"status","id":"st"}\n' | timeout -k 2 5 "$PROBE" "$1" --timeout-ms 3000 2>/dev/null |
           grep '"event":"status"')
    num_of "$line" pid
}
# The job on the device lane of a status line ("" when idle).
lane_job() { sed -n 's/.*"devices":\[{"name":"[^"]*","job":"\([^"]*\)".*/\1/p' <<<"$1"; }

# start_kilnd SOCKET STATE STDERR_LOG [ARGS...]: start kilnd in the
# foreground, in the background; sets KPID. Fails if it does not answer.
start_kilnd() {
    local sock=$1 state=$2 log=$3
    shift 3
    "$KILND" --foreground --socket "$sock" --state "$state" --compile-jobs 2 "$@" >>"$log" 2>&1 &
    KPID=$!
    t_bg "$KPID"
    local i
    for ((i = 0; i < 200; i++)); do
        if "$KILN" daemon status --socket "$sock" >/dev/null 2>&1; then
            return 0
        fi
        kill -0 "$KPID" 2>/dev/null || return 1
        sleep 0.05
    done
    return 1
}
# wait_gone PID SECONDS: wait until PID exits (ours: wait reaps it).
wait_gone() {
    local i
    for ((i = 0; i < $2 * 10; i++)); do
        kill -0 "$1" 2>/dev/null || { wait "$1" 2>/dev/null; return 0; }
        sleep 0.1
    done
    return 1
}
# kill9 PID: kill a kilnd hard and reap it.
kill9() {
    kill -9 "$1" 2>/dev/null
    wait "$1" 2>/dev/null
}
# procs_with STRING [STRING2]: pids whose command line holds STRING (and
# STRING2), this script's own processes left out.
procs_with() {
    local d args cmd
    for d in /proc/[0-9]*; do
        [ "${d#/proc/}" = $$ ] || [ "${d#/proc/}" = "$BASHPID" ] && continue
        mapfile -d '' -t args 2>/dev/null <"$d/cmdline" || continue
        cmd="${args[*]}"
        [[ $cmd == *"$1"* ]] && [[ $cmd == *"${2:-}"* ]] && echo "${d#/proc/}"
    done
}
# procs_show PIDS...: their command lines, for a message.
procs_show() {
    local p args
    for p; do
        mapfile -d '' -t args 2>/dev/null <"/proc/$p/cmdline" && echo "[$p] ${args[*]}"
    done
}
# Workers of a kilnd whose state directory is $1.
workers_of() { procs_with kiln-worker "$1"; }
# wait_no_workers DIR SECONDS: PR_SET_PDEATHSIG kills them; give them a moment.
wait_no_workers() {
    local i
    for ((i = 0; i < $2 * 10; i++)); do
        [ -z "$(workers_of "$1")" ] && return 0
        sleep 0.1
    done
    return 1
}
# wait_lane_busy SOCKET SECONDS [MIN_QUEUED]: until a device runs a job (and
# at least MIN_QUEUED wait); sets $st and $busy_job.
wait_lane_busy() {
    local i q
    busy_job=
    for ((i = 0; i < $2 * 20; i++)); do
        status "$1"
        busy_job=$(lane_job "$st")
        q=$(num_of "$st" queued)
        if [ -n "$busy_job" ] && [ "${q:-0}" -ge "${3:-0}" ]; then
            return 0
        fi
        sleep 0.05
    done
    return 1
}
# wait_idle SOCKET SECONDS: until nothing is queued or active.
wait_idle() {
    local i
    for ((i = 0; i < $2 * 10; i++)); do
        status "$1"
        if [ -n "$st" ] && [ "$(num_of "$st" queued)" = 0 ] && [ "$(num_of "$st" active)" = 0 ]; then
            return 0
        fi
        sleep 0.1
    done
    return 1
}
# wait_lines FILE PATTERN N SECONDS: until FILE has N lines matching PATTERN.
wait_lines() {
    local i
    for ((i = 0; i < $4 * 20; i++)); do
        [ "$(grep -c -- "$2" "$1" 2>/dev/null)" -ge "$3" ] && return 0
        sleep 0.05
    done
    return 1
}
# result SOCKET JOB: the final event for JOB (the result op) in $res.
result() {
    res=$(printf '{"op":"result","id":"r-%s","job":"%s"}\n' "$2" "$2" |
          timeout -k 5 150 "$PROBE" "$1" --timeout-ms 120000 | grep -v '"event":"pending"' | tail -1)
}
# An honest kernel passes; on a loaded machine (or a sanitizer build) its
# timings can be noisy enough for a "suspect" at plausibility, which is the
# verifier's judgement, not kilnd's: accept it, never a "fail".
# honest_line LINE: an unformatted verdict event.
honest_line() {
    [ "$(ev_of "$1")" = verdict ] && grep -Eq '"status":"(pass|suspect)"' <<<"$1"
}
# honest_out RC FILE: kiln verify --json's exit status and output.
honest_out() {
    case $1 in
    0) grep -Eq '"status":[[:space:]]*"pass"' "$2" ;;
    1) grep -Eq '"status":[[:space:]]*"suspect"' "$2" ;;
    *) return 1 ;;
    esac
}


# start_main: the check that the main kilnd starts (MAINPID); the test
# stops if it does not.
start_main() {
    begin
    start_kilnd "$S" "$ST" "$LOG" || problem "kilnd did not come up: $(tail -5 "$LOG")"
    MAINPID=$KPID
    end "kilnd starts and answers kiln daemon status"
    stop_if_failed
}

# after_all [MIN_RESULTS]: the main kilnd stops cleanly; no worker,
# process or job directory is left; and, given MIN_RESULTS, its log has one
# job line per job that ran to its end (at least MIN_RESULTS results).
after_all() {
    local left dups nres r j n
    begin
    wait_idle "$S" 60 || problem "kilnd did not settle: $st"
    timeout -k 5 60 "$KILN" daemon stop --socket "$S" >/dev/null 2>&1
    wait_gone "$MAINPID" 60 || problem "kilnd did not stop"
    end "h. kilnd stops cleanly at the end"
    after_all_left
    [ -n "${1:-}" ] || return 0

    begin
    # One "job jN task=T status=S" line per job that ran to its end; none for a
    # job answered daemon-restarted at recovery; never two for one job.
    KLOG=$ST/kilnd.log
    dups=$(grep -oE ' job j[0-9]+ task=[^ ]+ status=' "$KLOG" | cut -d' ' -f3 | sort | uniq -d)
    [ -z "$dups" ] || problem "jobs logged twice: $dups"
    nres=0
    for r in "$ST"/results/j*.json; do
        [ -e "$r" ] || continue
        nres=$((nres + 1))
        j=$(basename "$r" .json)
        n=$(grep -cE " job $j task=[^ ]+ status=[a-z]" "$KLOG")
        if grep -q daemon-restarted "$r"; then
            [ "$n" -eq 0 ] || problem "$j was answered daemon-restarted but logged as run"
        else
            [ "$n" -eq 1 ] || problem "$j has a result but $n log lines"
        fi
    done
    [ $nres -ge "$1" ] || problem "only $nres results stored, expected $1 at least"
    end "h. kilnd.log has one job line per finished job ($nres results)"
}

# after_all_left: no kiln-worker, other process or job directory tied to
# the test directory is left.
after_all_left() {
    local left
    begin
    wait_no_workers "$tmp" 5 || problem "kiln-worker processes left: $(procs_show $(workers_of "$tmp") | head -5)"
    left=$(procs_show $(procs_with "$tmp") | head -5)
    [ -z "$left" ] || problem "processes tied to $tmp left: $left"
    end "h. no kiln-worker (or other) processes tied to the test directory remain"

    begin
    left=$(ls -d "$ST"/work/kiln-job-* "$TST"/work/kiln-job-* 2>/dev/null)
    [ -z "$left" ] || problem "job directories left: $left"
    end "h. no kiln-job-* directories remain"
}
