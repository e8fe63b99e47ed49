#!/usr/bin/env bash
# pipeline_model_test.sh - a model search through a real kilnd asks for the
# next iteration's drafts while this iteration's are verified (issue 14.3,
# docs/search.md "Pipelining"), against tests/fake_llm answering each
# request after 0.5 s (kept short beside an idle machine's fast
# verification, so pipelining pays by its rule even after the start
# kernel alone, docs/search.md "Pipelining"):
#   1. --drafts 2 --iterations 3: the requests of iterations 2 and 3 reach
#      the model (fake_llm's at= times) before the last verdict of the
#      iteration before is in (kilnd's result files); every answer is one
#      candidate, verified once (one verdict job each, every kilnd key
#      once), none lost; the summary's shares (--json) and kiln status's
#      line add up to 100%.
#   2. Ctrl-C while the next iteration's requests are out: exit 130 soon
#      (the calls are given up), a summary, the answers not used recorded
#      with candidate -1; --resume finishes the run, asking again, with
#      one more iteration: its text summary's shares line (adding up to
#      100%) and pipelined line (over the run, the 2 answers not used).
#   pipeline_model_test.sh BUILD_DIR SOURCE_DIR
. "$(dirname "$0")/lib.sh"
t_init "$@"
need_tools sqlite3
T=$tmp
sq() { sqlite3 -cmd '.timeout 5000' "$1/.kiln/kiln.db" "$2" 2>&1; }

. "$(dirname "$0")/pipeline_common.sh"
start_fake() {   # MS [LATER_MS [FROM]]: answers vFROM..v8 in turn (FROM: 1), the
    : >"$T/log"   # first two after MS milliseconds, the others after LATER_MS
    for ((i = ${3:-1}; i <= 8; i++)); do
        echo "slow $([ $i -lt $((${3:-1} + 2)) ] && echo "$1" || echo "${2:-$1}") $T/v$i.md"
    done >"$T/script"
    fake_llm "$T"
}

# ---- 1. the next iteration's requests go out during this one's verification ----

