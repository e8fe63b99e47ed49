#!/usr/bin/env bash
# hidden_leak_test.sh - nothing about a hidden shape leaves the verifier but
# its id, pass or fail, and a code (issue: hidden shapes leak). Two CPU
# candidates fail only on hidden shapes, one by crashing after printing its
# dims, one by being slightly wrong; their verdicts must hold no dims text,
# no per-shape numbers for hidden shapes, and job times rounded to 0.1 s.
# Then a model proposes them in a search, with a passing kernel that prints
# a hidden shape's dims on later calls: nothing of a hidden shape may reach
# kiln.db, the git notes, report, export, lessons, status, reverify, kiln
# verify's table, the search's output or the next prompts.
#   hidden_leak_test.sh BUILD_DIR SOURCE_DIR
. "$(dirname "$0")/lib.sh"
t_init "$@"
set -eo pipefail
T=$tmp
for plant in crash_loud wrong_hidden; do
    begin "$plant: its verdict holds nothing of a hidden shape but its id, status and code"
    set +e
    "$KILN" verify "$SRC/tests/integration/hidden_leak/$plant.c" --task rmsnorm --no-daemon --json \
        >"$T/$plant.json" 2>"$T/$plant.err"
    rc=$?
    set -e
    [ $rc = 1 ] || fail "$plant: exit $rc, expected 1 (fail):"$'\n'"$(cat "$T/$plant.err")"
    py=$(python3 - "$T/$plant.json" "$SRC/tasks/rmsnorm/hidden.json" "$plant" 2>&1 <<'PY'
import json, re, sys
v = json.load(open(sys.argv[1]))
hidden = json.load(open(sys.argv[2]))
plant = sys.argv[3]
def bad(msg):
    print(f"{plant}: {msg}", file=sys.stderr)
    sys.exit(1)
if v["status"] != "fail" or v["stage"] != "hidden":
    bad(f"expected fail at stage hidden, got {v['status']} at {v['stage']} ({v['reason']})")
want = "crash" if plant == "crash_loud" else "wrong-output"
if v["code"] != want:
    bad(f"code {v['code']}, expected {want}")
text = json.dumps(v)
if "LEAKDIMS" in text:
    bad("the candidate's own output reached the verdict")
for field in ("reason", "feedback"):
    if re.search(r"\d", v[field]):
        bad(f"{field} holds a number: {v[field]!r}")
    if re.search(r"\bh\d+\b", v[field]):
        bad(f"{field} names which hidden shape failed: {v[field]!r}")
dims = set()
for s in hidden["groups"]["prefill"]["shapes"]:
    dims.update(str(x) for x in s.values() if x > 40)
for s in v["shapes"]:
    if not s["visible"]:
        bad(f"a hidden shape has an entry of its own: {s}")
h = v.get("hidden", {})
if set(h) != {"shapes", "status", "code"} or h["status"] != "fail" or h["code"] != want:
    bad(f"expected the hidden stage as one outcome, fail with code {want}: {h}")
def tenth(x):
    return x is None or abs(x * 10 - round(x * 10)) < 1e-9
for k in ["seconds"] + [f"stage_seconds.{s}" for s in v["stage_seconds"]]:
    x = v["seconds"] if k == "seconds" else v["stage_seconds"][k.split(".")[1]]
    if not tenth(x):
        bad(f"{k} = {x} is not rounded to 0.1 s")
for k, x in v.get("rusage", {}).items():
    if not tenth(x):
        bad(f"rusage.{k} = {x} is not rounded to 0.1 s")
print(f"{plant}: {v['reason']}")
PY
    ) || fail "$py"
    end "$py"
