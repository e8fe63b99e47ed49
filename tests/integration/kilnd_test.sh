#!/usr/bin/env bash
# kilnd_test.sh - integration tests of the verifier daemon kilnd: its wire
# protocol, concurrent clients, clients that go away, kill -9 and restart,
# graceful shutdown while busy, and the TCP listener with a token.
#
# usage: kilnd_test.sh BUILD_DIR SOURCE_DIR
#
# BUILD_DIR holds kiln, kilnd, kiln-worker and tests/kiln_probe
# (tests/integration/kiln_probe.c). Needs bash, coreutils, grep and sed: no
# nc, socat or pgrep (processes are found through /proc).
. "$(dirname "$0")/lib.sh"
t_init "$@"
[ -x "$PROBE" ] || { echo "$0: $PROBE is not an executable" >&2; exit 2; }

# Section l checks kilnd's own build cache, in its state directory: not the
# one ctest gives every test.
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

# ---- helpers ---------------------------------------------------------------

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

# ---- start -----------------------------------------------------------------

begin
start_kilnd "$S" "$ST" "$LOG" || problem "kilnd did not come up: $(tail -5 "$LOG")"
MAINPID=$KPID
end "kilnd starts and answers kiln daemon status"
stop_if_failed

# ---- a. ping and status ----------------------------------------------------

begin
probe "$S" --timeout-ms 10000 <<<'{"op":"ping","id":"a1"}'
[ $prc -eq 0 ] || problem "kiln_probe exit $prc"
[ "$(ev_of "$out")" = pong ] || problem "ping answered '$out'"
grep -q '"id":"a1"' <<<"$out" || problem "pong does not echo the id: $out"
end "a. ping -> pong"

begin
probe "$S" --timeout-ms 10000 <<<'{"op":"status","id":"a2"}'
[ "$(ev_of "$out")" = status ] || problem "status answered '$out'"
for f in '"devices":\[' '"queued":[0-9]' '"jobs_done":[0-9]' '"uptime_s":[0-9]' '"pid":[0-9]'; do
    grep -q -- "$f" <<<"$out" || problem "status lacks $f: $out"
done
[ "$(num_of "$out" pid)" = "$MAINPID" ] || problem "status pid $(num_of "$out" pid), started $MAINPID"
end "a. status -> devices, queued, jobs_done, uptime_s"

# ---- b. malformed messages ---------------------------------------------------

