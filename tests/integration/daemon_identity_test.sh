#!/usr/bin/env bash
# daemon_identity_test.sh - another build's kiln never takes a running
# search's kilnd away (issue 31.3). A second build is simulated as in
# kilnd_test.sh section j: copies of kiln and kiln-worker beside a kilnd with
# one byte more (another SHA-256, so another build identity).
#
#   1. default paths: each build has its own state directory and socket, so
#      the second build's kiln verify uses a kilnd of its own while the
#      first build's search goes on with its daemon (same pid throughout);
#   2. one socket and state directory for both (KILN_SOCKET, KILN_STATE):
#      the second build is refused (exit 3), naming the other build, what
#      holds the daemon and the way out, and the search goes on;
#   3. kiln daemon start on another socket over a state directory in use is
#      refused naming the kilnd holding it and --state; with --state it
#      starts; kiln daemon --help names --state and KILN_STATE;
#   4. a rebuild under a running search (kilnd replaced on disk): the search
#      keeps the daemon it started with rather than stopping it;
#   5. a search waiting on its model (tests/fake_llm) has no job in kilnd but
#      holds it: the second build is refused all the same.
#
# Every kilnd the test started is stopped gracefully at the end (T_SOCKETS),
# so that a sanitizer build's leak check runs in each.
#
# usage: daemon_identity_test.sh BUILD_DIR SOURCE_DIR
# Needs sqlite3.
. "$(dirname "$0")/lib.sh"
t_init "$@"
need_tools sqlite3

# Section 1 uses the default socket and state directory, which KILN_SOCKET
# and KILN_STATE would override: they stay set here (t_done's stop reads
# KILN_SOCKET) but are not passed on.
export -n KILN_SOCKET KILN_STATE
unset XDG_STATE_HOME KILND KILN_WORKER
# Never the user's own state or runtime directory.
export HOME=$tmp/home XDG_RUNTIME_DIR=$tmp/run
mkdir -p "$HOME" "$XDG_RUNTIME_DIR" "$tmp/io"
cd "$SRC" || exit 2

# The second build: kiln and its worker as they are, kilnd one byte longer.
B=$tmp/other-build
mkdir -p "$B"
cp "$KILN" "$BUILD/kiln-worker" "$B/" && cp "$BUILD/kilnd" "$B/kilnd" && printf 'x' >>"$B/kilnd" &&
    chmod +x "$B/kilnd" || { echo "$0: cannot make the second build in $B" >&2; exit 2; }
[ -x "$BUILD/kiln-worker-cuda" ] && cp "$BUILD/kiln-worker-cuda" "$B/"
KB=$B/kiln
ID_A=$(sha256sum "$BUILD/kilnd" | cut -c1-16)
ID_B=$(sha256sum "$B/kilnd" | cut -c1-16)
HONEST=kernels/rmsnorm/cpu/starter.c
FAST=(--group decode --timing-ms 200)
LONG=(rmsnorm --from "$SRC/tests/integration/search/many_knobs.c" --iterations 60 "${FAST[@]}")

