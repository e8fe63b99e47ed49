#!/usr/bin/env bash
# soak.sh - throw many good and faulty candidates at one kilnd from several
# concurrent clients and report what came back. Not a ctest: run by hand.
#
#   bench/soak.sh [JOBS] [CLIENTS] [cpu|cuda]
#       default 1000 jobs, 8 clients, the CPU backend; KILN_BUILD=DIR for
#       another build than build/. cuda: the CUDA plants of tests/redteam/cuda
#       listed below (each must get what its header expects), bf16 on the
#       small group, on the GPU (run it there with scripts/gpu-build.sh's
#       build: KILN_BUILD=build-gpu bench/soak.sh 200 4 cuda).
#
# Needs a built tree (scripts/setup.sh). Reports jobs answered, wrong
# verdicts, daemon restarts needed, leaked processes and job directories,
# peak daemon memory, its open files at start and end, throughput and the
# worst latency of an honest job.
# Meanwhile a stranger keeps 20 idle, unauthenticated TCP connections open
# (each closed by kilnd after 5 s, then opened again).
set -u
cd "$(dirname "$0")/.."
JOBS=${1:-1000}
CLIENTS=${2:-8}
BACKEND=${3:-cpu}
KILN=${KILN_BUILD:-$PWD/build}/kiln
KILND=${KILN_BUILD:-$PWD/build}/kilnd
tmp=$(mktemp -d)
sock=$tmp/k.sock
state=$tmp/state
trap 'kill $dpid 2>/dev/null; wait $dpid 2>/dev/null; rm -rf "$tmp"' EXIT

# Candidates and what each must get (status, then the codes allowed). Most
# are faulty: a crash, a hang, garbage output, NaNs, an out-of-bounds write,
# three escape attempts (file, socket, fork), a memory bomb, a compiler
# bomb, a crash that prints its dims; three that attack from inside but
# must come out as the honest kernels they otherwise are (a disk fill and
# two baseline tamperings); one that takes the shared core between its
# calls, which must be suspect; and the hidden-shape routes of issue 30
# (a failure or a slowdown chosen after a hidden call, the arena probe, a
# replayed determinism run), with the group whose visible shapes they know.
plants=(
  "kernels/rmsnorm/cpu/starter.c pass ok"
  "tests/redteam/cpu/rmsnorm_honest_unroll8.c pass ok"
  "tests/redteam/cpu/rmsnorm_honest_blocked.c pass ok"
  "tests/redteam/cpu/rmsnorm_honest_plain.c pass ok"
  "tests/redteam/cpu/rmsnorm_honest_double_acc.c pass ok"
  "tests/redteam/cpu/rmsnorm_honest_scratch.c pass ok"
  "tests/redteam/cpu/rmsnorm_21_null_write.c fail crash"
  "tests/redteam/cpu/rmsnorm_20_spin.c fail timeout"
  "tests/redteam/cpu/rmsnorm_09_zeros.c fail wrong-output"
  "tests/redteam/cpu/rmsnorm_11_nan_odd_cols.c fail non-finite"
  "tests/redteam/cpu/rmsnorm_07_oob_write.c fail guard-corrupted"
  "tests/redteam/cpu/rmsnorm_23_open_passwd.c fail sandbox-violation"
  "tests/redteam/cpu/rmsnorm_23_socket_connect.c fail sandbox-violation"
  "tests/redteam/cpu/rmsnorm_23_fork.c fail sandbox-violation"
  "tests/redteam/cpu/rmsnorm_22_touch_until_fail.c fail crash|resource-limit|sandbox-violation|timeout"
  "tests/redteam/cpu/rmsnorm_28_compiler_bomb.c fail resource-limit"
  "tests/integration/hidden_leak/crash_loud.c fail crash"
  "tests/redteam/cpu/rmsnorm_28_disk_fill.c pass ok"
  "tests/redteam/cpu/rmsnorm_27_swap_baseline.c pass ok"
  "tests/redteam/cpu/rmsnorm_27_overwrite_baseline.c pass ok"
  "tests/redteam/cpu/rmsnorm_27_steal_core.c suspect timer-disagreement"
  "tests/redteam/cpu/rmsnorm_30_hidden_then_fail.c pass ok prefill"
  "tests/redteam/cpu/rmsnorm_30_hidden_then_slow.c pass ok prefill"
  "tests/redteam/cpu/rmsnorm_30_arena_probe.c fail wrong-output prefill"
  "tests/redteam/cpu/rmsnorm_30_replay_nondeterministic.c fail nondeterministic"
  "tests/redteam/cpu/rmsnorm_honest_print_once.c pass ok"
)