begin
start_fake 500
search "$T/ws" --drafts 2 --iterations 3 --json >"$T/out.json" 2>"$T/err"
RC=$?
[ $RC -eq 0 ] || problem "search exited $RC: $(tail -5 "$T/err")"
py=$(python3 - "$T/ws/.kiln/kiln.db" "$KILN_STATE" "$T/log" "$T/out.json" 2>&1 <<'PY'

import json, os, sqlite3, sys
db, state, log, out = sys.argv[1:5]
con = sqlite3.connect(db)
bad = []
cands = con.execute("select n, iteration, job, state, decision from candidates where n > 0 "
                    "order by n").fetchall()
# Every answer is a candidate, none lost: 3 iterations of 2, each decided.
reqs = [l.split() for l in open(log) if l.strip()]
if len(reqs) != 6:
    bad.append(f"{len(reqs)} requests reached the model, expected 6 (3 iterations of 2 drafts)")
if [(c[0], c[1]) for c in cands] != [(1, 1), (2, 1), (3, 2), (4, 2), (5, 3), (6, 3)]:
    bad.append(f"candidates (n, iteration): {[(c[0], c[1]) for c in cands]}")
if any(c[3] != "done" or not c[4] for c in cands):
    bad.append(f"a candidate is not finished: {cands}")
calls = con.execute("select n, ok from llm_calls order by n").fetchall()
if calls != [(n, 1) for n in range(1, 7)]:
    bad.append(f"llm_calls (n, ok) {calls}, expected one successful call per candidate 1..6")
# Nothing verified twice: one verdict job each, distinct, every key once.
jobs = [c[2] for c in cands]
if not all(jobs) or len(set(jobs)) != len(jobs):
    bad.append(f"verdict jobs {jobs}: expected one each, all different")
keys = {}
for k in os.listdir(os.path.join(state, "keys")):
    job = open(os.path.join(state, "keys", k)).read().strip()
    keys.setdefault(job, []).append(k)
twice = {j: ks for j, ks in keys.items() if len(ks) > 1}
if twice:
    bad.append(f"kilnd jobs under more than one key: {twice}")
# The requests of iteration i+1 went out before iteration i's last verdict.
def result_time(job):
    raw = job.split("@")[0]
    return os.stat(os.path.join(state, "results", raw + ".json")).st_mtime_ns / 1e9
asked = sorted(float(r[-1][3:]) for r in reqs)
for it in (1, 2):
    last_verdict = max(result_time(c[2]) for c in cands if c[1] == it)
    first_next = asked[2 * it]   # requests 2it, 2it+1 are iteration it+1's
    if not first_next < last_verdict:
        bad.append(f"iteration {it + 1}'s requests went out {first_next - last_verdict:+.2f} s "
                   f"after iteration {it}'s last verdict: not pipelined")
ev = [json.loads(l) for l in open(out) if l.startswith("{")]
ahead = [e["iteration"] for e in ev if e.get("event") == "asked_ahead"]
if ahead != [2, 3]:
    bad.append(f"asked_ahead events for iterations {ahead}, expected [2, 3]")
summ = [e for e in ev if e.get("event") == "summary"]
if len(summ) != 1:
    bad.append("no summary event")
else:
    s = summ[0]
    sh = s.get("shares", {})
    total = sum(sh.get(k, -1) for k in ("model", "verification", "kiln"))
    if abs(total - 1) > 0.01 or min(sh.values(), default=-1) < 0:
        bad.append(f"shares {sh} do not add up to 100%")
    if not sh.get("verification", 0) > 0 or not sh.get("model", 0) > 0:
        bad.append(f"shares {sh}: the model and the verifier each took some time")
    if not s.get("candidates_per_hour", 0) > 0:
        bad.append(f"candidates_per_hour {s.get('candidates_per_hour')}")
    p = s.get("pipelined", {})
    if [p.get(k) for k in ("asked_ahead", "answers_not_used", "iterations", "of_iterations",
                           "declined")] != [2, 0, 2, 3, 0]:
        bad.append(f"pipelined {p}: expected 2 batches ahead, 2 of 3 iterations pipelined")
    # Answers after 0.5 s, verification meanwhile: most of the wait saved.
    if not 0 < p.get("saved_seconds", 0) <= 1.1 or not p.get("model_seconds_per_iteration", 0) >= 0.5:
        bad.append(f"pipelined {p}: saved seconds or the model's time per iteration")
    row = con.execute("select model_wait_s, verify_wait_s from runs").fetchone()
    if abs(row[0] - s["model_wait_seconds"]) > 1e-6 or abs(row[1] - s["verify_wait_seconds"]) > 1e-6:
        bad.append(f"runs row waits {row} differ from the summary's")
for b in bad:
    print(b)
sys.exit(1 if bad else 0)
PY
) || problem "$py"
"$KILN" status --workspace "$T/ws" >"$T/status" 2>&1 || problem "kiln status failed: $(cat "$T/status")"
line=$(grep -E '^  [0-9.]+ candidates an hour; of the wall time, model [0-9.]+%, verification [0-9.]+%, kiln [0-9.]+%; verifier lanes busy [0-9.]+%$' "$T/status")
if [ -z "$line" ]; then
    problem "kiln status shows no shares line:"$'\n'"$(tail -5 "$T/status")"
else
    sum=$(sed 's/; verifier lanes.*//' <<<"$line" | grep -oE '[0-9.]+%' | tr -d % | awk '{ s += $1 } END { print s }')
    awk -v s="$sum" 'BEGIN { exit !(s >= 99.8 && s <= 100.2) }' ||
        problem "kiln status's shares add up to $sum%: $line"
fi
end "the next iteration's requests go out while this one is verified; every answer verified once; shares add up"
kill "$FAKEPID" 2>/dev/null; wait "$FAKEPID" 2>/dev/null; FAKEPID=

# ---- 2. Ctrl-C while the next iteration's requests are out ---------------------

begin
start_fake 300 20000
OPENAI_API_KEY=test "$KILN" search rmsnorm --agent openai --model fake \
    --base-url "http://127.0.0.1:$PORT/v1" --group decode --timing-ms 200 --socket "$T/k.sock" \
    --workspace "$T/ws2" --drafts 2 --iterations 2 --json >"$T/out2.json" 2>"$T/err2" &
PID=$!   # kiln itself, not a shell around it: the signal goes to kiln
# Iteration 1's answers come at once; while they are verified, iteration
# 2's requests go out (answered after 20 s): interrupt then.
for ((i = 0; i < 600; i++)); do
    grep -q '"event":"asked_ahead"' "$T/out2.json" 2>/dev/null && break
    kill -0 $PID 2>/dev/null || break
    sleep 0.1