# bad NAME CODE FILE: FILE holds a bad line; a ping follows on the same
# connection: expect an error with CODE, then a pong.
bad() {
    begin
    local name=$1 code=$2 file=$3
    printf '{"op":"ping","id":"after"}\n' >>"$file"
    probe "$S" --finals 2 --timeout-ms 20000 <"$file"
    local first second
    first=$(head -1 <<<"$out")
    second=$(sed -n 2p <<<"$out")
    [ "$(ev_of "$first")" = error ] || problem "first answer is not an error: ${first:0:300}"
    [ "$(code_of "$first")" = "$code" ] || problem "error code '$(code_of "$first")', expected $code: ${first:0:300}"
    grep -q '"message":"[^"]' <<<"$first" || problem "error has no message: ${first:0:300}"
    [ "$(ev_of "$second")" = pong ] && grep -q '"id":"after"' <<<"$second" ||
        problem "no pong after it on the same connection: ${second:0:300}"
    [ "$(wc -l <<<"$out")" -eq 2 ] || problem "$(wc -l <<<"$out") lines, expected 2: ${out:0:500}"
    end "b. $name -> $code, then ping still answers"
}
B=$tmp/io/bad
printf '{nope\n' >"$B"; bad "garbage line" malformed "$B"
printf '[1,2,3]\n' >"$B"; bad "JSON array" malformed "$B"
printf '"ping"\n' >"$B"; bad "JSON string" malformed "$B"
printf '{"id":"b3"}\n' >"$B"; bad "object without op" malformed "$B"
printf '{"op":42,"id":"b3"}\n' >"$B"; bad "op not a string" malformed "$B"
printf '{"op":"frobnicate","id":"b4"}\n' >"$B"; bad "unknown op" unknown-op "$B"
printf '{"op":"verify","id":"b5"}\n' >"$B"; bad "verify without task and source" bad-request "$B"
printf '{"op":"verify","id":"b6","task":"rmsnorm"}\n' >"$B"; bad "verify without source" bad-request "$B"
printf '{"op":"verify","id":"b7","source":"int x;"}\n' >"$B"; bad "verify without task" bad-request "$B"
printf '{"op":"verify","id":"b8","task":"rmsnorm","source":"x","backend":"cuda","language":"c"}\n' >"$B"
bad "verify with backend cuda but language c" bad-request "$B"
printf '{"op":"verify","id":"b8","task":"rmsnorm","source":"x","backend":"tpu"}\n' >"$B"
bad "verify with an unknown backend" bad-request "$B"
printf '{"op":"verify","id":"b9","task":"rmsnorm","source":"x","timing_ms":-5}\n' >"$B"
bad "verify with negative timing_ms" bad-request "$B"
printf '{"op":"result","id":"b10","job":"../../etc/passwd"}\n' >"$B"; bad "result with a bad job id" bad-request "$B"
printf '{"op":"result","id":"b11","job":"j99999999"}\n' >"$B"; bad "result of an unknown job" unknown-job "$B"
printf '{"op":"ping","id":"n\0ul"}\n' >"$B"; bad "NUL byte inside a string" malformed "$B"
printf '{"op":"ping"}\0\n' >"$B"; bad "NUL byte after the object" malformed "$B"
printf '{"op":"ping","id":"bad\xff\xfeid"}\n' >"$B"; bad "invalid UTF-8 in the id" malformed "$B"
printf '{"op":"ping","id":"\xc0\xaf"}\n' >"$B"; bad "an overlong UTF-8 form" malformed "$B"
printf '{"op":"verify","id":"b12","task":"../../etc","source":"x"}\n' >"$B"
bad "a relative task path that climbs out" bad-request "$B"
printf '{"op":"verify","id":"b13","task":"/tmp/../etc","source":"x"}\n' >"$B"
bad "an absolute task path with '..'" bad-request "$B"
printf '{"op":"ping","id":"t"} trailing\n' >"$B"; bad "trailing garbage after the object" malformed "$B"
# A line just over the limit can arrive whole in one read; one far over it
# arrives in pieces. Both must be too-large (and not parsed).
for extra in 1 4096 300000; do
    head -c $((1048576 + extra)) /dev/zero | tr '\0' a >"$B"
    printf '\n' >>"$B"
    bad "oversized line (1 MiB + $extra bytes of 'a')" too-large "$B"
done
{
    printf '{"op":"verify","id":"big","task":"rmsnorm","group":"decode","timing_ms":200,"source":"'
    head -c $((1048576 + 100)) /dev/zero | tr '\0' ' '
    printf '"}\n'
} >"$B"
bad "valid verify request over 1 MiB" too-large "$B"

begin   # a request split over several writes is put together
out=$({ printf '{"op":"pi'; sleep 0.3; printf 'ng","id":"split"}'; sleep 0.3; printf '\n'; } |
      timeout -k 5 30 "$PROBE" "$S" --timeout-ms 10000)
[ "$(ev_of "$out")" = pong ] && grep -q '"id":"split"' <<<"$out" || problem "answer: $out"
end "b. a request line written in pieces -> pong"

begin   # empty lines are ignored; CRLF is accepted
probe "$S" --finals 1 --timeout-ms 10000 < <(printf '\n\n{"op":"ping","id":"crlf"}\r\n')
[ "$(ev_of "$out")" = pong ] || problem "answer: $out"
end "b. empty lines and CRLF"

