#!/usr/bin/env bash
# search_cuda_test.sh - `kiln search --backend cuda` end to end on a GPU
# (ctest label gpu; run by scripts/gpu-check.sh): three iterations of the
# knob tuner on the bf16 rmsnorm starter through a real kilnd, then one
# iteration of the OpenAI agent against tests/fake_llm whose answer renames
# the kernel (the manifest names it). Checks that the runs finished, that
# every candidate's verdict was reached on the CUDA backend, the workspace
# file and tag, and `kiln status`. Exits 77 (skipped) where there is no GPU.
#   search_cuda_test.sh BUILD_DIR SOURCE_DIR
. "$(dirname "$0")/lib.sh"
t_init "$@"
need_gpu cuda
cd "$SRC" || exit 2
COMMON=(--backend cuda --dtype bf16 --group decode --timing-ms 200 --socket "$tmp/k.sock")
tail_of() { sed 's/^/  | /' "$1" | tail -n 12; }
# The GPU machine may lack the sqlite3 and git command-line tools: the
# database is then read with python3, and what neither can read is said.
if command -v sqlite3 >/dev/null; then
    sq() { sqlite3 -cmd '.timeout 5000' "$1" "$2" 2>&1; }
elif command -v python3 >/dev/null; then
    sq() {
        python3 - "$1" "$2" <<'PY' 2>&1
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], timeout=5)
for row in db.execute(sys.argv[2]):
    print("|".join("" if v is None else str(v) for v in row))
PY
    }
else
    sq() { echo "(no sqlite3)"; }
    echo "# neither sqlite3 nor python3 here: the database is not checked"
fi
command -v git >/dev/null || echo "# no git here: the workspace's files and tags are not checked"

# check_run WS JSON WANT_ITERATIONS: the run finished on the CUDA backend
# (its --json summary and its database), every candidate is done with a
# verdict reached on the CUDA backend, and git holds the .cu file and tag.
check_run() {
    local ws=$1 db=$1/.kiln/kiln.db run got br
    grep '"event":"summary"' "$2" | grep -q '"status":"done".*"iterations":'"$3"',' ||
        problem "no summary event with status done after $3 iterations:"$'\n'"$(tail_of "$2")"
    grep '"event":"run"' "$2" | grep -q '"backend":"cuda","dtype":"bf16"' ||
        problem "the run event does not say backend cuda, dtype bf16:"$'\n'"$(head -3 "$2")"
    if [ "$(sq "$db" "SELECT 1")" = 1 ]; then
        run=$(sq "$db" "SELECT id FROM runs ORDER BY started_at DESC LIMIT 1")
        got=$(sq "$db" "SELECT backend || ' ' || dtype || ' ' || status || ' ' || iterations_done FROM runs WHERE id='$run'")
        [ "$got" = "cuda bf16 done $3" ] || problem "runs: '$got', expected 'cuda bf16 done $3'"
        got=$(sq "$db" "SELECT count(*) FROM candidates WHERE run='$run'")
        [ "$got" -ge $(($3 + 1)) ] 2>/dev/null || problem "$got candidates, expected at least $(($3 + 1))"
        got=$(sq "$db" "SELECT group_concat(n || ':' || state || ':' || status || ':' ||
                        ifnull(json_extract(coalesce(verdict, record_verdict), '\$.backend'), '-'), ' ')
                        FROM candidates WHERE run='$run' AND (state <> 'done' OR status IN ('', 'error')
                        OR ifnull(json_extract(coalesce(verdict, record_verdict), '\$.backend'), '') <> 'cuda')")
        [ -z "$got" ] || problem "candidates not done with a CUDA verdict (n:state:status:backend): $got"
        br=$(sq "$db" "SELECT branch FROM runs WHERE id='$run'")
    fi
    command -v git >/dev/null || return 0
    [ -z "${br:-}" ] || git -C "$ws" show "$br:rmsnorm/cuda/kernel.cu" 2>&1 | grep -q '@kiln launch' ||
        problem "branch $br has no rmsnorm/cuda/kernel.cu with a manifest"
    git -C "$ws" rev-parse -q --verify refs/tags/kiln/best/rmsnorm/cuda/bf16 >/dev/null ||
        problem "tag kiln/best/rmsnorm/cuda/bf16 does not exist"
}

