#!/usr/bin/env bash
# pipeline_prompt_test.sh - what pipelined prompts show (issue 35, item 1;
# docs/search.md "Pipelining" and "The prompt"), read from the request
# bodies tests/fake_llm keeps (--bodies), through a real kilnd:
#   1. --drafts 2 --iterations 3, the model answering after 0.5 s: no user
#      prompt is byte for byte an earlier iteration's once its direction
#      line is taken out, and iteration k+1's prompts name each draft of
#      iteration k, in flight when they were asked: "#N: HYPOTHESIS (from
#      #P)" under "Being verified now"; iteration 1's name none.
#   2. The model answering in 50 ms, verification taking far longer:
#      pipelining would save little for stale prompts (docs/search.md), so
#      after the start kernel's verification it is not used: no batch asked
#      ahead, each iteration's requests after the iteration before has its
#      verdicts, and the summary says "pipelined 0 of 3 iterations: not
#      worth it ...".
#   pipeline_prompt_test.sh BUILD_DIR SOURCE_DIR
. "$(dirname "$0")/lib.sh"
t_init "$@"
need_tools sqlite3
. "$(dirname "$0")/pipeline_common.sh"
start_fake() {   # MS: answers v1..v8 in turn, each after MS milliseconds
    : >"$T/log"
    rm -rf "$T/bodies"
    mkdir -p "$T/bodies"
    for ((i = 1; i <= 8; i++)); do
        echo "slow $1 $T/v$i.md"
    done >"$T/script"
    fake_llm "$T" --bodies "$T/bodies"
}

# ---- 1. no stale prompt ------------------------------------------------------------

begin
start_fake 500
search "$T/ws" --drafts 2 --iterations 3 --json >"$T/out.json" 2>"$T/err"
RC=$?
[ $RC -eq 0 ] || problem "search exited $RC: $(tail -5 "$T/err")"
py=$(python3 - "$T/ws/.kiln/kiln.db" "$T/log" "$T/bodies" "$T/out.json" 2>&1 <<'PY'
import json, os, re, sqlite3, sys
db, log, bodies, out = sys.argv[1:5]
con = sqlite3.connect(db)
bad = []
reqs = [l.split() for l in open(log) if l.strip()]
if len(reqs) != 6:
    bad.append(f"{len(reqs)} requests reached the model, expected 6 (3 iterations of 2 drafts)")
# The requests in the order they came (at=): iteration k's are 2k-2, 2k-1.
reqs.sort(key=lambda r: float(r[-1][3:]))
users = []
for r in reqs:
    h = r[-2][2:]
    body = json.load(open(os.path.join(bodies, h + ".json")))
    users.append([m["content"] for m in body["messages"] if m["role"] == "user"][0])
ahead = [e["iteration"] for e in map(json.loads, filter(lambda l: l.startswith("{"), open(out)))
         if e.get("event") == "asked_ahead"]
if ahead != [2, 3]:
    bad.append(f"asked_ahead events for iterations {ahead}, expected [2, 3]")
# No prompt is an earlier iteration's but for its direction line.
def undirected(u):
    return "\n".join(l for l in u.split("\n") if not l.startswith("Direction for this answer"))
for i, u in enumerate(users):
    for j in range(0, 2 * (i // 2)):
        if undirected(u) == undirected(users[j]):
            bad.append(f"request {i + 1} (iteration {i // 2 + 1}) is request {j + 1}'s "
                       f"(iteration {j // 2 + 1}) but for its direction line")
# Iteration k+1's prompts name iteration k's drafts, with their parents.
commit_n = {c: n for n, c in con.execute("select n, commit_id from candidates "
                                         "where commit_id != '' order by n desc")}
rows = con.execute("select n, iteration, hypothesis, parent from candidates where n > 0 "
                   "order by n").fetchall()
head = "Being verified now (their verdicts arrive after you answer):\n"
for i, u in enumerate(users):
    it = i // 2 + 1
    want = "".join(f"#{n}: {h} (from #{commit_n.get(p, '?')})\n" for n, k, h, p in rows
                   if k == it - 1)
    if it == 1 and head in u:
        bad.append(f"request {i + 1} (iteration 1) names drafts being verified")
    if it > 1 and head + want + "\n" not in u:
        got = u[u.find(head):][:400] if head in u else "no such section"
        bad.append(f"request {i + 1} (iteration {it}) lacks {head + want!r}; it has {got!r}")
for b in bad:
    print(b)
sys.exit(1 if bad else 0)
PY
) || problem "$py"
end "pipelined prompts: none an earlier iteration's, each names the drafts being verified"

# ---- 2. pipelining that would not pay is not used --------------------------------

begin
kill "$FAKEPID" 2>/dev/null; wait "$FAKEPID" 2>/dev/null; FAKEPID=
start_fake 50
search "$T/ws2" --drafts 2 --iterations 3 >"$T/out2" 2>"$T/err2"
RC=$?
[ $RC -eq 0 ] || problem "search exited $RC: $(tail -5 "$T/err2")"
grep -qE '^pipelined 0 of 3 iterations: not worth it \(model 0\.[01] s, verification [0-9.]+ s an iteration\): the model was asked after the verdicts$' "$T/out2" ||
    problem "the summary does not say pipelining was not used: $(grep -E '^pipelined' "$T/out2" || tail -3 "$T/out2")"
py=$(python3 - "$T/ws2/.kiln/kiln.db" "$T/log" "$T/bodies" 2>&1 <<'PY'
import json, os, sqlite3, sys
db, log, bodies = sys.argv[1:4]
con = sqlite3.connect(db)
bad = []
reqs = sorted((l.split() for l in open(log) if l.strip()), key=lambda r: float(r[-1][3:]))
if len(reqs) != 6:
    bad.append(f"{len(reqs)} requests reached the model, expected 6")
# Iteration k+1's prompts show iteration k's drafts as decided attempts.
for i, r in enumerate(reqs):
    body = json.load(open(os.path.join(bodies, r[-2][2:] + ".json")))
    u = [m["content"] for m in body["messages"] if m["role"] == "user"][0]
    if "Being verified now" in u:
        bad.append(f"request {i + 1} names drafts being verified: it was asked ahead")
    it = i // 2 + 1
    for n, in con.execute("select n from candidates where iteration = ? and n > 0", (it - 1,)):
        if f"\n#{n} " not in u:
            bad.append(f"request {i + 1} (iteration {it}) does not show attempt #{n}")
for b in bad:
    print(b)
sys.exit(1 if bad else 0)
PY
) || problem "$py"
end "with a model much faster than verification, no batch is asked ahead and the summary says so"

t_done