begin
status "$S"
[ -n "$st" ] || problem "kilnd stopped answering"
[ "$(daemon_pid "$S")" = "$MAINPID" ] || problem "kilnd pid changed"
end "b. kilnd survived the malformed input"

# ---- c. concurrent clients -------------------------------------------------

begin
mode=$(stat -c %a "$S")
[ "$mode" = 600 ] || problem "socket mode $mode, expected 600"
end "c. socket file mode is 0600"

begin
declare -A want_rc=([h1]=0 [h2]=0 [h3]=0 [crash]=1 [spin]=1 [zeros]=1)
declare -A want_code=([h1]=ok [h2]=ok [h3]=ok [crash]=crash [spin]='timeout|resource-limit' [zeros]=wrong-output)
declare -A file=([h1]=$HONEST [h2]=$HONEST2 [h3]=$HONEST [crash]=$CRASH [spin]=$SPIN [zeros]=$ZEROS)
declare -A cpid=()
t0=$SECONDS
for k in h1 h2 h3 crash spin zeros; do
    timeout -k 5 180 "$KILN" verify "${file[$k]}" --task rmsnorm --socket "$S" --json "${FAST[@]}" \
        >"$tmp/io/c.$k.out" 2>"$tmp/io/c.$k.err" </dev/null &
    cpid[$k]=$!
    t_bg "$!"
done
for k in h1 h2 h3 crash spin zeros; do
    wait "${cpid[$k]}"
    rc=$?
    what="$(grep -E '"(status|stage|code)"' "$tmp/io/c.$k.out" | head -3 | tr -d '\t\n')"
    if [ "${want_rc[$k]}" -eq 0 ]; then
        honest_out "$rc" "$tmp/io/c.$k.out" ||
            problem "$k (${file[$k]}): exit $rc, not a pass: $what $(head -c 300 "$tmp/io/c.$k.err")"
    else
        [ "$rc" -eq 1 ] && grep -Eq '"status":[[:space:]]*"fail"' "$tmp/io/c.$k.out" ||
            problem "$k (${file[$k]}): exit $rc, not a fail: $what $(head -c 300 "$tmp/io/c.$k.err")"
        grep -Eq "\"code\":[[:space:]]*\"(${want_code[$k]})\"" "$tmp/io/c.$k.out" ||
            problem "$k: code is not ${want_code[$k]}: $what"
    fi
done
end "c. 6 concurrent kiln verify clients get their own verdicts"

# ---- d. a client that disconnects mid-job ------------------------------------

begin
probe "$S" --close-after-accept --timeout-ms 20000 --verify-file "$HONEST" --task rmsnorm \
    --id gone --timing-ms 1500 --group decode
djob=$(job_of "$out")
[ $prc -eq 0 ] && [ -n "$djob" ] || problem "no accepted event: $out"
t0=$SECONDS
timeout -k 5 120 "$KILN" verify "$ZEROS" --task rmsnorm --socket "$S" --json "${FAST[@]}" \
    >"$tmp/io/d.out" 2>"$tmp/io/d.err" </dev/null
rc=$?
[ $rc -eq 1 ] && grep -Eq '"code":[[:space:]]*"wrong-output"' "$tmp/io/d.out" ||
    problem "a later verify: exit $rc after $((SECONDS - t0)) s: $(head -c 300 "$tmp/io/d.err")"
end "d. a client gone mid-job does not stall the queue"

begin
if [ -n "$djob" ]; then
    result "$S" "$djob"
    [ "$(ev_of "$res")" = verdict ] || problem "result of $djob: ${res:0:300}"
    grep -q "\"job\":\"$djob\"" <<<"$res" || problem "result names another job: ${res:0:200}"
    grep -q "\"id\":\"r-$djob\"" <<<"$res" || problem "result does not carry the asker's id: ${res:0:200}"
    honest_line "$res" || problem "abandoned honest job did not pass: ${res:0:300}"
else
    problem "no job id from the previous check"
fi
end "d. the abandoned job's verdict can be fetched with result"

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