done
# ---- every route out of a search ----------------------------------------------
# The replay plant (a passing kernel that prints a hidden shape's dims on
# later calls) and the same two plants, proposed by a model in a search
# from a start kernel that does its work four times (so the replay plant
# is kept: the best, exported and verified again). Nothing of a hidden
# shape may reach the run database, the git notes, the report, the
# export, the lessons, status, reverify, kiln verify's table, the search's
# own output or the prompts the model is sent next.
begin "routes: nothing of a hidden shape reaches anything a search leaves or sends"
answer() {   # FILE HYPOTHESIS
    printf 'Here it is.\n\n```c\n'
    cat "$1"
    printf '```\n\nHYPOTHESIS: %s\n' "$2"
}
answer "$SRC/tests/redteam/cpu/rmsnorm_28_hidden_replay.c" "remember and replay" >"$T/a1.md"
answer "$SRC/tests/integration/hidden_leak/crash_loud.c" "print and crash" >"$T/a2.md"
answer "$SRC/tests/integration/hidden_leak/wrong_hidden.c" "slightly off where unseen" >"$T/a3.md"
# The fourth answer has no code: its request goes out once the crash's
# verdict is in (requests are sent ahead while a verification runs), so
# the prompt it carries is the one that must show the crash.
cp "$SRC/tests/integration/search/noanswer.md" "$T/a4.md"
printf 'ok %s\n' "$T/a1.md" "$T/a2.md" "$T/a3.md" "$T/a4.md" >"$T/script"
mkdir -p "$T/bodies"
fake_llm "$T" --bodies "$T/bodies"
WS=$T/ws
set +e
OPENAI_API_KEY=test "$KILN" search rmsnorm --agent openai --model fake --no-daemon \
    --base-url "http://127.0.0.1:$(cat "$T/port")/v1" --iterations 4 --drafts 1 \
    --parents best --from "$SRC/tests/integration/keep/slow4.c" --timing-ms 200 \
    --workspace "$WS" --json >"$T/search.out" 2>"$T/search.err"
rc=$?
set -e
[ $rc = 0 ] || fail "search: exit $rc: $(tail -5 "$T/search.err")"
"$KILN" report -o "$T/report.html" --workspace "$WS" >"$T/report.out" 2>&1 ||
    fail "report: $(cat "$T/report.out")"
"$KILN" export --task rmsnorm -o "$T/export" --workspace "$WS" >"$T/export.out" 2>&1 ||
    fail "export: $(cat "$T/export.out")"