done
grep -q '"event":"asked_ahead"' "$T/out2.json" || problem "no asked_ahead event: $(tail -3 "$T/err2")"
t0=$SECONDS
kill -INT $PID
wait $PID
RC=$?
[ $RC -eq 130 ] || problem "exit $RC after Ctrl-C, expected 130: $(tail -5 "$T/err2")"
[ $((SECONDS - t0)) -le 15 ] || problem "Ctrl-C took $((SECONDS - t0)) s to stop the search"
grep '"event":"summary"' "$T/out2.json" | grep -q '"status":"stopped"' ||
    problem "no summary with status stopped: $(tail -2 "$T/out2.json" | cut -c1-300)"
grep '"event":"summary"' "$T/out2.json" | grep -q '"answers_not_used":2' ||
    problem "the summary does not count the 2 answers not used"
dropped=$(sq "$T/ws2" "select count(*) from llm_calls where n = -1 and error like 'not used: the run stopped before iteration 2%'")
[ "$dropped" = 2 ] || problem "llm_calls rows for the answers not used: $dropped, expected 2"
it2=$(sq "$T/ws2" "select count(*) from candidates where iteration = 2")
[ "$it2" = 0 ] || problem "$it2 candidates of iteration 2 stored from answers that were given up"
kill "$FAKEPID" 2>/dev/null; wait "$FAKEPID" 2>/dev/null; FAKEPID=
start_fake 100 100 3   # new answers: v1 and v2 are verified already
# One more iteration than the interrupted run asked for (iteration 1 is
# resumed unless it was finished before the Ctrl-C took effect); which of
# the later ones are asked ahead, pipelining's rule decides.
done1=$(sq "$T/ws2" "select iterations_done from runs")
ahead=$((2 - done1))
search "$T/ws2" --resume last --iterations 3 >"$T/out3" 2>"$T/err3"
RC=$?
[ $RC -eq 0 ] || problem "--resume exited $RC: $(tail -5 "$T/err3")"
got=$(sq "$T/ws2" "select group_concat(iteration || ':' || state, ' ') from (select iteration, state from candidates where n > 0 order by n)")
[ "$got" = "1:done 1:done 2:done 2:done 3:done 3:done" ] || problem "candidates after --resume: '$got'"
jobs=$(sq "$T/ws2" "select count(distinct job) || ' ' || count(*) from candidates where n > 0")
[ "$jobs" = "6 6" ] || problem "verdict jobs (distinct, candidates): $jobs"
end "Ctrl-C while the next requests are out: exit 130, answers recorded as not used; --resume finishes"

# The text summary of that resumed session: candidates an hour and the
# three shares of the wall time (adding up to 100%, each printed to 0.1%),
# and what pipelining did over the run.
begin
line=$(grep -E '^[0-9.]+ candidates an hour; of the wall time, model [0-9.]+%, verification [0-9.]+%, kiln [0-9.]+%; verifier lanes busy [0-9.]+%$' "$T/out3")
if [ "$(grep -c . <<<"$line")" -ne 1 ]; then
    problem "the summary has no shares line (or more than one):"$'\n'"$(tail -6 "$T/out3")"
else
    read -r per model verif kiln < <(sed -E 's/^([0-9.]+) .*model ([0-9.]+)%, verification ([0-9.]+)%, kiln ([0-9.]+)%;.*$/\1 \2 \3 \4/' <<<"$line")
    awk -v m="$model" -v v="$verif" -v k="$kiln" 'BEGIN { s = m + v + k; exit !(s >= 99.8 && s <= 100.2) }' ||
        problem "the summary's shares add up to $(awk -v m="$model" -v v="$verif" -v k="$kiln" 'BEGIN { print m + v + k }')%: $line"
    awk -v p="$per" -v m="$model" -v v="$verif" 'BEGIN { exit !(p > 0 && m > 0 && v > 0) }' ||
        problem "candidates an hour, the model's and the verifier's shares should each be above 0: $line"
fi
[ "$ahead" = 1 ] || [ "$ahead" = 2 ] || problem "iterations done before --resume: '$done1', expected 0 or 1"
# Over the run: iteration 1 asked for itself, iterations 2 and 3 in the
# resumed session, ahead or not as the times measured so far decide
# (docs/search.md); the two answers the interrupted session did not use.
grep -qE '^pipelined [0-2] of 3 iterations(: saved [0-9]+ s)? \(model [0-9.]+ s, verification [0-9.]+ s an iteration\), 2 answers not used \(the run stopped first\)$' "$T/out3" ||
    problem "the summary has no pipelined line for 3 iterations and 2 answers not used: $(grep -E '^pipelined' "$T/out3" || tail -3 "$T/out3")"
end "the text summary: candidates an hour, shares adding up to 100%, the pipelined line"

t_done