# ---- i. TCP listener with a token -----------------------------------------------

begin
head -c 48 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$tmp/token"
printf 'not-the-right-token-at-all\n' >"$tmp/badtoken"
chmod 600 "$tmp/token" "$tmp/badtoken"
port=
for ((try = 0; try < 8; try++)); do
    p=$((20000 + ($$ + try * 997) % 20000))
    if start_kilnd "$TS" "$TST" "$TLOG" --listen "127.0.0.1:$p" --token-file "$tmp/token" --max-tcp 4; then
        port=$p
        TCPPID=$KPID
        break
    fi
    kill9 "$KPID"
done
[ -n "$port" ] || problem "no TCP kilnd: $(tail -3 "$TLOG")"
end "i. kilnd listens on 127.0.0.1:${port:-?} with a token file"

if [ -n "$port" ]; then
    begin
    KILN_TOKEN_FILE=$tmp/token timeout -k 5 120 "$KILN" verify "$HONEST" --task rmsnorm \
        --socket "tcp://127.0.0.1:$port" --json "${FAST[@]}" >"$tmp/io/i.out" 2>"$tmp/io/i.err" </dev/null
    rc=$?
    honest_out "$rc" "$tmp/io/i.out" ||
        problem "exit $rc: $(head -c 300 "$tmp/io/i.err")"
    who=$(tr -d ' \n\t' <"$tmp/io/i.out" | grep -o '"verifier":{[^}]*}')
    grep -q "\"endpoint\":\"tcp://127.0.0.1:$port\"" <<<"$who" && grep -q '"lane":"cpu"' <<<"$who" &&
        grep -q "\"host\":\"$(hostname)\"" <<<"$who" ||
        problem "the verdict does not name this kilnd and its cpu lane: '$who'"
    end "i. kiln verify over TCP with the right token passes; the verdict names the endpoint and lane"

    begin
    KILN_TOKEN_FILE=$tmp/badtoken timeout -k 5 60 "$KILN" verify "$HONEST" --task rmsnorm \
        --socket "tcp://127.0.0.1:$port" --json "${FAST[@]}" >"$tmp/io/i2.out" 2>"$tmp/io/i2.err" </dev/null
    rc=$?
    [ $rc -eq 3 ] || problem "exit $rc, expected 3"
    grep -qi token "$tmp/io/i2.err" || problem "no word about the token: $(head -c 300 "$tmp/io/i2.err")"
    timeout -k 5 60 "$KILN" verify "$HONEST" --task rmsnorm \
        --socket "tcp://127.0.0.1:$port" --json "${FAST[@]}" >"$tmp/io/i3.out" 2>"$tmp/io/i3.err" </dev/null
    rc=$?
    [ $rc -eq 3 ] && grep -qi token "$tmp/io/i3.err" ||
        problem "without KILN_TOKEN_FILE: exit $rc: $(head -c 300 "$tmp/io/i3.err")"
    end "i. a wrong or missing token: exit 3 and a message about the token"

    begin   # raw, unauthenticated: bash's /dev/tcp
    if exec 7<>"/dev/tcp/127.0.0.1/$port"; then
        printf '{"op":"ping","id":"noauth"}\n{"op":"ping","id":"again"}\n' >&7
        out=$(timeout 10 cat <&7)
        exec 7<&-
        [ "$(code_of "$(head -1 <<<"$out")")" = unauthorized ] || problem "answer: ${out:0:300}"
        grep -q pong <<<"$out" && problem "an unauthenticated ping got a pong"
        [ "$(wc -l <<<"$out")" -eq 1 ] || problem "expected one line then a closed connection: ${out:0:300}"
    else
        problem "cannot connect with /dev/tcp"
    fi
    end "i. an unauthenticated TCP request gets unauthorized and the connection closes"

    begin   # idle strangers: a limit apart from local clients, and closed after 5 s
    for fd in 20 21 22 23; do eval "exec $fd<>/dev/tcp/127.0.0.1/$port"; done
    sleep 0.5
    if exec 24<>"/dev/tcp/127.0.0.1/$port"; then
        busy=$(timeout 5 cat <&24)
        exec 24<&-
        grep -q '"busy"' <<<"$busy" || problem "a fifth idle TCP connection was not told busy: ${busy:0:200}"
    fi
    timeout 10 "$KILN" daemon status --socket "$TS" >/dev/null 2>&1 ||
        problem "a local client was locked out by idle TCP connections"
    t0=$SECONDS
    expired=$(timeout 15 cat <&20)
    ((SECONDS - t0 <= 10)) || problem "an idle connection stayed open $((SECONDS - t0)) s"
    grep -q auth-timeout <<<"$expired" || problem "no auth-timeout before the close: ${expired:0:200}"
    for fd in 20 21 22 23; do eval "exec $fd<&-"; done
    end "i. idle unauthenticated TCP connections: limited apart from local ones, closed after 5 s"

    begin
    timeout -k 5 60 "$KILN" daemon stop --socket "$TS" >/dev/null 2>&1
    wait_gone "$TCPPID" 30 || problem "TCP kilnd did not stop"
    end "i. TCP kilnd stops cleanly"