tail_of() { tail -n "${2:-6}" "$1" 2>/dev/null | sed 's/^/  | /'; }
sq() { sqlite3 -cmd '.timeout 5000' "$1/.kiln/kiln.db" "$2" 2>&1; }
# daemon_pid KILN [ARGS]: the pid of the kilnd that KILN's daemon status
# finds (empty when none answers).
daemon_pid() {
    local k=$1
    shift
    "$k" daemon status --json "$@" 2>/dev/null | json_get pid 2>/dev/null
}
# alive PID: running, not a zombie (a daemonized kilnd's reaper may be slow).
alive() { kill -0 "$1" 2>/dev/null && ! grep -qs '^State:[[:space:]]*Z' "/proc/$1/status"; }
# cands WS: candidates recorded so far.
cands() { sq "$1" "SELECT count(*) FROM candidates" 2>/dev/null; }
# wait_cands WS N: until at least N candidates are recorded (90 s).
wait_cands() {
    local i
    for ((i = 0; i < 900; i++)); do
        [ "$(cands "$1")" -ge "$2" ] 2>/dev/null && return 0
        sleep 0.1
    done
    return 1
}
# honest RC FILE: kiln verify --json passed (or, on a loaded machine, suspect).
honest() {
    case $1 in
    0) grep -Eq '"status":[[:space:]]*"pass"' "$2" ;;
    1) grep -Eq '"status":[[:space:]]*"suspect"' "$2" ;;
    *) return 1 ;;
    esac
}
# start_search WS OUT ERR [ENV=VALUE...]: the first build's long search in
# the background; sets SPID, waits until it has verified candidate 1.
start_search() {
    local ws=$1 out=$2 errf=$3
    shift 3
    env "$@" "$KILN" search "${LONG[@]}" --workspace "$ws" >"$out" 2>"$errf" </dev/null &
    SPID=$!
    t_bg "$SPID"
    wait_cands "$ws" 2 || problem "the search never reached candidate 1"$'\n'"$(tail_of "$errf")"
}
# finish_search WS ERR: the search, still running, makes progress, then
# stops at a Ctrl-C with exit 130 and no word of a lost daemon.
finish_search() {
    local ws=$1 errf=$2 n i rc
    kill -0 "$SPID" 2>/dev/null || problem "the search ended before the second build was done: make it longer"
    n=$(cands "$ws")
    wait_cands "$ws" $((n + 1)) || problem "the search made no progress after the second build's kiln ran"
    kill -INT "$SPID" 2>/dev/null
    for ((i = 0; i < 600; i++)); do
        kill -0 "$SPID" 2>/dev/null || break
        sleep 0.1
    done
    kill -9 "$SPID" 2>/dev/null
    wait "$SPID"
    rc=$?
    [ $rc -eq 130 ] || problem "the search exited $rc, expected 130 (Ctrl-C)"$'\n'"$(tail_of "$errf")"
    ! grep -qE "could not start|lost kilnd|is build" "$errf" ||
        problem "the search lost its daemon:"$'\n'"$(tail_of "$errf")"
}

# ---- 1. default paths: a daemon per build ----------------------------------------

begin
start_search "$tmp/ws1" "$tmp/1.out" "$tmp/1.err"
PA=$(daemon_pid "$KILN")
[ -n "$PA" ] || problem "the first build's kilnd does not answer at its default socket"
timeout -k 5 300 "$KB" verify "$HONEST" --task rmsnorm --json "${FAST[@]}" >"$tmp/1b.out" 2>"$tmp/1b.err" </dev/null
rc=$?
honest "$rc" "$tmp/1b.out" || problem "the second build's kiln verify: exit $rc"$'\n'"$(tail_of "$tmp/1b.err")"
PB=$(daemon_pid "$KB")
[ -n "$PB" ] && [ "$PB" != "$PA" ] || problem "the second build has no kilnd of its own (pid '$PB', the first's '$PA')"
"$KILN" daemon status 2>&1 | grep -q "(build $ID_A)" || problem "the first build's default socket is not its own kilnd's"
"$KB" daemon status 2>&1 | grep -q "(build $ID_B)" || problem "the second build's default socket is not its own kilnd's"
[ "$(daemon_pid "$KILN")" = "$PA" ] || problem "the first build's kilnd changed (pid $PA, now '$(daemon_pid "$KILN")')"
finish_search "$tmp/ws1" "$tmp/1.err"
[ "$(daemon_pid "$KILN")" = "$PA" ] || problem "the first build's kilnd did not survive the run"
[ -d "$HOME/.local/state/kiln/kilnd-$ID_A" ] && [ -d "$HOME/.local/state/kiln/kilnd-$ID_B" ] ||
    problem "no state directory per build under ~/.local/state/kiln: $(ls "$HOME/.local/state/kiln" 2>&1)"
end "1. default paths: the second build's kiln uses a kilnd of its own; the first build's search keeps its daemon"

# ---- 2. one socket for both: refused, naming the other build ------------------------------

begin
SH=(KILN_SOCKET="$tmp/shared.sock" KILN_STATE="$tmp/shared-state")
start_search "$tmp/ws2" "$tmp/2.out" "$tmp/2.err" "${SH[@]}"
PA=$(daemon_pid "$KILN" --socket "$tmp/shared.sock")
env "${SH[@]}" timeout -k 5 120 "$KB" verify "$HONEST" --task rmsnorm --json "${FAST[@]}" \
    >"$tmp/2b.out" 2>"$tmp/2b.err" </dev/null