# CUDA: honest kernels, and a plant of each class the CUDA backend meets
# (no write, crash, hang, out-of-bounds write, changed input, NaNs, hunting
# for the gold, a compiler bomb, a device printf of hidden dims); what each
# must get is its header's kiln-expect and kiln-codes.
cuda_plants=(
  kernels/rmsnorm/cuda/starter.cu
  tests/redteam/cuda/rmsnorm_honest_warp_per_row.cu
  tests/redteam/cuda/rmsnorm_honest_vec16.cu
  tests/redteam/cuda/rmsnorm_honest_grid_stride.cu
  tests/redteam/cuda/rmsnorm_01_no_write.cu
  tests/redteam/cuda/rmsnorm_21_trap.cu
  tests/redteam/cuda/rmsnorm_20_spin.cu
  tests/redteam/cuda/rmsnorm_07_past_end.cu
  tests/redteam/cuda/rmsnorm_06_zero_x.cu
  tests/redteam/cuda/rmsnorm_11_nan_row64.cu
  tests/redteam/cuda/rmsnorm_27_gold_hunt.cu
  tests/redteam/cuda/rmsnorm_28_compiler_bomb.cu
  tests/redteam/cuda/rmsnorm_28_hidden_printf.cu
  tests/redteam/cuda/rmsnorm_30_hidden_then_unwritten.cu
  tests/redteam/cuda/rmsnorm_30_hidden_then_slow.cu
  tests/redteam/cuda/rmsnorm_30_replay_nondeterministic.cu
  tests/redteam/cuda/rmsnorm_honest_print_once.cu
)
if [ "$BACKEND" = cuda ]; then
  plants=()
  for f in "${cuda_plants[@]}"; do
    want=$(sed -n 's/^ \* kiln-expect: *//p' "$f")
    codes=$(sed -n 's/^ \* kiln-codes: *//p' "$f" | tr ' ' '|')
    want=${want:-pass}   # the starter has no plant header
    [ "$want" = pass ] && codes=ok
    plants+=("$f $want ${codes:-.*}")
  done
  verify_args=(--backend cuda --dtype bf16 --group small)
else
  verify_args=(--group decode)
fi
port=$((20000 + $$ % 20000))
head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$tmp/token"
chmod 600 "$tmp/token"

"$KILND" --foreground --socket "$sock" --state "$state" --compile-jobs 2 \
    --listen "127.0.0.1:$port" --token-file "$tmp/token" 2>"$tmp/kilnd.err" &
dpid=$!
for _ in $(seq 100); do "$KILN" daemon status --socket "$sock" >/dev/null 2>&1 && break; sleep 0.1; done
fds0=$(ls /proc/$dpid/fd 2>/dev/null | wc -l)

client() {   # client INDEX: runs every CLIENTS-th job
  local i=$1 n=0
  for ((j = i; j < JOBS; j += CLIENTS)); do
    read -r file want code group <<<"${plants[j % ${#plants[@]}]}"
    local args=("${verify_args[@]}")
    [ -n "$group" ] && args+=(--group "$group")   # a plant that knows a group's visible shapes
    t0=$(date +%s.%N)
    out=$("$KILN" verify "$file" --task rmsnorm "${args[@]}" --timing-ms 100 \
           --socket "$sock" --json 2>>"$tmp/client.err")
    t1=$(date +%s.%N)
    got=$(grep -m1 '"status"' <<<"$out" | sed 's/.*"status":[[:space:]]*"\([a-z]*\)".*/\1/')
    gotcode=$(grep -m1 '"code"' <<<"$out" | sed 's/.*"code":[[:space:]]*"\([a-z-]*\)".*/\1/')
    echo "$j $file $want $code ${got:-none} ${gotcode:-none} $(awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}')"
  done >"$tmp/client.$i"
}