fi

# ---- j. which daemon -----------------------------------------------------------
# kiln talks only to the kilnd it would start itself (same SHA-256). A copy
# of kilnd with one byte more is another build: started by hand it is
# refused, naming both; started on demand it is replaced.

OLD=$tmp/kilnd-other
cp "$KILND" "$OLD" && printf 'x' >>"$OLD" && chmod +x "$OLD"
for mode in by-hand on-demand; do
    begin
    JS=$tmp/j-$mode.sock JST=$tmp/j-$mode-state JLOG=$tmp/kilnd-j-$mode.stderr
    extra=()
    [ $mode = on-demand ] && extra=(--idle-exit 600)
    KILND_SAVED=$KILND
    KILND=$OLD
    start_kilnd "$JS" "$JST" "$JLOG" "${extra[@]}" || problem "the other kilnd did not start"
    KILND=$KILND_SAVED
    OLDPID=$KPID
    KILN_STATE=$JST timeout -k 5 120 "$KILN" verify "$HONEST" --task rmsnorm --socket "$JS" --json \
        "${FAST[@]}" >"$tmp/io/j.out" 2>"$tmp/io/j.err" </dev/null
    rc=$?
    if [ $mode = by-hand ]; then
        [ $rc -eq 3 ] || problem "exit $rc, expected 3: $(head -c 300 "$tmp/io/j.err")"
        grep -q "is build" "$tmp/io/j.err" && grep -q "this kiln's kilnd" "$tmp/io/j.err" ||
            problem "the refusal does not name both builds: $(head -c 400 "$tmp/io/j.err")"
        kill -0 "$OLDPID" 2>/dev/null || problem "a daemon kiln did not start was stopped"
        timeout -k 5 60 "$KILN" daemon stop --socket "$JS" >/dev/null 2>&1
        end "j. a kilnd of another build, started by hand: refused, naming both builds"
    else
        honest_out "$rc" "$tmp/io/j.out" || problem "exit $rc: $(head -c 300 "$tmp/io/j.err")"
        wait_gone "$OLDPID" 30 || problem "the old on-demand kilnd is still running"
        newpid=$(KILN_STATE=$JST kilnd_pid "$JS")
        [ -n "$newpid" ] && [ "$newpid" != "$OLDPID" ] || problem "no new kilnd answers (pid '$newpid')"
        KILN_STATE=$JST timeout -k 5 60 "$KILN" daemon stop --socket "$JS" >/dev/null 2>&1
        end "j. a kilnd of another build, started on demand: replaced by this kiln's"
    fi
done

# ---- k. lanes --------------------------------------------------------------------
# By default one lane per visible GPU ($CUDA_VISIBLE_DEVICES, else /dev/nvidiaN)
# after the cpu lane; --devices overrides. No job runs here, so no GPU is needed.