grep -q KILNLEAK "$T"/export/*.c ||
    fail "the replay plant was not kept and exported: $(cat "$T/search.out" "$T/search.err" | grep -E 'kept|reverted' | tail -4)"
"$KILN" status --workspace "$WS" >"$T/status.out" 2>&1 || fail "status: $(cat "$T/status.out")"
"$KILN" lessons list --kind all --workspace "$WS" >"$T/lessons.out" 2>&1 ||
    fail "lessons list: $(cat "$T/lessons.out")"
"$KILN" lessons export --format json --kind all --workspace "$WS" >"$T/lessons.json" 2>/dev/null ||
    fail "lessons export"
# kiln verify's own table, for the crash that prints its dims.
set +e
"$KILN" verify "$SRC/tests/integration/hidden_leak/crash_loud.c" --task rmsnorm --no-daemon \
    >"$T/verify.txt" 2>&1
rc=$?
set -e
[ $rc = 1 ] || fail "kiln verify (table): exit $rc, expected 1: $(tail -3 "$T/verify.txt")"
grep -q '^hidden shapes: 11, failed: crash$' "$T/verify.txt" || fail "kiln verify's table has no line for the hidden stage: $(cat "$T/verify.txt")"
# The best is the replay plant: verified again, it replays hidden dims into
# whatever reverify prints and notes (exit 1 would only mean it measured
# slower this time).
set +e
"$KILN" reverify --best --no-daemon --timing-ms 200 --workspace "$WS" >"$T/reverify.out" 2>&1
rc=$?
set -e
[ $rc = 0 ] || [ $rc = 1 ] || fail "reverify: exit $rc: $(tail -5 "$T/reverify.out")"
git -C "$WS" show-ref -q refs/notes/kiln-reverify || fail "reverify wrote no note"
for ref in $(git -C "$WS" for-each-ref --format='%(refname)' refs/notes); do
    git -C "$WS" log -p "$ref" >>"$T/notes.out"
done
[ -s "$T/notes.out" ] || fail "the search wrote no git notes"
py=$(python3 - "$T" "$WS/.kiln/kiln.db" "$SRC/tasks/rmsnorm" 2>&1 <<'PY'
import glob, json, os, re, sqlite3, sys
T, db, task = sys.argv[1:4]
def bad(msg):
    print(f"routes: {msg}", file=sys.stderr)
    sys.exit(1)
# Every dim of a fixed hidden shape that no visible shape of any group has.
visible, hidden = set(), set()
for g in json.load(open(f"{task}/task.json"))["groups"].values():
    for s in g["visible"]:
        visible.update(s.values())
for g in json.load(open(f"{task}/hidden.json"))["groups"].values():
    for s in g["shapes"]:
        hidden.update(s.values())
# A dim shows as kiln writes dims (rows=R cols=C, "rows": R, R x C); a bare
# number could as well be a time. Numbers are checked field by field in
# the verdicts below.
secret = {d for d in hidden - visible if d >= 30}
dim = re.compile(r"\b(?:rows|cols)\"?\s*[=:]\s*(\d+)|(?<![\w.])([1-9]\d*)\s*[x\u00d7]\s*(\d+)(?![\w.])")
said = re.compile(r"(LEAKDIMS|KILNLEAK) rows=\d")
def scan(name, text):
    m = said.search(text)
    if m:
        bad(f"{name} holds what a candidate printed on a hidden shape: {text[max(0, m.start() - 80):m.end() + 40]!r}")
    for m in dim.finditer(text):
        if any(g and int(g) in secret for g in m.groups()):
            bad(f"{name} holds a hidden dim: {text[max(0, m.start() - 80):m.end() + 40]!r}")
def hidden_shapes(name, v):
    if isinstance(v, dict):
        if "shapes" in v and isinstance(v["shapes"], list):
            for s in v["shapes"]:
                if isinstance(s, dict) and s.get("visible") is False and \
                        set(s) - {"id", "visible", "dtype", "status", "code"}:
                    bad(f"{name}: hidden shape {s.get('id')} carries {sorted(set(s))}")
        for x in v.values():
            hidden_shapes(name, x)
    elif isinstance(v, list):
        for x in v:
            hidden_shapes(name, x)
# The run database: every text cell, and every JSON verdict in it.
con = sqlite3.connect(db)
verdicts = 0
for (table,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'"):
    for row in con.execute(f'SELECT * FROM "{table}"'):
        for cell in row:
            if not isinstance(cell, str):
                continue
            scan(f"kiln.db table {table}", cell)
            if cell.startswith("{"):
                try:
                    v = json.loads(cell)
                except ValueError:
                    continue
                if isinstance(v, dict) and "shapes" in v:
                    verdicts += 1
                hidden_shapes(f"kiln.db table {table}", v)
if verdicts < 4:
    bad(f"kiln.db holds {verdicts} verdicts, expected the start kernel's and 4 candidates'")
# The notes, the report, the export, status, lessons, the search's output.
for name in ["notes.out", "report.html", "status.out", "lessons.out", "lessons.json", "reverify.out", "verify.txt",
             "search.out", "search.err"] + [os.path.relpath(p, T) for p in glob.glob(f"{T}/export/*")]:
    text = open(f"{T}/{name}", errors="replace").read()
    scan(name, text)
    for line in text.splitlines():
        if line.startswith("{"):
            try:
                hidden_shapes(name, json.loads(line))
            except ValueError:
                pass
# The prompts: every request after the first shows earlier attempts.
bodies = sorted(glob.glob(f"{T}/bodies/*.json"))
if len(bodies) < 4:
    bad(f"the model was asked {len(bodies)} times, expected 4")
users = []
for b in bodies:
    for m in json.load(open(b))["messages"]:
        scan(f"prompt {os.path.basename(b)}", m["content"] if isinstance(m["content"], str) else json.dumps(m["content"]))
        if m["role"] == "user":
            users.append(m["content"])
if not any("hidden" in u and "crash" in u for u in users):
    bad("no prompt shows the crash on a hidden shape (the route was not tried)")
print(f"routes: {verdicts} verdicts in kiln.db, the notes, report, export, status, "
      f"lessons, reverify, verify's table, search output and {len(bodies)} prompts hold no hidden dims")
PY
) || fail "$py"
end "$py"
t_done