rc=$?
[ $rc -eq 3 ] || problem "the second build's kiln verify on the shared socket: exit $rc, expected 3"$'\n'"$(tail_of "$tmp/2b.err")"
for want in "is build $ID_A" "is build $ID_B" "in use" "held by kiln search rmsnorm" "KILN_SOCKET"; do
    grep -qF -- "$want" "$tmp/2b.err" || problem "the refusal does not say '$want': $(head -c 700 "$tmp/2b.err")"
done
env "${SH[@]}" timeout -k 5 120 "$KB" search rmsnorm --iterations 1 "${FAST[@]}" --workspace "$tmp/ws2b" \
    >"$tmp/2c.out" 2>"$tmp/2c.err" </dev/null
rc=$?
[ $rc -eq 3 ] && grep -qF "is build $ID_A" "$tmp/2c.err" ||
    problem "the second build's search on the shared socket: exit $rc, expected 3 naming build $ID_A"$'\n'"$(tail_of "$tmp/2c.err")"
PA2=$(daemon_pid "$KILN" --socket "$tmp/shared.sock")
[ -n "$PA" ] && [ "$PA2" = "$PA" ] || problem "the shared kilnd changed under the search (pid '$PA', now '$PA2')"
finish_search "$tmp/ws2" "$tmp/2.err"
end "2. one socket for two builds: the second is refused (exit 3) naming both builds, the search holding it and the fix; the search goes on"

# ---- 3. kiln daemon start over a state directory in use ----------------------------------------

begin
# The first build's kilnd from section 2 still holds $tmp/shared-state.
env KILN_STATE="$tmp/shared-state" timeout -k 5 60 "$KB" daemon start --socket "$tmp/b3.sock" \
    >"$tmp/3.out" 2>"$tmp/3.err" </dev/null
rc=$?
[ $rc -eq 3 ] || problem "daemon start over a state directory in use: exit $rc, expected 3: $(cat "$tmp/3.err")"
for want in "another kilnd (pid $PA, build $ID_A, socket $tmp/shared.sock)" "$tmp/shared-state" "--state"; do
    grep -qF -- "$want" "$tmp/3.err" || problem "the refusal does not say '$want': $(head -c 600 "$tmp/3.err")"
done
timeout -k 5 60 "$KB" daemon start --socket "$tmp/b3.sock" --state "$tmp/b3-state" >"$tmp/3b.out" 2>&1 </dev/null
rc=$?
[ $rc -eq 0 ] || problem "daemon start --state: exit $rc: $(cat "$tmp/3b.out")"
"$KB" daemon status --socket "$tmp/b3.sock" 2>&1 | grep -q "(build $ID_B)" ||
    problem "no kilnd of the second build at $tmp/b3.sock"
[ -f "$tmp/b3-state/kilnd.lock" ] || problem "the kilnd does not use --state $tmp/b3-state"
timeout -k 5 60 "$KB" daemon stop --socket "$tmp/b3.sock" >/dev/null 2>&1
"$KILN" daemon --help >"$tmp/3h.out" 2>&1
grep -q -- "--state" "$tmp/3h.out" && grep -q "KILN_STATE" "$tmp/3h.out" ||
    problem "kiln daemon --help does not name --state and KILN_STATE: $(cat "$tmp/3h.out")"
env "${SH[@]}" timeout -k 5 60 "$KILN" daemon stop >/dev/null 2>&1
end "3. kiln daemon start over a state directory in use: refused naming the kilnd that has it and --state; --state DIR works; --help names both"

# ---- 4. a rebuild under a running search --------------------------------------------------