lanes_of() {   # the lane names of a status line, comma-separated
    grep -o '"name":"[^"]*"' <<<"$1" | sed 's/"name":"\(.*\)"/\1/' | paste -sd,
}
nvdev=0
while [ -e "/dev/nvidia$nvdev" ]; do nvdev=$((nvdev + 1)); done
want_default=cpu
for ((g = 0; g < nvdev; g++)); do want_default+=",cuda:$g"; done
for case in "0,1|cpu,cuda:0,cuda:1|" "|cpu|" "unset|$want_default|" "3|cpu,cuda:7|--devices cpu,cuda:7"; do
    IFS='|' read -r cvd want args <<<"$case"
    begin
    KS=$tmp/lanes.sock KST=$tmp/lanes-state KLG=$tmp/kilnd-lanes.stderr
    saved_cvd=${CUDA_VISIBLE_DEVICES-unset}
    if [ "$cvd" = unset ]; then unset CUDA_VISIBLE_DEVICES; else export CUDA_VISIBLE_DEVICES=$cvd; fi
    start_kilnd "$KS" "$KST" "$KLG" $args || problem "kilnd did not come up: $(tail -3 "$KLG")"
    if [ "$saved_cvd" = unset ]; then unset CUDA_VISIBLE_DEVICES; else export CUDA_VISIBLE_DEVICES=$saved_cvd; fi
    status "$KS"
    [ "$(lanes_of "$st")" = "$want" ] || problem "lanes '$(lanes_of "$st")', expected '$want': ${st:0:300}"
    "$KILN" daemon status --socket "$KS" 2>&1 | grep -q "^device ${want##*,}: idle" ||
        problem "kiln daemon status does not list lane ${want##*,}"
    timeout -k 5 60 "$KILN" daemon stop --socket "$KS" >/dev/null 2>&1
    wait_gone "$KPID" 30 || problem "kilnd did not stop"
    end "k. CUDA_VISIBLE_DEVICES=$cvd ${args:-(default devices)} -> lanes $want"
done

# ---- l. the build cache ---------------------------------------------------------
# kilnd keeps the libraries it built (build-cache/ in its state directory, by
# the hash of all that goes into the build): the baseline, the reference, a
# candidate. The same candidate again is served from it; a candidate that
# does not compile is not kept. A damaged entry is noticed, rebuilt and
# stored again.