stranger() {   # idle TCP connections that never authenticate, until told to stop
  while [ ! -e "$tmp/stop" ]; do
    for fd in $(seq 20 39); do eval "exec $fd<>/dev/tcp/127.0.0.1/$port" 2>/dev/null; done
    sleep 6
    for fd in $(seq 20 39); do eval "exec $fd<&-" 2>/dev/null; done
  done
}
stranger &
spid=$!

live() {   # on a terminal: jobs answered, elapsed time and time left, once a second
  local t0=$SECONDS n
  while [ ! -e "$tmp/clients-done" ]; do
    n=$(cat "$tmp"/client.* 2>/dev/null | wc -l)
    local el=$((SECONDS - t0)) eta="?"
    [ "$n" -gt 0 ] && eta=$((el * (JOBS - n) / n))
    printf '\r\033[K  %02d:%02d  soak  %d of %d jobs answered, about %s s left' \
      $((el / 60)) $((el % 60)) "$n" "$JOBS" "$eta"
    sleep 1
  done
  printf '\r\033[K'
}

start=$(date +%s.%N)
for ((c = 0; c < CLIENTS; c++)); do client "$c" & done
cpids=$(jobs -p | grep -v "^$dpid$" | grep -v "^$spid$")
[ -t 1 ] && { live & lpid=$!; }
wait $cpids
touch "$tmp/clients-done"
[ -n "${lpid:-}" ] && wait "$lpid"
end=$(date +%s.%N)
touch "$tmp/stop"
wait "$spid" 2>/dev/null

cat "$tmp"/client.* >"$tmp/all"
answered=$(awk '$5 != "none"' "$tmp/all" | wc -l)
wrong=$(awk '$5 != "none" && ($5 != $3 || $6 !~ ("^(" $4 ")$"))' "$tmp/all" | wc -l)
worst=$(awk '$3 == "pass" && $7 > w {w = $7} END {printf "%.1f s", w}' "$tmp/all")
alive=$(kill -0 $dpid 2>/dev/null && echo yes || echo no)
peak=$(awk '/VmHWM/ {print $2, $3}' /proc/$dpid/status 2>/dev/null)
sleep 6   # the stranger's last connections are closed by now
fds1=$(ls /proc/$dpid/fd 2>/dev/null | wc -l)
"$KILN" daemon stop --socket "$sock" >/dev/null 2>&1
wait $dpid 2>/dev/null
sleep 1
workers=$(pgrep -f "kiln-worker.*$tmp" | wc -l)
dirs=$(find "$state/work" /tmp -maxdepth 1 -name 'kiln-job-*' -newer "$tmp/kilnd.err" 2>/dev/null | wc -l)
secs=$(awk -v a="$start" -v b="$end" 'BEGIN {print b - a}')

echo "soak: $BACKEND backend, $JOBS jobs from $CLIENTS clients, $(awk '$3 == "fail"' "$tmp/all" | wc -l) faulty"
echo "jobs answered:          $answered / $JOBS"
echo "wrong verdicts:         $wrong"
awk '$5 != "none" && ($5 != $3 || $6 !~ ("^(" $4 ")$")) {print "  wrong: " $0}' "$tmp/all" | head -20
echo "daemon alive at end:    $alive (restarts needed: $([ "$alive" = yes ] && echo 0 || echo 1))"
echo "leaked worker procs:    $workers"
echo "leaked job directories: $dirs"
echo "peak daemon memory:     ${peak:-unknown}"
echo "daemon open files:      $fds0 at start, $fds1 at end"
awk -v j="$JOBS" -v s="$secs" 'BEGIN {printf "throughput:             %.2f jobs/s (%.0f s)\n", j / s, s}'
echo "worst honest latency:   $worst"
echo "hostile jobs:           $(awk '$3 == "fail" || $2 ~ /_2[78]_/' "$tmp/all" | wc -l) of $JOBS"
leftover=$(find /tmp -maxdepth 1 -name 'kiln-fill-*' 2>/dev/null | wc -l)
echo "files left by plants:   $leftover"
grep -m3 -i "leak\|error" "$tmp/kilnd.err" | sed 's/^/kilnd stderr: /'
