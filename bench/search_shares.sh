#!/usr/bin/env bash
# search_shares.sh - where a model search's wall time goes (docs/search.md,
# "Where the time goes"): a search against tests/fake_llm, answering each
# request after a realistic delay, through a kilnd of its own on this
# machine's CPU backend; prints candidates an hour and the shares of the
# wall time spent waiting on the model, waiting on the verifier, and in
# kiln itself (the issue 14 target: kiln itself <= 5%). Not run in CI.
#   bench/search_shares.sh [BUILD_DIR [DELAY_MS [DRAFTS [ITERATIONS [GROUP]]]]]
#   (defaults: build 3000 4 6 decode)
# The answers are the rmsnorm tunable kernel with other knob settings, each
# a distinct source, so every draft is verified.
set -u
cd "$(dirname "$0")/.."
BUILD=$(readlink -f -- "${1:-build}")
DELAY=${2:-3000}
DRAFTS=${3:-4}
ITERS=${4:-6}
GROUP=${5:-decode}
KILN=$BUILD/kiln
FAKE=$BUILD/tests/fake_llm
for x in "$KILN" "$FAKE"; do
    [ -x "$x" ] || { echo "$0: $x is not an executable (build first)" >&2; exit 2; }
done
tmp=$(mktemp -d)
export KILN_STATE=$tmp/state
FAKEPID=
trap '"$KILN" daemon stop --socket "$tmp/k.sock" >/dev/null 2>&1; [ -n "$FAKEPID" ] && kill $FAKEPID 2>/dev/null; rm -rf "$tmp"' EXIT

# Distinct answers: accumulators x sum unroll x rows per pass.
i=0
for acc in 2 4 8 16 1; do
    for su in 1 2 4 8; do
        for rows in 1 2 4; do
            [ "$acc$su$rows" = 111 ] && continue   # the start kernel itself
            i=$((i + 1))
            { printf 'Here it is.\n\n```c\n'
              sed -e "s/^#define ACC 1 /#define ACC $acc /" -e "s/^#define SUNROLL 1 /#define SUNROLL $su /" \
                  -e "s/^#define ROWS 1 /#define ROWS $rows /" kernels/rmsnorm/cpu/tunable.c
              printf '```\n\nHYPOTHESIS: %d accumulators, sum unrolled by %d, %d rows a pass\n' \
                  "$acc" "$su" "$rows"; } >"$tmp/a$i.md"
            echo "slow $DELAY $tmp/a$i.md"
        done
    done
done >"$tmp/script"
"$FAKE" --port-file "$tmp/port" --script "$tmp/script" --log "$tmp/log" 2>/dev/null &
FAKEPID=$!
for ((k = 0; k < 100; k++)); do [ -s "$tmp/port" ] && break; sleep 0.05; done
PORT=$(cat "$tmp/port")

echo "# kiln search rmsnorm --agent openai (fake_llm, ${DELAY} ms an answer) --drafts $DRAFTS" \
     "--iterations $ITERS --group $GROUP, through kilnd; $(nproc) cores"
OPENAI_API_KEY=bench "$KILN" search rmsnorm --agent openai --model fake \
    --base-url "http://127.0.0.1:$PORT/v1" --drafts "$DRAFTS" --iterations "$ITERS" \
    --group "$GROUP" --socket "$tmp/k.sock" --workspace "$tmp/ws" --json >"$tmp/out.json" 2>"$tmp/err"
rc=$?
[ $rc -eq 0 ] || { echo "$0: kiln search exited $rc:" >&2; tail -5 "$tmp/err" >&2; exit 1; }
python3 - "$tmp/out.json" <<'PY'
import json, sys
s = [json.loads(l) for l in open(sys.argv[1]) if '"event":"summary"' in l][0]
sh = s["shares"]
print(f"iterations {s['iterations']}, candidates {s['candidates']} (the summary's count), "
      f"wall {s['seconds']:.1f} s")
print(f"candidates an hour: {s['candidates_per_hour']:.0f}")
print(f"waiting on the model:    {s['model_wait_seconds']:7.1f} s  {100 * sh['model']:5.1f}%")
print(f"waiting on the verifier: {s['verify_wait_seconds']:7.1f} s  {100 * sh['verification']:5.1f}%")
print(f"kiln itself:             {s['seconds'] - s['model_wait_seconds'] - s['verify_wait_seconds']:7.1f} s"
      f"  {100 * sh['kiln']:5.1f}%  (target <= 5%)")
print(f"batches asked for ahead: {s['pipelined']['asked_ahead']}, answers not used: "
      f"{s['pipelined']['answers_not_used']}")
PY