begin
C=$tmp/rebuilt
mkdir -p "$C" && cp "$KILN" "$BUILD/kilnd" "$BUILD/kiln-worker" "$C/"
export HOME=$tmp/home4 XDG_RUNTIME_DIR=$tmp/run4   # not section 1's daemons
mkdir -p "$HOME" "$XDG_RUNTIME_DIR"
KILN_SAVED=$KILN
KILN=$C/kiln
start_search "$tmp/ws4" "$tmp/4.out" "$tmp/4.err"
PC=$(daemon_pid "$C/kiln")
[ -n "$PC" ] || problem "the search's kilnd does not answer"
# The rebuild: a new kilnd file where the old one was (a new inode, as a linker writes it).
cp "$C/kilnd" "$C/kilnd.new" && printf 'y' >>"$C/kilnd.new" && mv -f "$C/kilnd.new" "$C/kilnd"
n=$(cands "$tmp/ws4")
wait_cands "$tmp/ws4" $((n + 2)) || problem "the search made no progress after the rebuild"
alive "$PC" || problem "the search's own kilnd (pid $PC) was stopped by the rebuild"
finish_search "$tmp/ws4" "$tmp/4.err"
KILN=$KILN_SAVED
end "4. a rebuild under a running search: the search keeps the kilnd it started with"

# ---- 5. held while the search waits for its model --------------------------------------------

begin
if [ ! -x "$FAKE" ]; then
    problem "no $FAKE"
else
    export HOME=$tmp/home XDG_RUNTIME_DIR=$tmp/run
    F=$tmp/fake
    mkdir -p "$F"
    { printf 'Here it is.\n\n```c\n'
      sed -e 's/^#define ACC 1 /#define ACC 4 /' "$SRC/kernels/rmsnorm/cpu/tunable.c"
      printf '```\n\nHYPOTHESIS: four accumulators\n'; } >"$F/v1.md"
    echo "slow 2500 $F/v1.md" >"$F/script"
    fake_llm "$F"
    S5=(KILN_SOCKET="$tmp/shared5.sock" KILN_STATE="$tmp/shared5-state")
    env "${S5[@]}" OPENAI_API_KEY=test "$KILN" search rmsnorm --agent openai --model fake \
        --base-url "http://127.0.0.1:$PORT/v1" --iterations 6 "${FAST[@]}" \
        --workspace "$tmp/ws5" >"$tmp/5.out" 2>"$tmp/5.err" </dev/null &
    SPID=$!
    t_bg "$SPID"
    # Past the start kernel, waiting for the model: no job in kilnd, only the hold.
    idle=
    for ((i = 0; i < 600; i++)); do
        st=$("$KILN" daemon status --socket "$tmp/shared5.sock" --json 2>/dev/null | tr -d ' \t\n')
        if [ -s "$F/log" ] && grep -q '"queued":0,"active":0' <<<"$st" &&
            [ "$(sq "$tmp/ws5" "SELECT count(*) FROM candidates WHERE n = 0 AND state = 'done'")" = 1 ]; then
            idle=1
            break
        fi
        sleep 0.05
    done
    [ -n "$idle" ] || problem "the model search never waited on its model with kilnd idle"$'\n'"$(tail_of "$tmp/5.err")"
    PA=$(daemon_pid "$KILN" --socket "$tmp/shared5.sock")
    env "${S5[@]}" timeout -k 5 120 "$KB" verify "$HONEST" --task rmsnorm --json "${FAST[@]}" \
        >"$tmp/5b.out" 2>"$tmp/5b.err" </dev/null
    rc=$?
    [ $rc -eq 3 ] && grep -qF "held by kiln search rmsnorm" "$tmp/5b.err" ||
        problem "with the search waiting on its model, the second build: exit $rc, expected 3 naming the hold"$'\n'"$(tail_of "$tmp/5b.err")"
    [ -n "$PA" ] && [ "$(daemon_pid "$KILN" --socket "$tmp/shared5.sock")" = "$PA" ] ||
        problem "the kilnd changed while the search waited on its model (pid '$PA')"
    finish_search "$tmp/ws5" "$tmp/5.err"
    env "${S5[@]}" timeout -k 5 60 "$KILN" daemon stop >/dev/null 2>&1
    kill "$FAKEPID" 2>/dev/null
    wait "$FAKEPID" 2>/dev/null
fi
end "5. a search waiting on its model holds its idle kilnd: the second build is refused, the daemon stays"

# The daemons still running (each build's on its default socket, the
# rebuilt one's) stop gracefully: their leak checks run.
T_SOCKETS+=("$tmp"/*.sock "$tmp"/run*/kiln/*.sock)
t_done