# ---- the tuner --------------------------------------------------------------
begin
WS=$tmp/ws
"$KILN" search rmsnorm --iterations 3 --workspace "$WS" --json "${COMMON[@]}" >"$tmp/1.out" 2>"$tmp/1.err"
rc=$?
if [ "$rc" -ne 0 ]; then
    problem "exit $rc, expected 0"$'\n'"$(tail_of "$tmp/1.err")"
else
    check_run "$WS" "$tmp/1.out" 3
    "$KILN" status --workspace "$WS" >"$tmp/s.out" 2>&1 && grep -q 'cuda/bf16' "$tmp/s.out" ||
        problem "kiln status failed or does not say cuda/bf16:"$'\n'"$(tail_of "$tmp/s.out")"
fi
end "tune search, 3 iterations on the CUDA backend"

# ---- kiln reverify on the CUDA kernels of that run -------------------------
# The best kernel's verdict note was reached on the CUDA backend; reverify
# must run it there again, show the GPU of both sides, and append its result
# to refs/notes/kiln-reverify. A geomean change beyond the noise band (exit
# 1) is allowed: the check is that the path works, not that timing repeats.
begin
"$KILN" reverify --workspace "$WS" --best --backend cuda --timing-ms 200 --json \
    --socket "$tmp/k.sock" >"$tmp/r.out" 2>"$tmp/r.err"
rc=$?
if [ "$rc" -ne 0 ] && [ "$rc" -ne 1 ]; then
    problem "reverify exit $rc, expected 0 or 1"$'\n'"$(tail_of "$tmp/r.err")"
elif command -v python3 >/dev/null; then
    python3 - "$tmp/r.out" >"$tmp/r.check" 2>&1 <<'PY' || problem "reverify JSON:"$'\n'"$(tail_of "$tmp/r.check")"
import json, sys
doc = json.load(open(sys.argv[1]))
res = doc["results"]
assert len(res) >= 1, "no results"
for r in res:
    assert r["task"] == "rmsnorm" and r["dtype"] == "bf16", r
    for side in ("old", "new"):
        s = r[side]
        assert s["status"] == "pass", (side, s["status"], s.get("reason"))
        assert s["environment"].get("gpu"), (side, s["environment"])
        assert s["environment"].get("driver", 0) > 0, (side, s["environment"])
    assert len(r["shapes"]) >= 1 and all(x["new_median_ns"] > 0 for x in r["shapes"]), r["shapes"]
print("ok", len(res))
PY
else
    grep -q '"new"' "$tmp/r.out" || problem "reverify printed no result:"$'\n'"$(tail_of "$tmp/r.out")"
fi
if command -v git >/dev/null; then
    git -C "$WS" notes --ref kiln-reverify list 2>/dev/null | grep -q . ||
        problem "no note on refs/notes/kiln-reverify after reverify"
fi
end "reverify of the best CUDA kernel on the GPU"

# ---- a model's answer (fake_llm) ---------------------------------------------
begin
{
    printf 'A renamed kernel.\n\n```cuda\n'
    sed 's/rmsnorm_fwd/rms_bf16/g' kernels/rmsnorm/cuda/starter.cu
    printf '```\n\nHYPOTHESIS: the same kernel under another name\n'
} >"$tmp/answer.md"
printf 'ok %s\n' "$tmp/answer.md" >"$tmp/script"
fake_llm "$tmp"
WS2=$tmp/ws2
OPENAI_API_KEY=test "$KILN" search rmsnorm --agent openai --model fake \
    --base-url "http://127.0.0.1:$(cat "$tmp/port" 2>/dev/null)/v1" --iterations 1 --workspace "$WS2" --json \
    "${COMMON[@]}" >"$tmp/2.out" 2>"$tmp/2.err"
rc=$?
if [ "$rc" -ne 0 ]; then
    problem "exit $rc, expected 0"$'\n'"$(tail_of "$tmp/2.err")"
else
    check_run "$WS2" "$tmp/2.out" 1
    grep '"event":"candidate"' "$tmp/2.out" | grep '"candidate":1,' |
        grep -q '"proposer":"openai","hypothesis":"the same kernel under another name","status":"pass"' ||
        problem "candidate 1 is not the model's renamed kernel, passing:"$'\n'"$(tail_of "$tmp/2.out")"
fi
end "openai search via fake_llm, a renamed CUDA kernel"
t_done