cache_entries() { ls "$ST"/build-cache/*.so 2>/dev/null | wc -l; }
cache_sound() {   # every entry's bytes hash to the sum stored beside it
    local so
    for so in "$ST"/build-cache/*.so; do
        [ -e "$so" ] || continue
        [ "$(sha256sum <"$so" | cut -c1-64)" = "$(cat "${so%.so}.sha256")" ] || return 1
    done
}
begin
timeout -k 5 120 "$KILN" verify "$HONEST" --task rmsnorm --socket "$S" --json "${FAST[@]}" \
    >"$tmp/io/l1.out" 2>&1 </dev/null
honest_out $? "$tmp/io/l1.out" || problem "the starter: $(head -c 300 "$tmp/io/l1.out")"
n0=$(cache_entries)
[ "$n0" -ge 2 ] || problem "only $n0 libraries kept after rmsnorm jobs (its baseline and reference expected)"
# A candidate nobody has sent before is kept; sent again, it is served from
# the cache: its entry is not written again (the same inode).
{ echo "/* kilnd_test l, $$ $RANDOM */"; cat "$HONEST2"; } >"$tmp/l_unique.c"
ls "$ST"/build-cache/*.so >"$tmp/l_before" 2>/dev/null
timeout -k 5 120 "$KILN" verify "$tmp/l_unique.c" --task rmsnorm --socket "$S" --json "${FAST[@]}" \
    >"$tmp/io/l2.out" 2>&1 </dev/null
honest_out $? "$tmp/io/l2.out" || problem "a new honest candidate: $(head -c 300 "$tmp/io/l2.out")"
new_entry=$(ls "$ST"/build-cache/*.so 2>/dev/null | grep -vxF -f "$tmp/l_before")
[ "$(cache_entries)" -eq $((n0 + 1)) ] && [ -n "$new_entry" ] ||
    problem "$n0 libraries kept before a new candidate, $(cache_entries) after: expected one more"
inode=$(stat -c %i "$new_entry" 2>/dev/null)
timeout -k 5 120 "$KILN" verify "$tmp/l_unique.c" --task rmsnorm --socket "$S" --json "${FAST[@]}" \
    >"$tmp/io/l2b.out" 2>&1 </dev/null
honest_out $? "$tmp/io/l2b.out" || problem "the same candidate again: $(head -c 300 "$tmp/io/l2b.out")"
[ -n "$inode" ] && [ "$(stat -c %i "$new_entry" 2>/dev/null)" = "$inode" ] ||
    problem "the candidate's entry was written again: it was built, not taken from the cache"
# One that does not compile is not kept.
{ cat "$HONEST2"; echo "this does not compile"; } >"$tmp/l_broken.c"
timeout -k 5 120 "$KILN" verify "$tmp/l_broken.c" --task rmsnorm --socket "$S" --json "${FAST[@]}" \
    >"$tmp/io/l2c.out" 2>&1 </dev/null
grep -q '"code":[[:space:]]*"compile-error"' "$tmp/io/l2c.out" ||
    problem "a broken candidate: $(head -c 300 "$tmp/io/l2c.out")"
[ "$(cache_entries)" -eq $((n0 + 1)) ] || problem "a candidate that does not compile changed the cache"
cache_sound || problem "an entry does not match its stored hash"
end "l. kilnd keeps what it built ($n0 for the first job), a new candidate once, served again from the cache"

begin
for so in "$ST"/build-cache/*.so; do printf 'not a library' >"$so"; done
timeout -k 5 120 "$KILN" verify "$HONEST2" --task rmsnorm --socket "$S" --json "${FAST[@]}" \
    >"$tmp/io/l3.out" 2>&1 </dev/null
honest_out $? "$tmp/io/l3.out" || problem "after the cache was damaged: $(head -c 300 "$tmp/io/l3.out")"
# The job's three (candidate, baseline, reference) were rebuilt and stored
# again; the entries no job used since stay damaged until one does.
sound=0
for so in "$ST"/build-cache/*.so; do
    [ "$(sha256sum <"$so" | cut -c1-64)" = "$(cat "${so%.so}.sha256")" ] && sound=$((sound + 1))
done
[ "$sound" -eq 3 ] || problem "$sound entries hash as stored after a job used the damaged cache, expected 3"
end "l. a damaged cache entry is rebuilt, not loaded"

# ---- h. after all -------------------------------------------------------------

begin
wait_idle "$S" 60 || problem "kilnd did not settle: $st"
timeout -k 5 60 "$KILN" daemon stop --socket "$S" >/dev/null 2>&1
wait_gone "$MAINPID" 60 || problem "kilnd did not stop"
end "h. kilnd stops cleanly at the end"

begin
wait_no_workers "$tmp" 5 || problem "kiln-worker processes left: $(procs_show $(workers_of "$tmp") | head -5)"
left=$(procs_show $(procs_with "$tmp") | head -5)
[ -z "$left" ] || problem "processes tied to $tmp left: $left"
end "h. no kiln-worker (or other) processes tied to the test directory remain"

begin
left=$(ls -d "$ST"/work/kiln-job-* "$TST"/work/kiln-job-* 2>/dev/null)
[ -z "$left" ] || problem "job directories left: $left"
end "h. no kiln-job-* directories remain"

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
[ $nres -ge 15 ] || problem "only $nres results stored"
end "h. kilnd.log has one job line per finished job ($nres results)"

t_done
